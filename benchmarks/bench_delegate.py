"""Managed-agent latency: `delegate` → the child's first model request, and → the result delivered.

A lead and its agents run on a zero-latency scripted model in a temp data
root. Each iteration delegates one `scout` whose reply is one line of text,
and records (a) the time from calling `delegate` until the child's first model
request starts streaming, and (b) the time until the result entry is persisted
in the lead's session (the full round trip: record, start, acknowledge, run,
store the result, deliver). Between iterations the host is left to finish
cleanup. Target: p50 round trip under 20 ms.

Prints one JSON object with p50/p95 (via `summary_ms`) and the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, summary_ms
from _orch import data_root, result_arrivals, result_counts, start_host

SCRIPT = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": {"*": [{"text": "done"}]}}


async def _run(root: Path, iterations: int, warmup: int) -> tuple[list[float], list[float], bool]:
    from corral.agent import MessageStartEvent
    from corral.orchestration.agents import _delegation as _delegate
    from corral.orchestration.surfaces import DelegateParams

    first_request: dict[str, float] = {}
    base = _delegate.ManagedChild

    class Timed(base):  # type: ignore[misc, valid-type]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            run_id = kwargs["generation"].run_id

            def on_event(event: object) -> None:
                if isinstance(event, MessageStartEvent) and getattr(event.message, "role", "") == "assistant":
                    first_request.setdefault(run_id, time.perf_counter())

            self.agent.subscribe(on_event)

    _delegate.ManagedChild = Timed  # type: ignore[misc]
    host, lead, caller = await start_host(root)
    delivered = result_arrivals(lead)
    to_first: list[float] = []
    round_trip: list[float] = []
    try:
        for index in range(warmup + iterations):
            begin = time.perf_counter()
            result = await host.controller.delegate(
                caller, DelegateParams(definition="scout", task=f"t{index}")
            )
            while result.request_id not in delivered:
                await asyncio.sleep(0)
            if index >= warmup:
                to_first.append(first_request[result.run_id] - begin)
                round_trip.append(delivered[result.request_id] - begin)
            await host.wait_until_quiet(caller.session_id)
        counts = result_counts(lead)
        exactly_once = len(counts) == warmup + iterations and all(n == 1 for n in counts.values())
    finally:
        await host.aclose()
        lead.session.close()
        _delegate.ManagedChild = base  # type: ignore[misc]
    return to_first, round_trip, exactly_once


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args(argv)
    gc.collect()
    with data_root(SCRIPT, "corral-bench-delegate-") as root:
        to_first, round_trip, exactly_once = asyncio.run(_run(root, args.iterations, args.warmup))
    print(
        json.dumps(
            {
                "benchmark": "delegate_latency",
                "delegate_to_first_request": summary_ms(to_first),
                "delegate_to_result_delivered": summary_ms(round_trip),
                "exactly_once": exactly_once,
                "target_round_trip_p50_ms": 20.0,
                **environment("bench_delegate.py"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
