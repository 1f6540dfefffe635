"""The start-up hint pointing a new installation (no user settings file, no saved session) to /onboard."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from corral.llm import AssistantMessage, TextContent, UserMessage
from corral.session import SessionManager
from corral.tui import CorralApp
from corral.tui._first_run import ONBOARD_HINT, is_new_installation
from corral.tui.app import SetupCard
from corral.tui.widgets import AssistantCard, NoticeCard

from .conftest import SIZE, TuiEnv, wait_until

REPLY = 'steps:\n  - text: "hello there"\n'


def _hints(app: CorralApp) -> list[NoticeCard]:
    return [card for card in app.chat.query(NoticeCard) if str(card.render()) == ONBOARD_HINT]


async def _turn(pilot: Pilot[int], app: CorralApp, text: str = "hi") -> None:
    """Send a prompt and wait for the reply; the app handles it only after its start-up (`on_mount`) ran."""
    replies = len(app.chat.query(AssistantCard))
    app.editor.load_text(text)
    await pilot.press("enter")
    await wait_until(
        pilot,
        lambda: (
            len(app.chat.query(AssistantCard)) > replies
            and app.launched is not None
            and app.launched.agent.is_idle
        ),
    )


def _saved_sessions(env: TuiEnv) -> list[Path]:
    return sorted((env.home / "sessions").rglob("*.jsonl"))


async def test_a_fresh_installation_shows_the_hint_once(tui_env: TuiEnv) -> None:
    app = tui_env.app(tui_env.script("reply", REPLY))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(_hints(app)))
        await _turn(pilot, app)
        hints = _hints(app)
        assert len(hints) == 1
        assert hints[0].has_class("info")
        assert app.chat.children[0] is hints[0]  # the first thing in the chat
    assert _saved_sessions(tui_env), "the turn saved the first session"


async def test_the_hint_is_not_shown_after_the_first_session(tui_env: TuiEnv) -> None:
    model = tui_env.script("reply", REPLY)
    first = tui_env.app(model)
    async with first.run_test(size=SIZE) as pilot:
        await _turn(pilot, first)
        assert len(_hints(first)) == 1
    second = tui_env.app(model)  # a new session, as `corral` without --session/--continue starts
    async with second.run_test(size=SIZE) as pilot:
        await _turn(pilot, second)
        assert _hints(second) == []


async def test_a_user_settings_file_suppresses_the_hint(tui_env: TuiEnv) -> None:
    tui_env.settings("")
    assert not _saved_sessions(tui_env)
    app = tui_env.app(tui_env.script("reply", REPLY))
    async with app.run_test(size=SIZE) as pilot:
        await _turn(pilot, app)
        assert _hints(app) == []


@pytest.mark.parametrize("continue_recent", [False, True], ids=["new-session", "continue"])
async def test_an_existing_session_suppresses_the_hint(tui_env: TuiEnv, continue_recent: bool) -> None:
    saved = _save_session(tui_env.project, sessions=tui_env.home / "sessions")
    app = tui_env.app(tui_env.script("reply", REPLY), continue_recent=continue_recent)
    async with app.run_test(size=SIZE) as pilot:
        await _turn(pilot, app)
        assert app.launched is not None and (app.launched.session.path == saved) is continue_recent
        assert _hints(app) == []


async def test_opening_an_existing_session_never_shows_the_hint(tui_env: TuiEnv) -> None:
    # The file lives outside the sessions folder, so the folder alone still looks new.
    path = _save_session(tui_env.project, sessions=tui_env.root / "elsewhere")
    assert is_new_installation()
    app = tui_env.app(tui_env.script("reply", REPLY), session=str(path))
    async with app.run_test(size=SIZE) as pilot:
        await _turn(pilot, app)
        assert app.launched is not None and app.launched.session.path == path
        assert _hints(app) == []


async def test_no_model_shows_the_setup_card_and_no_hint(tui_env: TuiEnv) -> None:
    app = tui_env.app(None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(app.chat.query(SetupCard)))
        app.editor.load_text("/help")  # handled only once start-up has finished
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: any("/onboard" in str(n.render()) for n in app.chat.query(NoticeCard))
        )
        assert app.launched is None
        assert _hints(app) == []


def test_the_rule_checks_the_settings_file_and_any_saved_session(tmp_path: Path) -> None:
    settings, sessions = tmp_path / "config" / "settings.toml", tmp_path / "sessions"
    assert is_new_installation(settings_file=settings, sessions=sessions)  # neither exists
    (sessions / "--some-project--").mkdir(parents=True)
    (sessions / "--some-project--" / "notes.txt").write_text("not a session\n")
    assert is_new_installation(settings_file=settings, sessions=sessions)
    (sessions / "--some-project--" / "s.jsonl").write_text("{}\n")
    assert not is_new_installation(settings_file=settings, sessions=sessions)
    (sessions / "--some-project--" / "s.jsonl").unlink()
    settings.parent.mkdir()
    settings.write_text("")
    assert not is_new_installation(settings_file=settings, sessions=sessions)


def test_the_hint_says_what_onboard_does() -> None:
    assert "/onboard" in ONBOARD_HINT
    assert "nothing changes until you run the commands" in ONBOARD_HINT


def _save_session(cwd: Path, *, sessions: Path) -> Path:
    manager = SessionManager.create(cwd, sessions_root=sessions)
    manager.append_message(UserMessage(content="earlier", timestamp=0))
    manager.append_message(
        AssistantMessage(
            content=[TextContent(text="earlier reply")], api="scripted", provider="scripted", model="reply"
        )
    )
    path = manager.path
    manager.close()
    assert path is not None and path.is_file()
    return path


async def test_no_hint_when_the_lead_is_the_offline_tour(tui_env: TuiEnv) -> None:
    """Issue 28: with `scripted/tour` as the lead the hint pointed to `/onboard`, which the tour ignores
    (it runs the tour again); a new installation opening on the tour shows no hint."""
    app = tui_env.app("scripted/tour")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.launched is not None)
        await pilot.pause()
        assert app.launched is not None and app.launched.model_info.ref == "scripted/tour"
        assert is_new_installation()
        assert not _hints(app)
