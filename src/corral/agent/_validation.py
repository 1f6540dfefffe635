"""A small JSON Schema validator for tool arguments.

It covers the subset tool schemas use: `type` (one or a list), `required`,
`properties`, `additionalProperties` (bool or schema), `enum`, `items`, plus
`anyOf`/`oneOf` (a value must match one branch). Like Pi (AJV with type
coercion), a string holding a number or a boolean is accepted for a
`number`/`integer`/`boolean` field and converted; the validated copy is
returned.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ToolArgumentsError", "validate_tool_arguments"]


class ToolArgumentsError(ValueError):
    """Arguments did not match the tool's schema; the message lists every problem."""


_MISSING = object()


def validate_tool_arguments(tool_name: str, schema: dict[str, Any], args: Any) -> dict[str, Any]:
    """Check `args` against `schema` and return them with simple type coercions applied.

    Raises:
        ToolArgumentsError: one line per problem, then the arguments received.
    """
    problems: list[str] = []
    value = _check(args, schema, "", problems) if schema else args
    if not isinstance(value, dict):
        problems.append("root: must be an object")
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        try:
            received = json.dumps(args, indent=2, ensure_ascii=False)
        except (TypeError, ValueError):
            received = repr(args)
        raise ToolArgumentsError(
            f'Validation failed for tool "{tool_name}":\n{listed}\n\nReceived arguments:\n{received}'
        )
    return value  # type: ignore[no-any-return]


def _type_matches(value: Any, name: str) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "null":
        return value is None
    return True


def _coerce(value: Any, name: str) -> Any:
    """A string converted to `name`, or `_MISSING` when it does not convert."""
    if not isinstance(value, str):
        return _MISSING
    text = value.strip()
    if name == "boolean" and text in ("true", "false"):
        return text == "true"
    if name in ("integer", "number") and text:
        try:
            number = float(text)
        except ValueError:
            return _MISSING
        if name == "integer":
            return int(number) if number.is_integer() else _MISSING
        return int(number) if number.is_integer() and "." not in text else number
    return _MISSING


def _where(path: str) -> str:
    return path or "root"


def _check(value: Any, schema: dict[str, Any], path: str, problems: list[str]) -> Any:
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            for branch in branches:
                trial: list[str] = []
                checked = _check(value, branch, path, trial)
                if not trial:
                    value = checked
                    break
            else:
                problems.append(f"{_where(path)}: must match one of the allowed shapes")
                return value

    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_type_matches(value, n) for n in names):
            for name in names:
                converted = _coerce(value, name)
                if converted is not _MISSING:
                    value = converted
                    break
            else:
                problems.append(f"{_where(path)}: must be {' or '.join(names)}")
                return value

    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        allowed = ", ".join(json.dumps(v) for v in enum)
        problems.append(f"{_where(path)}: must be one of {allowed}")

    if "const" in schema and value != schema["const"]:
        problems.append(f"{_where(path)}: must be {json.dumps(schema['const'])}")

    if isinstance(value, dict):
        value = _check_object(value, schema, path, problems)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            value = [_check(item, items, f"{path}/{i}", problems) for i, item in enumerate(value)]
    return value


def _check_object(
    value: dict[str, Any], schema: dict[str, Any], path: str, problems: list[str]
) -> dict[str, Any]:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    for name in required if isinstance(required, list) else ():
        if name not in value:
            problems.append(f"{_where(path)}: must have required property '{name}'")
    additional = schema.get("additionalProperties", True)
    out: dict[str, Any] = {}
    for key, item in value.items():
        sub = properties.get(key)
        if isinstance(sub, dict):
            out[key] = _check(item, sub, f"{path}/{key}", problems)
        elif additional is False:
            problems.append(f"{_where(path)}: must not have additional property '{key}'")
            out[key] = item
        elif isinstance(additional, dict):
            out[key] = _check(item, additional, f"{path}/{key}", problems)
        else:
            out[key] = item
    return out
