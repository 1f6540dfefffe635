"""What every agent-surface tool shares: the controller protocol, dispatch, result shaping.

A surface call goes: validate the arguments (`parse_action`), call exactly one
controller method, shape the controller's result into a `ToolResult`. Any
exception on the way becomes an error result in one place, `error_result`;
the model always gets an answer it can act on, never a crash.

Schemas: the loop validates a tool's `parameters` before `execute`, and its
validator would answer schema mismatches with its own generic text. The
surface tools therefore keep `parameters` permissive (`{"type": "object"}`)
and offer the model the descriptive schema through `definition()`; all real
validation (types, blanks, limits, which fields an action takes, input
tolerance) happens in `parse_action`, so every bad call gets `invalid_request`
with the field named. The offered schemas are generated from the commands
(`field_schema`: each wire field's JSON type, bounds and pattern from its
`*Params` field in `agents/commands.py`, plus its line in `FIELD_DESCRIPTIONS`),
so the schemas, the multiplexed and the per-operation tools cannot drift
apart; the tests pin them.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from corral._paths import corral_home, ensure_private_dir
from corral.agent import AgentTool, ToolResult
from corral.agent.tools import truncate_head
from corral.llm import AssistantMessage, CustomMessage, ToolDefinition
from corral.orchestration.agents.results import (
    CloseResult,
    DelegateResult,
    InspectResult,
    ListResult,
    ReplyResult,
    SteerResult,
    TranscriptResult,
)
from corral.orchestration.errors import error_details
from corral.orchestration.kernel._caller import Caller

from .agent._render import DEFAULT_NEXT_ACTIONS, DELEGATION_GUIDANCE, render_error, render_result
from .agent._wire import (
    FIELD_DESCRIPTIONS,
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

__all__ = [
    "DELEGATION_GUIDANCE_TYPE",
    "PASS_THROUGH_SCHEMA",
    "AgentController",
    "AskOwnerOutcome",
    "SurfaceTool",
    "TurnGuide",
    "error_result",
    "field_schema",
    "output_dir",
    "shape_text",
]

DELEGATION_GUIDANCE_TYPE = "corral-delegation-guidance"
"""`customType` of the hidden guidance message."""

PASS_THROUGH_SCHEMA: dict[str, Any] = {"type": "object"}
"""What the loop validates against: anything object-shaped; `parse_action` does the rest."""


class AskOwnerOutcome(Protocol):
    """What `Controller.ask_owner` returns."""

    @property
    def ask_id(self) -> str:
        """The new ask's id."""
        ...

    @property
    def assignment_request_id(self) -> str:
        """The assignment the question belongs to."""
        ...


class AgentController(Protocol):
    """The controller methods the surfaces call (one per action)."""

    async def list(self, caller: Caller, params: ListParams) -> ListResult:
        """`list`."""
        ...

    async def delegate(self, caller: Caller, params: DelegateParams) -> DelegateResult:
        """`delegate`."""
        ...

    async def continue_(self, caller: Caller, params: ContinueParams) -> DelegateResult:
        """`continue`."""
        ...

    async def steer(self, caller: Caller, params: SteerParams) -> SteerResult:
        """`steer`."""
        ...

    async def interrupt(self, caller: Caller, params: InterruptParams) -> SteerResult:
        """`interrupt`."""
        ...

    async def reply(self, caller: Caller, params: ReplyParams) -> ReplyResult:
        """`reply`."""
        ...

    async def close(self, caller: Caller, params: CloseParams) -> CloseResult:
        """`close`."""
        ...

    async def inspect(self, caller: Caller, params: InspectParams) -> InspectResult:
        """`inspect`."""
        ...

    async def transcript(self, caller: Caller, params: TranscriptParams) -> TranscriptResult:
        """`transcript`."""
        ...

    async def ask_owner(self, agent_ctx: Any, params: AskOwnerParams) -> AskOwnerOutcome:
        """`ask_owner` of a managed agent."""
        ...


class OwnerQuestionRecorder(Protocol):
    """What the `ask_owner` tool needs: the controller, or a tmux worker's `OwnerQuestions`."""

    async def ask_owner(self, agent_ctx: Any, params: AskOwnerParams) -> AskOwnerOutcome:
        """Record the question of the agent behind `agent_ctx`."""
        ...


def output_dir() -> Path:
    """Where full texts of truncated tool results are kept: `<data root>/tool-output` (0700)."""
    return corral_home() / "tool-output"


