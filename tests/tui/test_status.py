"""Footer (model, thinking, context warnings, combined cost) and the activity card of managed agents."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import pytest

from corral.llm import UserMessage
from corral.tui import CorralApp
from corral.tui._format import (
    ActivityRow,
    CostSummary,
    ManagedAgent,
    activity_row,
    context_level,
    format_context,
    format_cost,
)
from corral.tui.widgets import ActivityCard, AgentAskCard, AgentResultCard, StatusFooter

from .conftest import SIZE, TuiEnv, started, type_text, wait_until


def _idle(app: CorralApp) -> bool:
    return app.launched is not None and app.launched.agent.is_idle


def test_context_warning_levels_and_cost_text() -> None:
    assert [context_level(p) for p in (None, 10.0, 75.0, 89.9, 90.0)] == [
        "ok",
        "ok",
        "warn",
        "warn",
        "danger",
    ]
    assert format_context(80.0, 200_000) == "⚠ ctx 80% of 200.0k"
    assert format_context(None, 200_000) == "ctx ? of 200.0k"
    assert format_cost(CostSummary(0.0123)) == "$0.012"
    assert format_cost(CostSummary(0.0123, incomplete=True)) == "$0.012+ (incomplete)"


def test_activity_row_shows_a_rate_limit_wait_instead_of_progress() -> None:
    agent = ManagedAgent("scout", "scout", "working")
    waiting = replace(agent, rate_limit="waiting (rate limit, 7s)")
    assert activity_row(waiting, now_ms=0, progress="grep").progress == "waiting (rate limit, 7s)"
    assert activity_row(agent, now_ms=0, progress="grep").progress == "grep"


def test_activity_row_of_a_managed_agent() -> None:
    row = activity_row(
        ManagedAgent("scout", "scout", "working", tokens=12_345, stale=True, started_at_ms=1_000),
        now_ms=66_000,
        progress="grep pattern=tax",
    )
    assert (row.label, row.definition, row.state, row.elapsed, row.tokens, row.stale, row.glyph) == (
        "scout",
        "scout",
        "working",
        "1m05s",
        "12.3k tok",
        True,
        "●",
    )


async def test_footer_shows_model_thinking_and_context_warnings(tui_env: TuiEnv) -> None:
    model = tui_env.script(
        "ctx",
        "steps:\n"
        '  - text: "small"\n    usage: {input: 1000, output: 10}\n'
        '  - text: "bigger"\n    usage: {input: 152000, output: 10}\n'
        '  - text: "huge"\n    usage: {input: 182000, output: 10}\n',
    )
    app = tui_env.app(model, thinking="low")
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        footer = app.query_one(StatusFooter)
        assert footer.model_ref == model and footer.thinking == "low"
        for prompt, expected in (("one", None), ("two", "ctx-warn"), ("three", "ctx-danger")):
            await type_text(pilot, prompt)
            await pilot.press("enter")
            await wait_until(
                pilot,
                lambda p=prompt: (
                    _idle(app)
                    and p in [m.text for m in app.launched.agent.messages if isinstance(m, UserMessage)]
                ),
            )  # type: ignore[union-attr]
            await pilot.pause()
            await wait_until(pilot, lambda: "%" in footer.context_text)
            assert footer.has_class("ctx-warn") == (expected == "ctx-warn")
            assert footer.has_class("ctx-danger") == (expected == "ctx-danger")
        assert footer.context_text.startswith("⚠ ctx 91%")
        assert footer.cost_text.startswith("$")


async def test_cost_is_incomplete_while_a_reply_streams(tui_env: TuiEnv) -> None:
    model = tui_env.script("wait", 'steps:\n  - text: "done"\n    delay_ms: 60000\n')
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        assert not app.cost_summary().incomplete
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.launched is not None and app.launched.agent.is_streaming)
        assert app.cost_summary().incomplete
        await pilot.press("escape")
        await wait_until(pilot, lambda: _idle(app))
        assert not app.cost_summary().incomplete


TEAM = """\
steps:
  - text: "Delegating."
    tool_calls:
      - name: agent
        args: {action: delegate, definition: scout, label: scout, task: "Map the code."}
      - name: agent
        args: {action: delegate, definition: reviewer, label: reviewer, task: "Review it."}
  - text: "Waiting for them."
  # The reviewer stays blocked until the test has seen the card show it (it opens the gate).
  - text: "Answering soon."
    tool_calls:
      - name: bash
        args: {command: "for i in $(seq 1200); do [ -e answer.gate ] && break; sleep 0.05; done"}
  - text: "Answering."
    tool_calls:
      - name: agent
        args: {action: reply, agent: reviewer, message: "Correctness only."}
  - text: "Noted."
