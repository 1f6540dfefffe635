"""Tracing on vs off: bench_fanout's workload (100 agents delegated at once, 5 tool calls each).

Rounds alternate off / built-in recorder (what `corral run --trace FILE` uses without the otel extra) /
OpenTelemetry SDK (when `corral[otel]` is installed; spans go to the same file through a span
processor, no exporter), each on a fresh data root; the best wall time of each mode is kept. The
overhead is (best on − best off) / best off, for the wall time and for the process's CPU time (less
sensitive to other load on the machine). Spans written are counted, so a mode that traced nothing
shows. Target: ≤ 5 % wall.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment
from _orch import data_root
from bench_fanout import _run, _script


def _one(mode: str, agents: int, tool_calls: int) -> tuple[float, float, int]:
    from corral import _tracing

    gc.collect()
    with data_root(_script(tool_calls), f"corral-bench-tracing-{mode}-") as root:
        trace = Path(tempfile.mkdtemp(prefix="corral-bench-trace-", dir=root)) / "trace.jsonl"
        if mode == "builtin":
            _tracing.setup(file=trace, environ={})
        elif mode == "otel":
            from opentelemetry.sdk.trace import TracerProvider

            _tracing.setup(file=trace, otel_provider=TracerProvider(), environ={})
        try:
            cpu = time.process_time()
            with _tracing.span("invoke_agent lead", {"corral.agent": "lead"}):
                figures = asyncio.run(_run(root, agents))
            cpu = time.process_time() - cpu
        finally:
            _tracing.shutdown()
        if not (figures["exactly_once"] and figures["all_finalized"]):
            raise SystemExit(f"the {mode} round lost or repeated a result: {figures}")
        spans = len(trace.read_text().splitlines()) if trace.exists() else 0
        return float(figures["wall_s"]), cpu, spans  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--tool-calls", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    modes = ["off", "builtin"]
    try:
        import opentelemetry.sdk.trace  # noqa: F401

        modes.append("otel")
    except ImportError:
        pass
    walls: dict[str, list[float]] = {mode: [] for mode in modes}
    cpus: dict[str, list[float]] = {mode: [] for mode in modes}
    spans: dict[str, int] = {}
    for _ in range(args.rounds):
        for mode in modes:
            wall, cpu, written = _one(mode, args.agents, args.tool_calls)
            walls[mode].append(wall)
            cpus[mode].append(round(cpu, 3))
            spans[mode] = written
    best = {mode: min(values) for mode, values in walls.items()}
    best_cpu = {mode: min(values) for mode, values in cpus.items()}
    overhead = {
        mode: round((best[mode] - best["off"]) / best["off"] * 100, 1) for mode in modes if mode != "off"
    }
    cpu_overhead = {
        mode: round((best_cpu[mode] - best_cpu["off"]) / best_cpu["off"] * 100, 1)
        for mode in modes
        if mode != "off"
    }
    print(
        json.dumps(
            {
                "benchmark": "tracing",
                "agents": args.agents,
                "tool_calls_per_agent": args.tool_calls,
                "rounds": args.rounds,
                "best_wall_s": best,
                "walls_s": walls,
                "spans_written": spans,
                "overhead_pct": overhead,
                "best_cpu_s": best_cpu,
                "cpus_s": cpus,
                "cpu_overhead_pct": cpu_overhead,
                "target_overhead_pct": 5.0,
                **environment("bench_tracing.py"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
