"""The activity card's progress phrases: fade old, reveal new, then `.` `..` `...` (on a fake clock)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult

from corral.tui import CorralApp
from corral.tui._format import ActivityRow
from corral.tui._palette import DARK_DEFAULTS
from corral.tui.widgets import ActivityCard
from corral.tui.widgets._status import (
    DOT_STEP_S,
    FADE_OUT_S,
    REVEAL_S,
    PhraseAnimator,
    PhraseFrame,
    render_activity,
)

from .conftest import SIZE, TuiEnv, type_text, wait_until

T0 = 1_000_000.0
SETTLED = FADE_OUT_S + REVEAL_S
"""A change is over this long after it happened."""
TCSS = Path(__file__).parents[2] / "src" / "corral" / "tui" / "app.tcss"


class FakeClock:
    """Unix seconds that move only when the test says so."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _team(name: str, state: str, progress: str) -> ActivityRow:
    return ActivityRow(name, "read-collect", state, kind="read", model="scripted/demo", progress=progress)


def _phrase(text: Text, row: int) -> tuple[str, bool]:
    """Line `row`'s progress text (the last span of the line, dots included) and whether it is dim."""
    lines = text.plain.splitlines()
    end = sum(len(line) + 1 for line in lines[:row]) + len(lines[row])
    span = next(s for s in text.spans if s.start < end <= s.end)
    return text.plain[span.start : span.end].strip(), "dim" in str(span.style).split()


def _render(rows: list[ActivityRow], animator: PhraseAnimator, now: float) -> Text:
    return render_activity(rows, DARK_DEFAULTS, frames=animator.frames(rows, now))


def test_a_changed_phrase_fades_out_then_the_new_one_is_revealed_then_dots_cycle() -> None:
    animator = PhraseAnimator()
    animator.observe([_team("scan", "thinking", "waiting for model response")], T0)
    row = _team("scan", "working", "using bash")
    change = T0 + 5
    animator.observe([row], change)
    seen = [
        _phrase(_render([row], animator, change + offset), 1)
        for offset in (
            0.0,
            FADE_OUT_S / 2,
            FADE_OUT_S + REVEAL_S / 2,
            SETTLED + DOT_STEP_S / 2,
            SETTLED + DOT_STEP_S * 1.5,
            SETTLED + DOT_STEP_S * 2.5,
            SETTLED + DOT_STEP_S * 3.5,
        )
    ]
    assert seen == [
        ("waiting for model response", True),
        ("waiting for model response", True),
        ("using bash", True),
        ("using bash.", False),
        ("using bash..", False),
        ("using bash...", False),
        ("using bash.", False),
    ]
    assert SETTLED <= 1.0  # the contract: replaced within one second
    assert row.progress == "using bash"  # the row data stays the plain phrase


def test_a_first_seen_phrase_shows_at_once_with_dots_and_a_fixed_clock_renders_the_same() -> None:
    rows = [
        _team("scan", "thinking", "waiting for model response"),
        _team("fix", "starting", "starting session"),
    ]
    animator = PhraseAnimator()
    animator.observe(rows, T0)
    first = _render(rows, animator, T0)
    animator.observe(rows, T0)
    again = _render(rows, animator, T0)
    assert [_phrase(first, 1), _phrase(first, 2)] == [
        ("waiting for model response.", False),
        ("starting session.", False),
    ]
    assert again.plain == first.plain and again.spans == first.spans
    other = PhraseAnimator()
    other.observe(rows, T0)
    assert _render(rows, other, T0).plain == first.plain


def test_static_states_get_no_dots_and_their_detail_is_replaced_at_once() -> None:
    animator = PhraseAnimator()
    rows = [
        _team("audit", "stalled", "no activity for 15m10s"),
        _team("later", "queued", "queued at position 2"),
        ActivityRow("old", "researcher", "lost", progress="grep tax"),
        ActivityRow("q", "reviewer", "blocked", progress="asked"),
    ]
    animator.observe(rows, T0)
    text = _render(rows, animator, T0 + 10)
    assert [_phrase(text, i) for i in (1, 2, 3, 4)] == [
        ("no activity for 15m10s", False),
        ("queued at position 2", False),
        ("grep tax", False),
        ("asked", False),
    ]
    changed = [
        _team("audit", "stalled", "no activity for 15m11s"),
        _team("later", "queued", "queued at position 1"),
    ]
    animator.observe(changed, T0 + 11)
    text = _render(changed, animator, T0 + 11)
    assert [_phrase(text, 1), _phrase(text, 2)] == [
        ("no activity for 15m11s", False),
        ("queued at position 1", False),
    ]


