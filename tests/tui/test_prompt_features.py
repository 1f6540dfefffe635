"""The prompt, for a person: Tab completion, `@path` attachments, `!cmd`, `/new` and `/help`."""

from __future__ import annotations

from textual.binding import Binding

from corral.llm import BashExecutionMessage, UserMessage
from corral.tui import CorralApp
from corral.tui._commands import FOLLOW_KEYS, KEYS
from corral.tui.widgets import BashCard, NoticeCard

from .conftest import SIZE, TuiEnv, type_text, wait_until

ECHO = 'steps:\n  - text: "ok"\non_exhausted: repeat_last\n'


def _notices(app: CorralApp) -> list[str]:
    return [str(n.render()) for n in app.chat.query(NoticeCard)]


def _idle(app: CorralApp) -> bool:
    return app.launched is not None and app.launched.agent.is_idle


async def test_tab_completes_slash_commands_and_paths(tui_env: TuiEnv) -> None:
    (tui_env.project / "src").mkdir()
    (tui_env.project / "src" / "invoice.py").write_text("x = 1\n")
    (tui_env.project / "src" / "index.py").write_text("y = 2\n")
    app = tui_env.app(tui_env.script("echo", ECHO))
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "/he")
        await pilot.press("tab")
        assert app.editor.text == "/help "
        app.editor.load_text("/agents-c")
        app.editor.move_cursor(app.editor.document.end)
        await pilot.press("tab")
        assert app.editor.text == "/agents-checkpoints "
        app.editor.load_text("look at @s")
        app.editor.move_cursor(app.editor.document.end)
        await pilot.press("tab")
        assert app.editor.text == "look at @src/"
        await pilot.press("i", "tab")  # two candidates: the common prefix, and both are listed
        assert app.editor.text == "look at @src/in"
        await wait_until(
            pilot, lambda: any("@src/index.py" in n and "@src/invoice.py" in n for n in _notices(app))
        )
        await pilot.press("v", "tab")
        assert app.editor.text == "look at @src/invoice.py"


async def test_at_path_attaches_the_file_to_the_message(tui_env: TuiEnv) -> None:
    (tui_env.project / "notes.txt").write_text("the secret word is heron\n")
    model = tui_env.script(
        "attach", 'steps:\n  - text: "seen"\n    expect: {last_user_contains: "the secret word is heron"}\n'
    )
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "summarise @notes.txt please")
        await pilot.press("enter")
        await wait_until(pilot, lambda: _idle(app) and len(app.launched.agent.messages) >= 2)  # type: ignore[union-attr]
        assert app.launched is not None
        [user] = [m for m in app.launched.agent.messages if isinstance(m, UserMessage)]
        text = user.content if isinstance(user.content, str) else user.content[0].text  # type: ignore[union-attr]
        assert "the secret word is heron" in text and text.endswith("summarise @notes.txt please")
        assert app.launched.agent.last_assistant_text() == "seen"  # the script's expectation held
        assert any(n == "attached notes.txt" for n in _notices(app))


async def test_bang_runs_a_shell_command_into_the_context(tui_env: TuiEnv) -> None:
    (tui_env.project / "marker.txt").write_text("")
    model = tui_env.script(
        "shell", 'steps:\n  - text: "noted"\n    expect: {context_contains: ["marker.txt"]}\n'
    )
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "!ls")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(app.chat.query(BashCard)) and app.chat.query_one(BashCard).done)
        card = app.chat.query_one(BashCard)
        assert "marker.txt" in card.output and card.exit_code == 0
        assert app.launched is not None
        [ran] = [m for m in app.launched.agent.messages if isinstance(m, BashExecutionMessage)]
        assert ran.command == "ls" and "marker.txt" in ran.output
        await type_text(pilot, "what is here?")
        await pilot.press("enter")
        await wait_until(pilot, lambda: _idle(app) and app.launched.agent.last_assistant_text() == "noted")  # type: ignore[union-attr]


async def test_new_starts_a_fresh_session_and_help_lists_the_keys(tui_env: TuiEnv) -> None:
    app = tui_env.app(tui_env.script("echo", ECHO))
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "hello")
        await pilot.press("enter")
        await wait_until(pilot, lambda: _idle(app) and app.launched.agent.last_assistant_text() == "ok")  # type: ignore[union-attr]
        assert app.launched is not None
        first = app.launched.session.session_id
        app.editor.load_text("/new")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.launched is not None and app.launched.session.session_id != first)
        assert app.launched.agent.messages == []
        assert any(n.startswith("new session") for n in _notices(app))
        app.editor.load_text("/help")
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("Keys:" in n for n in _notices(app)))
        shown = next(n for n in _notices(app) if "Keys:" in n)
        assert all(key in shown for key in KEYS) and "/new" in shown and "/quit" in shown
        follow = shown.split("Keys in the agents view:\n", 1)[1].splitlines()
        assert any(line.startswith("  h  hand it off") for line in follow), shown
        assert any(line.startswith("  g  merge its branch") for line in follow), shown


def test_help_names_every_key_of_the_agents_view() -> None:
    """Issue 28: `/help` left out `h` (handoff) and `g` (merge); every binding of the follow view is listed."""
    from corral.tui.screens import FollowScreen

    named = {word for key in FOLLOW_KEYS for word in key.replace("/", " ").replace(",", " ").split()}
    shown = {"pageup": "PgUp", "pagedown": "PgDn"}
    for binding in FollowScreen.BINDINGS:
        assert isinstance(binding, Binding)
        key = shown.get(binding.key, binding.key if len(binding.key) == 1 else binding.key.capitalize())
        assert key in named, f"{binding.key} ({binding.description}) missing from /help"
