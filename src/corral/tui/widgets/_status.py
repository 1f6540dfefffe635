"""The footer (model, thinking, context, cost) and the activity card (one row per agent)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from corral.tui._format import ActivityRow, CostSummary, context_level, format_context, format_cost
from corral.tui._palette import DARK_DEFAULTS, ActivityPalette, tier_level

__all__ = ["ActivityCard", "StatusFooter", "render_activity"]


class StatusFooter(Static):
    """`model · thinking · ctx % · cost`, with warning classes at 75% and 90% context."""

    def __init__(self) -> None:
        super().__init__("", id="footer")
        self.model_ref = ""
        self.thinking = ""
        self.context_text = ""
        self.cost_text = ""

    def show(
        self,
        *,
        model_ref: str,
        thinking: str,
        percent: float | None,
        window: int | None,
        cost: CostSummary,
        busy: bool,
    ) -> None:
        """Render the footer."""
        self.model_ref = model_ref
        self.thinking = thinking
        self.context_text = format_context(percent, window)
        self.cost_text = format_cost(cost)
        level = context_level(percent)
        self.set_class(level == "warn", "ctx-warn")
        self.set_class(level == "danger", "ctx-danger")
        text = Text()
        text.append("● working  " if busy else "○ idle  ", style="bold" if busy else "dim")
        text.append(model_ref, style="bold")
        text.append(f" · thinking {thinking} · ")
        text.append(self.context_text, style={"ok": "", "warn": "yellow", "danger": "bold red"}[level])
        text.append(f" · {self.cost_text}")
        self.update(text)


class ActivityCard(Static):
    """Agent activity below the editor (managed and teams agents); hidden while there are none.

    Header `agent activity  N active · R read · W write · ↓ navigate`, then one row per agent;
    beyond `MAX_ROWS` rows, one aggregate line of the top four state counts (`+N states` for the rest).
    """

    MAX_ROWS = 10
    """Rows shown one per line; more are summarised."""

    def __init__(self) -> None:
        super().__init__("", id="activity")
        self.rows: list[ActivityRow] = []
        self.palette: ActivityPalette = DARK_DEFAULTS
        """The `activityColors` palette (the app sets it from the settings and the theme)."""
        self.display = False

    def show_rows(self, rows: Sequence[ActivityRow]) -> None:
        """Render the header and the rows (state as a word besides its glyph; `⚠` marks)."""
        self.rows = list(rows)
        self.display = bool(self.rows)
        self.update(render_activity(self.rows, self.palette, max_rows=self.MAX_ROWS))


def _header(rows: Sequence[ActivityRow]) -> str:
    active = [r for r in rows if r.state != "queued"]
    parts = [f"{len(active)} active"]
    if any(r.is_team for r in rows):
        parts.append(f"{sum(1 for r in active if r.kind == 'read')} read")
        parts.append(f"{sum(1 for r in active if r.kind == 'write')} write")
    managed = sum(1 for r in active if not r.is_team)
    if managed and managed != len(active):
        parts.append(f"{managed} managed")
    queued = len(rows) - len(active)
    if queued:
        parts.append(f"{queued} queued")
    return "agent activity  " + " · ".join(parts) + " · ↓ navigate"


def _aggregate(rows: Sequence[ActivityRow]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.state] = counts.get(row.state, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    text = " · ".join(f"{count} {state}" for state, count in ranked[:4])
    if len(ranked) > 4:
        text += f" +{len(ranked) - 4} states"
    return text


def render_activity(rows: Sequence[ActivityRow], palette: ActivityPalette, *, max_rows: int = 10) -> Text:
    """The activity card's text."""
    text = Text()
    text.append(_header(rows), style="bold")
    if len(rows) > max_rows:
        text.append("\n")
        text.append(f"{len(rows)} agents: {_aggregate(rows)}", style=palette.text)
        return text
    width = max((len(r.label) for r in rows), default=0)
    for row in rows:
        text.append("\n")
        text.append(f"{row.glyph} ", style=_STATE_STYLE.get(row.state, ""))
        text.append(f"{row.label:<{width}}", style=f"bold {palette.names}".strip())
        if row.is_team:
            _team_row(text, row, palette)
        else:
            text.append(f"  {'(' + row.definition + ')':<14} ", style="dim")
            text.append(f"{row.state:<9}", style=_STATE_STYLE.get(row.state, ""))
            text.append(f" {row.elapsed:>6}  {row.tokens:>6} tok")
        if row.stale and row.state not in ("quarantined",):
            text.append("  ⚠ stale", style=f"bold {palette.warning}")
        if row.progress:
            text.append(f"  {row.progress}", style=f"italic {palette.text}".strip())
    return text


def _team_row(text: Text, row: ActivityRow, palette: ActivityPalette) -> None:
    text.append("  ")
    text.append(f"{row.definition:<14}", style=palette.tier_color(tier_level(row.definition)))
    text.append(" ")
    text.append(row.model, style=palette.model)
    text.append("/", style="dim")
    text.append(f"{row.thinking:<7}", style=palette.thinking)
    text.append(" ")
    state_style = _STATE_STYLE.get(row.state, "")
    if row.state == "quarantined":
        state_style = f"bold {palette.error}"
    elif row.state == "stalled":
        state_style = f"bold {palette.warning}"
    text.append(f"{row.state:<11}", style=state_style)
    text.append(f" {row.elapsed:>6}  ")
    level = context_level(row.context_percent)
    tokens_style = {"ok": "", "warn": palette.warning, "danger": f"bold {palette.error}"}[level]
    text.append(f"{row.tokens:>15}", style=tokens_style)
    if row.helpers:
        text.append(f"  +{row.helpers}", style=f"bold {palette.names}")


_STATE_STYLE = {
    "working": "green",
    "blocked": "yellow",
    "settling": "cyan",
    "starting": "cyan",
    "lost": "red",
    "unknown": "magenta",
    "thinking": "green",
    "waiting": "yellow",
    "finishing": "cyan",
    "stopping": "magenta",
    "queued": "dim",
}