def test_managed_working_rows_animate_and_no_phrase_shows_nothing() -> None:
    animator = PhraseAnimator()
    rows = [
        ActivityRow("scout", "scout", "working", progress="grep pattern=tax"),
        ActivityRow("idle", "scout", "working"),
        _team("scan", "thinking", ""),
    ]
    animator.observe(rows, T0)
    text = _render(rows, animator, T0 + DOT_STEP_S * 1.5)  # first seen: dots count from then
    lines = text.plain.splitlines()
    assert lines[1].endswith("  grep pattern=tax..")
    assert not lines[2].endswith(".") and not lines[3].endswith(".")
    assert animator.frames(rows, T0)[rows[1].key] == PhraseFrame("", "shown", 0)


def test_a_change_mid_fade_fades_what_is_on_screen_and_a_new_phrase_from_none_only_reveals() -> None:
    animator = PhraseAnimator()
    animator.observe([_team("scan", "working", "A")], T0)
    animator.observe([_team("scan", "working", "B")], T0 + 1)
    row_c = _team("scan", "working", "C")
    animator.observe([row_c], T0 + 1 + FADE_OUT_S / 2)  # A is still fading: A fades, then C
    assert animator.frame(row_c, T0 + 1 + FADE_OUT_S / 2) == PhraseFrame("A", "fading", 0)
    assert animator.frame(row_c, T0 + 1 + FADE_OUT_S) == PhraseFrame("A", "fading", 0)
    later = T0 + 1 + FADE_OUT_S / 2 + FADE_OUT_S + REVEAL_S / 2
    assert animator.frame(row_c, later) == PhraseFrame("C", "revealing", 0)
    animator.observe([_team("new", "starting", "")], T0 + 5)  # scan left the card: forgotten
    row_new = _team("new", "starting", "starting session")
    animator.observe([row_new], T0 + 6)
    assert animator.frame(row_new, T0 + 6) == PhraseFrame("starting session", "revealing", 0)
    assert animator.frame(row_new, T0 + 6 + REVEAL_S + DOT_STEP_S / 2) == PhraseFrame(
        "starting session", "shown", 1
    )
    assert animator.frame(_team("scan", "working", "C"), T0 + 6).stage == "shown"  # as if first seen


def test_rows_are_tracked_by_identity_not_position() -> None:
    animator = PhraseAnimator()
    a, b = _team("a", "working", "using bash"), _team("b", "thinking", "waiting for model response")
    animator.observe([a, b], T0)
    animator.observe([b, a], T0 + 1)  # reordered: no change
    assert {f.stage for f in animator.frames([b, a], T0 + 1).values()} == {"shown"}
    managed_a = ActivityRow("a", "scout", "working", progress="grep x")  # same label, other kind
    animator.observe([managed_a, b, a], T0 + 2)
    assert animator.frame(managed_a, T0 + 2).stage == "shown"
    assert animator.frame(a, T0 + 2).stage == "shown"


