"""Pure presentation helpers for the TUI: state words, rows, footer text.

Nothing here imports Textual, so the rules for what the screen says are plain
functions over host records and agent statistics, tested without an app.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from corral._units import format_elapsed
from corral.llm import AssistantMessage, ToolResultMessage

if TYPE_CHECKING:
    from corral.agent import ContextUsage
    from corral.llm import AgentMessage
    from corral.orchestration import AgentView

__all__ = [
    "CONTEXT_DANGER_PERCENT",
    "CONTEXT_WARN_PERCENT",
    "LARGE_LOG_LINES",
    "STATE_GLYPHS",
    "ActivityRow",
    "CostSummary",
    "ManagedAgent",
    "Progress",
    "RowKind",
    "activity_row",
    "context_level",
    "format_context",
    "format_context_tokens",
    "format_cost",
    "format_elapsed",
    "format_tokens",
    "latest_progress",
    "one_line",
    "summarize_args",
]

CONTEXT_WARN_PERCENT = 75.0
"""Context usage at or above this shows a warning."""
CONTEXT_DANGER_PERCENT = 90.0
"""Context usage at or above this shows an error-coloured warning."""
LARGE_LOG_LINES = 8
"""Tool output longer than this is collapsed to its first lines until expanded."""

STATE_GLYPHS: Mapping[str, str] = {
    "working": "●",
    "blocked": "◐",
    "settling": "◌",
    "starting": "◌",
    "queued": "◌",
    "unknown": "?",
    "lost": "×",
    "thinking": "◑",
    "waiting": "◐",
    "finishing": "◌",
    "stalled": "!",
    "stopping": "◌",
    "quarantined": "×",
}
"""The glyph shown before each state word (the word is always shown too)."""


def format_tokens(tokens: int | None) -> str:
    """`950`, `12.3k`, `1.2M`; `-` when unknown."""
    if tokens is None:
        return "-"
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}k"
    return f"{tokens / 1_000_000:.1f}M"


def format_budget(budget: Mapping[str, Any] | None) -> str:
    """An agent's budget in brief: `3.1k/50k tok`, `$0.12/$2.00`, `✗ agent_tokens` once stopped; `""`
    without one (a `list` record's or status' `budget`, docs/fleet.md)."""
    if not budget:
        return ""
    spend, limits = budget.get("spend") or {}, budget.get("limits") or {}
    parts = []
    if "tokens" in limits or not limits:
        limit = f"/{format_tokens(limits['tokens'])}" if "tokens" in limits else ""
        parts.append(f"{format_tokens(spend.get('tokens', 0))}{limit} tok")
    if "costUsd" in limits:
        parts.append(f"${spend.get('costUsd', 0):.2f}/${limits['costUsd']:.2f}")
    if "minutes" in limits:
        parts.append(f"{limits['minutes']:g} min")
    text = " ".join(parts)
    if budget.get("exhausted"):
        text += f" ✗ {budget['exhausted']}"
    elif budget.get("noticed"):
        text += " ⚠"
    return text


def context_level(percent: float | None) -> str:
    """`ok`, `warn` (≥75%) or `danger` (≥90%)."""
    if percent is None or percent < CONTEXT_WARN_PERCENT:
        return "ok"
    return "danger" if percent >= CONTEXT_DANGER_PERCENT else "warn"


def format_context(percent: float | None, window: int | None) -> str:
    """`ctx 12% of 200k`, with `⚠` from 75%; `ctx ?` when unknown."""
    if window is None:
        return "ctx ?"
    if percent is None:
        return f"ctx ? of {format_tokens(window)}"
    mark = "⚠ " if context_level(percent) != "ok" else ""
    return f"{mark}ctx {percent:.0f}% of {format_tokens(window)}"


def format_context_tokens(tokens: int | None, percent: float | None) -> str:
    """A teams row's current context: `0 tok (0%)`, `12.3k tok (6%)`; `? tok` after a compaction."""
    if tokens is None or percent is None:
        return "? tok"
    return f"{format_tokens(tokens)} tok ({percent:.0f}%)"


@dataclass(frozen=True, slots=True)
class CostSummary:
    """The combined recorded cost of the lead and its agents."""

    total: float
    """USD over every session that has reported usage."""
    _: KW_ONLY
    incomplete: bool = False
    """True while some usage is still missing (a reply streaming, an agent not observable here)."""


def format_cost(summary: CostSummary) -> str:
    """`$0.012`, or `$0.012+ (incomplete)` while usage is missing."""
    text = f"${summary.total:.3f}"
    return f"{text}+ (incomplete)" if summary.incomplete else text


RowKind = Literal["managed", "read", "write"]
"""A managed agent (`agent` surface), or a teams read or edit agent."""


