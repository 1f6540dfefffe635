"""Rate limiter figure: what the shared limiter adds to each model request.

Prints one JSON object: the time one request spends in the limiter (`acquire` and its permit's
`done` with a successful response's headers, OpenAI's rate-limit headers included, as the transport
reports them), per request over `--requests` requests (default 20,000), best of `--repeat` rounds
(default 5), for an endpoint with no caps, with all three caps set (none reached), and with 50
agents contending for `max_concurrent_requests = 8` (each request holding its slot for one loop
turn; a plain `asyncio.Semaphore` doing the same is the baseline beside it), and with no caps but
windows shared through a real store (`StoredWindows`, as the host and its tmux workers do: the
stored window is read at most every 100 ms a key; `stored_window_read_us` is one such read, what
the one request that does it pays). Target: ≤ 0.1 ms.
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

import httpx2
from _common import environment

from corral.llm import EndpointKey, HostRateLimiter, RateLimits, install_window_source
from corral.orchestration import Repositories
from corral.orchestration.ratelimits import StoredWindows

_HEADERS = httpx2.Headers(
    {
        "content-type": "application/json",
        "x-ratelimit-limit-requests": "10000",
        "x-ratelimit-remaining-requests": "9999",
        "x-ratelimit-reset-requests": "6ms",
        "x-ratelimit-limit-tokens": "2000000",
        "x-ratelimit-remaining-tokens": "1999000",
        "x-ratelimit-reset-tokens": "30ms",
    }
)
_KEY = EndpointKey.of("https://api.example.com/v1", "sk-bench")


async def _sequential(limits: RateLimits, requests: int) -> float:
    limiter = HostRateLimiter()
    start = time.perf_counter()
    for _ in range(requests):
        permit = await limiter.acquire(_KEY, limits, request_bytes=8000)
        permit.done(200, _HEADERS)
    return time.perf_counter() - start


async def _contended(requests: int, agents: int, cap: int) -> float:
    limiter = HostRateLimiter()
    limits = RateLimits(max_concurrent_requests=cap)
    each = requests // agents

    async def agent() -> None:
        for _ in range(each):
            permit = await limiter.acquire(_KEY, limits, request_bytes=8000)
            await asyncio.sleep(0)
            permit.done(200, _HEADERS)

    start = time.perf_counter()
    await asyncio.gather(*(agent() for _ in range(agents)))
    return time.perf_counter() - start


async def _semaphore(requests: int, agents: int, cap: int) -> float:
    semaphore = asyncio.Semaphore(cap)
    each = requests // agents

    async def agent() -> None:
        for _ in range(each):
            async with semaphore:
                await asyncio.sleep(0)

    start = time.perf_counter()
    await asyncio.gather(*(agent() for _ in range(agents)))
    return time.perf_counter() - start


def _stored_read_us(source: StoredWindows, reads: int) -> float:
    start = time.perf_counter()
    for _ in range(reads):
        source.stored_window(_KEY)
    return round((time.perf_counter() - start) / reads * 1e6, 2)


def _best_us(run: object, repeat: int, requests: int) -> float:
    assert callable(run)
    samples = []
    for _ in range(repeat):
        gc.collect()
        samples.append(asyncio.run(run()))
    return round(min(samples) / requests * 1e6, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n, repeat = args.requests, args.repeat
    capped = RateLimits(max_concurrent_requests=1000, requests_per_minute=10**9, tokens_per_minute=10**12)
    uncapped = _best_us(lambda: _sequential(RateLimits(), n), repeat, n)
    with_caps = _best_us(lambda: _sequential(capped, n), repeat, n)
    contended = _best_us(lambda: _contended(n, 50, 8), repeat, n)
    baseline = _best_us(lambda: _semaphore(n, 50, 8), repeat, n)
    with tempfile.TemporaryDirectory() as tmp:
        store = Repositories.open(Path(tmp) / "corral.db")
        try:
            source = StoredWindows(store.db)
            source.store_window(EndpointKey.of("https://other.example.com", None), time.time() + 600)
            previous = install_window_source(source)
            try:
                shared = _best_us(lambda: _sequential(RateLimits(), n), repeat, n)
            finally:
                install_window_source(previous)
            stored_read = _stored_read_us(source, 2_000)
        finally:
            store.close()
    result = {
        "benchmark": "ratelimit",
        "requests": n,
        "per_request_us": {
            "no_caps": uncapped,
            "all_caps_set": with_caps,
            "contended_50_agents_cap_8": contended,
            "semaphore_baseline_50_agents_cap_8": baseline,
            "no_caps_windows_shared_via_store": shared,
        },
        "stored_window_read_us": stored_read,
        "contended_overhead_us": round(contended - baseline, 2),
        "target_us": 100,
        "within_target": max(uncapped, with_caps, shared, stored_read, contended - baseline) <= 100,
        **environment(__file__),
    }
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
