"""SVG snapshots of the chat and the activity card (fixed size, scripted model, fixed clock).

Update only after reading the report: `pytest tests/tui/test_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.pilot import Pilot

from corral.tui import CorralApp
from corral.tui._format import ActivityRow
from corral.tui.widgets import ActivityCard, Editor, StatusFooter

from .conftest import SIZE, TuiEnv, type_text, wait_until

TCSS = Path(__file__).parents[2] / "src" / "corral" / "tui" / "app.tcss"

CHAT = """\
steps:
  - thinking: "The user wants the line count."
    text: "Counting the lines of **README.md**."
    tool_calls:
      - {name: bash, args: {command: 'seq 1 12'}, id: call-1}
  - text: "It has *one* line:\\n\\n- `# sample`"
"""


def test_chat_snapshot(tui_env: TuiEnv, snap_compare: Any) -> None:
    model = tui_env.script("chat", CHAT)
    app = tui_env.app(model)

    async def run_before(pilot: Pilot[int]) -> None:
        assert isinstance(pilot.app, CorralApp)
        pilot.app.query_one(Editor).cursor_blink = False
        await type_text(pilot, "how long is the README?")
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: (
                pilot.app.launched is not None  # type: ignore[attr-defined]
                and pilot.app.launched.agent.is_idle  # type: ignore[attr-defined]
                and len(pilot.app.launched.agent.messages) == 4
            ),  # type: ignore[attr-defined]
        )
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


class ActivityApp(App[None]):
    """The activity card and footer alone, with rows in several states."""

    CSS_PATH = str(TCSS)

    def compose(self) -> ComposeResult:
        yield ActivityCard()
        yield StatusFooter()

    def on_mount(self) -> None:
        from corral.tui._format import CostSummary

        self.query_one(ActivityCard).show_rows(
            [
                ActivityRow(
                    "scout", "scout", "working", elapsed="1m05s", tokens="12.3k", progress="grep tax"
                ),
                ActivityRow(
                    "reviewer", "reviewer", "blocked", elapsed="42s", tokens="3.1k", progress="asked"
                ),
                ActivityRow("fixer", "implementer", "settling", elapsed="2m10s", tokens="40.0k"),
                ActivityRow("helper", "generalist", "starting", elapsed="0s"),
                ActivityRow("old", "researcher", "lost", elapsed="9m00s", tokens="1.0k", stale=True),
                ActivityRow("remote", "scout", "unknown", elapsed="-", stale=True),
            ]
        )
        self.query_one(StatusFooter).show(
            model_ref="scripted/demo",
            thinking="medium",
            percent=91.0,
            window=200_000,
            cost=CostSummary(0.042, incomplete=True),
            busy=True,
        )


def test_activity_card_snapshot(snap_compare: Any) -> None:
    assert snap_compare(ActivityApp(), terminal_size=(100, 12))


def test_follow_view_snapshot(tui_env: TuiEnv, snap_compare: Any) -> None:
    from corral.tui.screens import FollowScreen
    from corral.tui.widgets import ToolCard

    from .test_follow import TEAM

    app = tui_env.app(tui_env.script("team", TEAM))

    async def run_before(pilot: Pilot[int]) -> None:
        assert isinstance(pilot.app, CorralApp)
        corral_app = pilot.app
        corral_app.query_one(Editor).cursor_blink = False
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: (
                {r.label for r in corral_app.rows} >= {"a1", "a2"}
                and corral_app.launched is not None
                and corral_app.launched.agent.is_idle
            ),
        )
        await pilot.press("down")
        await wait_until(pilot, lambda: isinstance(corral_app.screen, FollowScreen))
        screen = corral_app.screen
        assert isinstance(screen, FollowScreen)
        await wait_until(pilot, lambda: any(c.done for c in screen.transcript.query(ToolCard)))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
