"""A private data root, settings, scripts and definitions for the MCP-client tests; their servers:
the real npm ones (`_install.py`) and `tiny_server.py`."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from corral.lead import Launched, LaunchOptions, launch_session
from tests._ci import unavailable

from ._install import RealServer, install

TINY = Path(__file__).with_name("tiny_server.py")
WAIT = 60.0
"""Seconds a test waits for agents whose MCP servers start (Node's start on a loaded machine)."""


@pytest.fixture(autouse=True)
def _mcp_sdk(request: pytest.FixtureRequest) -> None:
    """These tests talk to servers through the `mcp` SDK (the `mcp` extra, which `make test` installs):
    without it they skip with that reason (fail under CI) — all but the one that checks what corral says
    when the SDK is missing."""
    if importlib.util.find_spec("mcp") is None and "without_the_sdk" not in request.node.name:
        unavailable("the MCP SDK is not installed (the mcp extra: `make test` installs it)")


def tiny(mode: str = "ok", **extra: object) -> dict[str, object]:
    """A `[mcp_servers.<name>]` table for `tiny_server.py` in `mode`."""
    return {"command": sys.executable, "args": [str(TINY), mode], **extra}


def _toml_value(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


@dataclass
class McpEnv:
    root: Path
    work: Path
    home: Path
    config: Path

    @property
    def notes(self) -> Path:
        """Where `tiny_server.py`'s `note` tool writes, given as `env = {TINY_NOTES = …}`."""
        return self.root / "notes.txt"

    def settings(self, servers: dict[str, dict[str, object]], extra: str = "") -> None:
        """The user settings: `default_model = "scripted/mcp"`, `extra` lines and `[mcp_servers]`."""
        lines = ['default_model = "scripted/mcp"', extra]
        for name, table in servers.items():
            lines.append(f"[mcp_servers.{name}]")
            lines.extend(f"{key} = {_toml_value(value)}" for key, value in table.items())
        (self.config / "settings.toml").write_text("\n".join(lines) + "\n")

    def script(
        self, steps: list[dict[str, Any]], agents: dict[str, list[dict[str, Any]]] | None = None
    ) -> None:
        """`scripted/mcp`: the lead's `steps` and the managed agents' steps by label (`*`: any other)."""
        script = {
            "steps": steps,
            "on_exhausted": "repeat_last",
            "agents": agents or {"*": [{"text": "done"}]},
        }
        (self.root / "scripts" / "mcp.yaml").write_text(yaml.safe_dump(script))

    def definition(self, name: str, fields: str, body: str = "Do the task.") -> None:
        """A user-layer agent definition `name` with the YAML frontmatter lines `fields`."""
        folder = self.config / "agents"
        folder.mkdir(exist_ok=True)
        (folder / f"{name}.md").write_text(f"---\nname: {name}\n{fields}\n---\n{body}\n")

    async def lead(self, *, surfaces: list[str] | None = None) -> Launched:
        """The lead of `corral run` on `scripted/mcp` in `work`, with its host attached."""
        launched = launch_session(LaunchOptions(self.work, model="scripted/mcp", surfaces=surfaces))
        await launched.attach_host()
        return launched


@pytest.fixture
def mcp_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> McpEnv:
    for folder in ("work", "scripts", "config/corral"):
        (tmp_path / folder).mkdir(parents=True)
    monkeypatch.setenv("CORRAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("CORRAL_SCRIPTS", str(tmp_path / "scripts"))
    return McpEnv(tmp_path, tmp_path / "work", tmp_path / "home", tmp_path / "config" / "corral")


@pytest.fixture
async def lead_of(mcp_env: McpEnv) -> AsyncIterator[list[Launched]]:
    """Leads a test opens (append them), closed at its end."""
    opened: list[Launched] = []
    yield opened
    for launched in opened:
        await launched.aclose()
        launched.session.close()


@pytest.fixture(scope="session")
def everything() -> RealServer:
    """`@modelcontextprotocol/server-everything`, installed pinned (a skip without Node, a failure under CI)."""
    return install("everything")


@pytest.fixture(scope="session")
def filesystem() -> RealServer:
    """`@modelcontextprotocol/server-filesystem`, installed pinned."""
    return install("filesystem")
