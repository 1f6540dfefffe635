"""Agent navigation and the follow view: keys, scrolling, controls and the reply box."""

from __future__ import annotations

import pytest
from textual.widgets import Input, Static

from corral.tui import CorralApp
from corral.tui.screens import FollowScreen
from corral.tui.widgets import AssistantCard, NoticeCard, ToolCard
from tests.orchestration.teams._git_helpers import GIT_ENV, git

from .conftest import SIZE, TuiEnv, type_text, wait_until

TEAM = """\
steps:
  - text: "Delegating."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: generalist, label: a1, task: "Count."}}
      - {name: agent, args: {action: delegate, definition: scout, label: a2, task: "Wait."}}
  - text: "Waiting."
on_exhausted: repeat_last
agents:
  a1:
    - text: "Counting."
      tool_calls:
        - {name: bash, args: {command: "seq 1 200"}}
    - {text: "Still counting.", delay_ms: 60000}
    - {text: "Continuing after the message."}
  a2:
    - {text: "Waiting a long time.", delay_ms: 60000}
    - {text: "Done waiting."}
"""

ASKING = """\
steps:
  - text: "Delegating."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: reviewer, label: rev, task: "Review."}}
  - text: "Waiting."
on_exhausted: repeat_last
agents:
  rev:
    - text: "A question."
      tool_calls:
        - {name: ask_owner, args: {question: "Style too?"}}
    - {text: "Reviewed with your answer."}
"""


def _notices(screen: FollowScreen) -> list[str]:
    return [str(n.render()) for n in screen.transcript.query(NoticeCard)]


async def _open_team(app: CorralApp, pilot: object, labels: set[str]) -> FollowScreen:
    await type_text(pilot, "go")  # type: ignore[arg-type]
    await pilot.press("enter")  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: {r.label for r in app.rows} >= labels and app.launched.agent.is_idle)  # type: ignore[arg-type, union-attr]
    await pilot.press("down")  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: isinstance(app.screen, FollowScreen))  # type: ignore[arg-type]
    assert isinstance(app.screen, FollowScreen)
    return app.screen


async def test_down_opens_navigation_and_arrows_move_between_agents(tui_env: TuiEnv) -> None:
    app = tui_env.app(tui_env.script("team", TEAM))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_team(app, pilot, {"a1", "a2"})
        assert screen.labels == ["a1", "a2"]
        assert screen.label == "a1"
        await wait_until(
            pilot, lambda: any(c.text == "Counting." for c in screen.transcript.query(AssistantCard))
        )
        assert "a1 · working" in str(screen.query_one("#follow-header", Static).render())
        await pilot.press("down")
        assert screen.label == "a2"
        await wait_until(
            pilot, lambda: not any(c.text == "Counting." for c in screen.transcript.query(AssistantCard))
        )
        await pilot.press("down")
        assert screen.label == "a2"
        await pilot.press("right")
        assert screen.label == "a1"
        await pilot.press("left")
        assert screen.label == "a2"
        await pilot.press("up")
        assert screen.label == "a1"
        await pilot.press("up")
        await wait_until(pilot, lambda: not isinstance(app.screen, FollowScreen))
        assert app.focused is app.editor


async def test_logs_and_scrolling_in_the_follow_view(tui_env: TuiEnv) -> None:
    app = tui_env.app(tui_env.script("team", TEAM))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_team(app, pilot, {"a1", "a2"})
        log = screen.transcript
        await wait_until(pilot, lambda: any(c.done for c in log.query(ToolCard)))
        card = log.query_one(ToolCard)
        assert not card.expanded
        await pilot.press("l")
        assert card.expanded
        await pilot.pause()
        await wait_until(pilot, lambda: log.max_scroll_y > 0)
        await pilot.press("home")
        await wait_until(pilot, lambda: log.scroll_y == 0)
        await pilot.press("pagedown")
        await wait_until(pilot, lambda: log.scroll_y > 0)
        await pilot.press("end")
        await wait_until(pilot, lambda: log.scroll_y == log.max_scroll_y)
        await pilot.press("pageup")
        await wait_until(pilot, lambda: log.scroll_y < log.max_scroll_y)


