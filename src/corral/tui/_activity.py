"""The app's model of its agents: one `TrackedAgent` per run, in one mapping (`AgentActivity`).

Every run the app follows is one `TrackedAgent`, keyed by its run id: a managed agent the
controller lists, or an agent session running in this process (managed or teams, nested read
helpers too). It holds what the controller says about a managed agent, the agent's latest progress
line (from its events), the cost its session reported and the subscription to those events.

The app keeps its activity rows in a reactive attribute (`CorralApp.rows`): on a host change it
calls `refresh`, on a host change and on its clock it sets `rows` from `rows()`, and the widgets
update in the attribute's watcher. A run that has left the controller's list, this process and the
teams rows is dropped when the rows are next computed; its cost stays in the total (`cost_summary`).

Nothing here imports Textual: the app passes in what an agent's events should post.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from corral.agent import MessageEndEvent, ToolExecutionStartEvent
from corral.llm import AssistantMessage
from corral.tui._format import (
    ActivityRow,
    CostSummary,
    ManagedAgent,
    Progress,
    activity_row,
    format_budget,
    latest_progress,
    summarize_args,
)
from corral.tui._teams import TeamRowsReader, TeamsSource, team_rows

if TYPE_CHECKING:
    from corral.agent import AgentEvent, AgentSession
    from corral.orchestration import AgentView, Caller

__all__ = ["AgentActivity", "AgentsSource", "TrackedAgent"]


class AgentsSource(TeamsSource, Protocol):
    """What the model reads: the lead's agents port (`LeadAgents`)."""

    @property
    def caller(self) -> Caller:
        """The lead's controller identity."""
        ...

    def views(self) -> Sequence[AgentView]:
        """The managed agents the lead sees (the controller's projection)."""
        ...

    def rate_limit_waits(self, views: Sequence[AgentView]) -> Mapping[str, str]:
        """The rate-limit waits of `views` by run id (`waiting (rate limit, 7s)`)."""
        ...

    def sessions(self) -> Sequence[tuple[str, AgentSession]]:
        """Every run in this process with its agent session."""
        ...

    def session(self, run_id: str) -> AgentSession | None:
        """The run's agent session when it runs in this process."""
        ...

    def budget(self, run_id: str) -> Mapping[str, object] | None:
        """The run's budget when a limit applies."""
        ...


@dataclass(slots=True)
class TrackedAgent:
    """One run as the app follows it."""

    run_id: str
    """The run (the key of `AgentActivity.agents`)."""
    managed: ManagedAgent | None = None
    """The controller's view of it at the last refresh; `None` for a teams agent or a helper, and
    for a managed agent no longer listed."""
    in_process: bool = False
    """Its session was running in this process at the last refresh."""
    progress: Progress | None = None
    """Its latest tool call or reply line, from its events (`None` before either)."""
    cost: float | None = None
    """USD its session reported so far; `None` while it was never observed in this process."""
    unsubscribe: Callable[[], None] | None = None
    """Ends the subscription to its session's events (`None`: not subscribed)."""


