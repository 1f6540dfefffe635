"""The lead's agents as a front end reads and controls them: the port the terminal app uses.

The composition root builds one per attached lead (`Launched.agents`). A front end reads typed
rows and records through it — the controller's projection of managed agents, the teams core's
rows of teams agents (their phase as `get_agent_status` reports it), a run's in-process session to
follow its transcript — and controls agents through the same checked calls the lead's tools make.
It never reaches into the host's live maps or its store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.agent import AgentSession, SessionStats
    from corral.orchestration import (
        AgentView,
        Caller,
        Controller,
        GenerationRecord,
        HandoffResult,
        ListResult,
    )
    from corral.orchestration.teams._status import TeamAgentRow, TeamSnapshot
    from corral.orchestration.teams._teams import Teams
    from corral.orchestration.worktrees._worktrees import MergeOutcome

    from ._host import ComposedHost as Host

__all__ = ["LeadAgents"]


class LeadAgents:
    """One lead's agents, managed and teams, for a front end.

    Args:
        host: The orchestration host the lead is attached to.
        caller: The lead's controller identity (every control is checked against it).
    """

    def __init__(self, host: Host, caller: Caller) -> None:
        self._host = host
        self.caller = caller

    @property
    def controller(self) -> Controller:
        """The managed agents' controller (`steer`, `reply`, `interrupt`, `close`, …, as the `agent` tool)."""
        return self._host.controller

    @property
    def teams(self) -> Teams:
        """The teams core (`send_message`, `interrupt_teammate`, `stop_teammate`, `status`, …, as the teams tools)."""
        return self._host.teams

    def views(self) -> tuple[AgentView, ...]:
        """The managed agents the lead sees, projected from one store snapshot (what `list` renders)."""
        return self._host.controller.views(self.caller)

    def rate_limit_waits(self, views: Sequence[AgentView]) -> Mapping[str, str]:
        """`waiting (rate limit, Ns)` by run id, for those of `views` whose model request waits for the
        shared limiter (from memory for this process's runs, from the store for the others')."""
        return self._host.controller.rate_limit_waits([view.generation for view in views])

    async def list_agents(self) -> ListResult:
        """The lead's `list`: its agents, the definitions and any invalid definition files."""
        from corral.orchestration.surfaces import ListParams

        return await self._host.controller.list(self.caller, ListParams())

    def tree(self) -> list[GenerationRecord]:
        """The live generations the lead owns, transitively."""
        return self._host.tree(self.caller.session_id)

    def generation(self, run_id: str) -> GenerationRecord | None:
        """The generation `run_id` (live or not), as the store has it."""
        return self._host.kernel.get_generation(run_id)

    def session(self, run_id: str) -> AgentSession | None:
        """The agent session of `run_id` when it runs in this process (managed or teams), else `None`."""
        child = self._host.runs.child(run_id)
        return None if child is None else child.agent

    def sessions(self) -> list[tuple[str, AgentSession]]:
        """Every run in this process with its agent session, by run id."""
        return [(child.run_id, child.agent) for child in self._host.runs.children()]

    def team_snapshot(self) -> TeamSnapshot:
        """The lead's teams members and their generations, read from the store now."""
        return self._host.teams.snapshot(self.caller.session_id)

    def team_rows(self, snapshot: TeamSnapshot, *, now_ms: int) -> list[TeamAgentRow]:
        """The lead's teams agents (members with their phase, then queued spawns) at `now_ms`."""
        return self._host.teams.agent_rows(snapshot, now_ms=now_ms)

    def budget(self, run_id: str) -> Mapping[str, object] | None:
        """The run's `budget` (spend, limits, what stopped it) when a limit applies, else `None`."""
        budget = self._host.extensions.status_fields(run_id).get("budget")
        return budget if isinstance(budget, Mapping) else None

    def tree_budget(self, lead: SessionStats | None = None) -> str | None:
        """`tree budget: 9,300 / 10,000 tok …`: the lead's agent tree against its budget, if it has one,
        then the lead's own spend from `lead` (`; lead (not counted): 1,200 tok, $0.04`)."""
        from corral.orchestration.budgets import lead_line

        line = self._host.budgets.tree_line(self.caller.session_id)
        if line is None or lead is None:
            return line
        return f"{line}; {lead_line(lead.tokens.total, lead.cost)}"

    async def merge(self, agent: str, *, discard: bool = False) -> MergeOutcome:
        """Merge an isolated writer's branch into the working tree, or discard it (`corral merge`)."""
        import asyncio

        from corral.orchestration.worktrees._extension import worktrees_of

        trees = worktrees_of(self._host.extensions, self._host.kernel.db)
        return await asyncio.to_thread(trees.discard if discard else trees.merge, agent)

    def handoff_target(self) -> str:
        """Where `handoff` moves an agent: the `runtime` setting when it names a worker runtime
        (`tmux`, `ray`), else `tmux`."""
        return self._host.handoff_target()

    async def handoff(self, run_id: str, *, runtime: str | None = None) -> HandoffResult:
        """Move the in-process agent `run_id` onto a worker runtime at a safe point (`Host.handoff`):
        `runtime`, else `handoff_target()`."""
        return await self._host.handoff(run_id, runtime=runtime)
