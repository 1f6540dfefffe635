"""`corral mcp --isolation worktree` and the `merge` tool over stdio with the official SDK client."""

from __future__ import annotations

import json

from tests.orchestration.teams._git_helpers import GIT_ENV, git, make_repo

from .conftest import WAIT_MS, McpEnv
from .conftest import details as _details


async def test_an_isolated_writer_is_merged_with_the_merge_tool(mcp_env: McpEnv) -> None:
    make_repo(mcp_env.work, {"app.py": "value = 1\n"})
    mcp_env.vars.update(GIT_ENV)
    mcp_env.script(
        {
            "writer": [
                {"tool_calls": [{"name": "write", "args": {"path": "app.py", "content": "value = 2\n"}}]},
                {"text": "Set the value."},
            ]
        }
    )
    async with mcp_env.client("--isolation", "worktree") as client:
        started = await client.call_tool(
            "agent_delegate", {"definition": "implementer", "task": "Set value to 2.", "label": "writer"}
        )
        assert not started.is_error
        waited = await client.call_tool("wait", {"timeoutMs": WAIT_MS})
        [item] = _details(waited)["items"]
        assert item["details"]["merge"] == "pending", json.dumps(item)
        assert (mcp_env.work / "app.py").read_text() == "value = 1\n"

        missing = await client.call_tool("merge", {"agent": "nobody"})
        assert missing.is_error
        merged = await client.call_tool("merge", {"agent": "writer"})
        assert not merged.is_error and _details(merged)["outcome"] == "merged"
        assert (mcp_env.work / "app.py").read_text() == "value = 2\n"
        assert git(mcp_env.work, "branch", "--list", "corral/*") == ""
