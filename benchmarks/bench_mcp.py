"""`corral mcp`: delegate → result latency over stdio, 50 agents collected by `wait`, start-up.

All agents run on a zero-latency scripted model (`default_model = "scripted/bench"`) in a temp
data root, so the figures are corral's own cost plus the MCP transport's.

- **round trip** (target p50 ≤ 30 ms beyond in-process): `agent_delegate` then `wait` over stdio
  with the official MCP SDK client, from sending `agent_delegate` to `wait`'s answer holding the
  result; next to the same scenario in process through the Python API (`lead.call` then
  `lead.next_item`).
- **fan-out**: 50 `agent_delegate` calls, then `wait` until all 50 results came back: wall time
  and the server's peak RSS (`VmHWM`).
- **start-up** (target ≤ 500 ms): spawning `corral mcp` until the first `initialize` answer on
  its stdout (raw JSON-RPC, no SDK on the client side), and on until the answer to the
  `tools/list` sent next (the server has loaded the SDK and opened the lead by then).

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import corral_command, environment, start_json_lines, summary_ms
from _orch import data_root

SCRIPT = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": {"*": [{"text": "done"}]}}
CORRAL = corral_command()
WAIT_MS = 60_000


def _settings(root: Path) -> None:
    (root / "config" / "corral").mkdir(parents=True, exist_ok=True)
    (root / "config" / "corral" / "settings.toml").write_text('default_model = "scripted/bench"\n')


async def _in_process(root: Path, iterations: int, warmup: int) -> list[float]:
    import corral

    samples: list[float] = []
    async with corral.open_lead(root / "work") as lead:
        for index in range(warmup + iterations):
            start = time.perf_counter()
            out = await lead.call(
                "agent_delegate", {"definition": "scout", "task": "t", "label": f"p{index}"}
            )
            assert out.ok, out.text
            item = await lead.next_item(timeout=WAIT_MS / 1000)
            assert item is not None and item.kind == "result"
            if index >= warmup:
                samples.append(time.perf_counter() - start)
            await lead.wait_quiet(30)
    return samples


def _server_params(root: Path, pid_file: Path) -> Any:
    from mcp.client.stdio import StdioServerParameters

    # A tiny launcher records the server's pid (for its peak RSS), then becomes `corral mcp`.
    launcher = (
        "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); os.execv(sys.argv[2], sys.argv[2:])"
    )
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", launcher, str(pid_file), *CORRAL, "mcp", "--cwd", str(root / "work")],
        env=dict(os.environ),
    )


def _peak_rss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


async def _over_mcp(root: Path, iterations: int, warmup: int, fanout: int) -> dict[str, Any]:
    from mcp import Client

    pid_file = root / "server.pid"
    samples: list[float] = []
    async with Client(_server_params(root, pid_file)) as client:
        for index in range(warmup + iterations):
            start = time.perf_counter()
            started = await client.call_tool(
                "agent_delegate", {"definition": "scout", "task": "t", "label": f"m{index}"}
            )
            assert not started.is_error, started.content
            waited = await client.call_tool("wait", {"timeoutMs": WAIT_MS})
            assert waited.structured_content and waited.structured_content["items"], waited.content
            if index >= warmup:
                samples.append(time.perf_counter() - start)
        pid = int(pid_file.read_text())
        rss_before = _peak_rss_kb(pid)
        start = time.perf_counter()
        for index in range(fanout):
            started = await client.call_tool(
                "agent_delegate", {"definition": "scout", "task": "t", "label": f"f{index}"}
            )
            assert not started.is_error, started.content
        collected = 0
        while collected < fanout:
            waited = await client.call_tool("wait", {"timeoutMs": WAIT_MS})
            assert waited.structured_content is not None
            collected += sum(1 for item in waited.structured_content["items"] if item["kind"] == "result")
        wall = time.perf_counter() - start
        rss_after = _peak_rss_kb(pid)
    return {
        "round_trip": summary_ms(samples),
        "fanout": {
            "agents": fanout,
            "wall_ms": round(wall * 1000, 1),
            "server_peak_rss_kb_before": rss_before,
            "server_peak_rss_kb": rss_after,
        },
    }


def _startup(root: Path, runs: int) -> tuple[list[float], list[float]]:
    """Per run: seconds to the `initialize` answer, and to the answer of the `tools/list` after it."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    then = [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    initialized: list[float] = []
    listed: list[float] = []
    for _ in range(runs):
        process, answer, start, seconds = start_json_lines(
            [*CORRAL, "mcp", "--cwd", str(root / "work")], request
        )
        initialized.append(seconds)
        assert answer.get("id") == 1 and "result" in answer, answer
        process.stdin.write("".join(json.dumps(message) + "\n" for message in then).encode())
        process.stdin.flush()
        tools = json.loads(process.stdout.readline())
        listed.append(time.perf_counter() - start)
        assert tools.get("id") == 2 and tools["result"]["tools"], tools
        process.stdin.close()
        process.wait(timeout=30)
        process.stdout.close()
    return initialized, listed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--iterations", type=int, default=30, help="timed delegate → result round trips (default 30)"
    )
    parser.add_argument("--warmup", type=int, default=3, help="untimed round trips first (default 3)")
    parser.add_argument("--agents", type=int, default=50, help="agents in the fan-out run (default 50)")
    parser.add_argument("--startups", type=int, default=10, help="timed server start-ups (default 10)")
    parser.add_argument("--startup-only", action="store_true", help="measure only the start-up")
    args = parser.parse_args()
    gc.collect()
    out: dict[str, Any] = {"benchmark": "mcp"}
    if not args.startup_only:
        with data_root(SCRIPT, "corral-bench-mcp-") as root:
            _settings(root)
            in_process = asyncio.run(_in_process(root, args.iterations, args.warmup))
        with data_root(SCRIPT, "corral-bench-mcp-") as root:
            _settings(root)
            over = asyncio.run(_over_mcp(root, args.iterations, args.warmup, args.agents))
        base, mcp = summary_ms(in_process), over["round_trip"]
        out.update(
            in_process_round_trip=base,
            mcp_stdio_round_trip=mcp,
            mcp_overhead_p50_ms=round(mcp["p50_ms"] - base["p50_ms"], 3),
            target_overhead_p50_ms=30,
            fanout=over["fanout"],
        )
    with data_root(SCRIPT, "corral-bench-mcp-") as root:
        _settings(root)
        initialized, listed = _startup(root, args.startups)
    out.update(
        startup_to_initialize=summary_ms(initialized),
        target_startup_ms=500,
        startup_to_tools_list=summary_ms(listed),
        load_average=[round(load, 2) for load in os.getloadavg()],
        environment=environment("benchmarks/bench_mcp.py"),
    )
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
