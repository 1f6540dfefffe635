"""Slash commands, the no-model start, and the light CLI start-up."""

from __future__ import annotations

import subprocess
import sys

from textual.widgets import DataTable, OptionList

from corral.session import SessionManager
from corral.trust import is_trusted
from corral.tui import CorralApp
from corral.tui.app import SetupCard
from corral.tui.screens import AgentsScreen, PickerScreen
from corral.tui.widgets import AssistantCard, NoticeCard, StatusFooter, UserCard

from .conftest import SIZE, TuiEnv, started, wait_until


def _idle(app: CorralApp) -> bool:
    return app.launched is not None and app.launched.agent.is_idle


def _notices(app: CorralApp) -> list[str]:
    return [str(n.render()) for n in app.query(NoticeCard)]


async def _command(pilot: object, text: str) -> None:
    """Put `text` in the editor at once (typing is tested in test_chat) and send it."""
    pilot.app.editor.load_text(text)  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]


def test_help_does_not_import_textual() -> None:
    code = (
        "import sys\n"
        "from corral.cli import main\n"
        "assert main(['--help']) == 0\n"
        "assert 'textual' not in sys.modules, 'textual imported'\n"
        "assert 'corral.tui' not in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "--model" in done.stdout and "--surfaces" in done.stdout


async def test_agents_command_shows_the_status_table(tui_env: TuiEnv) -> None:
    model = tui_env.script(
        "one",
        "steps:\n"
        '  - text: "Delegating."\n'
        "    tool_calls:\n"
        "      - {name: agent, args: {action: delegate, definition: scout, label: scout, task: Look.}}\n"
        '  - text: "Waiting."\n'
        "on_exhausted: repeat_last\n"
        "agents:\n"
        "  scout:\n"
        '    - {text: "Looking.", delay_ms: 60000}\n',
    )
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await _command(pilot, "go")
        await wait_until(pilot, lambda: _idle(app) and any(r.label == "scout" for r in app.rows))
        await _command(pilot, "/agents")
        await wait_until(pilot, lambda: isinstance(app.screen, AgentsScreen))
        table = app.screen.query_one(DataTable)
        assert table.row_count == 1
        assert table.get_row_at(0)[:3] == ["scout", "scout", "working"]
        await pilot.press("escape")
        assert not isinstance(app.screen, AgentsScreen)
        await _command(pilot, "/agents")
        await wait_until(pilot, lambda: isinstance(app.screen, AgentsScreen))
        await pilot.press("q")
        assert not isinstance(app.screen, AgentsScreen)


async def test_model_command_switches_by_argument_and_by_picker(tui_env: TuiEnv) -> None:
    first = tui_env.script("first", 'steps:\n  - text: "one"\n')
    second = tui_env.script("second", 'steps:\n  - text: "from second"\n')
    app = tui_env.app(first)
    async with app.run_test(size=SIZE) as pilot:
        footer = app.query_one(StatusFooter)
        await _command(pilot, f"/model {second}")
        assert footer.model_ref == second
        assert app.launched is not None and app.launched.agent.model.info.ref == second
        await _command(pilot, "/model nope/nothing")
        assert any(text.startswith("/model:") for text in _notices(app))
        await _command(pilot, "/model")
        await wait_until(pilot, lambda: isinstance(app.screen, PickerScreen))
        picker = app.screen.query_one(OptionList)
        assert picker.get_option_at_index(picker.highlighted or 0).id == second
        await pilot.press("escape")
        assert footer.model_ref == second
        await _command(pilot, "hello")
        await wait_until(pilot, lambda: any(c.text == "from second" for c in app.query(AssistantCard)))


async def test_thinking_command_sets_and_picks_levels(tui_env: TuiEnv) -> None:
    model = tui_env.script("think", 'steps:\n  - text: "ok"\n')
    app = tui_env.app(model, thinking="low")
    async with app.run_test(size=SIZE) as pilot:
        footer = app.query_one(StatusFooter)
        await _command(pilot, "/thinking high")
        assert footer.thinking == "high"
        await _command(pilot, "/thinking loud")
        assert any("'loud' is not a level" in text for text in _notices(app))
        await _command(pilot, "/thinking")
        await wait_until(pilot, lambda: isinstance(app.screen, PickerScreen))
        await pilot.press("up", "enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, PickerScreen))
        assert footer.thinking == "medium"


async def test_compact_command_compacts_the_lead(tui_env: TuiEnv) -> None:
    tui_env.settings("[compaction]\nkeep_recent_tokens = 5\n")
    model = tui_env.script(
        "compact",
        'steps:\n  - text: "first reply"\n  - text: "second reply"\n  - text: "## Goal\\nSummary of it."\n',
    )
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await _command(pilot, "one")
        await wait_until(pilot, lambda: _idle(app) and len(app.query(AssistantCard)) == 1)
        await _command(pilot, "two")
        await wait_until(pilot, lambda: _idle(app) and len(app.query(AssistantCard)) == 2)
        await _command(pilot, "/compact keep it short")
        await wait_until(pilot, lambda: any(t.startswith(("compacted:", "/compact:")) for t in _notices(app)))
        assert any(t.startswith("compacted:") for t in _notices(app)), _notices(app)
        assert app.launched is not None
        assert any(e.type == "compaction" for e in app.launched.session.entries)


def _earlier_session(tui_env: TuiEnv, question: str, answer: str) -> tuple[str, SessionManager]:
    """A lead model for the app, and an earlier session of the project (one question, one answer)."""
    from corral.llm import AssistantMessage, TextContent, UserMessage

    model = tui_env.script("resume", 'steps:\n  - text: "ok"\non_exhausted: repeat_last\n')
    old = SessionManager.create(tui_env.project.resolve())
    old.append_message(UserMessage(content=question))
    old.append_message(AssistantMessage(content=[TextContent(text=answer)]))
    old.close()
    return model, old


async def test_resume_command_opens_another_session(tui_env: TuiEnv) -> None:
    model, old = _earlier_session(tui_env, "an earlier question", "an earlier answer")
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await _command(pilot, "/resume")
        await wait_until(pilot, lambda: isinstance(app.screen, PickerScreen))
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: any("an earlier question" in str(u.render()) for u in app.query(UserCard))
        )
        assert app.launched is not None and app.launched.session.session_id == old.session_id


async def test_resume_picker_keeps_each_session_on_one_row(tui_env: TuiEnv) -> None:
    """Issue 28: a first prompt with a newline broke its row; the id landed on the next line."""
    from textual.widgets import OptionList

    model, old = _earlier_session(tui_env, "fix the bug\n\n  in   parser.py\twhen it\r\nfails", "done")
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await _command(pilot, "/resume")
        await wait_until(pilot, lambda: isinstance(app.screen, PickerScreen))
        picker = app.screen.query_one("#picker", OptionList)
        label = str(picker.get_option_at_index(0).prompt)
        assert "\n" not in label and "\r" not in label and "\t" not in label, repr(label)
        assert label.endswith(f"fix the bug in parser.py when it fails  [{old.session_id[:8]}]"), label


async def test_trust_command_trusts_the_project(tui_env: TuiEnv) -> None:
    model = tui_env.script("trust", 'steps:\n  - text: "ok"\n')
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        assert not is_trusted(tui_env.project.resolve())
        await _command(pilot, "/trust")
        assert is_trusted(tui_env.project.resolve())
        assert any(t.startswith("trusted ") for t in _notices(app))


async def test_an_untrusted_projects_ignored_keys_are_a_notice_and_trust_lists_what_it_unlocks(
    tui_env: TuiEnv,
) -> None:
    (tui_env.project / ".corral").mkdir()
    (tui_env.project / ".corral" / "settings.toml").write_text('runtime = "tmux"\nshell_path = "/tmp/evil"\n')
    model = tui_env.script("untrusted", 'steps:\n  - text: "ok"\n')
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.launched is not None)
        assert app.launched is not None and app.launched.settings.runtime == "inprocess"
        assert any("is not trusted; ignoring runtime, shell_path" in t for t in _notices(app))
        await _command(pilot, "/trust")
        assert is_trusted(tui_env.project)
        assert any("runtime = tmux" in t and "shell_path = /tmp/evil" in t for t in _notices(app))


