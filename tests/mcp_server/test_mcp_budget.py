"""`corral mcp --budget KEY=NUMBER`: the lead's limits over stdio with the official SDK client."""

from __future__ import annotations

import pytest

from .conftest import WAIT_MS, McpEnv, run_corral, run_mcp_answering_initialize
from .conftest import details as _details

USAGE = {"input": 3000, "output": 100, "cache_read": 0, "cache_write": 0}


async def test_budget_option_stops_the_agent_and_refuses_more(mcp_env: McpEnv) -> None:
    step = {"text": "looking", "tool_calls": [{"name": "ls", "args": {"path": "."}}], "usage": USAGE}
    mcp_env.script({"scout": [step, step, {"text": "What I found so far.", "usage": USAGE}]})
    async with mcp_env.client("--budget", "tree_tokens=8000") as client:
        started = await client.call_tool("agent_delegate", {"definition": "scout", "task": "Look around."})
        assert not started.is_error
        waited = await client.call_tool("wait", {"timeoutMs": WAIT_MS})
        [item] = [i for i in _details(waited)["items"] if i["kind"] == "result"]
        assert "budget_exhausted: tree_tokens" in item["text"]
        assert item["details"]["budget_exhausted"] is True
        refused = await client.call_tool("agent_delegate", {"definition": "scout", "task": "Again."})
        assert refused.is_error
        assert "tree_tokens" in refused.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("--budget", "tree_tokens"), "use KEY=NUMBER"),
        (("--budget", "tree_tokens=lots"), "use KEY=NUMBER"),
        (("--budget", "tree_tokenz=5"), "unknown key 'tree_tokenz'"),
        (("--budget", "nokey=5"), "unknown key 'nokey'"),
        (("--budget", "agent_tokens=0"), "invalid value for 'agent_tokens'"),
        (("--budget", "soft_threshold=2"), "invalid value for 'soft_threshold'"),
    ],
)
def test_a_bad_budget_is_one_line_exit_2(mcp_env: McpEnv, args: tuple[str, ...], problem: str) -> None:
    done = run_mcp_answering_initialize(mcp_env, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""  # refused before the handshake: the client's initialize got no answer
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and problem in lines[0] and "Traceback" not in done.stderr


def test_a_bad_budget_key_is_refused_even_when_no_client_comes(mcp_env: McpEnv) -> None:
    done = run_corral(mcp_env, "mcp", "--cwd", str(mcp_env.work), "--budget", "nokey=5")
    assert done.returncode == 2 and "unknown key 'nokey'" in done.stderr, done.stderr
