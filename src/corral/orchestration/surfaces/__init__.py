"""Tool surfaces over the orchestration core: the `agent` tool, the per-operation tools, `ask_owner`.

A surface validates a call, calls one controller method and shapes the
result; it holds no state and runs no SQL. `agent_tools` gives a controller
(the lead, or a delegating agent) its agent surface in the style the
settings choose; `ask_owner_tool` gives a managed agent its question tool.
The teams tools are their own package, `surfaces.teams`, imported only where
they are used, so the `agent` surface never loads the teams core.
`SurfaceTools` is the host's `ToolProvider` (`host.ports`): the one place that
knows both surfaces, and which tools each kind of session gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from corral.orchestration.kernel._caller import Caller

from ._common import (
    DELEGATION_GUIDANCE_TYPE,
    AgentController,
    AskOwnerOutcome,
    OwnerQuestionRecorder,
    SurfaceTool,
    TurnGuide,
    error_result,
)
from .agent._agent_tool import AGENT_TOOL_DESCRIPTION, MultiplexedAgentTool, agent_tool_schema
from .agent._ask_owner import ASK_OWNER_SENT_TEXT, AskOwnerTool, ask_owner_schema
from .agent._operation_tools import OperationTool, operation_tool_schema, operation_tools
from .agent._render import DELEGATION_GUIDANCE, render_error, render_result
from .agent._wire import (
    ACTION_FIELDS,
    ACTIONS,
    LABEL_PATTERN,
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
    parse_action,
    parse_ask_owner,
)

if TYPE_CHECKING:
    from corral.agent import AgentSession, AgentTool
    from corral.orchestration.kernel._child import ManagedChild
    from corral.orchestration.teams._teams import Teams
    from corral.settings import Settings


__all__ = [
    "ACTIONS",
    "ACTION_FIELDS",
    "AGENT_TOOL_DESCRIPTION",
    "ASK_OWNER_SENT_TEXT",
    "DELEGATION_GUIDANCE",
    "DELEGATION_GUIDANCE_TYPE",
    "LABEL_PATTERN",
    "ActionName",
    "ActionParams",
    "AgentController",
    "AskOwnerOutcome",
    "AskOwnerParams",
    "AskOwnerTool",
    "CloseParams",
    "ContinueParams",
    "DelegateParams",
    "InspectParams",
    "InterruptParams",
    "ListParams",
    "MultiplexedAgentTool",
    "OperationTool",
    "OwnerQuestionRecorder",
    "ReplyParams",
    "SteerParams",
    "SurfaceHost",
    "SurfaceTool",
    "SurfaceTools",
    "SurfaceToolsHost",
    "TranscriptParams",
    "TurnGuide",
    "agent_tool_schema",
    "agent_tools",
    "ask_owner_schema",
    "ask_owner_tool",
    "error_result",
    "handle_request",
    "operation_tool_schema",
    "operation_tools",
    "parse_action",
    "parse_ask_owner",
    "render_error",
    "render_result",
]


class SurfaceHost(Protocol):
    """What the surfaces need from the host."""

    @property
    def controller(self) -> AgentController:
        """The orchestration controller."""
        ...

    @property
    def settings(self) -> Settings:
        """The effective settings (`agent_tool_style` picks the surface)."""
        ...


def agent_tools(host: SurfaceHost, caller: Caller) -> list[SurfaceTool]:
    """The agent surface for `caller`: the `agent` tool, or the nine `agent_<action>` tools.

    Args:
        host: Gives the controller and the settings.
        caller: The controller session the tools act for.

    Returns:
        The tools to register on the caller's agent session.
    """
    guide = TurnGuide()
    if host.settings.agent_tool_style == "per-operation":
        return list(operation_tools(host.controller, caller, guide))
    return [MultiplexedAgentTool(host.controller, caller, guide)]


def ask_owner_tool(host: SurfaceHost, agent_ctx: Any, agent: AgentSession) -> AskOwnerTool:
    """The `ask_owner` tool of one managed agent.

    Args:
        host: Gives the controller.
        agent_ctx: The controller's handle on the agent's generation (passed to `Controller.ask_owner`).
        agent: The managed agent's session (its last assistant message proves the call is alone).
    """
    return AskOwnerTool(host.controller, agent_ctx, agent)


class SurfaceToolsHost(SurfaceHost, Protocol):
    """What `SurfaceTools` needs: the controller, the settings and the teams core (made on first use)."""

    @property
    def teams(self) -> Teams:
        """The teams core (made on first use)."""
        ...

    @property
    def has_teams(self) -> bool:
        """Whether the teams core was made (else no teams agent runs here)."""
        ...


class SurfaceTools:
    """The host's `ToolProvider`: the agent surface, the teams surface and `ask_owner`.

    Args:
        host: Gives the controller, the settings and the teams core.
    """

    def __init__(self, host: SurfaceToolsHost) -> None:
        self.host = host

    def lead_tools(self, caller: Caller, surfaces: Sequence[str]) -> list[AgentTool]:
        """`agent` → the agent surface; `teams` → the teams surface (leads only)."""
        tools: list[AgentTool] = []
        if "agent" in surfaces:
            tools += agent_tools(self.host, caller)
        if "teams" in surfaces and caller.scope == "lead":
            from .teams._tools import teams_lead_tools

            tools += teams_lead_tools(self.host.teams, caller)
        return tools

    def child_tools(self, child: ManagedChild) -> list[AgentTool]:
        """A teams agent's member tools; any other managed agent's `ask_owner`."""
        if self.host.has_teams:  # else no teams agent runs here (and the teams core stays unloaded)
            run = self.host.teams.context.child(child.run_id)  # a teams agent's run is live from its build
            if run is not None:
                from .teams._tools import team_member_tools

                return list(team_member_tools(self.host.teams.members, run))
        return [ask_owner_tool(self.host, child, child.agent)]
