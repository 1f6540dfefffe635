"""Teams agents in the app: activity rows, navigation, `m`/`i`/`x`, report and message cards."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from textual.widgets import Collapsible
from textual.widgets._collapsible import CollapsibleTitle

from corral.llm import AssistantMessage, CustomMessage
from corral.orchestration.teams.messages.records import TEAM_MESSAGE_TYPE
from corral.tui import CorralApp
from corral.tui._format import ActivityRow
from corral.tui._teams import stop_notice
from corral.tui.screens import FollowScreen
from corral.tui.widgets import (
    ActivityCard,
    AssistantCard,
    NoticeCard,
    TeamMessageCard,
    TeamReportCard,
    ToolCard,
)

from .conftest import SIZE, TuiEnv, type_text, wait_until

TEAM = """\
steps:
  - text: "Spawning."
    tool_calls:
      - name: spawn_swarm_agents
        args:
          agents:
            - {name: scan, model_slot: read-review, prompt: "Scan the code."}
            - {name: fix, model_slot: write-feature, allow_nested_read_agents: true, prompt: "Fix it."}
            - {name: later, model_slot: read-collect, prompt: "Wait your turn."}
  - text: "Waiting."
on_exhausted: repeat_last
agents:
  scan:
    - text: "Scanning."
      tool_calls:
        - {name: bash, args: {command: "seq 1 200"}}
    - {text: "Still scanning.", delay_ms: 60000}
    - expect: {context_contains: ["look at auth"]}
      tool_calls:
        - name: report_and_exit
          args: {content: "Two findings in auth.py.", summary: "auth reviewed", outcome: succeeded}
  fix:
    - tool_calls:
        - {name: spawn_agent, args: {name: helper, model_slot: read-collect, prompt: "Look."}}
    - {text: "Waiting for my helper."}
  helper:
    - {text: "Looking.", delay_ms: 60000}
  later:
    - {text: "Finally.", delay_ms: 60000}
"""

LIMITS = "[teams.read_agents]\nmax_concurrent = 1\n"


def _idle(app: CorralApp) -> bool:
    return app.launched is not None and app.launched.agent.is_idle


def _row(app: CorralApp, name: str) -> ActivityRow | None:
    return next((r for r in app.rows if r.label == name), None)


def _notices(screen: FollowScreen) -> list[str]:
    return [str(n.render()) for n in screen.transcript.query(NoticeCard)]


def _lead_notice(app: CorralApp, fragment: str) -> str | None:
    """The text of the lead's hidden `corral-team-message` containing `fragment`, if delivered."""
    assert app.launched is not None
    for message in app.launched.agent.messages:
        if (
            isinstance(message, CustomMessage)
            and message.custom_type == TEAM_MESSAGE_TYPE
            and fragment in str(message.content)
        ):
            return str(message.content)
    return None


def _team_app(tui_env: TuiEnv) -> CorralApp:
    tui_env.settings(LIMITS)
    return tui_env.app(tui_env.script("team", TEAM), surfaces=["teams"])


async def _spawn(app: CorralApp, pilot: object) -> None:
    await type_text(pilot, "go")  # type: ignore[arg-type]
    await pilot.press("enter")  # type: ignore[attr-defined]
    await wait_until(
        pilot,  # type: ignore[arg-type]
        lambda: (
            (fix := _row(app, "fix")) is not None
            and fix.helpers == 1
            and fix.state == "waiting"
            and _row(app, "later") is not None
            and _idle(app)
        ),
    )


