"""The wire side of the `agent` tool's nine actions and of `ask_owner`: loose JSON into typed commands.

The commands and their field validators live with the core they drive
(`orchestration/agents/commands.py`, re-exported here); this module holds
what only the wire needs: which fields each action accepts, their one-line
descriptions for the schemas, and the tolerant parsers.

Input tolerance: model providers often materialise every field of a
multiplexed tool's flattened schema, sending `null`, `""`, `[]` or `{}` for
optional fields the chosen action does not use. `parse_action` treats such
*empty* values as absent — for fields of other actions and for the action's
own optional fields. A field no action knows, a non-empty value for a field
the action does not accept, a missing or blank required field and a wrong
type still fail `invalid_request`, naming the field and what to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from corral.orchestration.agents.commands import (
    ACTIONS,
    LABEL_PATTERN,
    TIMEOUT_MS_MAX,
    TIMEOUT_MS_MIN,
    ActionName,
    ActionParams,
    AskOwnerParams,
    CloseParams,
    ContinueParams,
    DelegateParams,
    InspectParams,
    InterruptParams,
    ListParams,
    ReplyParams,
    SteerParams,
    TranscriptParams,
)
from corral.orchestration.errors import InvalidRequestError

__all__ = [
    "ACTIONS",
    "ACTION_FIELDS",
    "ASK_OWNER_FIELDS",
    "FIELD_DESCRIPTIONS",
    "LABEL_PATTERN",
    "REQUIRED_FIELDS",
    "TIMEOUT_MS_MAX",
    "TIMEOUT_MS_MIN",
    "WIRE_FIELDS",
    "ActionName",
    "ActionParams",
    "AskOwnerParams",
    "CloseParams",
    "ContinueParams",
    "DelegateParams",
    "InspectParams",
    "InterruptParams",
    "ListParams",
    "ReplyParams",
    "SteerParams",
    "TranscriptParams",
    "parse_action",
    "parse_ask_owner",
]


def _wire_fields(model: type[BaseModel]) -> dict[str, FieldInfo]:
    return {info.alias or name: info for name, info in model.model_fields.items() if name != "action"}


_ACTION_MODELS: dict[ActionName, type[BaseModel]] = {
    model.model_fields["action"].default: model for model in get_args(get_args(ActionParams)[0])
}

ACTION_FIELDS: dict[ActionName, tuple[str, ...]] = {
    action: tuple(_wire_fields(_ACTION_MODELS[action])) for action in ACTIONS
}
"""The wire fields (besides `action`) each action accepts, from its command model."""

REQUIRED_FIELDS: dict[ActionName, tuple[str, ...]] = {
    action: tuple(name for name, info in _wire_fields(_ACTION_MODELS[action]).items() if info.is_required())
    for action in ACTIONS
}
"""The fields each action requires, from its command model."""

_COMMANDS: tuple[type[BaseModel], ...] = (*_ACTION_MODELS.values(), AskOwnerParams)

WIRE_FIELDS: dict[str, FieldInfo] = {
    name: info for model in _COMMANDS for name, info in _wire_fields(model).items()
}
"""Each wire field's definition (type, bounds, pattern), from the commands that have it."""

ASK_OWNER_FIELDS: tuple[str, ...] = tuple(_wire_fields(AskOwnerParams))
"""The fields of `ask_owner`."""

FIELD_DESCRIPTIONS: dict[str, str] = {
    "definition": "delegate: name of an enabled agent definition from `list`.",
    "task": "delegate, continue: the assignment, self-contained (non-blank).",
    "label": "delegate: agent label, ^[a-z][a-z0-9_-]{0,31}$ (default: the definition name, then <name>-2, …).",
    "cwd": "delegate: the agent's working directory, relative to yours (default: yours).",
    "files": (
        "delegate, continue, steer, interrupt, reply: evidence files (paths relative to your cwd, "
        "or result:<request-id> references); small UTF-8 files are embedded, others referenced."
    ),
    "fork": "delegate: exact saved session path or full session id to fork into a new agent session.",
    "timeoutMs": f"delegate, continue: startup budget in ms, integer {TIMEOUT_MS_MIN}-{TIMEOUT_MS_MAX}.",
    "session": "continue: exact session path or full session id of an agent session you own.",
    "agent": "steer, interrupt, reply, close, inspect, transcript: the agent's label.",
    "message": "steer, interrupt, reply: the text for the agent (non-blank).",
    "question": "The question for your owner (non-blank).",
}
"""One line per wire field, used in the generated JSON schemas."""

_ALL_FIELDS = frozenset(f for fields in ACTION_FIELDS.values() for f in fields)


