"""The teams tool surface: `spawn_agent`, `send_message`, `report_and_exit`, … over the teams core.

Like the agent surface, each tool validates its arguments (`_teams_params`),
calls one method of the teams core, and shapes the answer; any exception
becomes an error result the model can act on. Which caller gets which tool
follows `spec/teams-detail.md` §1.1: `teams_lead_tools` for the lead,
`team_member_tools` for a spawned agent (by role, depth and opt-in).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from corral.agent import AgentTool, ToolResult, ToolUpdate
from corral.llm import ToolDefinition
from corral.orchestration.errors import InvalidRequestError
from corral.orchestration.kernel import Caller
from corral.orchestration.surfaces._common import PASS_THROUGH_SCHEMA, error_result
from corral.orchestration.surfaces.agent._render import TEAMS_TOOL_NAMES

from ._render import (
    claim_details,
    claims_details,
    health_details,
    inbox_details,
    interrupt_details,
    message_sent_details,
    receipt_details,
    release_details,
    render_claim,
    render_claims,
    render_health,
    render_inbox,
    render_interrupt,
    render_message_sent,
    render_receipt,
    render_release,
    render_spawn,
    render_status,
    render_stop,
    render_swarm,
    spawn_details,
    status_details,
    stop_details,
    swarm_details,
)
from ._wire import (
    TEAMS_SCHEMAS,
    parse_agent_name,
    parse_claim,
    parse_list_claims,
    parse_nested_spawn,
    parse_nested_swarm,
    parse_read_inbox,
    parse_report,
    parse_send_message,
    parse_spawn,
    parse_status,
    parse_stop,
    parse_swarm,
)

if TYPE_CHECKING:
    from corral.orchestration.teams._member import MemberTeams, TeamChild
    from corral.orchestration.teams._teams import Teams

__all__ = [
    "TEAMS_LEAD_TOOL_NAMES",
    "TEAMS_NEXT_ACTIONS",
    "TeamsTool",
    "team_member_tools",
    "teams_lead_tools",
]

_T = TypeVar("_T")

Handler = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]
"""A tool's body: `(call_id, params) -> result` (the call id is the runtime's submission id)."""

_DESCRIPTIONS: dict[str, str] = {
    "spawn_agent": "Start one agent and return at once; its full report arrives later as a new turn.",
    "spawn_swarm_agents": (
        "Start several agents; all tiers are checked first, and one member's failure does not stop the others."
    ),
    "get_agent_status": "Your agents' state. Reports arrive on their own: never poll.",
    "check_teammate": "Diagnose one agent, or recover the report of one that left.",
    "interrupt_teammate": "Cancel one agent's running call; it keeps its session and waits for your message.",
    "stop_teammate": "Stop an agent, or cancel it while queued.",
    "send_message": (
        "Message a running agent or team-lead; a working recipient gets it as steering. Grants no authority."
    ),
    "read_inbox": "Read your stored messages.",
    "report_and_exit": "Finish with one final report; the first accepted one ends your work.",
    "claim_file": "Claim files before editing them (all or nothing).",
    "release_file": "Release files you claimed.",
    "list_file_claims": "List the team's file claims.",
}

TEAMS_NEXT_ACTIONS: dict[str, str] = {
    "invalid_request": "Fix the fields the message names and call again.",
    "target_not_found": "Call get_agent_status once for the current names; use an exact name from it.",
    "agent_busy": "Do not poll: end your turn and wait for reports, or stop the agent if it is no longer needed.",
    "target_ambiguous": "Call get_agent_status once; act only on an agent whose state is clear.",
}
"""What to do next, per error category, for the teams tools."""

TEAMS_LEAD_TOOL_NAMES: tuple[str, ...] = TEAMS_TOOL_NAMES
"""The teams tools registered on the lead, in order."""


class TeamsTool(AgentTool):
    """One teams tool: a schema for the model and a handler over the teams core."""

    parameters = PASS_THROUGH_SCHEMA

    def __init__(
        self, name: str, handler: Handler, *, schema_key: str | None = None, description: str | None = None
    ) -> None:
        self.name = name
        self.label = name.replace("_", " ")
        self.description = description or _DESCRIPTIONS[name]
        self._schema = TEAMS_SCHEMAS[schema_key or name]
        self._handler = handler
        self.prompt_snippet = f"{name}: {self.description.split('. ')[0]}"

    def definition(self) -> ToolDefinition:
        """The tool as offered to the model."""
        return ToolDefinition(name=self.name, description=self.description, parameters=self._schema)

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        """Run the handler; errors become error results naming what to do."""
        try:
            return await self._handler(call_id, params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return error_result(exc, self.name, next_actions=TEAMS_NEXT_ACTIONS)


def teams_lead_tools(teams: Teams, caller: Caller) -> list[AgentTool]:
    """The teams surface of the lead."""

    async def spawn(call_id: str, params: dict[str, Any]) -> ToolResult:
        outcome = await teams.spawning.spawn(caller, parse_spawn(params))
        return ToolResult.text(render_spawn(outcome), details=spawn_details(outcome))

    async def swarm(call_id: str, params: dict[str, Any]) -> ToolResult:
        outcome = await teams.spawning.spawn_swarm(caller, parse_swarm(params), submission_id=call_id)
        return ToolResult.text(render_swarm(outcome), details=swarm_details(outcome), is_error=outcome.failed)

    async def status(call_id: str, params: dict[str, Any]) -> ToolResult:
        snapshot = await teams.control.status(caller, parse_status(params).agent_name)
        return ToolResult.text(render_status(snapshot), details=status_details(snapshot))

    async def check(call_id: str, params: dict[str, Any]) -> ToolResult:
        name = parse_agent_name(params, tool="check_teammate").agent_name
        health = await teams.control.check_teammate(caller, name)
        return ToolResult.text(render_health(health), details=health_details(health))

    async def interrupt(call_id: str, params: dict[str, Any]) -> ToolResult:
        name = parse_agent_name(params, tool="interrupt_teammate").agent_name
        interrupted = await teams.control.interrupt_teammate(caller, name)
        return ToolResult.text(render_interrupt(interrupted), details=interrupt_details(interrupted))

    async def stop(call_id: str, params: dict[str, Any]) -> ToolResult:
        request = parse_stop(params)
        stopped = await teams.control.stop_teammate(caller, request.agent_name, request.reason)
        return ToolResult.text(render_stop(stopped), details=stop_details(stopped))

    async def send(call_id: str, params: dict[str, Any]) -> ToolResult:
        sent = await teams.messages.send_message(caller, parse_send_message(params, lead=True))
        return ToolResult.text(render_message_sent(sent), details=message_sent_details(sent))

    async def inbox(call_id: str, params: dict[str, Any]) -> ToolResult:
        inbox = await teams.messages.read_inbox(caller, parse_read_inbox(params, lead=True))
        return ToolResult.text(render_inbox(inbox), details=inbox_details(inbox))

    async def report(call_id: str, params: dict[str, Any]) -> ToolResult:
        raise InvalidRequestError(
            "report_and_exit is for spawned agents; the lead answers the user directly."
        )

    async def claim(call_id: str, params: dict[str, Any]) -> ToolResult:
        raise InvalidRequestError("Leads should use list_file_claims; claims are for edit agents.")

    async def claims(call_id: str, params: dict[str, Any]) -> ToolResult:
        parse_list_claims(params)
        listed = teams.control.list_file_claims(caller)
        return ToolResult.text(render_claims(listed), details=claims_details(listed))

    handlers: dict[str, Handler] = {
        "spawn_agent": spawn,
        "spawn_swarm_agents": swarm,
        "get_agent_status": status,
        "check_teammate": check,
        "interrupt_teammate": interrupt,
        "stop_teammate": stop,
        "send_message": send,
        "read_inbox": inbox,
        "report_and_exit": report,
        "claim_file": claim,
        "release_file": claim,
        "list_file_claims": claims,
    }
    return [TeamsTool(name, handlers[name]) for name in TEAMS_LEAD_TOOL_NAMES]


async def _answer(value: _T | Awaitable[_T]) -> _T:
    """A port's answer: at once in the lead's process, later where it crosses the network."""
    if inspect.isawaitable(value):
        return await value
    return value


def team_member_tools(teams: MemberTeams, child: TeamChild) -> list[AgentTool]:
    """The teams tools of one spawned agent: messaging and reporting, claims for writers, nested spawning
    for an eligible writer. The same tools run in the lead's process, in a tmux worker and on a Ray
    worker; only `teams` (the port) differs."""
    member = child.member

    async def send(call_id: str, params: dict[str, Any]) -> ToolResult:
        sent = await teams.send_message(child, parse_send_message(params, lead=False))
        return ToolResult.text(render_message_sent(sent), details=message_sent_details(sent))

    async def inbox(call_id: str, params: dict[str, Any]) -> ToolResult:
        inbox = await teams.read_inbox(child, parse_read_inbox(params, lead=False))
        return ToolResult.text(render_inbox(inbox), details=inbox_details(inbox))

    async def report(call_id: str, params: dict[str, Any]) -> ToolResult:
        receipt = await teams.submit_report(child, parse_report(params), submission_id=call_id)
        return ToolResult(
            [*ToolResult.text(render_receipt(receipt)).content],
            details=receipt_details(receipt),
            terminate=receipt.accepted,
        )

    tools: list[AgentTool] = [
        TeamsTool("send_message", send, schema_key="send_message#agent"),
        TeamsTool("read_inbox", inbox, schema_key="read_inbox#agent"),
        TeamsTool("report_and_exit", report),
    ]
    if member.kind == "write":

        async def claim(call_id: str, params: dict[str, Any]) -> ToolResult:
            claimed = await _answer(teams.claim_files(child, parse_claim(params, tool="claim_file").paths))
            return ToolResult.text(render_claim(claimed), details=claim_details(claimed))

        async def release(call_id: str, params: dict[str, Any]) -> ToolResult:
            released = await _answer(
                teams.release_files(child, parse_claim(params, tool="release_file").paths)
            )
            return ToolResult.text(render_release(released), details=release_details(released))

        async def claims(call_id: str, params: dict[str, Any]) -> ToolResult:
            parse_list_claims(params)
            listed = await _answer(teams.list_file_claims(child))
            return ToolResult.text(render_claims(listed), details=claims_details(listed))

        tools += [
            TeamsTool("claim_file", claim),
            TeamsTool("release_file", release),
            TeamsTool("list_file_claims", claims),
        ]
    if child.delegating and member.depth == 0:
        helper_caller = Caller(child.agent, scope="managed-agent", run_id=child.run_id, label=child.label)

        async def spawn(call_id: str, params: dict[str, Any]) -> ToolResult:
            outcome = await teams.spawn(helper_caller, parse_nested_spawn(params), parent=child)
            return ToolResult.text(render_spawn(outcome), details=spawn_details(outcome))

        async def swarm(call_id: str, params: dict[str, Any]) -> ToolResult:
            outcome = await teams.spawn_swarm(helper_caller, parse_nested_swarm(params), parent=child)
            return ToolResult.text(
                render_swarm(outcome), details=swarm_details(outcome), is_error=outcome.failed
            )

        async def status(call_id: str, params: dict[str, Any]) -> ToolResult:
            snapshot = await teams.status(child, parse_status(params).agent_name)
            return ToolResult.text(render_status(snapshot), details=status_details(snapshot))

        nested = (
            "Read helpers only (canonical read-* tiers); they share your cwd, report back to you, and you stay "
            "alive until they settle."
        )
        tools += [
            TeamsTool(
                "spawn_agent",
                spawn,
                schema_key="spawn_agent#nested",
                description="Start one read helper for a bounded question. " + nested,
            ),
            TeamsTool(
                "spawn_swarm_agents",
                swarm,
                schema_key="spawn_swarm_agents#nested",
                description="Start several read helpers at once. " + nested,
            ),
            TeamsTool("get_agent_status", status),
        ]
    return tools