async def test_teams_agents_are_activity_rows_with_tier_model_state_tokens_and_helpers(
    tui_env: TuiEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: set[tuple[str, str]] = set()
    show_rows = ActivityCard.show_rows

    def spy(self: ActivityCard, rows: Sequence[ActivityRow]) -> None:
        seen.update((r.label, r.state) for r in rows)
        show_rows(self, rows)

    monkeypatch.setattr(ActivityCard, "show_rows", spy)
    app = _team_app(tui_env)
    async with app.run_test(size=SIZE) as pilot:
        await _spawn(app, pilot)
        await wait_until(  # scan answered its first request (its context is known) and was shown busy
            pilot,
            lambda: (
                (scan := _row(app, "scan")) is not None
                and scan.tokens.endswith("%)")
                and bool({("scan", "working"), ("scan", "thinking")} & seen)
            ),
        )
        model = app.options.model
        scan, fix, later = _row(app, "scan"), _row(app, "fix"), _row(app, "later")
        assert scan is not None and fix is not None and later is not None
        assert [r.label for r in app.rows] == ["scan", "fix", "later"]  # helpers are not rows
        assert (scan.kind, scan.definition, scan.model, scan.thinking) == (
            "read",
            "read-review",
            model,
            "medium",
        )
        assert (fix.kind, fix.definition, fix.helpers) == ("write", "write-feature", 1)
        assert fix.progress == "waiting"
        assert (later.state, later.progress, later.run_id) == ("queued", "queued at position 1", None)
        assert scan.tokens.endswith("%)") and " tok (" in scan.tokens
        assert ("scan", "working") in seen or ("scan", "thinking") in seen
        card = app.query_one(ActivityCard)
        text = str(card.render())
        assert text.splitlines()[0] == "agent activity  2 active · 1 read · 1 write · 1 queued · ↓ navigate"
        assert "+1" in text and "read-review" in text and f"{model}/medium" in text
        assert "queued at position 1" in text


async def test_navigation_message_interrupt_and_stop_on_teams_agents(tui_env: TuiEnv) -> None:
    app = _team_app(tui_env)
    async with app.run_test(size=SIZE) as pilot:
        await _spawn(app, pilot)
        await pilot.press("down")
        await wait_until(pilot, lambda: isinstance(app.screen, FollowScreen))
        screen = app.screen
        assert isinstance(screen, FollowScreen)
        assert screen.labels == ["scan", "fix", "later"] and screen.label == "scan"
        log = screen.transcript
        await wait_until(pilot, lambda: any(c.done for c in log.query(ToolCard)))
        assert any(c.text == "Scanning." for c in log.query(AssistantCard))
        header = str(screen.query_one("#follow-header").render())
        assert header.startswith("scan · ") and "read-review" in header and "(1 of 3)" in header
        # Left cycles to the last row: the queued agent; x cancels it before it starts.
        await pilot.press("left")
        assert screen.label == "later"
        assert any(t.startswith("later is queued") for t in _notices(screen))
        await pilot.press("x")
        await wait_until(
            pilot, lambda: any(t.startswith("Cancelled queued agent later") for t in _notices(screen))
        )
        await wait_until(pilot, lambda: _lead_notice(app, "stopped agent later") is not None)
        assert "It was still queued" in str(_lead_notice(app, "stopped agent later"))
        await pilot.press("right")
        assert screen.label == "scan"
        await wait_until(pilot, lambda: any(c.done for c in screen.transcript.query(ToolCard)))
        # m: a message from the lead, steered into the running agent.
        await pilot.press("m")
        assert "Message scan" in screen.composer.placeholder
        await type_text(pilot, "look at auth")
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(t.startswith("message sent to scan") for t in _notices(screen)))
        assert "message sent to scan: it reads it in its running session" in _notices(screen)
        assert not screen.composer.display
        # i: interrupt the model call; the agent keeps going with the message it got.
        await pilot.press("i")
        await wait_until(pilot, lambda: any(t.startswith("Interrupted scan") for t in _notices(screen)))
        # Issue 28: the notes are worded for a person, without the model's tool or delivery names.
        notes = " ".join(_notices(screen))
        assert not any(word in notes for word in TOOL_WORDS), notes
        await wait_until(pilot, lambda: bool(app.chat.query(TeamReportCard)))
        # Down: the writer. x stops it (and its helper); the lead gets a hidden notice with the teardown.
        await pilot.press("down")
        assert screen.label == "fix"
        await pilot.press("x")
        await wait_until(pilot, lambda: any(t.startswith("Stopped agent fix") for t in _notices(screen)))
        await wait_until(
            pilot, lambda: _lead_notice(app, "The user stopped agent fix from the terminal") is not None
        )
        assert "Teardown settled" in str(_lead_notice(app, "stopped agent fix"))
        # The stopped agent stays reachable; messaging it now fails and keeps the draft.
        await wait_until(pilot, lambda: _row(app, "fix") is None)
        assert screen.label == "fix"
        await pilot.press("m")
        await type_text(pilot, "hello")
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(t.startswith("message not sent") for t in _notices(screen)))
        assert screen.composer.display and screen.composer.value == "hello"
        await pilot.press("escape", "escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, FollowScreen))


def test_the_stop_notice_tells_the_lead_how_the_teardown_ended() -> None:
    settled = {"stopped": True, "teardown": {"status": "settled"}, "releasedClaims": ["src/a.py"]}
    assert stop_notice("fix", "Stopped agent fix.", settled) == (
        "The user stopped agent fix from the terminal (x). Stopped agent fix. "
        "Teardown settled; it will not report. Released claims: src/a.py."
    )
    timed_out = {
        "stopped": False,
        "quarantined": True,
        "teardown": {"status": "timed_out"},
        "error": "the run did not settle within 2.5 s",
    }
    text = stop_notice("fix", "Agent fix is inactive but quarantined.", timed_out)
    assert text.endswith(
        "Teardown incomplete (timed_out): the run did not settle within 2.5 s. "
        "Its name stays fenced until cleanup completes."
    )


CARDS = """\
steps:
  - text: "Spawning."
    tool_calls:
      - {name: spawn_agent, args: {name: rev, prompt: "Review."}}
  - text: "Noted."
on_exhausted: repeat_last
agents:
  rev:
    - tool_calls:
        - {name: send_message, args: {content: "Should I check style too?", summary: "question"}}
    - tool_calls:
        - name: report_and_exit
          args:
            content: "The review found nothing wrong.\\n\\nDetails: every function is tested."
            summary: "all clear"
            outcome: blocked
"""


async def test_reports_and_messages_render_as_cards(tui_env: TuiEnv) -> None:
    app = tui_env.app(tui_env.script("cards", CARDS), surfaces=["teams"])
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: bool(app.chat.query(TeamReportCard)) and bool(app.chat.query(TeamMessageCard))
        )
        message = str(app.chat.query_one(TeamMessageCard).render())
        assert message.startswith("✉ message from rev — question") and "Should I check style too?" in message
        card = app.chat.query_one(TeamReportCard)
        assert (card.agent_name, card.outcome, card.verification, card.acceptance, card.summary) == (
            "rev",
            "blocked",
            "not-requested",
            "pending",
            "all clear",
        )
        assert "every function is tested" in card.body and "do not stop it" not in card.body
        collapsible = card.query_one(Collapsible)
        assert collapsible.collapsed
        # The lead answers each delivery; expand the report once it answered both.
        await wait_until(
            pilot,
            lambda: (
                _idle(app)
                and app.launched is not None
                and isinstance(app.launched.agent.messages[-1], AssistantMessage)
                and sum(isinstance(m, CustomMessage) for m in app.launched.agent.messages) == 2
            ),
        )
        # Expand it from its title with the keyboard: a click at screen coordinates can land on
        # another widget while the chat still lays out under load.
        card.query_one(CollapsibleTitle).focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: not collapsible.collapsed)
        app.editor.focus()
        await pilot.press("ctrl+o")  # expands every log and report body; again collapses them
        await pilot.press("ctrl+o")
        assert collapsible.collapsed


TOOL_WORDS = (
    "send_message",
    "read_inbox",
    "stop_teammate",
    "interrupt_teammate",
    "get_agent_status",
    "report_and_exit",
    "active-session",
)


def test_interrupt_and_message_notes_name_no_tools() -> None:
    """Issue 28: the app quoted the model's tool text ("waits for your message (send_message)") and the
    delivery enum ("message sent to r1 (active-session)"); every outcome is worded for a person."""
    from corral.orchestration.teams.results import InterruptResult
    from corral.tui._teams import interrupt_note, message_note

    notes = [message_note("r1", "active-session"), message_note("r1", "inbox")]
    for status in ("interrupted", "pending", "no_command", "not_found", "closing", "tmux"):
        notes.append(interrupt_note(InterruptResult("r1", status, "team")))  # type: ignore[arg-type]
    for note in notes:
        assert "r1" in note and not any(word in note for word in TOOL_WORDS), note
