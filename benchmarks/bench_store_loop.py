"""Store calls on the event loop versus through `asyncio.to_thread`: throughput, latency, loop stalls.

`--agents` coroutines each run one managed agent's store traffic (create, start,
ack, `--activity` activity records, result, delivery, finalize: the calls the
host, the child and delivery make) against one real store, first calling the
store directly on the loop (corral's rule), then awaiting every call through
`asyncio.to_thread` (the alternative). A ticker task measures how late the loop
wakes it (the stall other work sees). Reported per mode: wall time, per-call
latency (p50/p95 of the call as its caller sees it) and the ticker's lag
(p50/p95/max).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, summary_ms

from corral.orchestration import NewGeneration, Repositories

_T = TypeVar("_T")
LEAD = "bench-lead"
TICK_S = 0.001


async def _on_loop(fn: Callable[[], _T]) -> _T:
    return fn()


async def _in_thread(fn: Callable[[], _T]) -> _T:
    return await asyncio.to_thread(fn)


async def _agent(
    store: Repositories,
    index: int,
    call: Callable[[Callable[[], object]], Awaitable[object]],
    activity: int,
    latencies: list[float],
) -> None:
    async def timed(fn: Callable[[], _T]) -> _T:
        begin = time.perf_counter()
        value = await call(fn)
        latencies.append(time.perf_counter() - begin)
        return value  # type: ignore[return-value]

    new = NewGeneration(
        definition="scout",
        owner_session_id=LEAD,
        cwd="/tmp",
        session_id=f"s{index}",
        task="t",
        label=f"a{index}",
    )
    generation, task = await timed(lambda: store.kernel.create_generation(new))
    run_id = generation.run_id
    await timed(lambda: store.kernel.record_started(run_id, pid=1000 + index))
    await timed(lambda: store.kernel.record_ack(run_id, task.request_id, accepted=True))
    for _ in range(activity):
        await timed(lambda: store.kernel.record_activity(run_id, tokens=100))
        await asyncio.sleep(0)
    await timed(
        lambda: store.kernel.store_result(run_id, task.request_id, status="completed", text="done " * 40)
    )
    await timed(
        lambda: store.kernel.mark_delivered(task.request_id, owner_session_id=LEAD, entry_id=f"e{index}")
    )
    await timed(lambda: store.kernel.finalize_generation(run_id, owner_session_id=LEAD))


async def _mode(
    store: Repositories, agents: int, activity: int, call: Callable[[Callable[[], object]], Awaitable[object]]
) -> dict[str, object]:
    lags: list[float] = []
    latencies: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            due = time.perf_counter() + TICK_S
            await asyncio.sleep(TICK_S)
            lags.append(max(0.0, time.perf_counter() - due))

    ticking = asyncio.create_task(ticker())
    begin = time.perf_counter()
    await asyncio.gather(*(_agent(store, i, call, activity, latencies) for i in range(agents)))
    wall = time.perf_counter() - begin
    stop.set()
    await ticking
    return {
        "wall_s": round(wall, 3),
        "calls": len(latencies),
        "call_latency": summary_ms(latencies),
        "loop_lag": {**summary_ms(lags), "max_ms": round(max(lags) * 1000, 3)},
    }


def main(argv: list[str] | None = None) -> int:
    """Run both modes on fresh stores and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--activity", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per mode (best wall kept)")
    args = parser.parse_args(argv)
    results: dict[str, list[dict[str, object]]] = {"on_loop": [], "to_thread": []}
    for _ in range(args.rounds):
        for name, call in (("on_loop", _on_loop), ("to_thread", _in_thread)):
            with (
                tempfile.TemporaryDirectory(prefix="corral-bench-store-loop-") as tmp,
                Repositories.open(Path(tmp) / "corral.db") as store,
            ):
                results[name].append(asyncio.run(_mode(store, args.agents, args.activity, call)))
    best = {name: min(runs, key=lambda r: float(r["wall_s"])) for name, runs in results.items()}  # type: ignore[arg-type]
    print(
        json.dumps(
            {
                "benchmark": "store_loop",
                "agents": args.agents,
                "activity_per_agent": args.activity,
                "rounds": args.rounds,
                **best,
                **environment("bench_store_loop.py"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
