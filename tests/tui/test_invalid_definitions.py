"""`/agents` in the app lists definition files that could not be loaded, with path and problem."""

from __future__ import annotations

from textual.widgets import Label

from corral.tui.screens import AgentsScreen

from .conftest import SIZE, TuiEnv, wait_until


async def test_agents_screen_lists_invalid_definition_files(tui_env: TuiEnv) -> None:
    agents = tui_env.root / "config" / "corral" / "agents"
    agents.mkdir(parents=True)
    bad = agents / "typo.md"
    bad.write_text("---\nname: typo\ncolour: red\n---\nBody.\n")
    app = tui_env.app(tui_env.script("idle", "steps:\n  - text: hi\n"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.host is not None and app.launched is not None)
        app.editor.load_text("/agents")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AgentsScreen))
        lines = [str(label.render()) for label in app.screen.query(".invalid-definition").results(Label)]
        assert len(lines) == 1 and lines[0].startswith(f"INVALID {bad}: unknown field(s) colour")