async def test_message_interrupt_and_stop_controls(tui_env: TuiEnv) -> None:
    app = tui_env.app(tui_env.script("team", TEAM))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_team(app, pilot, {"a1", "a2"})
        await pilot.press("m")
        composer = screen.query_one("#composer", Input)
        assert composer.display and "Message a1" in composer.placeholder
        await pilot.press("escape")
        assert not composer.display and isinstance(app.screen, FollowScreen)
        await pilot.press("m")
        await type_text(pilot, "focus on tests")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "steer sent to a1" in _notices(screen) or bool(screen.last_error))
        assert "steer sent to a1" in _notices(screen), screen.last_error
        assert not composer.display
        await pilot.press("down")
        await pilot.press("i")
        await wait_until(pilot, lambda: "interrupted a2" in _notices(screen) or bool(screen.last_error))
        assert "interrupted a2" in _notices(screen), screen.last_error
        await pilot.press("up")
        assert screen.label == "a1"
        await pilot.press("x")
        await wait_until(pilot, lambda: "stopped a1" in _notices(screen) or bool(screen.last_error))
        assert "stopped a1" in _notices(screen), screen.last_error
        # The activity card behind the follow view keeps refreshing on host changes.
        await wait_until(pilot, lambda: all(r.label != "a1" or r.state != "working" for r in app.rows))
        await pilot.press("m")
        await type_text(pilot, "are you there")
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(t.startswith("message not sent") for t in _notices(screen)))
        assert composer.display and composer.value == "are you there"
        await pilot.press("escape", "escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, FollowScreen))


async def test_a_question_offers_a_reply_box(tui_env: TuiEnv) -> None:
    app = tui_env.app(tui_env.script("asking", ASKING))
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(r.label == "rev" and r.state == "blocked" for r in app.rows))
        await wait_until(pilot, lambda: app.launched is not None and app.launched.agent.is_idle)
        await pilot.press("down")
        await wait_until(pilot, lambda: isinstance(app.screen, FollowScreen))
        screen = app.screen
        assert isinstance(screen, FollowScreen)
        await pilot.press("m")
        assert "Reply to rev's question" in screen.composer.placeholder
        await type_text(pilot, "correctness only")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "replied to rev" in _notices(screen) or bool(screen.last_error))
        assert "replied to rev" in _notices(screen), screen.last_error
        await wait_until(
            pilot,
            lambda: any(
                c.text == "Reviewed with your answer." for c in screen.transcript.query(AssistantCard)
            ),
        )
        # Issue 28: the header said `rev · blocked` after the agent finished; it follows the agent.
        header = screen.query_one("#follow-header", Static)
        await wait_until(pilot, lambda: not any(r.label == "rev" for r in app.rows))
        await pilot.pause()
        assert str(header.render()).startswith("rev · finished"), str(header.render())


ISOLATED = """\
steps:
  - text: "Delegating."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: implementer, label: w1, task: "Edit."}}
  - text: "Waiting."
on_exhausted: repeat_last
agents:
  w1:
    - text: "Editing."
      tool_calls:
        - {name: write, args: {path: README.md, content: "edited\\n"}}
    - {text: "Still editing.", delay_ms: 60000}
"""


async def test_g_merges_an_isolated_writers_branch_and_says_why_not(
    tui_env: TuiEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    git(tui_env.project, "init", "-q")
    git(tui_env.project, "add", "-A")
    git(tui_env.project, "commit", "-q", "-m", "initial")
    tui_env.settings('isolation = "worktree"\n')
    app = tui_env.app(tui_env.script("iso", ISOLATED))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_team(app, pilot, {"w1"})
        await pilot.press("g")
        await wait_until(pilot, lambda: bool(screen.last_error))
        assert any("merge failed" in n and "still running" in n for n in _notices(screen)), _notices(screen)
        assert (tui_env.project / "README.md").read_text() == "# sample\n"  # its edit is in its worktree
        assert "corral/w1-" in git(tui_env.project, "branch", "--list", "corral/w1-*")
        await pilot.press("x")
        await wait_until(
            pilot, lambda: "stopped w1" in _notices(screen) or "stopped w1" in str(screen.last_error)
        )
