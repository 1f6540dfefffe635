"""The per-operation surface: `agent_list`, `agent_delegate`, …, one tool per action.

Selected with the setting `agent_tool_style = "per-operation"`. Each tool's
schema holds only its own action's fields; the calls go to the same
controller methods as the multiplexed `agent` tool and return the same
results.
"""

from __future__ import annotations

from typing import Any

from corral.agent import ToolResult, ToolUpdate
from corral.orchestration.kernel._caller import Caller
from corral.orchestration.surfaces._common import (
    AgentController,
    SurfaceTool,
    TurnGuide,
    error_result,
    field_schema,
)

from ._wire import ACTION_FIELDS, ACTIONS, REQUIRED_FIELDS, ActionName, parse_action

__all__ = ["OPERATION_DESCRIPTIONS", "OperationTool", "operation_tool_schema", "operation_tools"]

OPERATION_DESCRIPTIONS: dict[ActionName, str] = {
    "list": "List your agents (state, available_actions, session) and the agent definitions.",
    "delegate": (
        "Start a managed agent on one self-contained task. The result is delivered to you as a message "
        "and wakes you: do not poll."
    ),
    "continue": "Start a new task on a saved agent session you own (the same conversation continues).",
    "steer": "Adjust an agent's current task without cancelling its current operation.",
    "interrupt": "Cancel an agent's current operation; it continues the same task with your message.",
    "reply": "Answer a question an agent asked you with ask_owner.",
    "close": "Stop an agent (and the agents it started); its pending task is abandoned.",
    "inspect": "Live evidence of an agent: recent activity and running commands. Do not poll.",
    "transcript": "The agent's saved conversation (bounded, compaction-aware). Do not poll.",
}
"""Description of each per-operation tool."""


def operation_tool_schema(action: ActionName) -> dict[str, Any]:
    """The JSON schema of `agent_<action>`: only that action's fields."""
    return {
        "type": "object",
        "properties": {name: field_schema(name, single_action=True) for name in ACTION_FIELDS[action]},
        "required": list(REQUIRED_FIELDS[action]),
        "additionalProperties": False,
    }


class OperationTool(SurfaceTool):
    """One per-operation tool, `agent_<action>`."""

    def __init__(
        self, action: ActionName, controller: AgentController, caller: Caller, guide: TurnGuide
    ) -> None:
        super().__init__(controller, caller, guide)
        self.action: ActionName = action
        self.name = f"agent_{action}"
        self.label = f"Agent {action}"
        self.description = OPERATION_DESCRIPTIONS[action]
        self.model_parameters = operation_tool_schema(action)

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        """Validate the call against this action, run it, shape the result."""
        try:
            parsed = parse_action(params, action=self.action)
        except Exception as exc:
            return error_result(exc, self.action)
        return await self._run(call_id, parsed)


def operation_tools(
    controller: AgentController, caller: Caller, guide: TurnGuide | None = None
) -> list[OperationTool]:
    """The nine per-operation tools over one controller."""
    shared = guide or TurnGuide()
    return [OperationTool(action, controller, caller, shared) for action in ACTIONS]