_ADAPTER: TypeAdapter[ActionParams] = TypeAdapter(ActionParams, config=ConfigDict(defer_build=True))
"""Built on first use: a run whose lead never calls the `agent` tool never needs it."""


def _is_empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _invalid(message: str, operation: str) -> InvalidRequestError:
    return InvalidRequestError(message, operation=operation)


def _allowed_text(fields: tuple[str, ...]) -> str:
    return ", ".join(fields) if fields else "no other fields"


def _first_error(exc: ValidationError, operation: str, allowed: tuple[str, ...]) -> InvalidRequestError:
    error = exc.errors()[0]
    loc = [str(part) for part in error["loc"] if part != operation]
    field = loc[0] if loc else "arguments"
    kind = error["type"]
    if kind == "missing":
        return _invalid(
            f"{operation}: field {field} is required (fields: {_allowed_text(allowed)})", operation
        )
    if kind == "extra_forbidden":
        return _invalid(
            f"{operation}: unknown field {field}; allowed fields: {_allowed_text(allowed)}", operation
        )
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    where = field if len(loc) < 2 else f"{field}[{loc[1]}]"
    if field == "timeoutMs" and kind != "value_error":
        message = f"must be an integer from {TIMEOUT_MS_MIN} to {TIMEOUT_MS_MAX} (milliseconds)"
    return _invalid(f"{operation}: field {where} {_lower_first(message)}", operation)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _clean(
    raw: Mapping[str, Any], operation: ActionName, allowed: tuple[str, ...], known: frozenset[str]
) -> dict[str, Any]:
    cleaned: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "action":
            continue
        if key in allowed:
            if _is_empty(value) and key not in REQUIRED_FIELDS[operation]:
                continue
            if value is None:
                continue
            cleaned[key] = value
        elif key in known:
            if _is_empty(value):
                continue
            raise _invalid(
                f"{operation}: field {key} is not accepted by {operation}; allowed fields: "
                f"{_allowed_text(allowed)}",
                operation,
            )
        else:
            raise _invalid(
                f"{operation}: unknown field {key}; allowed fields: {_allowed_text(allowed)}", operation
            )
    return cleaned


def parse_action(raw: Any, *, action: ActionName | None = None) -> ActionParams:
    """Validate a tool call's arguments into the typed params of one action.

    Args:
        raw: The arguments the model sent (a JSON object).
        action: The fixed action of a per-operation tool; `None` reads `raw["action"]`.

    Returns:
        The typed params.

    Raises:
        InvalidRequestError: The arguments are not a valid call; the message names the
            field and the allowed fields.
    """
    operation: str = action or "agent"
    if not isinstance(raw, Mapping):
        raise _invalid(f"{operation}: arguments must be a JSON object", operation)
    if action is None:
        chosen = raw.get("action")
        if not isinstance(chosen, str) or chosen not in ACTIONS:
            shown = "missing" if chosen is None else repr(chosen)
            raise _invalid(f"agent: field action is {shown}; use one of: {', '.join(ACTIONS)}", "agent")
        chosen_action: ActionName = chosen  # type: ignore[assignment]  # checked against ACTIONS above
        operation = chosen
        known = _ALL_FIELDS
    else:
        if "action" in raw and raw["action"] not in (action, None, ""):
            raise _invalid(
                f"{operation}: unknown field action; allowed fields: {_allowed_text(ACTION_FIELDS[action])}",
                operation,
            )
        known = frozenset(ACTION_FIELDS[action])
        chosen_action = action
    action = chosen_action
    allowed = ACTION_FIELDS[action]
    cleaned = _clean(raw, action, allowed, known)
    cleaned["action"] = action
    try:
        return _ADAPTER.validate_python(cleaned)
    except ValidationError as exc:
        raise _first_error(exc, action, allowed) from None


def parse_ask_owner(raw: Any) -> AskOwnerParams:
    """Validate `ask_owner` arguments (same tolerance: empty optional `files` is absent).

    Raises:
        InvalidRequestError: The arguments are not a valid question.
    """
    if not isinstance(raw, Mapping):
        raise _invalid("ask_owner: arguments must be a JSON object", "ask_owner")
    cleaned: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in ASK_OWNER_FIELDS:
            raise _invalid(
                f"ask_owner: unknown field {key}; allowed fields: {', '.join(ASK_OWNER_FIELDS)}", "ask_owner"
            )
        if key == "files" and _is_empty(value):
            continue
        if value is not None:
            cleaned[key] = value
    try:
        return AskOwnerParams.model_validate(cleaned)
    except ValidationError as exc:
        raise _first_error(exc, "ask_owner", ASK_OWNER_FIELDS) from None
