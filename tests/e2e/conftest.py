"""Whole-process tests: the real `corral` command in a subprocess, with private data and config roots."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.llm.fake_server import FakeProviderServer

CORRAL = str(Path(sys.executable).with_name("corral"))


@dataclass
class Env:
    root: Path
    project: Path
    scripts: Path
    home: Path
    config: Path
    vars: dict[str, str]

    def script(self, name: str, text: str) -> None:
        (self.scripts / f"{name}.yaml").write_text(text)

    def settings(self, text: str) -> None:
        (self.config / "corral").mkdir(parents=True, exist_ok=True)
        (self.config / "corral" / "settings.toml").write_text(text)

    def sessions(self) -> list[Path]:
        return sorted((self.home / "sessions").rglob("*.jsonl"))

    def python(
        self, code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """`python -c code *args` in a fresh interpreter, in the project with these variables (and `env`)."""
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=self.project,
            env={**self.vars, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


@pytest.fixture
def cli_env(tmp_path: Path) -> Env:
    project = tmp_path / "project"
    scripts = tmp_path / "scripts"
    for folder in (project, scripts):
        folder.mkdir()
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CORRAL_", "XDG_"))
    }
    base.update(
        CORRAL_HOME=str(tmp_path / "home"),
        CORRAL_SCRIPTS=str(scripts),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        HOME=str(tmp_path / "userhome"),
    )
    return Env(tmp_path, project, scripts, tmp_path / "home", tmp_path / "config", base)


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    """The fake OpenAI-compatible endpoint on loopback (`tests/llm/fake_server.py`)."""
    with FakeProviderServer() as fake:
        yield fake


def local_settings(cli_env: Env, server: FakeProviderServer, *, window: int) -> None:
    """The user's settings: `local/small` on `server`, the default model, with a `window`-token context."""
    cli_env.settings(
        f"""
default_model = "local/small"

[providers.local]
base_url = "{server.base_url}"

[[providers.local.models]]
id = "small"
context_window = {window}
max_tokens = 256
"""
    )


RunCorral = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def corral(cli_env: Env) -> RunCorral:
    def run(
        *args: str,
        input: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60,
        cwd: Path | None = None,
    ):
        merged = dict(cli_env.vars)
        if env:
            merged.update(env)
        return subprocess.run(
            [CORRAL, *args],
            cwd=cwd or cli_env.project,
            env=merged,
            input=input,
            stdin=subprocess.DEVNULL if input is None else None,  # never the test runner's stdin
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run


def kill_json_run(env: Env, *args: str, at: Callable[[dict[str, Any]], bool]) -> None:
    """Start `corral run --mode json *args` and SIGKILL it at the first event `at` accepts (stderr dropped)."""
    with subprocess.Popen(
        [CORRAL, "run", "--mode", "json", *args],
        cwd=env.project,
        env=env.vars,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        reached = False
        for line in proc.stdout:
            if at(json.loads(line)):
                reached = True
                break
        assert reached, "the run ended before the event it was to be killed at"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)


def wait_until(check: Callable[[], bool], timeout: float = 30.0, what: str = "the condition") -> None:
    """Poll `check` until it holds; fail the test after `timeout` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)