def _write_private(directory: Path, stem: str, text: str) -> Path:
    ensure_private_dir(directory)
    path = directory / f"{stem}-{uuid.uuid4().hex}.txt"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def shape_text(text: str, details: dict[str, Any], *, stem: str, directory: Path | None = None) -> str:
    """Head-truncate `text` to the tool-output bounds (2000 lines / 50 KB).

    When something is cut, the full text is saved to a private 0600 file and
    `details["full_output_path"]` names it.
    """
    cut = truncate_head(text)
    if not cut.truncated:
        return text
    path = _write_private(directory or output_dir(), stem, text)
    details["full_output_path"] = str(path)
    return (
        f"{cut.content}\n\n[Output truncated: {cut.output_lines} of {cut.total_lines} lines shown. "
        f"Full output: {path}]"
    )


def error_result(
    exc: BaseException, operation: str, *, next_actions: Mapping[str, str] | None = None
) -> ToolResult:
    """The one mapping from an exception to the surface's error result.

    `details` is `{ok: false, error}` with the structured error of
    `error_details`; the error gets a default `nextAction` for its category
    (from `next_actions`, default the agent surface's) when the raiser gave
    none. The text says what failed and what to do.
    """
    error = error_details(exc, operation=operation)
    defaults = DEFAULT_NEXT_ACTIONS if next_actions is None else next_actions
    if "nextAction" not in error and error["category"] in defaults:
        error["nextAction"] = defaults[error["category"]]
    return ToolResult.text(render_error(error), details={"ok": False, "error": error}, is_error=True)


@dataclass
class TurnGuide:
    """Remembers the assistant turn that already got the delegation guidance.

    The only thing a surface remembers: the tool-call ids of the one assistant
    message that was last guided, so parallel delegations in one turn send the
    hidden guidance once.
    """

    guided: frozenset[str] = field(default_factory=frozenset)
    """Tool-call ids of the last guided assistant message."""

    def send_once(self, caller: Caller, call_id: str) -> None:
        """Steer the guidance into the caller unless this turn already got it."""
        turn = _turn_call_ids(caller, call_id)
        if call_id in self.guided:
            return
        self.guided = turn
        caller.agent.send_custom_message(
            CustomMessage(custom_type=DELEGATION_GUIDANCE_TYPE, content=DELEGATION_GUIDANCE, display=False),
            deliver_as="steer",
        )


def _turn_call_ids(caller: Caller, call_id: str) -> frozenset[str]:
    for message in reversed(caller.agent.messages):
        if isinstance(message, AssistantMessage):
            ids = frozenset(call.id for call in message.tool_calls)
            if call_id in ids:
                return ids
    return frozenset({call_id})


def field_schema(name: str, *, single_action: bool = False) -> dict[str, Any]:
    """The JSON schema of one wire field (with its description), generated from its command model.

    `single_action` drops the description's "which actions" prefix (per-operation tools).
    """
    from ._schema import field_schema as model_field_schema
    from .agent._wire import WIRE_FIELDS

    schema = model_field_schema(WIRE_FIELDS[name])
    description = FIELD_DESCRIPTIONS[name]
    if single_action and ": " in description:
        description = description.split(": ", 1)[1]
        description = description[:1].upper() + description[1:]
    schema["description"] = description
    return schema


class SurfaceTool(AgentTool):
    """Base of the agent-surface tools: dispatch one validated call to the controller."""

    parameters = PASS_THROUGH_SCHEMA
    model_parameters: dict[str, Any]
    """The schema offered to the model (see the module docstring)."""

    def __init__(self, controller: AgentController, caller: Caller, guide: TurnGuide) -> None:
        self._controller = controller
        self._caller = caller
        self._guide = guide

    def definition(self) -> ToolDefinition:
        """The tool as offered to the model, with its descriptive schema."""
        return ToolDefinition(name=self.name, description=self.description, parameters=self.model_parameters)

    async def _run(self, call_id: str, params: ActionParams) -> ToolResult:
        action: ActionName = params.action
        try:
            result = await self._dispatch(params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return error_result(exc, action)
        details = result.to_details()
        details.setdefault("action", action)
        text = shape_text(render_result(details), details, stem=f"agent-{action}")
        if action in ("delegate", "continue"):
            self._guide.send_once(self._caller, call_id)
        return ToolResult.text(text, details=details)

    async def _dispatch(
        self, params: ActionParams
    ) -> (
        ListResult
        | DelegateResult
        | SteerResult
        | ReplyResult
        | CloseResult
        | InspectResult
        | TranscriptResult
    ):
        controller, caller = self._controller, self._caller
        match params:
            case ListParams():
                return await controller.list(caller, params)
            case DelegateParams():
                return await controller.delegate(caller, params)
            case ContinueParams():
                return await controller.continue_(caller, params)
            case SteerParams():
                return await controller.steer(caller, params)
            case InterruptParams():
                return await controller.interrupt(caller, params)
            case ReplyParams():
                return await controller.reply(caller, params)
            case CloseParams():
                return await controller.close(caller, params)
            case InspectParams():
                return await controller.inspect(caller, params)
            case TranscriptParams():
                return await controller.transcript(caller, params)
