"""`corral mcp` driven by the official MCP SDK client: private data root, scripts, the server command."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests._ci import unavailable

if importlib.util.find_spec("mcp") is None:
    unavailable("the mcp extra is not installed (make sync-test installs it)", module_level=True)

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult, TextContent

CORRAL = str(Path(sys.executable).with_name("corral"))
WAIT_MS = 20_000


@dataclass
class McpEnv:
    root: Path
    work: Path
    home: Path
    vars: dict[str, str]

    def script(self, agents: dict[str, list[dict[str, Any]]]) -> None:
        """Write `scripted/team` (the agents' steps; `default_model` points at it)."""
        script = {"steps": [{"text": "lead"}], "on_exhausted": "repeat_last", "agents": agents}
        (self.root / "scripts" / "team.yaml").write_text(yaml.safe_dump(script))

    def params(self, *args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
        """`corral mcp --cwd <work> ARGS` over stdio."""
        merged = dict(self.vars)
        merged.update(env or {})
        return StdioServerParameters(command=CORRAL, args=["mcp", "--cwd", str(self.work), *args], env=merged)

    @asynccontextmanager
    async def client(
        self, *args: str, env: dict[str, str] | None = None, **kwargs: Any
    ) -> AsyncIterator[Client]:
        """An SDK client connected to a fresh `corral mcp` over stdio."""
        async with Client(self.params(*args, env=env), **kwargs) as client:
            yield client


@pytest.fixture
def mcp_env(tmp_path: Path) -> McpEnv:
    for folder in ("work", "scripts", "config/corral"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "config" / "corral" / "settings.toml").write_text('default_model = "scripted/team"\n')
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CORRAL_", "XDG_"))
    }
    base.update(
        CORRAL_HOME=str(tmp_path / "home"),
        CORRAL_SCRIPTS=str(tmp_path / "scripts"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    env = McpEnv(tmp_path, tmp_path / "work", tmp_path / "home", base)
    env.script({"*": [{"text": "agent result"}]})
    return env


def text(result: CallToolResult) -> str:
    """The text of a tool result's first content block."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def details(result: CallToolResult) -> dict[str, Any]:
    """A tool result's `structuredContent`."""
    assert result.structured_content is not None
    return dict(result.structured_content)


def items(result: Any) -> list[dict[str, Any]]:
    """The items of a successful `wait` answer."""
    assert not result.is_error, result.content
    return list(result.structured_content["items"])


def initialize_request(client: str = "t", request_id: int | str = 1) -> dict[str, Any]:
    """A client's `initialize` request (protocol 2025-06-18, no capabilities)."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": client, "version": "0"},
        },
    }


def run_corral(env: McpEnv, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """`corral ARGS` in `env` to its end (stdin: `input`, else the null device), output captured."""
    return subprocess.run(
        [CORRAL, *args],
        env=env.vars,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def run_mcp_answering_initialize(env: McpEnv, *args: str) -> subprocess.CompletedProcess[str]:
    """`corral mcp --cwd <work> *args` over stdio, sent one `initialize` and then end of input."""
    return run_corral(
        env, "mcp", "--cwd", str(env.work), *args, input=json.dumps(initialize_request()) + "\n"
    )
