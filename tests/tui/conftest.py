"""TUI tests: the real app under Textual's Pilot, scripted models, private data and config roots."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.pilot import Pilot

from corral._cli._launch import LaunchOptions
from corral.tui import CorralApp

WAIT_S = 30.0  # a ceiling for waits on the app; generous for a loaded CI machine
SIZE = (100, 30)


@dataclass
class TuiEnv:
    root: Path
    project: Path
    scripts: Path
    home: Path

    def script(self, name: str, text: str) -> str:
        (self.scripts / f"{name}.yaml").write_text(text)
        return f"scripted/{name}"

    def settings(self, text: str) -> None:
        folder = self.root / "config" / "corral"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "settings.toml").write_text(text)

    def app(self, model: str | None, **options: object) -> CorralApp:
        return CorralApp(LaunchOptions(self.project, model=model, **options), clock=lambda: 1_000_000.0)  # type: ignore[arg-type]


@pytest.fixture
def tui_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TuiEnv:
    project = tmp_path / "project"
    scripts = tmp_path / "scripts"
    for folder in (project, scripts):
        folder.mkdir()
    (project / "README.md").write_text("# sample\n")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CORRAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CORRAL_SCRIPTS", str(scripts))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    return TuiEnv(tmp_path, project, scripts, tmp_path / "home")


async def wait_until(pilot: Pilot[int], predicate: Callable[[], bool], *, timeout: float = WAIT_S) -> None:
    """Let the app run (`pilot.pause()`) until `predicate()` holds; fail after `timeout` seconds."""

    async def loop() -> None:
        while not predicate():
            await pilot.pause()

    await asyncio.wait_for(loop(), timeout)


async def type_text(pilot: Pilot[int], text: str) -> None:
    """Type `text` into the focused widget, one key per character."""
    keys = ["space" if ch == " " else ch for ch in text]
    await pilot.press(*keys)


async def started(pilot: Pilot[int], app: CorralApp) -> None:
    """Wait until the app has opened its lead (it paints its first frame before that)."""
    await wait_until(pilot, lambda: not app.starting)
