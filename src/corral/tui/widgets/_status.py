"""The footer (model, thinking, context, cost) and the activity card (one row per agent).

The activity card animates each row's progress phrase; this is presentation only
(`ActivityRow.progress` stays the plain phrase). A terminal cannot blend colours,
so a change is a short sequence of styles, timed from the card's clock:

    change ─ old phrase dim (FADE_OUT_S, 0.3 s) ─ new phrase dim (REVEAL_S, 0.3 s) ─ new phrase

The whole change takes 0.6 s (the card checks its frames every `FRAME_S`, 0.25 s, and
redraws only when one changed, so the new phrase is fully shown within 0.85 s). Then, while the row's state is active
(`ANIMATED_STATES`), dots after the phrase cycle `.`, `..`, `...`, one step per
`DOT_STEP_S` (0.5 s). A row seen for the first time shows its phrase at once (its
row appearing is the reveal); a change to or from no phrase only fades in or out;
a row in a static state (queued, stalled, stopping, quarantined, lost, …) replaces
its detail at once and has no dots (a stalled row's `no activity for …` changes
every second). Per-row state is kept by row identity (teams or managed, and the
label), so reordering rows changes nothing and a row that leaves the card is
forgotten. The frames are a pure function of the clock: a fixed clock renders the
same card every time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.text import Text
from textual.widgets import Static

from corral.tui._format import ActivityRow, CostSummary, context_level, format_context, format_cost
from corral.tui._palette import DARK_DEFAULTS, ActivityPalette, tier_level

__all__ = [
    "ANIMATED_STATES",
    "DOT_STEP_S",
    "FADE_OUT_S",
    "FRAME_S",
    "REVEAL_S",
    "ActivityCard",
    "PhraseAnimator",
    "PhraseFrame",
    "PhraseStage",
    "StatusFooter",
    "render_activity",
]

FADE_OUT_S = 0.3
"""How long a replaced progress phrase stays, dimmed, before the new one shows."""
REVEAL_S = 0.3
"""How long a new progress phrase shows dimmed before it shows normally."""
DOT_STEP_S = 0.5
"""How long each of `.`, `..`, `...` shows after an active row's phrase."""
FRAME_S = 0.25
"""How often the card checks whether a phrase's frame changed (and redraws only if so)."""
ANIMATED_STATES = frozenset({"starting", "thinking", "working", "waiting", "finishing"})
"""States whose phrase fades on change and shows the dots (managed `working` and `starting` too)."""

PhraseStage = Literal["fading", "revealing", "shown"]
"""`fading`: the old phrase, dim; `revealing`: the new phrase, dim; `shown`: the phrase, normal."""


class StatusFooter(Static):
    """`model · thinking · ctx % · cost · tree budget`, with warning classes at 75% and 90% context."""

    def __init__(self) -> None:
        super().__init__("", id="footer")
        self.model_ref = ""
        self.thinking = ""
        self.context_text = ""
        self.cost_text = ""
        self.budget_text = ""

    def show(
        self,
        *,
        model_ref: str,
        thinking: str,
        percent: float | None,
        window: int | None,
        cost: CostSummary,
        busy: bool,
        tree_budget: str | None = None,
    ) -> None:
        """Render the footer (`tree_budget`: the lead's agent tree's spend against its budget, and the
        lead's own spend beside it, not counted)."""
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
        self.budget_text = tree_budget or ""
        if tree_budget:
            text.append(f" · {tree_budget}", style="bold red" if "exhausted" in tree_budget else "")
        self.update(text)


@dataclass(frozen=True, slots=True)
class PhraseFrame:
    """What a row's progress phrase looks like at one instant."""

    text: str
    """The phrase shown (the old one while `fading`); empty for none."""
    stage: PhraseStage
    """Dim old phrase, dim new phrase, or the phrase shown normally."""
    dots: int
    """`0` (no dots) or `1`-`3` dots after a `shown` phrase."""


@dataclass(slots=True)
class _Track:
    phrase: str
    """The row's phrase."""
    previous: str
    """The phrase being faded out."""
    fade_until: float
    """Until then `previous` shows dimmed."""
    reveal_until: float
    """Until then `phrase` shows dimmed; the dots count from here."""


