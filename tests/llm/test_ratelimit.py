"""The shared rate limiter: provider headers, error classification, windows, AIMD and caps.

The limiter is driven directly here (its permits reported as a transport reports them); the
whole path through HTTP and agents is `tests/agent/test_rate_limits.py`.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest

from corral.llm import (
    EndpointKey,
    HostRateLimiter,
    Permit,
    RateLimits,
    RateLimitWait,
    error_status,
    install_window_source,
    is_retryable_error,
    parse_retry_after,
    rate_limit_listener,
)

KEY = EndpointKey.of("http://127.0.0.1:1/v1", "sk-test")
TIMEOUT = 10.0

# --- headers ---------------------------------------------------------------------------


def test_retry_after_ms_wins_over_retry_after() -> None:
    assert parse_retry_after({"Retry-After-Ms": "1500", "retry-after": "9"}) == 1.5


def test_retry_after_in_seconds_and_as_an_http_date() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    now = 1_800_000_000.0
    date = datetime.fromtimestamp(now + 30, UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(30, abs=1)


def test_openai_reset_of_the_exhausted_limit() -> None:
    headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6m0s",
        "x-ratelimit-remaining-tokens": "1000",
        "x-ratelimit-reset-tokens": "20ms",
    }
    assert parse_retry_after(headers) == 360.0
    # none exhausted: the latest reset
    assert (
        parse_retry_after({"x-ratelimit-reset-tokens": "1m2.5s", "x-ratelimit-reset-requests": "20ms"})
        == 62.5
    )


def test_anthropic_reset_timestamps() -> None:
    now = 1_800_000_000.0
    soon = datetime.fromtimestamp(now, UTC) + timedelta(seconds=12)
    later = datetime.fromtimestamp(now, UTC) + timedelta(seconds=40)
    headers = {
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": soon.isoformat().replace("+00:00", "Z"),
        "anthropic-ratelimit-tokens-remaining": "5000",
        "anthropic-ratelimit-tokens-reset": later.isoformat(),
    }
    assert parse_retry_after(headers, now=now) == pytest.approx(12)


def test_headers_naming_no_time() -> None:
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon", "x-ratelimit-reset-requests": "later"}) is None


# --- classification ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "400 Request too large: max 5000 tokens (invalid_request_error)",
        "400 bad input 500 502 503 rate limit overloaded",
        "401 Unauthorized: server error",
        "404 model not found",
        "422 unprocessable: 429",
    ],
)
def test_a_client_error_is_not_retried_whatever_its_text(message: str) -> None:
    assert not is_retryable_error(message)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 529, 408])
def test_transient_statuses_are_retried(status: int) -> None:
    message = f"{status} something went wrong"
    assert error_status(message) == status
    assert is_retryable_error(message)


def test_a_message_without_status_needs_a_standalone_number() -> None:
    assert not is_retryable_error("context has 5000 tokens")
    assert is_retryable_error("upstream answered 503")
    assert is_retryable_error("overloaded_error")


# --- the limiter -------------------------------------------------------------------------


async def _acquire(limiter: HostRateLimiter, limits: RateLimits = RateLimits()) -> Permit:
    return await asyncio.wait_for(limiter.acquire(KEY, limits, request_bytes=400), TIMEOUT)


async def test_no_request_starts_before_retry_after_has_passed() -> None:
    limiter = HostRateLimiter()
    refused = await _acquire(limiter)
    refused.done(429, {"retry-after": "0.4"})
    refused_at = time.monotonic()
    waits: list[RateLimitWait] = []
    with rate_limit_listener(waits.append):
        await _acquire(limiter)
    assert time.monotonic() - refused_at >= 0.4
    assert [w.waiting for w in waits] == [True, False]
    assert waits[0].reason == "retry_after" and waits[0].until is not None


async def test_a_rate_limit_halves_concurrency_once_and_successes_raise_it_again() -> None:
    limiter = HostRateLimiter()
    permits = [await _acquire(limiter) for _ in range(8)]
    for permit in permits:  # the whole burst refused together: one decrease, not eight
        permit.done(429, {"retry-after-ms": "1"})
    endpoint = limiter._endpoints[KEY]
    assert endpoint.cwnd == 4
    await asyncio.wait_for(_until(lambda: limiter.blocked_for(KEY) == 0), TIMEOUT)
    held = [await _acquire(limiter) for _ in range(4)]
    fifth = asyncio.create_task(_acquire(limiter))
    await asyncio.wait_for(_until(lambda: len(endpoint.waiters) == 1), TIMEOUT)
    assert not fifth.done()  # queued: at the lowered limit
    held[0].done(200, {})  # a success frees a slot and raises the limit
    extra = await asyncio.wait_for(fifth, TIMEOUT)
    assert endpoint.cwnd == 5
    for permit in [*held[1:], extra]:
        permit.done(200, {})
    assert endpoint.cwnd == 9


async def test_the_concurrency_cap_is_honoured_first_in_first_out() -> None:
    limiter = HostRateLimiter()
    limits = RateLimits(max_concurrent_requests=2)
    first, second = await _acquire(limiter, limits), await _acquire(limiter, limits)
    order: list[int] = []

    async def queued(n: int) -> Permit:
        permit = await _acquire(limiter, limits)
        order.append(n)
        return permit

    tasks = [asyncio.create_task(queued(n)) for n in range(3)]
    await asyncio.wait_for(_until(lambda: len(limiter._endpoints[KEY].waiters) == 3), TIMEOUT)
    assert order == []
    first.done(200, {})
    await asyncio.wait_for(_until(lambda: order == [0]), TIMEOUT)
    second.done(None, None)  # a failed send frees its slot too
    await asyncio.wait_for(_until(lambda: order == [0, 1]), TIMEOUT)
    assert not tasks[2].done()
    for task in tasks[:2]:
        task.result().done(200, {})
    (await tasks[2]).done(200, {})
    assert order == [0, 1, 2]


async def test_requests_per_minute_cap() -> None:
    limiter = HostRateLimiter()
    limits = RateLimits(requests_per_minute=2)
    await _acquire(limiter, limits)
    await _acquire(limiter, limits)
    waits: list[RateLimitWait] = []
    with rate_limit_listener(waits.append):
        third = asyncio.create_task(_acquire(limiter, limits))
        await asyncio.wait_for(_until(lambda: bool(waits)), TIMEOUT)
    assert waits[0].reason == "requests_per_minute" and waits[0].until is not None
    assert waits[0].until - time.time() > 50
    third.cancel()
    with pytest.raises(asyncio.CancelledError):
        await third
    assert not limiter._endpoints[KEY].waiters  # a cancelled wait leaves the queue


async def test_a_success_that_used_up_the_limit_opens_a_window() -> None:
    limiter = HostRateLimiter()
    permit = await _acquire(limiter)
    permit.done(200, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "30s"})
    assert 30 <= limiter.blocked_for(KEY) <= 33.1


async def test_endpoints_with_other_keys_are_independent() -> None:
    limiter = HostRateLimiter()
    refused = await _acquire(limiter)
    refused.done(529, {"retry-after": "30"})
    other = EndpointKey.of("http://127.0.0.1:1/v1", "sk-other")
    await asyncio.wait_for(limiter.acquire(other, RateLimits(), request_bytes=0), 1.0)
    assert limiter.blocked_for(KEY) > 29


async def _until(predicate: object) -> None:
    assert callable(predicate)
    while not predicate():
        await asyncio.sleep(0.005)


async def test_admission_waits_for_the_window_and_a_free_slot_without_taking_one() -> None:
    limiter = HostRateLimiter()
    limits = RateLimits(max_concurrent_requests=1)
    await asyncio.wait_for(limiter.wait_until_open(KEY), TIMEOUT)  # an endpoint never used is open
    held = await _acquire(limiter, limits)
    admission = asyncio.create_task(limiter.wait_until_open(KEY))
    await asyncio.wait_for(_until(lambda: bool(limiter._endpoints[KEY].watchers)), TIMEOUT)
    assert not admission.done()  # at the concurrency limit
    held.done(429, {"retry-after": "0.3"})
    refused_at = time.monotonic()
    await asyncio.wait_for(admission, TIMEOUT)
    assert time.monotonic() - refused_at >= 0.3  # and then out of the window
    assert limiter._endpoints[KEY].in_flight == 0 and not limiter._endpoints[KEY].watchers


async def test_tokens_per_minute_cap_counts_the_request_size() -> None:
    limiter = HostRateLimiter()
    limits = RateLimits(tokens_per_minute=1000)
    first = await asyncio.wait_for(limiter.acquire(KEY, limits, request_bytes=3200), TIMEOUT)  # ~800 tokens
    first.done(200, {})
    waits: list[RateLimitWait] = []
    with rate_limit_listener(waits.append):
        second = asyncio.create_task(limiter.acquire(KEY, limits, request_bytes=3200))
        await asyncio.wait_for(_until(lambda: bool(waits)), TIMEOUT)
    assert waits[0].reason == "tokens_per_minute" and waits[0].until is not None
    assert 55 < waits[0].until - time.time() <= 60
    second.cancel()
    await asyncio.gather(second, return_exceptions=True)
    small = await asyncio.wait_for(limiter.acquire(KEY, limits, request_bytes=400), TIMEOUT)  # 100 fit
    small.done(200, {})


async def test_a_503_opens_a_window_only_when_it_says_when() -> None:
    limiter = HostRateLimiter()
    busy = await _acquire(limiter)
    busy.done(503, {})
    assert limiter.blocked_for(KEY) == 0
    told = await _acquire(limiter)
    told.done(503, {"Retry-After": "20"})
    assert 20 <= limiter.blocked_for(KEY) <= 22.1


class _SharedWindows:
    """A `WindowSource` two limiters share, as the host and a tmux worker share the store."""

    def __init__(self) -> None:
        self.windows: dict[EndpointKey, float] = {}

    def stored_window(self, key: EndpointKey) -> float | None:
        return self.windows.get(key)

    def store_window(self, key: EndpointKey, until: float) -> None:
        self.windows[key] = max(until, self.windows.get(key, 0.0))


async def test_a_window_learnt_by_one_limiter_holds_back_another_through_the_window_source() -> None:
    source = _SharedWindows()
    previous = install_window_source(source)
    try:
        host, worker = HostRateLimiter(), HostRateLimiter()
        refused = await _acquire(host)
        refused.done(429, {"retry-after": "0.4"})
        assert KEY in source.windows and source.windows[KEY] >= time.time() + 0.3
        assert worker.blocked_for(KEY) == 0.0  # the worker has learnt no window itself
        waits: list[RateLimitWait] = []
        with rate_limit_listener(waits.append):
            await _acquire(worker)
        assert time.time() >= source.windows[KEY]
        assert waits and waits[0].reason == "retry_after" and waits[0].until == source.windows[KEY]
    finally:
        install_window_source(previous)
