"""A newcomer in the terminal app (issue 13): the offline tour from the no-model card, and the
built-in default model shown in the footer."""

from __future__ import annotations

import subprocess

import pytest
from textual.widgets import Static

from corral.llm import DEFAULT_MODELS, AssistantMessage, CustomMessage
from corral.tui import CorralApp
from corral.tui.app import SetupCard
from corral.tui.widgets import StatusFooter
from tests._ci import require

from .conftest import SIZE, TuiEnv, started, wait_until


def _results(app: CorralApp) -> list[CustomMessage]:
    assert app.launched is not None
    return [
        m
        for m in app.launched.agent.messages
        if isinstance(m, CustomMessage) and m.custom_type == "corral-agent-result"
    ]


async def test_the_use_tour_button_runs_the_offline_tour_in_any_directory(tui_env: TuiEnv) -> None:
    app = tui_env.app(None)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        card = app.query_one(SetupCard)
        assert "scripted/tour" in card.message or "scripted/tour" in str(
            card.query_one("#setup-hint").render()
        )
        await pilot.click("#use-demo")
        await wait_until(pilot, lambda: app.launched is not None)
        assert app.query_one(StatusFooter).model_ref == "scripted/tour"
        app.editor.load_text("show me around")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(_results(app)) == 2, timeout=60)
        launched = app.launched
        assert launched is not None
        await wait_until(
            pilot,
            lambda: (
                launched.agent.is_idle
                and isinstance(launched.agent.messages[-1], AssistantMessage)
                and launched.agent.messages[-1].text.startswith("Both scouts delivered")
            ),
            timeout=60,
        )
        texts = [m.text for m in launched.agent.messages if isinstance(m, AssistantMessage)]
        assert texts[1].startswith("Not everything worked")  # the project is not a git repository
        assert any("README.md" in str(r.content) for r in _results(app))


async def test_the_footer_marks_the_built_in_default_model(
    tui_env: TuiEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    app = tui_env.app(None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.launched is not None)
        footer = app.query_one(StatusFooter)
        default = f"anthropic/{DEFAULT_MODELS['anthropic']}"
        assert footer.model_ref == f"{default} (default)"
        assert f"{default} (default)" in str(footer.render())
    chosen = tui_env.app("anthropic/claude-haiku-4-5")
    async with chosen.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chosen.launched is not None)
        assert chosen.query_one(StatusFooter).model_ref == "anthropic/claude-haiku-4-5"


async def test_a_broken_settings_file_gets_its_own_card_naming_the_file_and_line(tui_env: TuiEnv) -> None:
    """Issue 28: the app opened with a broken `settings.toml` put the TOML error in the "no model
    configured" card, followed by "Set one of those and restart"; it now says which file and line to
    fix, and offers no tour (the tour needs the settings too)."""
    tui_env.settings('default_model = "scripted/tour"\n[compaction\nenabled = true\n')
    path = tui_env.root / "config" / "corral" / "settings.toml"
    app = tui_env.app(None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(app.query(SetupCard)))
        card = app.query_one(SetupCard)
        assert card.settings_broken
        shown = "\n".join(str(s.render()) for s in card.query(Static))
        assert str(path) in shown and "line 2" in shown, shown
        assert "Fix the file" in shown and "restart" in shown
        assert "no model configured" not in shown and "Set one of those" not in shown
        assert not card.query("#use-demo")
        footer = str(app.query_one(StatusFooter).render())
        assert "settings error" in footer and "no model configured" not in footer
        app.editor.load_text("hello")
        await pilot.press("enter")
        await pilot.pause()
        assert app.launched is None


async def test_the_tour_quotes_tool_output_instead_of_rendering_it_as_markdown(tui_env: TuiEnv) -> None:
    """Issue 28: in a git repository the tour's `git status --short --branch` output (`## master`) was
    drawn as a Markdown heading reading "master"; the tour quotes tool output in a code block."""
    require("git")
    from textual.widgets._markdown import MarkdownFence, MarkdownHeader

    from corral.tui.widgets import AssistantCard

    subprocess.run(["git", "init", "-q", str(tui_env.project)], check=True)
    app = tui_env.app("scripted/tour")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.launched is not None)
        app.editor.load_text("show me around")
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: any(c.rendered.startswith("Both commands worked") for c in app.chat.query(AssistantCard)),
            timeout=60,
        )
        card = next(c for c in app.chat.query(AssistantCard) if c.rendered.startswith("Both commands worked"))
        assert "## " in card.rendered  # git's branch line is there …
        assert not card.query(MarkdownHeader)  # … but not as a heading
        fences = list(card.query(MarkdownFence))
        assert any("## " in fence.code for fence in fences), [f.code for f in fences]