class PhraseAnimator:
    """The fade, reveal and dots of each row's progress phrase, as a function of time.

    Call `observe` with every new set of rows (it notes phrase changes at `now`),
    then `frames` for what to draw at any instant.
    """

    def __init__(self) -> None:
        self._tracks: dict[str, _Track] = {}

    def observe(self, rows: Sequence[ActivityRow], now: float) -> None:
        """Note the rows' phrases at `now`: a changed phrase starts a fade; gone rows are forgotten."""
        seen: set[str] = set()
        for row in rows:
            key = row.key
            seen.add(key)
            track = self._tracks.get(key)
            if track is None:
                self._tracks[key] = _Track(row.progress, "", now, now)
            elif row.progress != track.phrase:
                visible = track.previous if now < track.fade_until else track.phrase
                if row.state not in ANIMATED_STATES or visible == row.progress:
                    track.previous, track.fade_until, track.reveal_until = "", now, now
                else:
                    track.previous = visible
                    track.fade_until = now + FADE_OUT_S if visible else now
                    track.reveal_until = track.fade_until + REVEAL_S if row.progress else track.fade_until
                track.phrase = row.progress
        for key in self._tracks.keys() - seen:
            del self._tracks[key]

    def frame(self, row: ActivityRow, now: float) -> PhraseFrame:
        """What `row`'s phrase looks like at `now` (as if first seen, for a row `observe` never saw)."""
        track = self._tracks.get(row.key)
        if track is None:
            track = _Track(row.progress, "", now, now)
        if now < track.fade_until:
            return PhraseFrame(track.previous, "fading", 0)
        if now < track.reveal_until:
            return PhraseFrame(track.phrase, "revealing", 0)
        dots = 0
        if track.phrase and row.state in ANIMATED_STATES:
            dots = 1 + int((now - track.reveal_until) // DOT_STEP_S) % 3
        return PhraseFrame(track.phrase, "shown", dots)

    def frames(self, rows: Sequence[ActivityRow], now: float) -> dict[str, PhraseFrame]:
        """Every row's frame at `now`, by `ActivityRow.key`."""
        return {row.key: self.frame(row, now) for row in rows}


class ActivityCard(Static):
    """Agent activity below the editor (managed and teams agents); hidden while there are none.

    Header `agent activity  N active · R read · W write · M managed · ↓ navigate` (see `_header`), then one
    row per agent;
    beyond `MAX_ROWS` rows, one aggregate line of the top four state counts (`+N states` for the rest).

    Args:
        clock: Unix time in seconds; it drives the progress phrases' fade and dots (see the
            module docstring). Without one, phrases are drawn plainly, without animation.
    """

    MAX_ROWS = 10
    """Rows shown one per line; more are summarised."""

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        super().__init__("", id="activity")
        self.rows: list[ActivityRow] = []
        self.palette: ActivityPalette = DARK_DEFAULTS
        """The `activityColors` palette (the app sets it from the settings and the theme)."""
        self.clock = clock
        self.frames: dict[str, PhraseFrame] | None = None
        """The phrase frames last drawn, by `ActivityRow.key` (`None` without a clock or over `MAX_ROWS`)."""
        self._animator = PhraseAnimator()
        self.display = False

    def on_mount(self) -> None:
        if self.clock is not None:
            self.set_interval(FRAME_S, self.advance_frames)

    def show_rows(self, rows: Sequence[ActivityRow]) -> None:
        """Render the header and the rows (state as a word besides its glyph; `⚠` marks)."""
        self.rows = list(rows)
        self.display = bool(self.rows)
        self.frames = None
        if self.clock is not None:
            now = self.clock()
            self._animator.observe(self.rows, now)
            if len(self.rows) <= self.MAX_ROWS:
                self.frames = self._animator.frames(self.rows, now)
        self._draw()

    def advance_frames(self) -> None:
        """Redraw if a phrase's frame changed since the last drawing (the card's timer calls this).

        Nothing is drawn while the card is hidden or its screen is not shown, nor over `MAX_ROWS`
        rows (the aggregate line has no phrases).
        """
        if (
            self.clock is None
            or not self.display
            or not self.rows
            or len(self.rows) > self.MAX_ROWS
            or not self.screen.is_current
        ):
            return
        frames = self._animator.frames(self.rows, self.clock())
        if frames != self.frames:
            self.frames = frames
            self._draw()

    def _draw(self) -> None:
        self.update(render_activity(self.rows, self.palette, max_rows=self.MAX_ROWS, frames=self.frames))


def _header(rows: Sequence[ActivityRow]) -> str:
    """`N active` (every row but queued and lost ones), `R read · W write` (active teams agents, when
    there are teams agents), `M managed` (managed rows, when there are any), `L lost`, `Q queued`."""
    active = [r for r in rows if r.state not in ("queued", "lost")]
    parts = [f"{len(active)} active"]
    if any(r.is_team for r in rows):
        parts.append(f"{sum(1 for r in active if r.is_team and r.kind == 'read')} read")
        parts.append(f"{sum(1 for r in active if r.is_team and r.kind == 'write')} write")
    managed = sum(1 for r in rows if not r.is_team)
    if managed:
        parts.append(f"{managed} managed")
    lost = sum(1 for r in rows if r.state == "lost")
    if lost:
        parts.append(f"{lost} lost")
    queued = sum(1 for r in rows if r.state == "queued")
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


def render_activity(
    rows: Sequence[ActivityRow],
    palette: ActivityPalette,
    *,
    max_rows: int = 10,
    frames: Mapping[str, PhraseFrame] | None = None,
) -> Text:
    """The activity card's text.

    Args:
        rows: The rows, in order.
        palette: The `activityColors` palette.
        max_rows: Beyond this many rows, one aggregate line instead.
        frames: Each row's phrase frame by `ActivityRow.key` (fade and dots); a row without one shows
            its phrase plainly.
    """
    phrase_style = f"italic {palette.text}".strip()
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
            text.append(f" {row.elapsed:>6}  ")
            text.append(f"{row.tokens:>15}", style=_tokens_style(row, palette))
        if row.budget:
            stopped = "✗" in row.budget
            text.append(f"  budget {row.budget}", style=f"bold {palette.error}" if stopped else "dim")
        if row.stale and row.state not in ("quarantined",):
            text.append("  ⚠ stale", style=f"bold {palette.warning}")
        frame = None if frames is None else frames.get(row.key)
        if frame is None:
            frame = PhraseFrame(row.progress, "shown", 0)
        if frame.text:
            style = phrase_style if frame.stage == "shown" else f"dim {phrase_style}"
            text.append(f"  {frame.text}" + "." * frame.dots, style=style)
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
    text.append(f"{row.tokens:>15}", style=_tokens_style(row, palette))
    if row.helpers:
        text.append(f"  +{row.helpers}", style=f"bold {palette.names}")


def _tokens_style(row: ActivityRow, palette: ActivityPalette) -> str:
    """A row's context tokens: the warning colour from 75%, the error colour from 90%."""
    level = context_level(row.context_percent)
    return {"ok": "", "warn": palette.warning, "danger": f"bold {palette.error}"}[level]


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
