"""The typed commands of the `agent` tool's nine actions and of `ask_owner`, with their field validators.

A command is what the controller acts on: the surface (`surfaces/agent/_wire.py`)
turns a model's loose JSON into one of these (tolerating empty values for
fields the action does not use), and the controller, the TUI and tests build
them directly. Field-level rules live here (types, blanks, the label pattern,
the `timeoutMs` range, which fields an action accepts); cross-record
preconditions are the controller's.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

__all__ = [
    "ACTIONS",
    "LABEL_PATTERN",
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


def _non_blank(value: object) -> object:
    if isinstance(value, str) and not value.strip():
        raise ValueError("must not be blank")
    return value


def _label(value: object) -> object:
    if isinstance(value, str) and not _LABEL_RE.fullmatch(value):
        raise ValueError(f"must match {LABEL_PATTERN} (lowercase letter first, at most 32 characters)")
    return value


def _files(value: object) -> object:
    if isinstance(value, list):
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise ValueError(f"entry {index} must be a string path")
            if not item.strip():
                raise ValueError(f"entry {index} must not be blank")
    return value


def _timeout(value: object) -> object:
    # Like Pi's validator, an integer written as a string is accepted; floats and booleans are not.
    if isinstance(value, bool | float):
        raise ValueError("must be an integer number of milliseconds")
    if isinstance(value, str) and (digits := re.fullmatch(r"\s*-?0*(\d+)\s*", value)):
        if len(digits.group(1)) > len(str(TIMEOUT_MS_MAX)):
            # Out of range whatever it is, and `int()` of thousands of digits refuses with Python's
            # own hint (sys.set_int_max_str_digits): say the range instead.
            raise ValueError(f"must be an integer from {TIMEOUT_MS_MIN} to {TIMEOUT_MS_MAX} (milliseconds)")
        return int(value)
    return value


_Text = Annotated[str, BeforeValidator(_non_blank), Field(strict=True)]
_Label = Annotated[
    str, BeforeValidator(_label), Field(strict=True, json_schema_extra={"pattern": LABEL_PATTERN})
]
_Files = Annotated[list[Annotated[str, Field(strict=True)]], BeforeValidator(_files)]
_Timeout = Annotated[int, BeforeValidator(_timeout), Field(strict=True, ge=TIMEOUT_MS_MIN, le=TIMEOUT_MS_MAX)]


class _Params(BaseModel):
    # Built at the first command of each kind, not at import (most runs never delegate).
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


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
