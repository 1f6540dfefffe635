"""`/agents-favorite-models`: the text forms, the tier picker, and saving to the user settings file."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import pytest

from corral.llm import ModelRegistry
from corral.settings import Settings
from corral.tui import CorralApp
from corral.tui._favorites import FavoritesError, parse_favorites_command, read_favorites, write_favorites
from corral.tui.screens import TierPickerScreen
from corral.tui.widgets import NoticeCard

from .conftest import SIZE, TuiEnv, type_text, wait_until

KEPT = """\
# my settings
default_thinking = "low"
favorite_models.read-collect.model = "openai/gpt-5-mini"

[retry]
max_retries = 5  # keep this comment

[favorite_models.read-review]
model = "openai/gpt-5"
thinking = "high"

[favorite_models."write-patch"]
model = "openai/gpt-5"

[teams.read_agents]
max_concurrent = 3
"""


def _registry() -> ModelRegistry:
    return ModelRegistry(Settings(), environ={})


def test_saving_replaces_only_the_favorite_tables(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(KEPT)
    assert read_favorites(path) == {
        "read-collect": {"model": "openai/gpt-5-mini"},
        "read-review": {"model": "openai/gpt-5", "thinking": "high"},
        "write-patch": {"model": "openai/gpt-5"},
    }
    write_favorites(path, {"write-critical": {"model": "scripted/x", "thinking": "high"}})
    text = path.read_text()
    assert text == (
        '# my settings\ndefault_thinking = "low"\n\n[retry]\nmax_retries = 5  # keep this comment\n\n'
        "[teams.read_agents]\nmax_concurrent = 3\n\n"
        '[favorite_models.write-critical]\nmodel = "scripted/x"\nthinking = "high"\n'
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    write_favorites(path, {})
    assert tomllib.loads(path.read_text()) == {
        "default_thinking": "low",
        "retry": {"max_retries": 5},
        "teams": {"read_agents": {"max_concurrent": 3}},
    }


def test_a_file_that_cannot_be_rewritten_safely_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    tricky = 'note = """\n[favorite_models.read-review]\n"""\n'
    path.write_text(tricky)
    with pytest.raises(FavoritesError, match="edit the file by hand"):
        write_favorites(path, {"read-review": {"model": "scripted/x", "thinking": "low"}})
    assert path.read_text() == tricky
    path.write_text("not = [toml")
    with pytest.raises(FavoritesError, match="not valid TOML"):
        write_favorites(path, {})


def test_text_forms_are_validated() -> None:
    registry = _registry()
    command = parse_favorites_command("set reading-hard openai/gpt-5.2 max", registry)
    assert (command.action, command.tier, command.model, command.thinking) == (
        "set",
        "read-critical",
        "openai/gpt-5.2",
        "xhigh",
    )
    # No level: the tier's calibrated level, clamped to the model (read-review wants xhigh).
    assert parse_favorites_command("set read-review openai/gpt-5", registry).thinking == "high"
    assert parse_favorites_command("clear write-patch", registry).tier == "write-patch"
    assert parse_favorites_command("clear", registry).action == "clear-all"
    assert parse_favorites_command("", registry).action == "picker"
    for bad, message in (
        ("set read-review openai/gpt-5 max", "does not offer thinking 'max'"),
        ("set read-review openai/gpt-4.1 low", "does not offer thinking 'low'"),
        ("set read-review openai/gpt-5 loud", "unknown thinking level 'loud'"),
        ("set nope openai/gpt-5", "Unknown model_slot 'nope'"),
        ("set read-review nobody/model", "nobody/model"),
        ("frobnicate", "usage: /agents-favorite-models"),
    ):
        with pytest.raises(FavoritesError, match=message):
            parse_favorites_command(bad, registry)


def _notices(app: CorralApp) -> list[str]:
    return [str(n.render()) for n in app.query(NoticeCard)]


async def _command(pilot: object, text: str) -> None:
    """Put `text` in the editor at once (typing long commands key by key is slow) and send it."""
    app = pilot.app  # type: ignore[attr-defined]
    app.editor.load_text(text)
    await pilot.press("enter")  # type: ignore[attr-defined]


def _user_file(tui_env: TuiEnv) -> Path:
    return tui_env.root / "config" / "corral" / "settings.toml"


async def test_text_forms_save_at_once_and_the_session_uses_them(tui_env: TuiEnv) -> None:
    tui_env.settings("# mine\n[retry]\nmax_retries = 2\n")
    app = tui_env.app(tui_env.script("fav", 'steps:\n  - text: "ok"\n'), surfaces=["teams"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.host is not None)
        await _command(pilot, "/agents-favorite-models set writing-basic scripted/fast low")
        assert read_favorites(_user_file(tui_env)) == {
            "write-patch": {"model": "scripted/fast", "thinking": "low"}
        }
        assert _user_file(tui_env).read_text().startswith("# mine\n[retry]\nmax_retries = 2\n")
        assert app.host is not None
        favorites = app.host.teams.spawning.favorites()
        assert favorites is not None and favorites.get("write-patch") is not None
        assert any(
            t.startswith("/agents-favorite-models: write-patch: scripted/fast (thinking low)")
            for t in _notices(app)
        )
        await _command(pilot, "/agents-favorite-models set read-review scripted/fast xhigh")
        assert any("does not offer thinking 'xhigh'" in t for t in _notices(app))
        assert set(read_favorites(_user_file(tui_env))) == {"write-patch"}
        await _command(pilot, "/agents-favorite-models set read-review scripted/fast")
        assert set(read_favorites(_user_file(tui_env))) == {"write-patch", "read-review"}
        await _command(pilot, "/agents-favorite-models clear write-patch")
        assert set(read_favorites(_user_file(tui_env))) == {"read-review"}
        await _command(pilot, "/agents-favorite-models clear")
        assert read_favorites(_user_file(tui_env)) == {}
        assert app.host.teams.spawning.favorites() is None


async def test_the_tier_picker_filters_saves_clears_and_closes(tui_env: TuiEnv) -> None:
    app = tui_env.app(tui_env.script("lead", 'steps:\n  - text: "ok"\n'))
    async with app.run_test(size=SIZE) as pilot:
        await _command(pilot, "/agents-favorite-models")
        await wait_until(pilot, lambda: isinstance(app.screen, TierPickerScreen))
        picker = app.screen
        assert isinstance(picker, TierPickerScreen)
        tiers, models, thinking = (picker.column(name) for name in ("tiers", "models", "thinking"))
        assert tiers.option_count == 8 and app.focused is tiers
        await pilot.press("down")
        assert picker.tier == "read-review"
        # Right: the models column (the lead's model first); typing filters it.
        await pilot.press("right")
        assert app.focused is models
        assert models.get_option_at_index(models.highlighted or 0).id == "scripted/lead"
        await type_text(pilot, "demo-te")
        assert [info.ref for info in picker.visible_models()] == ["scripted/demo-team", "scripted/demo-teams"]
        await pilot.press("backspace", "backspace", "backspace")
        assert picker.filter == "demo"
        await pilot.press("enter")  # saves the model with the tier's level, clamped (xhigh → high)
        await wait_until(pilot, lambda: read_favorites(_user_file(tui_env)) != {})
        assert read_favorites(_user_file(tui_env)) == {
            "read-review": {"model": "scripted/demo", "thinking": "high"}
        }
        assert app.focused is thinking
        assert [thinking.get_option_at_index(i).id for i in range(thinking.option_count)] == [
            "off",
            "minimal",
            "low",
            "medium",
            "high",
        ]
        await pilot.press("up", "enter")
        await wait_until(
            pilot, lambda: read_favorites(_user_file(tui_env))["read-review"]["thinking"] == "medium"
        )
        assert "read-review: scripted/demo (thinking medium) saved" in picker.status
        assert "scripted/demo · medium" in str(tiers.get_option_at_index(1).prompt)
        # Tab and Shift+Tab cycle the columns, Left goes back; Delete clears the tier; Ctrl+A clears all.
        await pilot.press("tab")
        assert app.focused is tiers
        await pilot.press("shift+tab")
        assert app.focused is thinking
        await pilot.press("left")
        assert app.focused is models
        await pilot.press("left")
        assert app.focused is tiers
        await pilot.press("delete")
        await wait_until(pilot, lambda: read_favorites(_user_file(tui_env)) == {})
        assert "inherits the lead" in str(tiers.get_option_at_index(1).prompt)
        await pilot.press("right", "enter")
        await wait_until(pilot, lambda: read_favorites(_user_file(tui_env)) != {})
        await pilot.press("ctrl+a")
        await wait_until(pilot, lambda: read_favorites(_user_file(tui_env)) == {})
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, TierPickerScreen))
        assert app.focused is app.editor
