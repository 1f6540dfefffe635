"""The lead chat: streaming Markdown, thinking, tool logs, the editor's keys and Escape."""

from __future__ import annotations

import shlex
from pathlib import Path

from textual.widgets import Markdown

from corral.tui import CorralApp
from corral.tui.widgets import AssistantCard, ChatLog, Editor, NoticeCard, ThinkingBlock, ToolCard, UserCard

from .conftest import SIZE, TuiEnv, type_text, wait_until


def _wait_for(gate: Path) -> str:
    """A shell command that keeps the lead's tool batch running until the test creates `gate`."""
    return f"while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.01; done"


def _idle(app: CorralApp) -> bool:
    return app.launched is not None and app.launched.agent.is_idle


async def test_reply_streams_as_markdown_with_thinking_collapsed_at_the_end(tui_env: TuiEnv) -> None:
    model = tui_env.script(
        "md",
        'steps:\n  - thinking: "Considering the greeting."\n    text: "**Hello** from `corral`."\n',
    )
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(c.text for c in app.query(AssistantCard)) and _idle(app))
        await pilot.pause()
        card = app.query_one(AssistantCard)
        assert card.text == "**Hello** from `corral`."
        assert card.query_one(Markdown) is not None
        thinking = card.query_one(ThinkingBlock)
        assert card.thinking == "Considering the greeting."
        assert thinking.collapsed is True
        assert [str(u.render()) for u in app.query(UserCard)] == ["hi"]


async def test_large_tool_log_is_collapsed_until_l_expands_it(tui_env: TuiEnv) -> None:
    model = tui_env.script(
        "tool",
        "steps:\n"
        "  - tool_calls:\n"
        "      - {name: bash, args: {command: 'seq 1 30'}}\n"
        '  - text: "Counted."\n',
    )
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "count")
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(c.done for c in app.query(ToolCard)) and _idle(app))
        card = app.query_one(ToolCard)
        assert card.is_large and not card.expanded
        assert "more lines (l to expand)" in str(card.render())
        assert "30" not in str(card.render()).splitlines()[-1]
        app.query_one(ChatLog).focus()
        await pilot.press("l")
        assert card.expanded
        assert "\n  30" in str(card.render())
        await pilot.press("l")
        assert not card.expanded
        app.query_one(Editor).focus()
        await pilot.press("ctrl+o")
        assert card.expanded


async def test_enter_while_the_lead_works_queues_a_steer(tui_env: TuiEnv) -> None:
    gate = tui_env.root / "go"
    model = tui_env.script(
        "steer",
        "steps:\n"
        '  - text: "Reading."\n'
        "    tool_calls:\n"
        f"      - {{name: bash, args: {{command: {_wait_for(gate)!r}}}}}\n"
        '  - text: "Steered."\n'
        "    expect: {last_user_contains: 'also check tests'}\n",
    )
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "start")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.launched is not None and app.launched.agent.is_streaming)
        await type_text(pilot, "also check tests")
        await pilot.press("enter")
        queued = app.query(UserCard).last()
        assert queued.has_class("queued")
        assert "steer queued" in str(queued.render())
        gate.touch()  # the tool batch ends only now, so the steer was queued while the lead worked
        await wait_until(pilot, lambda: any(c.text == "Steered." for c in app.query(AssistantCard)))
        await wait_until(pilot, lambda: not queued.has_class("queued"))
        assert str(queued.render()) == "also check tests"


async def test_alt_enter_while_the_lead_works_queues_a_follow_up(tui_env: TuiEnv) -> None:
    gate = tui_env.root / "go"
    model = tui_env.script(
        "follow",
        "steps:\n"
        '  - text: "First answer."\n'
        "    tool_calls:\n"
        f"      - {{name: bash, args: {{command: {_wait_for(gate)!r}}}}}\n"
        '  - text: "Done."\n'
        '  - text: "Followed up."\n'
        "    expect: {last_user_contains: 'and then'}\n",
    )
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.launched is not None and app.launched.agent.is_streaming)
        await type_text(pilot, "and then")
        await pilot.press("alt+enter")
        assert "follow-up queued" in str(app.query(UserCard).last().render())
        gate.touch()
        await wait_until(pilot, lambda: any(c.text == "Followed up." for c in app.query(AssistantCard)))
        assert [c.text for c in app.query(AssistantCard)] == ["First answer.", "Done.", "Followed up."]


async def test_escape_interrupts_the_lead(tui_env: TuiEnv) -> None:
    model = tui_env.script("slow", 'steps:\n  - text: "Too slow."\n    delay_ms: 60000\n')
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.launched is not None and app.launched.agent.is_streaming)
        await type_text(pilot, "also check the tests")
        await pilot.press("enter")  # queued as a steer while the lead works
        assert "steer queued" in str(app.query(UserCard).last().render())
        await pilot.press("escape")
        await wait_until(pilot, lambda: _idle(app) and bool(app.query(AssistantCard)))
        await wait_until(pilot, lambda: app.query_one(AssistantCard)._error is not None)
        assert "aborted" in str(app.query_one(AssistantCard)._error.render())  # type: ignore[union-attr]
        # The notice says when the interrupt is done, and the queued steer came back to the prompt
        # instead of being delivered after the interrupt.
        notes = lambda: [str(n.render()) for n in app.query(NoticeCard)]  # noqa: E731
        await wait_until(pilot, lambda: any(n.startswith("lead interrupted") for n in notes()))
        assert not any("interrupting" in n for n in notes())
        assert app.editor.text == "also check the tests"
        assert not any("steer queued" in str(c.render()) for c in app.query(UserCard))
        assert app.launched is not None and app.launched.agent.pending_message_count == 0
        users = [m for m in app.launched.agent.messages if getattr(m, "role", "") == "user"]
        assert [m.content if isinstance(m.content, str) else m.content[0].text for m in users] == ["go"]


async def test_editor_history_and_multi_line_input(tui_env: TuiEnv) -> None:
    model = tui_env.script("echo", 'steps:\n  - text: "ok"\non_exhausted: repeat_last\n')
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        editor = app.query_one(Editor)
        await type_text(pilot, "a")
        await pilot.press("ctrl+j")
        await type_text(pilot, "b")
        assert editor.text == "a\nb"
        await pilot.press("shift+enter")
        assert editor.text == "a\nb\n"
        await pilot.press("enter")
        await wait_until(pilot, lambda: _idle(app) and len(app.query(AssistantCard)) == 1)
        assert editor.text == ""
        assert [str(u.render()) for u in app.query(UserCard)] == ["a\nb"]  # sent text is stripped
        await type_text(pilot, "second")
        await pilot.press("enter")
        await wait_until(pilot, lambda: _idle(app) and len(app.query(AssistantCard)) == 2)
        await pilot.press("up")
        assert editor.text == "second"
        await pilot.press("up")
        assert editor.text == "a\nb"
        await pilot.press("down", "down")
        assert editor.text == ""


async def test_ctrl_s_sends_a_follow_up_and_quit_keys_close_the_app(tui_env: TuiEnv) -> None:
    model = tui_env.script("quit", 'steps:\n  - text: "ok"\non_exhausted: repeat_last\n')
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "hello")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: _idle(app) and len(app.query(AssistantCard)) == 1)
        assert [str(u.render()) for u in app.query(UserCard)] == ["hello"]
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: not app.is_running)
    assert app.launched is None


async def test_quit_command_closes_the_app(tui_env: TuiEnv) -> None:
    model = tui_env.script("quit2", 'steps:\n  - text: "ok"\n')
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "/quit")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.is_running)
    assert app.launched is None