class AgentActivity:
    """The agents the app follows, one `TrackedAgent` per run, and the rows built from them.

    Args:
        on_progress: Called with `(run_id, progress)` when an agent started a tool call or ended
            a reply (the app posts a message; its handler calls `note_progress`).
        on_change: Called when an agent's phase may have changed (a teams agent's row follows it).
    """

    def __init__(
        self,
        *,
        on_progress: Callable[[str, Progress], object],
        on_change: Callable[[], object],
    ) -> None:
        self.on_progress = on_progress
        self.on_change = on_change
        self.agents: dict[str, TrackedAgent] = {}
        """Every run followed, by run id."""
        self.departed_cost = 0.0
        """USD reported by runs no longer followed (kept in the total)."""
        self._managed_order: tuple[str, ...] = ()
        """The managed agents' run ids in the controller's order, as of the last refresh."""
        self._teams = TeamRowsReader()
        """The teams rows' store reads, kept between refreshes (the clock only re-renders)."""

    def _agent(self, run_id: str) -> TrackedAgent:
        agent = self.agents.get(run_id)
        if agent is None:
            agent = self.agents[run_id] = TrackedAgent(run_id)
        return agent

    def refresh(self, agents: AgentsSource) -> None:
        """Read the controller's projection and the sessions running here; subscribe to new ones.

        The projection is the one `list` renders, without `list`'s definition roster (which reads
        the definition files each time).
        """
        managed: list[str] = []
        views = agents.views()
        waits = agents.rate_limit_waits(views)
        for view in views:
            agent = self._agent(view.generation.run_id)
            agent.managed = ManagedAgent.from_view(view, rate_limit=waits.get(view.generation.run_id))
            managed.append(agent.run_id)
        for run_id in set(self._managed_order) - set(managed):
            if (gone := self.agents.get(run_id)) is not None:
                gone.managed = None
        self._managed_order = tuple(managed)
        self._teams.forget()  # read again for the next rows
        running: set[str] = set()
        for run_id, session in agents.sessions():
            running.add(run_id)
            agent = self._agent(run_id)
            if agent.unsubscribe is None:
                self._subscribe(agent, session)
        for agent in self.agents.values():
            agent.in_process = agent.run_id in running

    def _subscribe(self, agent: TrackedAgent, session: AgentSession) -> None:
        # Cost so far once; later replies add their own cost (see `_listener`).
        agent.cost = session.stats().cost
        agent.unsubscribe = session.subscribe(self._listener(agent))
        # What it did before this subscription (a tool call already running) from its transcript;
        # its events keep it current from here.
        seen = latest_progress(session.messages)
        if seen is not None and agent.progress is None:
            agent.progress = seen

    def _listener(self, agent: TrackedAgent) -> Callable[[AgentEvent], None]:
        run_id = agent.run_id

        def listener(event: AgentEvent) -> None:
            if isinstance(event, ToolExecutionStartEvent):
                self.on_progress(run_id, Progress("tool", f"{event.tool_name} {summarize_args(event.args)}"))
            elif isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
                agent.cost = (agent.cost or 0.0) + event.message.usage.cost.total
                lines = [line for line in event.message.text.splitlines() if line.strip()]
                if lines:
                    self.on_progress(run_id, Progress("reply", lines[-1][:80]))
            elif event.type in ("agent_start", "agent_settled", "tool_execution_end"):
                self.on_change()  # a teams agent's phase changed

        return listener

    def note_progress(self, run_id: str, progress: Progress) -> bool:
        """Keep a run's latest progress; `False` (nothing kept) for a run no longer followed."""
        agent = self.agents.get(run_id)
        if agent is None:
            return False
        agent.progress = progress
        return True

    def rows(self, agents: AgentsSource, *, teams: bool, now_ms: int) -> tuple[ActivityRow, ...]:
        """The activity card's rows at `now_ms`: managed agents, then teams agents, then queued
        teams spawns (with `teams`: the lead has the teams surface), each with its budget.

        Runs that appear nowhere any more (not listed, not running here, not a teams row) are
        dropped here; their cost moves to `departed_cost`.
        """
        rows: list[ActivityRow] = []
        for run_id in self._managed_order:
            agent = self.agents[run_id]
            assert agent.managed is not None
            session = agents.session(run_id)
            rows.append(
                activity_row(
                    agent.managed,
                    now_ms=now_ms,
                    progress=agent.progress.text if agent.progress is not None else "",
                    context=None if session is None else session.context_usage(),
                    budget=agents.budget(run_id),
                )
            )
        if teams:
            members = self._teams.read(agents, lead_session_id=agents.caller.session_id, now_ms=now_ms)
            progress = {a.run_id: a.progress for a in self.agents.values() if a.progress is not None}
            for row in team_rows(members, now_ms=now_ms, progress=progress):
                budget = None if row.run_id is None else agents.budget(row.run_id)
                rows.append(replace(row, budget=format_budget(budget)) if budget else row)
        shown = {row.run_id for row in rows if row.is_team}
        for run_id in [r for r, a in self.agents.items() if not (a.managed or a.in_process or r in shown)]:
            self._drop(run_id)
        return tuple(rows)

    def _drop(self, run_id: str) -> None:
        agent = self.agents.pop(run_id)
        if agent.unsubscribe is not None:
            agent.unsubscribe()
        self.departed_cost += agent.cost or 0.0

    def cost_summary(
        self, lead: AgentSession, agents: AgentsSource | None, rows: tuple[ActivityRow, ...]
    ) -> CostSummary:
        """The combined cost of the lead and its agents; incomplete while a reply streams or an
        agent shown in `rows` cannot be observed from this process."""
        incomplete = lead.is_streaming

        def unobserved(run_id: str) -> bool:
            agent = self.agents.get(run_id)
            if agent is None or agent.cost is None:
                return True
            session = agents.session(run_id) if agents is not None else None
            return session is not None and session.is_streaming

        runs = [*self._managed_order, *(row.run_id for row in rows if row.is_team and row.run_id)]
        if any(unobserved(run_id) for run_id in runs):
            incomplete = True
        total = lead.stats().cost + self.departed_cost
        total += sum(agent.cost for agent in self.agents.values() if agent.cost is not None)
        return CostSummary(total, incomplete=incomplete)

    def close(self) -> None:
        """End every subscription and forget every run (the lead's session closed)."""
        for agent in self.agents.values():
            if agent.unsubscribe is not None:
                agent.unsubscribe()
        self.agents.clear()
        self.departed_cost = 0.0
        self._managed_order = ()
        self._teams.forget()
