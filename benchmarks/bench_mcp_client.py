"""corral as an MCP client: one MCP tool call's overhead, 50 agents sharing one server, tool search.

The server is `tests/mcp_servers/tiny_server.py`, a local stdio MCP server on the standard library
(the `initialize` era), so the figures are the SDK's and corral's cost, not a server's work.

- **overhead** (target p50 ≤ 2 ms): the same call (`add`) made directly with the official SDK's
  `mcp.Client` and through corral's agent tool (`McpTool.execute`: its server's shared session, the
  per-call timeout, the result mapped to a `ToolResult`), each on its own session of the server,
  interleaved call by call: both round trips and the difference of their p50s.
- **shared** : 50 agents delegated at once by a lead (scripted model, zero latency), each calling the
  server's `pid` tool and then `add` `--calls` times before it answers: wall time from the first
  delegation to the last result, how many server processes answered them (one: the lead's host
  starts the server once, on first use, and every agent shares its session), the calls made and
  `exactly_once` (every result delivered once).
- **tool_search**: an agent given 80 MCP tools (`--tools`; tiny's 8 and `TINY_EXTRA_TOOLS` more):
  the tool tokens of its first request when the tools are sent (`mcp_tool_search = "off"`) and when
  they are searched for (`"on"`: one `mcp_tool_search` tool), corral's own estimate (4 characters a
  token), and the first request's whole overhead (system prompt and tools) both ways.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, summary_ms
from _orch import data_root

TINY = Path(__file__).resolve().parents[1] / "tests" / "mcp_servers" / "tiny_server.py"
WAIT_S = 120.0


async def _overhead(iterations: int, warmup: int) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    from corral.mcp_servers import McpGrant, McpServers
    from corral.settings import McpServerSettings

    config = McpServerSettings(command=sys.executable, args=[str(TINY)])
    servers = McpServers({"tiny": config}, log_dir=None)
    direct_samples: list[float] = []
    corral_samples: list[float] = []
    try:
        toolset = await servers.toolset(McpGrant(("tiny",)))
        tool = next(tool for tool in toolset.tools if tool.name == "mcp__tiny__add")
        params = StdioServerParameters(command=sys.executable, args=[str(TINY)])
        async with Client(params, mode="auto") as client:
            for index in range(warmup + iterations):
                start = time.perf_counter()
                direct = await client.call_tool("add", {"a": index, "b": 1})
                direct_s = time.perf_counter() - start
                start = time.perf_counter()
                result = await tool.execute("bench", {"a": index, "b": 1})
                corral_s = time.perf_counter() - start
                assert not direct.is_error and not result.is_error
                if index >= warmup:
                    direct_samples.append(direct_s)
                    corral_samples.append(corral_s)
    finally:
        await servers.aclose()
    direct_summary, corral_summary = summary_ms(direct_samples), summary_ms(corral_samples)
    return {
        "direct_sdk_call": direct_summary,
        "corral_tool_call": corral_summary,
        "overhead_p50_ms": round(corral_summary["p50_ms"] - direct_summary["p50_ms"], 3),
    }


async def _shared(agents: int, calls: int) -> dict[str, Any]:
    import corral

    add = {"name": "mcp__tiny__add", "args": {"a": 1, "b": 2}}
    steps = [
        {"tool_calls": [{"name": "mcp__tiny__pid", "args": {}}]},
        {"text": "pid {{ last_tool_output }}"},
    ]
    steps = [{"tool_calls": [add]} for _ in range(calls)] + steps
    script = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": {"*": steps}}
    with data_root(script, "corral-bench-mcp-client-") as root:
        (root / "config" / "corral").mkdir(parents=True)
        (root / "config" / "corral" / "settings.toml").write_text(
            'default_model = "scripted/bench"\n'
            f"[mcp_servers.tiny]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(TINY))}]\n"
        )
        async with corral.open_lead(root / "work") as lead:
            start = time.perf_counter()
            outs = await asyncio.gather(
                *(
                    lead.call("agent_delegate", {"definition": "generalist", "task": "t", "label": f"a{n}"})
                    for n in range(agents)
                )
            )
            assert all(out.ok for out in outs), [out.text for out in outs if not out.ok][:1]
            results: list[str] = []
            while len(results) < agents:
                item = await lead.next_item(timeout=WAIT_S)
                assert item is not None, f"{len(results)} of {agents} results arrived"
                if item.kind == "result":
                    results.append(item.text)
            wall = time.perf_counter() - start
            extra = await lead.next_item(timeout=0)
    pids = {text.rsplit("pid ", 1)[-1].split()[0] for text in results}
    return {
        "agents": agents,
        "calls_per_agent": calls + 1,
        "wall_s": round(wall, 3),
        "server_processes": len(pids),
        "exactly_once": len(results) == agents and extra is None,
    }


async def _tool_search(tools: int) -> dict[str, Any]:
    """The first request's tool tokens of an agent with `tools` MCP tools, sent and searched for."""
    from corral.agent import AgentSession
    from corral.llm import ModelRegistry
    from corral.mcp_servers import McpGrant, McpServers
    from corral.mcp_servers._search import tool_tokens
    from corral.session import SessionManager
    from corral.settings import McpServerSettings

    base = 8  # tiny_server.py's own tools
    config = McpServerSettings(
        command=sys.executable, args=[str(TINY)], env={"TINY_EXTRA_TOOLS": str(tools - base)}
    )
    out: dict[str, Any] = {"mcp_tools": tools}
    with tempfile.TemporaryDirectory(prefix="corral-bench-tool-search-") as folder:
        root = Path(folder)
        registry = ModelRegistry(cwd=root)
        model = registry.create_model(registry.resolve("scripted/hello"), cwd=root)
        for mode in ("off", "on"):
            session = SessionManager.create(root, sessions_root=root / "sessions")
            agent = AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=root)
            servers = McpServers({"tiny": config}, cwd=root, log_dir=None, tool_search=mode)
            try:
                report = await servers.give(agent, McpGrant(("tiny",)))
                assert len(report.tool_names) == tools and report.searched == (mode == "on")
                key = "searched" if mode == "on" else "sent"
                out[f"{key}_tool_tokens"] = tool_tokens(agent.tools)
                out[f"{key}_first_request_overhead_tokens"] = agent.context_overhead().tokens
            finally:
                await servers.aclose()
                session.close()
    out["tool_tokens_saved_pct"] = round(100 * (1 - out["searched_tool_tokens"] / out["sent_tool_tokens"]), 1)
    out["auto_engages_at_window"] = out["sent_tool_tokens"] * 10  # the default threshold, 10%
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=500, help="calls measured (default 500)")
    parser.add_argument("--warmup", type=int, default=50, help="calls before measuring (default 50)")
    parser.add_argument("--agents", type=int, default=50, help="agents sharing the server (default 50)")
    parser.add_argument("--calls", type=int, default=5, help="`add` calls per agent (default 5)")
    parser.add_argument(
        "--tools", type=int, default=80, help="MCP tools for the tool-search figure (default 80)"
    )
    args = parser.parse_args()
    out: dict[str, Any] = {**environment("bench_mcp_client.py")}
    out["overhead"] = asyncio.run(_overhead(args.iterations, args.warmup))
    out["shared"] = asyncio.run(_shared(args.agents, args.calls))
    out["tool_search"] = asyncio.run(_tool_search(args.tools))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
