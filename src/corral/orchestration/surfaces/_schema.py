"""Tool JSON schemas generated from the pydantic models that validate the calls.

One definition per tool: the wire model says which fields exist, their types,
which are required and their defaults; `model_schema` turns it into the JSON
schema the model is offered. A field's `Field(description=...)` becomes its
description (no description: the name says it all), and its
`json_schema_extra` adds what the type cannot say (a `pattern`, bounds, the
advertised enum of a field validated by hand) or, for a field typed `Any`
because another parser validates it (a policy, a tier), gives its whole
schema.

Only the keywords tool schemas use are produced: `type`, `properties`,
`required`, `additionalProperties` (always `false`: every wire model refuses
unknown keys), `items`, `enum`, `default` and the bounds.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

__all__ = ["field_schema", "model_schema", "object_schema"]

_SCALARS: dict[type, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}


def _apply(schema: dict[str, Any], item: object) -> None:
    """Add what one piece of `Annotated` metadata says to the schema (bounds, `json_schema_extra`)."""
    if isinstance(item, FieldInfo):
        for inner in item.metadata:
            _apply(schema, inner)
        if isinstance(item.json_schema_extra, dict):
            schema.update(item.json_schema_extra)
    elif isinstance(item, annotated_types.Ge):
        schema["minimum"] = item.ge
    elif isinstance(item, annotated_types.Le):
        schema["maximum"] = item.le


def _type_schema(annotation: Any) -> dict[str, Any]:
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *metadata = get_args(annotation)
        schema = _type_schema(base)
        for item in metadata:
            _apply(schema, item)
        return schema
    if origin is Union or origin is types.UnionType:
        (inner,) = (arg for arg in get_args(annotation) if arg is not type(None))
        return _type_schema(inner)
    if origin is Literal:
        return {"type": "string", "enum": list(get_args(annotation))}
    if origin is list:
        return {"type": "array", "items": _type_schema(get_args(annotation)[0])}
    if origin is dict or annotation is dict:
        return {"type": "object"}
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_schema(annotation)
    if annotation is Any:
        return {}
    raise TypeError(f"no JSON schema for the annotation {annotation!r}; give one in json_schema_extra")


def field_schema(info: FieldInfo) -> dict[str, Any]:
    """The JSON schema of one model field, without its description: type, bounds, extras, default."""
    node = _type_schema(info.annotation)
    _apply(node, info)
    default = info.default
    if default is not None and default is not PydanticUndefined and "default" not in node:
        node["default"] = default
    return node


def object_schema(
    properties: Mapping[str, Any], required: tuple[str, ...] | list[str] = ()
) -> dict[str, Any]:
    """An object schema with the given properties that refuses unknown keys."""
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def model_schema(
    model: type[BaseModel],
    *,
    required: tuple[str, ...] | None = None,
    descriptions: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The JSON schema of `model`'s wire fields (aliases as names), in field order.

    Args:
        model: The wire model that validates the call.
        required: Advertise these fields as required instead of the model's own (a caller whose
            parser adds a rule the model cannot hold, such as the lead's `send_message` recipient).
        descriptions: Replace some fields' descriptions (a variant of the tool for another caller).
    """
    properties: dict[str, Any] = {}
    own_required: list[str] = []
    for name, info in model.model_fields.items():
        wire = info.alias or name
        node = field_schema(info)
        description = (descriptions or {}).get(wire, info.description)
        if description:
            node["description"] = description
        properties[wire] = node
        if info.is_required():
            own_required.append(wire)
    return object_schema(properties, own_required if required is None else required)
