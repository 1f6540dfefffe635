"""Which swarm reports wake the lead: a swarm's reports arrive together, at one wake.

A swarm spawned without a completion group delivers every member's full report as before, each
exactly once, as soon as it is stored. But a report wakes its owner (starts a model request) only
when no other member of its swarm is still to report: not admitted yet (the swarm is still being
spawned), queued for a capacity slot, or running. The reports before it are delivered into the
owner's context without a request of their own (`deliver_message(wake=False)`), so the owner's
next request — at the latest the last member's wake — carries them all. A swarm of any size and
any number of capacity waves thus costs the owner one wake, not one or two per wave.

An urgent report (a failed run, a `blocked` or `failed` outcome or effective outcome, `failed` or
`stale` checks) wakes at once, as a completion group's urgent index does.

A member can also leave without a report to deliver (stopped, cancelled in the queue, its run
lost). When the last member still to report leaves that way after reports went in without a wake,
`ended` names the members known to have left without one: the teams core then tells the lead (a
notice, which wakes it), so such a swarm still costs the lead one wake. A nested writer's helpers need no
such notice: the writer's settle loop resumes it once its helpers are gone.

The state is in memory: after a restart, recovered reports wake as before. Nothing durable
depends on it — delivery, its exactly-once key and crash recovery are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.orchestration.teams.roster.records import TeamReportRecord

__all__ = ["SwarmWakes", "is_urgent"]

_URGENT_OUTCOMES = frozenset({"blocked", "failed"})
_URGENT_VERIFICATION = frozenset({"failed", "stale"})


def is_urgent(report: TeamReportRecord) -> bool:
    """Whether a report wakes its owner at once, whatever its swarm."""
    return (
        report.status != "completed"
        or report.outcome in _URGENT_OUTCOMES
        or report.result.effective_outcome in _URGENT_OUTCOMES
        or report.result.verification.state in _URGENT_VERIFICATION
    )


@dataclass(slots=True)
class _Swarm:
    owed: set[str]
    """Members whose report has not been delivered and who did not end without one."""
    nested: bool
    """A nested writer's helpers (their reports go to the writer, not the lead)."""
    unadmitted: set[str] = field(default_factory=set)
    """Members `spawn_swarm` has not admitted (or refused) yet."""
    held: bool = False
    """A report of this swarm went in without a wake (its owner has not been woken for it yet)."""
    gone: list[str] = field(default_factory=list)
    """Members known to have left without a report to deliver (`ended`), in that order."""


class SwarmWakes:
    """The open swarms of one host, by (lead session, member name)."""

    def __init__(self) -> None:
        self._swarms: dict[tuple[str, str], _Swarm] = {}

    def open(self, lead_session_id: str, names: Iterable[str], *, nested: bool = False) -> None:
        """A swarm is being spawned: every member is owed a report and not admitted yet."""
        members = set(names)
        if len(members) < 2:
            return
        swarm = _Swarm(owed=set(members), nested=nested, unadmitted=set(members))
        for name in members:
            self._swarms[(lead_session_id, name)] = swarm

    def admitted(self, lead_session_id: str, name: str) -> None:
        """`spawn_swarm` is done with this member (started, queued or refused)."""
        swarm = self._swarms.get((lead_session_id, name))
        if swarm is not None:
            swarm.unadmitted.discard(name)

    def wakes(
        self, lead_session_id: str, name: str, active: Callable[[str], bool], *, urgent: bool = False
    ) -> bool:
        """This member's report is being delivered: whether it wakes its owner (an `urgent` one does).

        `active(name)` tells whether a sibling still runs or waits in the queue. Siblings that are
        neither (refused, cancelled, failed to start, stopped) owe nothing any more.
        """
        swarm = self._leave(lead_session_id, name)
        if swarm is None:
            return True
        if not urgent and self._still_owed(lead_session_id, swarm, active):
            swarm.held = True
            return False
        swarm.held = False
        return True

    def ended(self, lead_session_id: str, name: str, active: Callable[[str], bool]) -> tuple[str, ...]:
        """This member left without a report to deliver (stopped, cancelled, lost).

        When it was the last member still to report and a report of its swarm went in without a
        wake, the members that left without a report (the lead is to be told, which wakes it);
        else `()`.
        """
        swarm = self._leave(lead_session_id, name)
        if swarm is None:
            return ()
        swarm.gone.append(name)
        if self._still_owed(lead_session_id, swarm, active) or not swarm.held or swarm.nested:
            return ()
        swarm.held = False
        return tuple(swarm.gone)

    def _leave(self, lead_session_id: str, name: str) -> _Swarm | None:
        """Take `name` out of its swarm (`None` when it is in none, or left already)."""
        swarm = self._swarms.pop((lead_session_id, name), None)
        if swarm is not None:
            swarm.owed.discard(name)
            swarm.unadmitted.discard(name)
        return swarm

    def _still_owed(self, lead_session_id: str, swarm: _Swarm, active: Callable[[str], bool]) -> bool:
        """Whether a sibling is still to report; siblings found gone meanwhile are dropped."""
        settled: list[str] = []
        held = False
        for other in swarm.owed:  # stops at the first sibling still to report
            if other in swarm.unadmitted or active(other):
                held = True
                break
            settled.append(other)
        for other in settled:
            swarm.owed.discard(other)
            if self._swarms.get((lead_session_id, other)) is swarm:
                del self._swarms[(lead_session_id, other)]
        return held