on_exhausted: repeat_last
agents:
  reviewer:
    - text: "A question first."
      tool_calls:
        - name: ask_owner
          args: {question: "Style too?"}
    - text: "Reviewed: no findings."
  scout:
    - text: "Searching."
      delay_ms: 1500
      tool_calls:
        - name: grep
          args: {pattern: "sample"}
    - text: "The code is in README.md."
"""


async def test_activity_card_tracks_agents_and_results_arrive_as_cards(
    tui_env: TuiEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: set[tuple[str, str, str]] = set()
    show_rows = ActivityCard.show_rows

    def spy(self: ActivityCard, rows: Sequence[ActivityRow]) -> None:
        seen.update((r.label, r.definition, r.state) for r in rows)
        show_rows(self, rows)

    monkeypatch.setattr(ActivityCard, "show_rows", spy)
    model = tui_env.script("team", TEAM)
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        card = app.query_one(ActivityCard)
        assert not card.display
        await type_text(pilot, "split the work")
        await pilot.press("enter")
        await wait_until(pilot, lambda: ("reviewer", "reviewer", "blocked") in seen)
        (tui_env.project / "answer.gate").touch()
        await wait_until(pilot, lambda: ("scout", "scout", "working") in seen)
        assert card.display
        await wait_until(pilot, lambda: bool(app.query(AgentAskCard)))
        asked = str(app.query_one(AgentAskCard).render())
        assert "Style too?" in asked
        assert "press m, type the answer and press Enter" in asked  # how a person answers
        await wait_until(pilot, lambda: len(app.query(AgentResultCard)) == 2, timeout=30)
        texts = " ".join(str(c.render()) for c in app.query(AgentResultCard))
        assert "no findings" in texts and "README.md" in texts
        # The agent, status and elapsed time lead; the ids stay behind `l`.
        scout = next(c for c in app.query(AgentResultCard) if c.agent == "scout")
        shown = str(scout.render())
        assert re.match(r"◆ scout · completed · \d+s\n", shown), shown
        assert "The code is in README.md." in shown and "request=" not in shown
        app.chat.action_toggle_logs()
        assert "request=" in str(scout.render())
        app.chat.action_toggle_logs()
        await wait_until(
            pilot, lambda: any(r.progress.startswith("grep") for r in card.rows) or not card.rows
        )


def test_latest_progress_reads_a_running_tool_call_or_the_last_reply_line() -> None:
    from corral.llm import AssistantMessage, TextContent, ToolCall, ToolResultMessage
    from corral.tui._format import latest_progress

    call = ToolCall(id="c1", name="bash", arguments={"command": "sleep 40"})
    asked = AssistantMessage(content=[TextContent(text="Running it.\nNow."), call], timestamp=0)
    assert latest_progress([UserMessage(content="go", timestamp=0)]) is None
    assert latest_progress([asked]) == ("tool", "bash command=sleep 40")
    answered = ToolResultMessage(tool_call_id="c1", tool_name="bash", content=[], timestamp=0)
    assert latest_progress([asked, answered]) == ("reply", "Now.")


GATED = """\
steps:
  - text: "Delegating."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: generalist, label: slow, task: "Run a long command."}}
  - text: "Started."
on_exhausted: repeat_last
agents:
  slow:
    - text: "Running a long command."
      tool_calls: [{name: bash, args: {command: "until [ -e GATE ]; do sleep 0.05; done; echo slept"}}]
    - {text: "The long command finished."}
"""


async def test_a_managed_row_shows_its_context_tokens_and_running_tool(tui_env: TuiEnv) -> None:
    """Issue 28: a managed row read `slow (generalist) working 7s - tok` with no progress, while a teams
    row shows `435 tok (0%) using bash`: its tool call started before the app subscribed to it."""
    gate = tui_env.project / "GATE"
    app = tui_env.app(tui_env.script("gated", GATED.replace("GATE", str(gate))))
    try:
        async with app.run_test(size=SIZE) as pilot:
            card = app.query_one(ActivityCard)
            await type_text(pilot, "go")
            await pilot.press("enter")
            await wait_until(
                pilot, lambda: any(r.label == "slow" and r.state == "working" for r in card.rows)
            )
            await wait_until(pilot, lambda: card.rows[0].progress.startswith("bash command=until"))
            row = card.rows[0]
            assert re.fullmatch(r"\d+ tok \(\d+%\)", row.tokens), row.tokens
            shown = str(card.render())
            assert f"{row.tokens}  bash command=until" in shown, shown
            assert "- tok" not in shown
            gate.touch()
            await wait_until(pilot, lambda: not card.rows or card.rows[0].state != "working")
    finally:
        gate.touch()
