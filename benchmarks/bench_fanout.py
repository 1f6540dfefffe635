"""Fan-out: N agents delegated at once, each making 5 tool calls; wall, CPU, GC, peak RSS, exactly-once.

A lead on a zero-latency scripted model delegates `--agents` scouts
concurrently; each scout calls `ls` five times (one call per turn) and then
answers. The wall time runs from the first `delegate` until the host reports
the lead quiet (every result delivered, every generation finalized); `cpu_s`
is the process's CPU time (user + system) over the same span, the figure to
compare on a loaded machine. `store_writes_per_agent` counts the store's write
transactions (`BEGIN IMMEDIATE`, durable or not) over the span, per agent. `gc` counts the collector's passes per generation
over the span and the time they took, wall and CPU (`gc.callbacks`). Peak RSS is the
process's high-water mark. The exactly-once check counts `corral-agent-result`
entries per request id in the lead's session file. Targets: 100 agents under
3 s and under 400 MB; 1,000 agents ≤ 11× the CPU of 100.

`--agents 100,300,1000` runs each size in its own process (a fresh heap, its
own peak RSS), one after another, and prints them under `runs` with each
size's wall and CPU relative to the smallest (`scaling`). `--gc-freeze off`
measures without the host's freezing of its long-lived heap
(`corral.orchestration.host._heap`).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment
from _orch import data_root, fan_out, start_host


def _script(tool_calls: int) -> dict[str, object]:
    steps: list[dict[str, object]] = [{"tool_calls": [{"name": "ls", "args": {}}]} for _ in range(tool_calls)]
    steps.append({"text": "fan-out result"})
    return {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": {"*": steps}}


class _GcClock:
    """Collections per generation and their time (wall, and the process's CPU), from `gc.callbacks`."""

    def __init__(self) -> None:
        self.passes = [0, 0, 0]
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self._began = (0.0, 0.0)

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = (time.perf_counter(), time.process_time())
        else:
            self.passes[info["generation"]] += 1
            self.seconds += time.perf_counter() - self._began[0]
            self.cpu_seconds += time.process_time() - self._began[1]

    def figures(self) -> dict[str, Any]:
        return {
            "passes_by_generation": self.passes,
            "seconds": round(self.seconds, 3),
            "cpu_seconds": round(self.cpu_seconds, 3),
        }


async def _run(root: Path, agents: int) -> dict[str, object]:
    writes = [0]

    def count_writes(sql: str, _params: tuple[object, ...]) -> None:
        if sql == "BEGIN IMMEDIATE":
            writes[0] += 1

    host, lead, caller = await start_host(root, tracer=count_writes)
    clock = _GcClock()
    try:
        gc.callbacks.append(clock)
        cpu = time.process_time()
        before = writes[0]
        run = await fan_out(host, lead, caller, agents)
        cpu = time.process_time() - cpu
        store_writes = writes[0] - before
        gc.callbacks.remove(clock)
        finalized = all(g.phase == "finalized" for g in host.kernel.generations(include_finalized=True))
    finally:
        if clock in gc.callbacks:
            gc.callbacks.remove(clock)
        await host.aclose()
        lead.session.close()
    return {
        "agents": agents,
        "delegate_all_s": run.delegate_all_s,
        "wall_s": run.wall_s,
        "cpu_s": round(cpu, 3),
        "store_writes_per_agent": round(store_writes / agents, 2),
        "gc": clock.figures(),
        "exactly_once": run.exactly_once,
        "all_finalized": finalized,
    }


def _one(agents: int, tool_calls: int, freeze: bool) -> dict[str, Any]:
    try:
        from corral.orchestration.host import _heap
    except ImportError:  # an older corral (measuring before and after): it has no heap keeping
        pass
    else:
        _heap.ENABLED = freeze
    gc.collect()
    with data_root(_script(tool_calls), "corral-bench-fanout-") as root:
        figures = asyncio.run(_run(root, agents))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {**figures, "peak_rss_mb": round(peak_mb, 1)}


def _in_process(agents: int, tool_calls: int, freeze: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--agents",
            str(agents),
            "--tool-calls",
            str(tool_calls),
            "--gc-freeze",
            freeze,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return {"agents": agents, "error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    out: dict[str, Any] = json.loads(done.stdout)
    return {k: v for k, v in out.items() if k in _RUN_KEYS}


_RUN_KEYS = frozenset(
    {
        "agents",
        "delegate_all_s",
        "wall_s",
        "cpu_s",
        "store_writes_per_agent",
        "gc",
        "exactly_once",
        "all_finalized",
        "peak_rss_mb",
    }
)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one JSON object."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--agents", default="100", help="agents per fan-out; comma-separated for several sizes"
    )
    parser.add_argument("--tool-calls", type=int, default=5)
    parser.add_argument("--gc-freeze", choices=("on", "off"), default="on")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.agents.split(",") if x]
    targets = {"target_wall_s": 3.0, "target_rss_mb": 400}
    if len(sizes) == 1:
        figures = _one(sizes[0], args.tool_calls, args.gc_freeze == "on")
        out: dict[str, Any] = {
            "benchmark": "fanout",
            **figures,
            "tool_calls_per_agent": args.tool_calls,
            "gc_freeze": args.gc_freeze,
        }
    else:
        runs = [_in_process(n, args.tool_calls, args.gc_freeze) for n in sizes]
        base = runs[0]
        scaling = {
            str(run["agents"]): {
                key: round(run[key] / base[key], 2)
                for key in ("wall_s", "cpu_s")
                if run.get(key) and base.get(key)
            }
            for run in runs
        }
        out = {
            "benchmark": "fanout",
            "runs": runs,
            "scaling": scaling,
            "exactly_once": all(run.get("exactly_once") is True for run in runs),
            "all_finalized": all(run.get("all_finalized") is True for run in runs),
            "tool_calls_per_agent": args.tool_calls,
            "gc_freeze": args.gc_freeze,
        }
    print(json.dumps({**out, **targets, **environment("bench_fanout.py")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