@dataclass(frozen=True, slots=True)
class ActivityRow:
    """One agent as the activity card shows it (a managed agent, or a teams agent)."""

    label: str
    """Managed label or teams name."""
    definition: str
    """Managed definition, or the teams tier."""
    state: str
    """State word (managed: `working`, `blocked`, …; teams: `thinking`, `waiting`, `queued`, …)."""
    _: KW_ONLY
    elapsed: str = "-"
    tokens: str = "-"
    """Current context, managed and teams alike: `12.3k tok (6%)` (`? tok` after a compaction; a
    managed agent not running in this process: the tokens it last reported, `12.3k tok`); `-` unknown."""
    progress: str = ""
    stale: bool = False
    kind: RowKind = "managed"
    run_id: str | None = None
    """The run (`None` for a queued teams agent, which has none yet)."""
    model: str = ""
    """Teams: `provider/model`."""
    thinking: str = ""
    """Teams: thinking level."""
    context_percent: float | None = None
    """Current context usage in percent (`None` when unknown)."""
    helpers: int = 0
    """Teams writer: its active depth-1 read helpers."""
    budget: str = ""
    """Its budget in brief (`format_budget`): spent / limit; `""` without one."""

    @property
    def is_team(self) -> bool:
        """Whether this is a teams agent."""
        return self.kind != "managed"

    @property
    def glyph(self) -> str:
        """The state's glyph (`·` for a state without one)."""
        return STATE_GLYPHS.get(self.state, "·")

    @property
    def key(self) -> str:
        """The row's stable identity across refreshes: teams or managed, and the label."""
        return f"{'team' if self.is_team else 'managed'}/{self.label}"


@dataclass(frozen=True, slots=True)
class ManagedAgent:
    """A managed agent as the controller's projection shows it: what its activity row needs."""

    label: str
    """Its label."""
    definition: str
    """The agent definition it runs."""
    state: str
    """Public state (`working`, `blocked`, `settling`, …)."""
    _: KW_ONLY
    tokens: int | None = None
    """The tokens it last reported (`None` before any)."""
    stale: bool = False
    """Working without activity for too long (advisory)."""
    started_at_ms: int | None = None
    """When its generation started, else when it was created (Unix ms)."""
    rate_limit: str | None = None
    """A rate-limit wait it is in (`waiting (rate limit, 7s)`), shown instead of its progress."""

    @classmethod
    def from_view(cls, view: AgentView, *, rate_limit: str | None = None) -> ManagedAgent:
        """The agent as `view` (one of the controller's `AgentView`s) shows it, with the rate-limit
        wait it is in, if any (`LeadAgents.rate_limit_waits`)."""
        generation = view.generation
        return cls(
            generation.label,
            generation.definition,
            view.state,
            tokens=generation.tokens,
            stale=view.stale,
            started_at_ms=generation.started_at or generation.created_at,
            rate_limit=rate_limit,
        )


def activity_row(
    agent: ManagedAgent,
    *,
    now_ms: int,
    progress: str = "",
    context: ContextUsage | None = None,
    budget: Mapping[str, Any] | None = None,
) -> ActivityRow:
    """A managed agent's activity row.

    Args:
        agent: The agent as the controller's projection shows it.
        now_ms: The current time (Unix ms), for the elapsed time.
        progress: The latest progress line seen from the agent, if any (its `rate_limit` wait is
            shown instead while it lasts).
        context: The agent's context usage when it runs in this process (`12.3k tok (6%)`, as a
            teams row shows it); without it, the tokens it last reported (`12.3k tok`), else `-`.
        budget: Its budget (`LeadAgents.budget`), shown in brief (`format_budget`).
    """
    started = agent.started_at_ms
    elapsed = None if started is None else max(0, now_ms - started)
    percent: float | None = None
    if context is not None:
        tokens = format_context_tokens(context.tokens, context.percent)
        percent = context.percent
    elif agent.tokens is not None:
        tokens = f"{format_tokens(agent.tokens)} tok"
    else:
        tokens = "-"
    return ActivityRow(
        agent.label,
        agent.definition,
        agent.state,
        elapsed=format_elapsed(elapsed),
        tokens=tokens,
        progress=agent.rate_limit or progress,
        stale=agent.stale,
        context_percent=percent,
        budget=format_budget(budget),
    )


class Progress(NamedTuple):
    """An agent's latest progress line."""

    kind: str
    """`tool` (a tool call started) or `reply` (the last line of a reply)."""
    text: str
    """The tool call (`bash command=…`) or the reply's last non-empty line."""


def latest_progress(messages: Sequence[AgentMessage]) -> Progress | None:
    """An agent's latest progress read from its transcript: `("tool", "bash command=…")` while its last
    tool call has no result yet, else `("reply", <last line of its last reply>)`; `None` before either.

    The app keeps progress from the agent's events; this fills it in for an agent whose events began
    before the app subscribed to them (a tool call already running when its row first appears).
    """
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            answered.add(message.tool_call_id)
        elif isinstance(message, AssistantMessage):
            pending = [call for call in message.tool_calls if call.id not in answered]
            if pending:
                call = pending[0]
                return Progress("tool", f"{call.name} {summarize_args(call.arguments)}".rstrip())
            lines = [line for line in message.text.splitlines() if line.strip()]
            if lines:
                return Progress("reply", lines[-1][:80])
    return None


def one_line(text: str, *, limit: int = 60) -> str:
    """`text` on one line: every run of whitespace (newlines, tabs) as one space, cut to `limit`
    characters with `…` (a picker row, a notice's quote)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def summarize_args(args: Mapping[str, Any], *, limit: int = 60) -> str:
    """A one-line summary of tool arguments (`path=README.md command=ls`)."""
    parts = []
    for key, value in args.items():
        text = value if isinstance(value, str) else repr(value)
        text = " ".join(str(text).split())
        parts.append(f"{key}={text}")
    line = " ".join(parts)
    return line if len(line) <= limit else line[: limit - 1] + "…"
