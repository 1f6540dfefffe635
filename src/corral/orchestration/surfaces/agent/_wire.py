"""Parameter models of the `agent` tool's nine actions and of `ask_owner`, and their validation.

Field-level validation lives here (types, blanks, the label pattern, the
`timeoutMs` range, which fields an action accepts); cross-record
preconditions are the controller's.

Input tolerance: model providers often materialise every field of a
multiplexed tool's flattened schema, sending `null`, `""`, `[]` or `{}` for
optional fields the chosen action does not use. `parse_action` treats such
*empty* values as absent — for fields of other actions and for the action's
own optional fields. A field no action knows, a non-empty value for a field
the action does not accept, a missing or blank required field and a wrong
type still fail `invalid_request`, naming the field and what to do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

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

ActionName = Literal[
    "list", "delegate", "continue", "steer", "interrupt", "reply", "close", "inspect", "transcript"
]
ACTIONS: tuple[ActionName, ...] = get_args(ActionName)
"""The nine actions, in the contract's order."""

LABEL_PATTERN = r"^[a-z][a-z0-9_-]{0,31}$"
"""What an agent label must match."""
TIMEOUT_MS_MIN = 5001
"""Smallest accepted `timeoutMs`."""
TIMEOUT_MS_MAX = 300000
"""Largest accepted `timeoutMs`."""

_LABEL_RE = re.compile(LABEL_PATTERN)

ACTION_FIELDS: dict[ActionName, tuple[str, ...]] = {
    "list": (),
    "delegate": ("definition", "task", "label", "cwd", "files", "fork", "timeoutMs"),
    "continue": ("session", "task", "files", "timeoutMs"),
    "steer": ("agent", "message", "files"),
    "interrupt": ("agent", "message", "files"),
    "reply": ("agent", "message", "files"),
    "close": ("agent",),
    "inspect": ("agent",),
    "transcript": ("agent",),
}
"""The wire fields (besides `action`) each action accepts."""

REQUIRED_FIELDS: dict[ActionName, tuple[str, ...]] = {
    "list": (),
    "delegate": ("definition", "task"),
    "continue": ("session", "task"),
    "steer": ("agent", "message"),
    "interrupt": ("agent", "message"),
    "reply": ("agent", "message"),
    "close": ("agent",),
    "inspect": ("agent",),
    "transcript": ("agent",),
}

ASK_OWNER_FIELDS: tuple[str, ...] = ("question", "files")
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


def _non_blank(value: Any) -> Any:
    if isinstance(value, str) and not value.strip():
        raise ValueError("must not be blank")
    return value


def _label(value: Any) -> Any:
    if isinstance(value, str) and not _LABEL_RE.fullmatch(value):
        raise ValueError(f"must match {LABEL_PATTERN} (lowercase letter first, at most 32 characters)")
    return value


def _files(value: Any) -> Any:
    if isinstance(value, list):
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise ValueError(f"entry {index} must be a string path")
            if not item.strip():
                raise ValueError(f"entry {index} must not be blank")
    return value


def _timeout(value: Any) -> Any:
    # Like Pi's validator, an integer written as a string is accepted; floats and booleans are not.
    if isinstance(value, bool | float):
        raise ValueError("must be an integer number of milliseconds")
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return value


_Text = Annotated[str, BeforeValidator(_non_blank), Field(strict=True)]
_Label = Annotated[str, BeforeValidator(_label), Field(strict=True)]
_Files = Annotated[list[Annotated[str, Field(strict=True)]], BeforeValidator(_files)]
_Timeout = Annotated[int, BeforeValidator(_timeout), Field(strict=True, ge=TIMEOUT_MS_MIN, le=TIMEOUT_MS_MAX)]


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class DelegateParams(_Params):
    """`delegate`: start a new agent generation for one assignment."""

    action: Literal["delegate"] = "delegate"
    definition: _Text
    """Definition name (resolved against the current roster by the controller)."""
    task: _Text
    """The assignment text."""
    label: _Label | None = None
    """Requested label; `None` lets the controller choose one."""
    cwd: _Text | None = None
    """Agent working directory, relative to the caller's."""
    files: _Files | None = None
    """Evidence files (§2.1)."""
    fork: _Text | None = None
    """Exact saved session path or full UUID to fork."""
    timeout_ms: _Timeout | None = Field(default=None, alias="timeoutMs")
    """Startup budget in milliseconds (5001–300000)."""


class ContinueParams(_Params):
    """`continue`: a new generation on a saved managed session."""

    action: Literal["continue"] = "continue"
    session: _Text
    """Exact session path or full UUID."""
    task: _Text
    """The assignment text."""
    files: _Files | None = None
    """Evidence files (§2.1)."""
    timeout_ms: _Timeout | None = Field(default=None, alias="timeoutMs")
    """Startup budget in milliseconds (5001–300000)."""


class SteerParams(_Params):
    """`steer`: change the current assignment without cancelling."""

    action: Literal["steer"] = "steer"
    agent: _Text
    """Target label."""
    message: _Text
    """Steering text."""
    files: _Files | None = None
    """Evidence files (§2.1)."""


class InterruptParams(_Params):
    """`interrupt`: cancel the current operation and continue with a replacement message."""

    action: Literal["interrupt"] = "interrupt"
    agent: _Text
    """Target label."""
    message: _Text
    """Replacement message."""
    files: _Files | None = None
    """Evidence files (§2.1)."""


class ReplyParams(_Params):
    """`reply`: answer a pending `ask_owner` question."""

    action: Literal["reply"] = "reply"
    agent: _Text
    """Target label."""
    message: _Text
    """The answer."""
    files: _Files | None = None
    """Evidence files (§2.1)."""


class CloseParams(_Params):
    """`close`: tear an agent down (cascading through its agents)."""

    action: Literal["close"] = "close"
    agent: _Text
    """Target label."""


class InspectParams(_Params):
    """`inspect`: live runtime evidence."""

    action: Literal["inspect"] = "inspect"
    agent: _Text
    """Target label."""


class TranscriptParams(_Params):
    """`transcript`: the persisted conversation, compaction-aware."""

    action: Literal["transcript"] = "transcript"
    agent: _Text
    """Target label."""


class ListParams(_Params):
    """`list`: no fields."""

    action: Literal["list"] = "list"


class AskOwnerParams(_Params):
    """`ask_owner`: a managed agent's question to its owner."""

    question: _Text
    """The question."""
    files: _Files | None = None
    """Evidence files, resolved against the agent's cwd."""


ActionParams = Annotated[
    ListParams
    | DelegateParams
    | ContinueParams
    | SteerParams
    | InterruptParams
    | ReplyParams
    | CloseParams
    | InspectParams
    | TranscriptParams,
    Field(discriminator="action"),
]
"""The nine actions as one union keyed by `action`."""

_ADAPTER: TypeAdapter[ActionParams] = TypeAdapter(ActionParams)


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
