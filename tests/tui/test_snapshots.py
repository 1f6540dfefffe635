"""SVG snapshots: the chat, the activity card, the follow view and the tier picker (fixed size and clock).

Update only after reading the report: `pytest tests/tui/test_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.pilot import Pilot

from corral.tui import CorralApp
from corral.tui._format import ActivityRow, RowKind
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
    tui_env.settings("")  # not a new installation: no /onboard hint in the picture
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
    """The activity card and footer alone: managed rows and teams rows in several states."""

    CSS_PATH = str(TCSS)

    def compose(self) -> ComposeResult:
        yield ActivityCard()
        yield StatusFooter()

    def on_mount(self) -> None:
        from corral.tui._format import CostSummary

        def team(name: str, tier: str, state: str, **fields: Any) -> ActivityRow:
            kind: RowKind = "read" if tier.startswith("read-") else "write"
            return ActivityRow(
                name, tier, state, kind=kind, model="scripted/demo", thinking="medium", **fields
            )

        self.query_one(ActivityCard).show_rows(
            [
                ActivityRow(
                    "scout",
                    "scout",
                    "working",
                    elapsed="1m05s",
                    tokens="12.3k tok (6%)",
                    context_percent=6.0,
                    progress="grep tax",
                ),
                ActivityRow(
                    "reviewer",
                    "reviewer",
                    "blocked",
                    elapsed="42s",
                    tokens="160.3k tok (80%)",
                    context_percent=80.0,
                    progress="asked",
                ),
                ActivityRow("old", "researcher", "lost", elapsed="9m00s", tokens="1.0k tok", stale=True),
                team(
                    "scan",
                    "read-collect",
                    "working",
                    elapsed="12s",
                    tokens="2.1k tok (1%)",
                    context_percent=1.0,
                    progress="bash command=pytest -q",
                ),
                team(
                    "review",
                    "read-review",
                    "thinking",
                    elapsed="40s",
                    tokens="151.0k tok (76%)",
                    context_percent=76.0,
                    progress="waiting for model response",
                ),
                team(
                    "fix",
                    "write-feature",
                    "waiting",
                    elapsed="2m10s",
                    tokens="40.2k tok (20%)",
                    context_percent=20.0,
                    helpers=2,
                    progress="waiting",
                ),
                team(
                    "audit",
                    "read-critical",
                    "stalled",
                    elapsed="16m00s",
                    tokens="? tok",
                    stale=True,
                    progress="no activity for 15m10s",
                ),
                team(
                    "migrate",
                    "write-critical",
                    "quarantined",
                    elapsed="3m00s",
                    tokens="181.0k tok (91%)",
                    context_percent=91.0,
                    stale=True,
                    progress="teardown timed out",
                ),
                team("later", "write-patch", "queued", elapsed="5s", progress="queued at position 1"),
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
    assert snap_compare(ActivityApp(), terminal_size=(130, 13))


class PickerApp(App[None]):
    """The tier picker over a fixed list of models and favorites."""

    CSS_PATH = str(TCSS)

    def on_mount(self) -> None:
        from corral.llm import ModelRegistry
        from corral.settings import Settings
        from corral.tui.screens import TierPickerScreen

        registry = ModelRegistry(Settings(), environ={})
        refs = (
            "scripted/demo",
            "anthropic/claude-sonnet-4-5",
            "openai/gpt-5",
            "openai/gpt-5.2",
            "openai/gpt-4.1",
        )
        self.push_screen(
            TierPickerScreen(
                [registry.resolve(ref) for ref in refs],
                {
                    "read-review": {"model": "anthropic/claude-sonnet-4-5", "thinking": "high"},
                    "write-patch": {"model": "openai/gpt-5.2", "thinking": "xhigh"},
                },
                lead_model="scripted/demo",
                lead_thinking="medium",
                available=frozenset({"scripted/demo"}),
            )
        )


def test_tier_picker_snapshot(snap_compare: Any) -> None:
    assert snap_compare(PickerApp(), press=["down", "right"], terminal_size=SIZE)


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


class CardsApp(App[None]):
    """The lead's chat with a delivered teams report (one collapsed, one expanded) and a message card."""

    CSS_PATH = str(TCSS)

    def compose(self) -> ComposeResult:
        from corral.tui.widgets import ChatLog

        yield ChatLog()

    async def on_mount(self) -> None:
        from corral.llm import CustomMessage, UserMessage
        from corral.orchestration.teams.messages.records import TEAM_MESSAGE_TYPE
        from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
        from corral.tui.widgets import ChatLog, TeamReportCard

        def report(
            name: str, tier: str, outcome: str, verification: str, summary: str, body: str
        ) -> CustomMessage:
            return CustomMessage(
                custom_type=TEAM_REPORT_TYPE,
                content=f"Report from {name}.\n\nSummary: {summary}\n\n{body}",
                details={
                    "name": name,
                    "tier": tier,
                    "outcome": outcome,
                    "verification": {"state": verification},
                    "acceptance": {"state": "pending"},
                },
                timestamp=0,
            )

        chat = self.query_one(ChatLog)
        await chat.load(
            [
                UserMessage(content="Review the auth module and fix the token check.", timestamp=0),
                CustomMessage(
                    custom_type=TEAM_MESSAGE_TYPE,
                    content="Message from scan.\n\nShould I also check the session cookies?",
                    details={"from": "scan", "summary": "scope question"},
                    timestamp=0,
                ),
                report(
                    "scan",
                    "read-review",
                    "succeeded",
                    "not-requested",
                    "two findings in auth/token.py",
                    "F1 token.py:12 compares with ==.\nF2 token.py:40 never checks expiry.",
                ),
                report(
                    "fix",
                    "write-feature",
                    "blocked",
                    "failed",
                    "expiry check added; one test still fails",
                    "Changed auth/token.py.\npytest -q: 1 failed, 41 passed.",
                ),
            ]
        )
        chat.query(TeamReportCard).last().collapsible.collapsed = False


def test_chat_report_and_message_cards_snapshot(snap_compare: Any) -> None:
    assert snap_compare(CardsApp(), terminal_size=SIZE)
