"""`corral mcp --trace FILE`: the served lead's trace, read back with `corral trace`'s reader."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from corral._cli._trace import read_trace

from .conftest import WAIT_MS, McpEnv, run_mcp_answering_initialize

AGENT_STEPS = [{"tool_calls": [{"name": "ls", "args": {}}]}, {"text": "agent result"}]


async def _root_written(path: Path) -> None:
    async def loop() -> None:
        while not path.exists() or '"name":"invoke_agent lead"' not in path.read_text():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(loop(), WAIT_MS / 1000)


async def test_the_served_lead_is_one_trace_with_agents_under_their_tool_calls(mcp_env: McpEnv) -> None:
    mcp_env.script({"*": AGENT_STEPS})
    trace_file = mcp_env.root / "mcp-trace.jsonl"
    async with mcp_env.client("--trace", str(trace_file)) as client:
        started = await client.call_tool(
            "agent_delegate", {"definition": "scout", "task": "t", "label": "s1"}
        )
        assert not started.is_error
        waited = await client.call_tool("wait", {"timeoutMs": WAIT_MS})
        assert not waited.is_error
    await _root_written(trace_file)  # the root ends when the server closes the lead
    [root] = read_trace(trace_file)
    assert root.name == "invoke_agent lead" and root.parent_id is None
    assert root.attributes["corral.command"] == "api"
    [call] = [c for c in root.children if c.name == "execute_tool agent_delegate"]
    [agent] = call.children
    assert agent.name == "invoke_agent s1" and agent.attributes["corral.agent"] == "s1"
    assert len([t for t in agent.children if t.name == "corral.turn"]) == 2
    lines = [json.loads(line) for line in trace_file.read_text().splitlines()]
    assert len({d["context"]["trace_id"] for d in lines}) == 1


def test_a_directory_as_trace_file_is_one_line_exit_2(mcp_env: McpEnv) -> None:
    done = run_mcp_answering_initialize(mcp_env, "--trace", str(mcp_env.work))
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "is a directory" in lines[0] and "Traceback" not in done.stderr