async def test_unknown_command_and_help(tui_env: TuiEnv) -> None:
    model = tui_env.script("help", 'steps:\n  - text: "ok"\n')
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await _command(pilot, "/nope")
        assert any("unknown command /nope" in t for t in _notices(app))
        await _command(pilot, "/help")
        assert any("/agents" in t and "/trust" in t for t in _notices(app))


async def test_no_model_says_what_to_set_and_offers_the_demo_model(tui_env: TuiEnv) -> None:
    app = tui_env.app(None)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        setup = app.query_one(SetupCard)
        assert "no model configured" in setup.message and "OPENAI_API_KEY" in setup.message
        assert app.launched is None
        await _command(pilot, "hello")
        assert any(t.startswith("No model yet") for t in _notices(app))
        await pilot.click("#use-demo")
        await wait_until(pilot, lambda: app.launched is not None)
        assert app.query_one(StatusFooter).model_ref == "scripted/tour"
        assert not app.query(SetupCard)


async def test_no_model_accepts_model_command(tui_env: TuiEnv) -> None:
    model = tui_env.script("later", 'steps:\n  - text: "ok"\n')
    app = tui_env.app(None)
    async with app.run_test(size=SIZE) as pilot:
        await _command(pilot, f"/model {model}")
        await wait_until(pilot, lambda: app.launched is not None)
        assert app.query_one(StatusFooter).model_ref == model
