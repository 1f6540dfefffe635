"""The MCP Inspector's CLI mode (another real client) lists `corral mcp`'s tools and calls one.

Runs when `npx` is present (the package is fetched once into npm's cache), on a Node at least the
Inspector's `engines.node` (npm's Node 22 when the system's is older); under `CI=true` a missing
`npx` is a failure, not a skip (`.ci/run` installs Node.js).
"""

from __future__ import annotations

import json
import os
import subprocess

from tests._ci import require
from tests.e2e._pi_real import node_for, require_node

from .conftest import CORRAL, McpEnv

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
"""Pinned: a new Inspector release must not change what CI runs (raise it on purpose)."""


INSPECTOR_NODE = (22, 19)
"""Its `engines.node`: an older system Node runs it on npm's Node 22 (as the real-Pi tests do)."""


def _inspector(env: McpEnv, *method: str) -> dict[str, object]:
    npx = require("npx", "Node.js")
    node = node_for(require_node(), INSPECTOR_NODE, f"the MCP Inspector {INSPECTOR}")
    path = os.pathsep.join([str(node.parent), env.vars.get("PATH", os.environ.get("PATH", ""))])
    done = subprocess.run(
        [npx, "-y", INSPECTOR, "--cli", CORRAL, "mcp", "--cwd", str(env.work), *method],
        env={**env.vars, "HOME": os.environ.get("HOME", str(env.root)), "PATH": path},
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
