"""Fan-out: 100 agents delegated at once, each making 5 tool calls; wall time, peak RSS, exactly-once.

A lead on a zero-latency scripted model delegates `--agents` scouts
concurrently; each scout calls `ls` five times (one call per turn) and then
answers. The wall time runs from the first `delegate` until the host reports
the lead quiet (every result delivered, every generation finalized). Peak RSS
is the process's high-water mark. The exactly-once check counts
`corral-agent-result` entries per request id in the lead's session file.
Targets: under 3 s and under 400 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment
from _orch import data_root, fan_out, start_host


def _script(tool_calls: int) -> dict[str, object]:
    steps: list[dict[str, object]] = [{"tool_calls": [{"name": "ls", "args": {}}]} for _ in range(tool_calls)]
    steps.append({"text": "fan-out result"})
    return {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": {"*": steps}}


async def _run(root: Path, agents: int) -> dict[str, object]:
    host, lead, caller = await start_host(root)
    try:
        run = await fan_out(host, lead, caller, agents)
        finalized = all(g.phase == "finalized" for g in host.kernel.generations(include_finalized=True))
    finally:
        await host.aclose()
        lead.session.close()
    return {
        "agents": agents,
        "delegate_all_s": run.delegate_all_s,
        "wall_s": run.wall_s,
        "exactly_once": run.exactly_once,
        "all_finalized": finalized,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--tool-calls", type=int, default=5)
    args = parser.parse_args(argv)
    gc.collect()
    with data_root(_script(args.tool_calls), "corral-bench-fanout-") as root:
        figures = asyncio.run(_run(root, args.agents))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "benchmark": "fanout",
                **figures,
                "tool_calls_per_agent": args.tool_calls,
                "peak_rss_mb": round(peak_mb, 1),
                "target_wall_s": 3.0,
                "target_rss_mb": 400,
                **environment("bench_fanout.py"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
