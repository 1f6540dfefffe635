"""The MCP Inspector's CLI mode (another real client) lists `corral mcp`'s tools and calls one.

Runs when `npx` is present (the package is fetched once into npm's cache); under `CI=true` a
missing `npx` is a failure, not a skip (`.ci/run` installs Node.js).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from tests._ci import unavailable

from .conftest import CORRAL, McpEnv

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
"""Pinned: a new Inspector release must not change what CI runs (raise it on purpose)."""


def _inspector(env: McpEnv, *method: str) -> dict[str, object]:
    npx = shutil.which("npx")
    if npx is None:
        unavailable("npx (Node.js) is not installed")
    done = subprocess.run(
        [npx, "-y", INSPECTOR, "--cli", CORRAL, "mcp", "--cwd", str(env.work), *method],
        env={**env.vars, "HOME": os.environ.get("HOME", str(env.root))},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout))


def test_the_inspector_lists_the_tools_and_calls_one(mcp_env: McpEnv) -> None:
    listed = _inspector(mcp_env, "--method", "tools/list")
    names = [tool["name"] for tool in listed["tools"]]  # type: ignore[attr-defined]
    assert names[0] == "agent_list" and names[-1] == "wait"
    called = _inspector(mcp_env, "--method", "tools/call", "--tool-name", "agent_list")
    assert called.get("isError") in (None, False)
    assert called["structuredContent"]["agents"] == []  # type: ignore[index]
