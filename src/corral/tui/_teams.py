"""Teams agents as activity rows, and the texts of the terminal's controls over them.

The rows are built from the host's public teams state, read-only: the live
members of the lead's team (`store.team_members`), each one's in-process run
(`host.teams.live`) and the queued spawns (`host.teams.pending`). The state
word follows `get_agent_status`'s phase rules: `quarantined` while a teardown
did not settle, `stopping` once message admission closed, `stalled` after
15 minutes without activity (or when the run is gone), else the run's own
phase (`starting`, `thinking`, `working`, `waiting`, `finishing`); a queued
spawn is `queued`; an agent handed off to a tmux pane (`h`) is `working` there. Nested read helpers are not rows: a writer's row counts its
active ones as `+N`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corral.orchestration.teams import STALLED_AFTER_MS
from corral.tui._format import ActivityRow, format_context_tokens, format_elapsed

if TYPE_CHECKING:
    from corral.orchestration import GenerationRecord, Host
    from corral.orchestration.teams.roster.records import TeamMemberRecord

__all__ = ["Progress", "TeamSnapshot", "stop_notice", "team_phase", "team_rows"]

Progress = Mapping[str, tuple[str, str]]
"""Latest progress per run id: `(kind, text)`, kind `tool` (a tool call) or `reply` (a reply's last line)."""


def team_phase(
    host: Host, member: TeamMemberRecord, *, now_ms: int, generation: GenerationRecord | None
) -> tuple[str, str]:
    """`(state word, detail)` of a live member, by `get_agent_status`'s rules.

    Args:
        host: The orchestration host.
        member: The member.
        now_ms: The current time (Unix ms).
        generation: The member's generation (`None` once finalized).
    """
    live = host.teams.live.get(member.run_id)
    child = None if live is None else live.child
    if member.fence == "quarantined":
        return "quarantined", member.fence_reason or "its teardown did not settle"
    if child is None:
        if generation is not None and generation.runs_in_pane:
            return "working", f"in tmux pane {generation.pane_id or '?'} (handed off)"
        if generation is None or generation.phase in ("completed", "result_error"):
            return "finishing", "sending report"
        return "stalled", (generation.diagnostic if generation is not None else None) or "its run is gone"
    if not child.messages_open and not child.report_accepted:
        return "stopping", "stopping"
    phase = child.phase()
    activity = None if generation is None else generation.last_activity_at
    if phase in ("thinking", "working") and activity is not None and now_ms - activity > STALLED_AFTER_MS:
        return "stalled", f"no activity for {format_elapsed(now_ms - activity)}"
    if phase == "starting":
        return phase, "starting session"
    if phase == "finishing":
        return phase, "sending report"
    if phase == "waiting":
        return phase, "interrupted; waiting for a message" if child.interrupted else "waiting"
    if phase == "working":
        return phase, f"using {child.active_tool}" if child.active_tool else "working"
    return phase, "waiting for model response"


def _active_helpers(host: Host, members: tuple[TeamMemberRecord, ...]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for member in members:
        if member.depth != 1 or member.parent_run_id is None:
            continue
        live = host.teams.live.get(member.run_id)
        if live is not None and not live.child.finished.is_set():
            counts[member.parent_run_id] = counts.get(member.parent_run_id, 0) + 1
    return counts


@dataclass(frozen=True, slots=True)
class TeamSnapshot:
    """The lead's teams members and their generations as read from the store at one refresh.

    The app reads it when the host changes, not on its one-second clock; only when an active
    member's recorded activity is old enough to make it `stalled` is the store read again, since
    the child records activity without notifying anyone.
    """

    lead_session_id: str
    members: tuple[TeamMemberRecord, ...]
    generations: dict[str, GenerationRecord]

    @classmethod
    def read(cls, host: Host, lead_session_id: str) -> TeamSnapshot:
        """Read the members and generations of `lead_session_id` (two store queries)."""
        members = host.store.team_members(lead_session_id)
        generations = {g.run_id: g for g in host.store.generations(owner_session_id=lead_session_id)}
        return cls(lead_session_id, members, generations)

    def may_stall(self, now_ms: int) -> bool:
        """Whether some member's recorded activity is older than the stall limit at `now_ms`."""
        return any(
            g.last_activity_at is not None and now_ms - g.last_activity_at > STALLED_AFTER_MS
            for g in self.generations.values()
            if g.phase == "active"
        )


def team_rows(host: Host, snapshot: TeamSnapshot, *, now_ms: int, progress: Progress) -> list[ActivityRow]:
    """The lead's teams agents, oldest first, then its queued spawns (helpers are not rows).

    Args:
        host: The orchestration host (live runs and queued spawns, in memory).
        snapshot: The members and generations read from the store.
        now_ms: The current time (Unix ms), for elapsed times and stalls.
        progress: The latest tool call or reply line seen per run.
    """
    members, generations = snapshot.members, snapshot.generations
    lead_session_id = snapshot.lead_session_id
    helpers = _active_helpers(host, members)
    rows: list[ActivityRow] = []
    for member in members:
        if member.depth != 0:
            continue
        state, detail = team_phase(host, member, now_ms=now_ms, generation=generations.get(member.run_id))
        live = host.teams.live.get(member.run_id)
        tokens, percent = "-", None
        if live is not None:
            usage = live.child.agent.context_usage()
            if usage is not None:
                tokens, percent = format_context_tokens(usage.tokens, usage.percent), usage.percent
        kind, text = progress.get(member.run_id, ("", ""))
        if text and ((state == "working" and kind == "tool") or (state == "thinking" and kind == "reply")):
            detail = text
        rows.append(
            ActivityRow(
                member.name,
                member.tier,
                state,
                elapsed=format_elapsed(max(0, now_ms - member.created_at)),
                tokens=tokens,
                progress=detail,
                stale=state in ("stalled", "quarantined"),
                kind=member.kind,
                run_id=member.run_id,
                model=member.model,
                thinking=member.thinking,
                context_percent=percent,
                helpers=helpers.get(member.run_id, 0),
            )
        )
    rows.extend(_queued_rows(host, lead_session_id, now_ms=now_ms))
    return rows


def _queued_rows(host: Host, lead_session_id: str, *, now_ms: int) -> list[ActivityRow]:
    rows: list[ActivityRow] = []
    pending: dict[tuple[str, str], tuple[Any, Any]] = dict(host.teams.pending)
    for (lead, name), (_reservation, prepared) in pending.items():
        if lead != lead_session_id or prepared.parent is not None:
            continue
        position = host.teams.capacity(lead).queue_position(name)
        rows.append(
            ActivityRow(
                name,
                prepared.tier.name,
                "queued",
                elapsed=format_elapsed(max(0, now_ms - int(prepared.queued_at * 1000))),
                progress=f"queued at position {position}" if position else "queued",
                kind=prepared.tier.role,
                model=prepared.model_ref,
                thinking=prepared.thinking,
            )
        )
    return rows


def stop_notice(name: str, text: str, details: Mapping[str, Any]) -> str:
    """The hidden notice the lead gets after the user stopped `name` from the terminal (`x`)."""
    lines = [f"The user stopped agent {name} from the terminal (x). {text}"]
    teardown = details.get("teardown")
    if details.get("queued"):
        lines.append("It was still queued; it never started and will not report.")
    elif details.get("stopped"):
        released = details.get("releasedClaims") or []
        lines.append(
            "Teardown settled; it will not report."
            + (f" Released claims: {', '.join(released)}." if released else "")
        )
    else:
        status = teardown.get("status") if isinstance(teardown, Mapping) else details.get("reason")
        lines.append(
            f"Teardown incomplete ({status or 'unknown'}): {details.get('error') or 'see get_agent_status'}."
            + (" Its name stays fenced until cleanup completes." if details.get("quarantined") else "")
        )
    return " ".join(lines)
