"""Capacity controller figure: a burst of spawns admitted through `maxConcurrent`.

Prints one JSON object: the time to admit, hold for one loop turn and release
a burst of `--burst` agents (default 200) against `--limit` slots (default 8),
through `CapacityController` and, as the baseline, through a plain
`asyncio.Semaphore` doing the same work without names, positions, quarantine
or the failure index; each as mean ± stdev and p50/p95 over `--repeat` runs
(default 20), plus the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any

from _common import environment, summary_ms

from corral.orchestration.teams._capacity import CapacityController


async def _burst_controller(burst: int, limit: int) -> None:
    controller = CapacityController({"read": limit})

    async def agent(name: str) -> None:
        admission = await controller.admit(name, "read")
        await asyncio.sleep(0)
        controller.release(admission)

    await asyncio.gather(*(agent(f"agent-{i}") for i in range(burst)))


async def _burst_semaphore(burst: int, limit: int) -> None:
    semaphore = asyncio.Semaphore(limit)

    async def agent() -> None:
        async with semaphore:
            await asyncio.sleep(0)

    await asyncio.gather(*(agent() for _ in range(burst)))


def _time(
    run: Callable[[int, int], Coroutine[Any, Any, None]], burst: int, limit: int, repeat: int
) -> list[float]:
    samples = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        asyncio.run(run(burst, limit))
        samples.append(time.perf_counter() - start)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=200, help="agents per burst (default 200)")
    parser.add_argument("--limit", type=int, default=8, help="maxConcurrent (default 8)")
    parser.add_argument("--repeat", type=int, default=20, help="bursts timed per variant (default 20)")
    args = parser.parse_args()
    result = {
        "burst": args.burst,
        "limit": args.limit,
        "capacity_controller": summary_ms(_time(_burst_controller, args.burst, args.limit, args.repeat)),
        "baseline_semaphore": summary_ms(_time(_burst_semaphore, args.burst, args.limit, args.repeat)),
        "environment": environment("benchmarks/bench_capacity.py"),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