class CountingCard(ActivityCard):
    """An activity card that counts its timer's calls and its drawings."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock=clock)
        self.ticks = 0
        self.draws = 0

    def advance_frames(self) -> None:
        self.ticks += 1
        super().advance_frames()

    def _draw(self) -> None:
        self.draws += 1
        super()._draw()


class CardApp(App[int]):
    """One activity card on a fake clock."""

    CSS_PATH = str(TCSS)

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.card = CountingCard(clock)

    def compose(self) -> ComposeResult:
        yield self.card


async def test_the_card_redraws_on_its_timer_only_when_a_frame_changes() -> None:
    clock = FakeClock()
    app = CardApp(clock)
    async with app.run_test(size=(100, 8)) as pilot:
        card = app.card
        card.show_rows(
            [_team("scan", "thinking", "waiting for model response"), _team("later", "queued", "queued")]
        )
        assert card.draws == 1
        await wait_until(pilot, lambda: card.ticks >= 2)
        assert card.draws == 1  # the clock stood still: no frame changed, nothing redrawn
        clock.now += DOT_STEP_S * 1.5  # first seen at T0: the dots count from then
        await wait_until(pilot, lambda: card.draws == 2)
        assert "waiting for model response..\n" in str(card.render()) + "\n"
        assert "queued at position" not in str(card.render()) and str(card.render()).endswith("queued")
        card.display = False
        clock.now += DOT_STEP_S
        mark = card.ticks
        await wait_until(pilot, lambda: card.ticks >= mark + 2)
        assert card.draws == 2  # hidden: nothing drawn


def test_without_a_clock_the_card_draws_phrases_plainly() -> None:
    rows = [_team("scan", "thinking", "waiting for model response")]
    text = render_activity(rows, DARK_DEFAULTS)
    assert text.plain.splitlines()[1].endswith("  waiting for model response")
    assert ActivityCard().clock is None


def test_activity_card_animation_snapshot(snap_compare: Any) -> None:
    """A dim old phrase, a dim new phrase, a shown phrase with dots, and a static row (fixed clock)."""
    clock = FakeClock()

    class Snap(CardApp):
        def on_mount(self) -> None:
            first = [
                _team("fade", "working", "bash command=ls"),
                _team("reveal", "thinking", ""),
                _team("dots", "thinking", "waiting for model response"),
                _team("later", "queued", "queued at position 1"),
            ]
            self.card.show_rows(first)
            clock.now += 10
            self.card.show_rows(
                [
                    _team("fade", "thinking", "waiting for model response"),
                    _team("reveal", "thinking", "Reading the code."),
                    first[2],
                    first[3],
                ]
            )

    assert snap_compare(Snap(clock), terminal_size=(120, 7))


LEAD = """\
steps:
  - text: "Spawning."
    tool_calls:
      - name: spawn_agent
        args: {name: fix, model_slot: write-patch, prompt: "Fix it."}
  - text: "Waiting."
on_exhausted: repeat_last
agents:
  fix:
    - tool_calls:
        - {name: bash, args: {command: "for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done"}}
    - {text: "Thinking it over.", delay_ms: 60000}
"""


async def test_a_phrase_change_in_the_running_app_fades_reveals_and_dots(tui_env: TuiEnv) -> None:
    from corral._cli._launch import LaunchOptions

    clock = FakeClock()
    model = tui_env.script("lead", LEAD)
    app = CorralApp(LaunchOptions(tui_env.project, model=model, surfaces=["teams"]), clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        card = app.query_one(ActivityCard)
        key = "team/fix"

        def frame() -> PhraseFrame | None:
            return None if card.frames is None else card.frames.get(key)

        def fix() -> ActivityRow | None:
            return next((r for r in card.rows if r.label == "fix"), None)

        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_until(pilot, lambda: (row := fix()) is not None and row.state == "working")
        tool = fix().progress  # type: ignore[union-attr]  # `using bash`, or the call itself
        assert tool.startswith(("using bash", "bash command="))
        clock.now += 10  # whatever changed before settles
        await wait_until(pilot, lambda: (f := frame()) is not None and (f.text, f.stage) == (tool, "shown"))
        (tui_env.project / "go").write_text("")  # the tool ends; a model request starts
        await wait_until(
            pilot, lambda: (row := fix()) is not None and row.progress == "waiting for model response"
        )
        change = clock.now
        steps = [
            (0.0, PhraseFrame(tool, "fading", 0)),
            (FADE_OUT_S + REVEAL_S / 2, PhraseFrame("waiting for model response", "revealing", 0)),
            (SETTLED + DOT_STEP_S / 2, PhraseFrame("waiting for model response", "shown", 1)),
            (SETTLED + DOT_STEP_S * 1.5, PhraseFrame("waiting for model response", "shown", 2)),
            (SETTLED + DOT_STEP_S * 2.5, PhraseFrame("waiting for model response", "shown", 3)),
            (SETTLED + DOT_STEP_S * 3.5, PhraseFrame("waiting for model response", "shown", 1)),
        ]
        for offset, expected in steps:
            clock.now = change + offset
            await wait_until(pilot, lambda e=expected: frame() == e)  # type: ignore[misc]
            rendered = card.content
            assert isinstance(rendered, Text)
            lines = rendered.plain.splitlines()
            line = next(n for n, text in enumerate(lines) if n and text.split()[1] == "fix")
            phrase, dim = _phrase(rendered, line)
            assert phrase == expected.text + "." * expected.dots
            assert dim == (expected.stage != "shown")
        assert fix().progress == "waiting for model response"  # type: ignore[union-attr]
