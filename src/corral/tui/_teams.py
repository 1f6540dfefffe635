"""Teams agents as activity rows, and the texts of the terminal's controls over them.

The rows come from the teams core through the lead's agents port (`LeadAgents.team_rows`): each
live member of the lead's team with its phase — the same projection `get_agent_status` reports
(`corral.orchestration.teams._status.member_status`) — and the queued spawns. This module only words them:
the state word is the phase (`queued` for a queued spawn), the detail says why (`stalled` after
15 minutes without activity or when the run is gone; an agent handed off to a tmux pane (`h`) is
`working` there). Nested read helpers are not rows: a writer's row counts its active ones as `+N`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from corral.tui._format import ActivityRow, Progress, format_context_tokens, format_elapsed

if TYPE_CHECKING:
    from corral.orchestration.kernel.records import GenerationRecord
    from corral.orchestration.teams._status import MemberStatus, TeamAgentRow, TeamSnapshot
    from corral.orchestration.teams.results import InterruptResult

__all__ = [
    "TeamRowsReader",
    "TeamsSource",
    "interrupt_note",
    "message_note",
    "stop_notice",
    "team_detail",
    "team_rows",
]


class TeamsSource(Protocol):
    """What the teams rows are read from: the lead's agents port (`LeadAgents`)."""

    def team_snapshot(self) -> TeamSnapshot:
        """The lead's teams members and their generations, read from the store now."""
        ...

    def team_rows(self, snapshot: TeamSnapshot, *, now_ms: int) -> list[TeamAgentRow]:
        """The lead's teams agents (members with their phase, then queued spawns) at `now_ms`."""
        ...


class TeamRowsReader:
    """The lead's teams agents, with the store reads kept between host changes.

    A host change makes the next read go to the store again (`forget`); between changes the clock
    only re-renders, except when an active member's recorded activity is old enough to make it
    `stalled` (a child records activity without notifying anyone).
    """

    def __init__(self) -> None:
        self.snapshot: TeamSnapshot | None = None
        """The store reads the rows were last built from."""

    def forget(self) -> None:
        """Read the store again for the next rows (the host changed)."""
        self.snapshot = None

    def read(self, source: TeamsSource, *, lead_session_id: str, now_ms: int) -> list[TeamAgentRow]:
        """The lead's teams agents at `now_ms` (from the kept reads while they are current)."""
        snapshot = self.snapshot
        if snapshot is None or snapshot.lead_session_id != lead_session_id or snapshot.may_stall(now_ms):
            snapshot = self.snapshot = source.team_snapshot()
        return source.team_rows(snapshot, now_ms=now_ms)


def team_detail(
    status: MemberStatus, *, generation: GenerationRecord | None, fence_reason: str | None = None
) -> str:
    """The detail beside a live member's phase (what it is doing, or why it is stalled).

    Args:
        status: The member's status (`member_status`).
        generation: Its generation as last read (`None` once finalized).
        fence_reason: Why its name is fenced (a quarantined member).
    """
    phase = status.phase
    if phase == "quarantined":
        return fence_reason or "its teardown did not settle"
    if not status.in_process:
        where = status.pane_id or ""
        if phase == "working" and where.startswith("ray:"):
            return f"on Ray worker {where.removeprefix('ray:')}"
        if phase == "working":
            return f"in tmux pane {status.pane_id or '?'} (handed off)"
        if phase == "finishing":
            return "sending report"
        return (generation.diagnostic if generation is not None else None) or "its run is gone"
    if phase == "stopping":
        return "stopping"
    if phase == "stalled":
        return f"no activity for {format_elapsed(status.activity_age_ms or 0)}"
    if phase == "starting":
        return "starting session"
    if phase == "finishing":
        return "sending report"
    if phase == "waiting":
        return "interrupted; waiting for a message" if status.interrupted else "waiting"
    if status.rate_limit is not None:
        return status.rate_limit
    if phase == "working":
        return f"using {status.active_tool}" if status.active_tool else "working"
    return "waiting for model response"


def team_rows(
    agents: Sequence[TeamAgentRow], *, now_ms: int, progress: Mapping[str, Progress]
) -> list[ActivityRow]:
    """Activity rows for the lead's teams agents, in the order given (members, then queued spawns).

    Args:
        agents: The lead's agents (`LeadAgents.team_rows`).
        now_ms: The current time (Unix ms), for elapsed times.
        progress: The latest tool call or reply line seen per run.
    """
    rows: list[ActivityRow] = []
    for agent in agents:
        elapsed = format_elapsed(max(0, now_ms - agent.since_ms))
        status = agent.status
        if status is None:
            position = agent.queue_position
            rows.append(
                ActivityRow(
                    agent.name,
                    agent.tier,
                    "queued",
                    elapsed=elapsed,
                    progress=f"queued at position {position}" if position else "queued",
                    kind=agent.kind,
                    model=agent.model,
                    thinking=agent.thinking,
                )
            )
            continue
        state = status.phase
        detail = team_detail(status, generation=agent.generation, fence_reason=agent.fence_reason)
        tokens, percent = "-", None
        if agent.context is not None:
            tokens, percent = (
                format_context_tokens(agent.context.tokens, agent.context.percent),
                agent.context.percent,
            )
        kind, text = progress.get(agent.run_id or "", Progress("", ""))
        if text and ((state == "working" and kind == "tool") or (state == "thinking" and kind == "reply")):
            detail = text
        rows.append(
            ActivityRow(
                agent.name,
                agent.tier,
                state,
                elapsed=elapsed,
                tokens=tokens,
                progress=detail,
                stale=state in ("stalled", "quarantined"),
                kind=agent.kind,
                run_id=agent.run_id,
                model=agent.model,
                thinking=agent.thinking,
                context_percent=percent,
                helpers=agent.helpers,
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


def message_note(name: str, delivery: str) -> str:
    """What `m` did for a teams agent, for the person at the terminal (no tool or delivery names)."""
    if delivery == "active-session":
        return f"message sent to {name}: it reads it in its running session"
    return f"message sent to {name}: kept in its inbox until it next reads it"


def interrupt_note(result: InterruptResult) -> str:
    """What `i` did for a teams agent, for the person at the terminal (`interrupt_teammate`'s tool text
    names tools the model calls; this names the keys instead)."""
    name = result.name
    texts = {
        "tmux": f"{name} runs in a tmux pane, where it cannot be interrupted; message it (m) or stop it (x).",
        "not_found": f"{name} is not active in this session.",
        "closing": f"{name} is closing; nothing to interrupt.",
        "interrupted": f"Interrupted {name}. It keeps its session, task and claims and waits for a message "
        "(m) before it continues.",
        "pending": f"Interrupt of {name} sent; it has not stopped yet.",
        "no_command": f"{name} has no running tool or model call to interrupt.",
    }
    return texts[result.status]
