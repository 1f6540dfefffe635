"""The multiplexed `agent` tool: nine actions behind one `action` field.

Its JSON schema is one object with a required `action` enum and every field
of every action as an optional property. That flat shape is what providers
handle reliably (a `oneOf` per action is often rejected or ignored); the
per-action rules — which fields an action takes, which are required — are
enforced by `parse_action`, which also tolerates the `null`/empty values
providers send for the fields of other actions.
"""

from __future__ import annotations

from typing import Any

from corral.agent import ToolResult, ToolUpdate
from corral.orchestration.surfaces._common import SurfaceTool, error_result, field_schema

from ._wire import ACTION_FIELDS, ACTIONS, parse_action

__all__ = ["AGENT_TOOL_DESCRIPTION", "MultiplexedAgentTool", "agent_tool_schema"]

AGENT_TOOL_DESCRIPTION = (
    "Manage agents that work for you. Actions: "
    "list (your agents, their states and available_actions, and the definitions); "
    "delegate (start an agent on one self-contained task: definition, task, optional label, cwd, files, "
    "fork, timeoutMs); continue (a new task on a saved agent session you own: session, task, optional "
    "files, timeoutMs); steer (adjust the current task without cancelling: agent, message, files); "
    "interrupt (cancel the agent's current operation and continue with your message: agent, message, "
    "files); reply (answer an agent's question: agent, message, files); close (stop an agent and its "
    "agents: agent); inspect (live activity of an agent: agent); transcript (its saved conversation: "
    "agent). Send only the fields of the action you call. Results and questions are delivered to you as "
    "messages and wake you: do not poll. Use only actions listed in an agent's available_actions."
)
"""Description of the `agent` tool."""


def agent_tool_schema() -> dict[str, Any]:
    """The JSON schema offered to the model: `action` required, every other field optional."""
    names: list[str] = []
    for action in ACTIONS:
        for name in ACTION_FIELDS[action]:
            if name not in names:
                names.append(name)
    properties: dict[str, Any] = {
        "action": {"type": "string", "enum": list(ACTIONS), "description": "The action to run."}
    }
    properties.update({name: field_schema(name) for name in names})
    return {"type": "object", "properties": properties, "required": ["action"], "additionalProperties": False}


class MultiplexedAgentTool(SurfaceTool):
    """The `agent` tool (multiplexed surface)."""

    name = "agent"
    label = "Agent"
    description = AGENT_TOOL_DESCRIPTION
    model_parameters = agent_tool_schema()
    prompt_snippet = "agent: delegate work to managed agents and control them (list, delegate, steer, …)"
    prompt_guidelines = (
        "Delegate self-contained tasks with the agent tool; each assignment has one executor.",
        "Never poll agents: results and questions arrive as messages.",
    )

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        """Validate the call, run its action, shape the result."""
        try:
            parsed = parse_action(params)
        except Exception as exc:
            action = params.get("action") if isinstance(params, dict) else None
            return error_result(exc, action if isinstance(action, str) and action in ACTIONS else "agent")
        return await self._run(call_id, parsed)
