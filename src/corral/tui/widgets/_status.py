"""The footer (model, thinking, context, cost) and the activity card (one row per managed agent)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from corral.tui._format import ActivityRow, CostSummary, context_level, format_context, format_cost

__all__ = ["ActivityCard", "StatusFooter"]


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
    """The managed agents below the editor; hidden while there are none."""

    def __init__(self) -> None:
        super().__init__("", id="activity")
        self.rows: list[ActivityRow] = []
        self.display = False

    def show_rows(self, rows: Sequence[ActivityRow]) -> None:
        """Render one line per agent (state as a word besides its glyph; `⚠ stale` when stale)."""
        self.rows = list(rows)
        self.display = bool(self.rows)
        text = Text()
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.state] = counts.get(row.state, 0) + 1
        order = ["working", "blocked", "settling", "starting", "queued", "unknown", "lost"]
        summary = " · ".join(
            f"{counts[s]} {s}" for s in [*order, *sorted(set(counts) - set(order))] if s in counts
        )
        text.append(f"agents  {summary}", style="bold")
        for row in self.rows:
            text.append("\n")
            text.append(f"{row.glyph} {row.label}", style="bold")
            text.append(f" ({row.definition})  ", style="dim")
            text.append(f"{row.state:<9}", style=_STATE_STYLE.get(row.state, ""))
            text.append(f" {row.elapsed:>6}  {row.tokens:>6} tok")
            if row.stale:
                text.append("  ⚠ stale", style="bold yellow")
            if row.progress:
                text.append(f"  {row.progress}", style="italic")
        self.update(text)


_STATE_STYLE = {
    "working": "green",
    "blocked": "yellow",
    "settling": "cyan",
    "starting": "cyan",
    "lost": "red",
    "unknown": "magenta",
}
