"""`McpServers`: the MCP servers of one host process, shared by its agents, and what each agent got.

One per process that runs agents (the lead's host, a tmux worker, a Ray worker actor): one
`ServerConnection` per configured server, made and started the first time an agent that has the
server needs its tools. `toolset(grant)` is what an agent gets: the tools of its granted servers
(only the read-only ones for a read agent) and a `McpReport` that names every server — those whose
tools it got, and those it did not get and why (failed to start, not configured, not granted).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ._connection import ServerConnection
from ._grant import McpGrant, lead_grant
from ._search import McpToolSearch, ToolSearchMode, deferred
from ._tool import McpTool, is_read_only

if TYPE_CHECKING:
    from corral.agent import AgentSession, AgentTool
    from corral.settings import McpServerSettings, Settings

__all__ = ["McpReport", "McpServers", "McpToolset", "ServerOutcome"]

OutcomeState = Literal["ready", "failed", "missing"]
"""`ready` (its tools are the agent's), `failed` (it did not start, or is down), `missing` (not
configured, disabled, or not among the servers of the agent's parent)."""


@dataclass(frozen=True)
class ServerOutcome:
    """One granted (or asked-for) server, as an agent got it."""

    name: str
    state: OutcomeState
    tools: tuple[str, ...] = ()
    """The tools the agent got, by the names it sees."""
    withheld: tuple[str, ...] = ()
    """Tools left out because the agent is a read agent and they are not annotated read-only."""
    problem: str | None = None
    """Why it is `failed` or `missing`."""

    def to_json(self) -> dict[str, object]:
        """The outcome as a JSON object."""
        data: dict[str, object] = {"state": self.state, "tools": list(self.tools)}
        if self.withheld:
            data["withheld"] = list(self.withheld)
        if self.problem is not None:
            data["problem"] = self.problem
        return data


@dataclass(frozen=True)
class McpReport:
    """What an agent got of its MCP servers (a delegate or spawn result carries it)."""

    servers: tuple[ServerOutcome, ...] = ()
    read_only: bool = False
    """Whether only read-only tools were given (a read agent)."""
    listed_here: bool = True
    """`False`: the agent runs on a worker, which opens its own sessions; this is the host's listing."""
    searched: bool = False
    """Whether the agent gets the tools through `mcp_tool_search` (loaded on demand) rather than all
    in every request."""

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Every tool the agent got."""
        return tuple(name for outcome in self.servers for name in outcome.tools)

    def to_details(self) -> dict[str, object]:
        """The report as a result's `mcp` details."""
        data: dict[str, object] = {
            "servers": {outcome.name: outcome.to_json() for outcome in self.servers},
            "readOnly": self.read_only,
        }
        if not self.listed_here:
            data["openedBy"] = "worker"
        if self.searched:
            data["toolSearch"] = True
        return data


@dataclass(frozen=True)
class McpToolset:
    """An agent's MCP tools and the report of what it got."""

    tools: tuple[McpTool, ...] = ()
    report: McpReport = field(default_factory=McpReport)


class McpServers:
    """The MCP servers of one host process (see the module docstring).

    Args:
        servers: The `[mcp_servers]` settings.
        cwd: Where stdio servers run (and a relative `cwd` setting is resolved); default: this
            process's working directory.
        log_dir: Where the servers' stderr logs go; default `<data root>/mcp-servers`, `None` keeps none.
        tool_search: `mcp_tool_search`: whether agents get the tools through the search tool
            (`auto`: above `tool_search_threshold` of their context window).
    """

    def __init__(
        self,
        servers: Mapping[str, McpServerSettings],
        *,
        cwd: Path | None = None,
        log_dir: Path | Literal["default"] | None = "default",
        tool_search: ToolSearchMode = "auto",
        tool_search_threshold: float = 0.1,
    ) -> None:
        self.configs = dict(servers)
        self.tool_search: ToolSearchMode = tool_search
        self.tool_search_threshold = tool_search_threshold
        self._cwd = cwd if cwd is not None else Path(os.getcwd())
        if log_dir == "default":
            from corral._paths import corral_home

            log_dir = corral_home() / "mcp-servers"
        self._log_dir: Path | None = log_dir
        self._connections: dict[str, ServerConnection] = {}
        self._grants: dict[str, McpGrant] = {}
        self._closed = False

    @classmethod
    def from_settings(cls, settings: Settings, *, cwd: Path | None = None) -> McpServers:
        """The servers of `settings`' `[mcp_servers]`, with its tool search settings."""
        return cls(
            settings.mcp_servers,
            cwd=cwd,
            tool_search=settings.mcp_tool_search,
            tool_search_threshold=settings.mcp_tool_search_threshold,
        )

    def lead_grant(self) -> McpGrant:
        """Every enabled server: the lead's grant."""
        return lead_grant(self.configs)

    def remember(self, session_id: str, grant: McpGrant) -> None:
        """`grant` is the agent of `session_id`'s: the agents it starts get no more (`grant_of`)."""
        self._grants[session_id] = grant

    def grant_of(self, session_id: str) -> McpGrant | None:
        """The grant remembered for the agent of `session_id`, or `None`."""
        return self._grants.get(session_id)

    def connection(self, name: str) -> ServerConnection:
        """The session of the configured server `name` (made, not started, on first use).

        Raises:
            KeyError: No server of that name is configured.
        """
        existing = self._connections.get(name)
        if existing is None:
            existing = ServerConnection(name, self.configs[name], cwd=self._cwd, log_dir=self._log_dir)
            self._connections[name] = existing
        return existing

    @property
    def started(self) -> Mapping[str, ServerConnection]:
        """The servers whose session was made in this process, by name."""
        return dict(self._connections)

    async def toolset(self, grant: McpGrant, *, missing: Sequence[str] = ()) -> McpToolset:
        """The tools of `grant`'s servers (started now if they are not) and the report.

        `missing`: servers the agent's definition asked for that its parent does not have; named
        in the report. Raises only on cancellation.
        """
        names = [name for name in grant.servers if name in self.configs and self.configs[name].enabled]
        connections = [self.connection(name) for name in names]
        if connections:
            await asyncio.gather(*(connection.start() for connection in connections))
        outcomes: list[ServerOutcome] = []
        tools: list[McpTool] = []
        by_name = {connection.name: connection for connection in connections}
        for name in grant.servers:
            connection = by_name.get(name)
            if connection is None:
                config = self.configs.get(name)
                problem = (
                    "not configured in [mcp_servers]" if config is None else "disabled (enabled = false)"
                )
                outcomes.append(ServerOutcome(name, "missing", problem=problem))
                continue
            if connection.state != "ready":
                problem = connection.problem or "it is not running"
                if connection.state == "failed":
                    problem = f"failed to start: {problem}"
                outcomes.append(ServerOutcome(name, "failed", problem=problem))
                continue
            given: list[McpTool] = []
            withheld: list[str] = []
            for tool in connection.tools:
                mcp_tool = McpTool(connection, tool)
                if grant.read_only and not is_read_only(tool):
                    withheld.append(mcp_tool.name)
                else:
                    given.append(mcp_tool)
            tools.extend(given)
            outcomes.append(
                ServerOutcome(name, "ready", tools=tuple(t.name for t in given), withheld=tuple(withheld))
            )
        for name in missing:
            config = self.configs.get(name)
            if config is None:
                problem = "not configured in [mcp_servers]"
            elif not config.enabled:
                problem = "disabled (enabled = false)"
            else:
                problem = "not among the MCP servers of the agent that started it"
            outcomes.append(ServerOutcome(name, "missing", problem=problem))
        return McpToolset(tuple(tools), McpReport(tuple(outcomes), read_only=grant.read_only))

    def offer(self, agent: AgentSession, toolset: McpToolset) -> tuple[list[AgentTool], McpReport]:
        """What `agent` is given of `toolset`: its tools, or — when they would take too much of its
        context window (`_search.deferred`) — the `mcp_tool_search` tool that loads them on demand."""
        window = agent.model.info.context_window
        tools = toolset.tools
        if not deferred(tools, mode=self.tool_search, threshold=self.tool_search_threshold, window=window):
            return list(tools), toolset.report
        return [McpToolSearch(tools, agent.register_tool)], replace(toolset.report, searched=True)

    async def give(self, agent: AgentSession, grant: McpGrant, *, missing: Sequence[str] = ()) -> McpReport:
        """Start `grant`'s servers (those not started yet in this process), give `agent` their tools
        (`offer`) and remember its grant (the agents it starts get no more); what it got."""
        tools, report = self.offer(agent, await self.toolset(grant, missing=missing))
        for tool in tools:
            agent.register_tool(tool)
        self.remember(agent.session.session_id, grant)
        return report

    def source(
        self, agent: AgentSession, grant: McpGrant, on_report: Callable[[McpReport], None] | None = None
    ) -> Callable[[], Awaitable[Sequence[AgentTool]]]:
        """An `add_tool_source` for `agent` and `grant`: the servers start on the agent's first run,
        and it gets their tools as `offer` gives them."""

        async def tools() -> Sequence[AgentTool]:
            offered, report = self.offer(agent, await self.toolset(grant))
            if on_report is not None:
                on_report(report)
            return offered

        return tools

    async def aclose(self) -> None:
        """End every session of this process (the stdio servers exit)."""
        if self._closed:
            return
        self._closed = True
        await asyncio.gather(*(connection.aclose() for connection in self._connections.values()))
