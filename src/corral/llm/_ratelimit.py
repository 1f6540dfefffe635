"""Rate limits shared by every agent of a host: one limiter per provider endpoint and API key.

Every HTTP request to a model provider goes through `RateLimiter.acquire` before it is sent
(`_providers/_http.py`, the one place requests leave the process) and reports how it ended through
the `Permit` it got. The limiter of one endpoint (its base URL and a hash of the key: two agents
with the same key on the same endpoint share one) enforces:

* the configured caps (`[providers.<name>]` `max_concurrent_requests`, `requests_per_minute`,
  `tokens_per_minute`; tokens are estimated from the request's size, 4 bytes a token);
* a *window*: after a `429` or `529` (or a `503` that says when to come back) no request of any
  agent starts before the provider's `Retry-After` (`retry-after-ms`, `retry-after`, OpenAI's
  `x-ratelimit-reset-*`, Anthropic's `anthropic-ratelimit-*-reset`; 1 s, doubling to 60 s, when it
  names none), plus 0-10 % jitter so the queue does not start as one burst. A successful response
  whose `x-ratelimit-remaining-*` / `anthropic-ratelimit-*-remaining` says nothing is left opens
  the same window up to its reset, before the provider has to refuse anything;
* adaptive concurrency (AIMD): a rate-limited answer halves the number of requests allowed in
  flight (once per window, not once per refused request), each success raises it by one again, up
  to `max_concurrent_requests` (or without limit when none is set, once it has grown past 64).

Waiting requests are served first in, first out. A request that has to wait tells the listener of
its context (`rate_limit_listener`, set by the agent loop around a model request) when it starts and
stops waiting, so the agent can show `waiting (rate limit, Ns)`.

`RateLimiter` is the protocol the model layer calls; `HostRateLimiter` is the in-process
implementation. `current_rate_limiter()` is the process's limiter; a process that is not the host
(a Ray worker) installs one that asks the host's (`install_rate_limiter`). Processes that share a
store (the host and its tmux workers) share windows through a `WindowSource` the orchestration
installs (`install_window_source`): a window this process learns is written to it, and before a
request starts the limiter reads the window stored for its endpoint (at most every 100 ms a key).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Literal, Protocol

__all__ = [
    "EndpointKey",
    "HostRateLimiter",
    "Permit",
    "RateLimitWait",
    "RateLimiter",
    "RateLimits",
    "WindowSource",
    "current_rate_limiter",
    "install_rate_limiter",
    "install_window_source",
    "parse_retry_after",
    "rate_limit_listener",
]

RATE_LIMITED_STATUSES = frozenset({429, 529})
"""Statuses that mean "too many requests": they open a window and lower concurrency."""

PUBLIC_ENDPOINTS = {
    "openai-responses": "https://api.openai.com/v1",
    "openai-chat": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
"""The SDKs' endpoints when no base URL is configured (part of the limiter's key)."""

_DEFAULT_WINDOW_S = 1.0
_MAX_WINDOW_S = 60.0
_WINDOW_JITTER = 0.10
_UNBOUNDED_AGAIN = 64
"""Without a configured cap, adaptive concurrency is lifted again once it has grown past this."""
_BYTES_PER_TOKEN = 4
_SHARED_READ_EVERY_S = 0.1
"""How long a window read from the `WindowSource` is trusted before it is read again (per key)."""


@dataclass(frozen=True, slots=True)
class RateLimits:
    """The configured caps of one endpoint (`None`: no cap)."""

    max_concurrent_requests: int | None = None
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None


@dataclass(frozen=True, slots=True)
class EndpointKey:
    """Which limiter a request goes through: the endpoint and the key's fingerprint."""

    endpoint: str
    """The base URL (`https://api.openai.com/v1`), as requests are sent to it."""
    key_id: str
    """A short SHA-256 fingerprint of the API key (never the key), `""` without one."""

    @classmethod
    def of(cls, endpoint: str, api_key: str | None) -> EndpointKey:
        key_id = hashlib.sha256(api_key.encode()).hexdigest()[:12] if api_key else ""
        return cls(endpoint.rstrip("/"), key_id)


WaitReason = Literal["retry_after", "concurrency", "requests_per_minute", "tokens_per_minute"]


@dataclass(frozen=True, slots=True)
class RateLimitWait:
    """A request waiting for its endpoint's limiter (`waiting` false: it stopped waiting)."""

    waiting: bool
    endpoint: str
    reason: WaitReason | None = None
    until: float | None = None
    """When the wait is expected to end (Unix seconds), when known (a window or a per-minute cap)."""


RateLimitListener = Callable[[RateLimitWait], None]

_listener: ContextVar[RateLimitListener | None] = ContextVar("corral_rate_limit_listener", default=None)


@contextlib.contextmanager
def rate_limit_listener(listener: RateLimitListener | None) -> Iterator[None]:
    """Route the rate-limit waits of requests made in this context to `listener`."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


class Permit(Protocol):
    """One admitted request; `done` exactly once when its response ended (or it failed to send)."""

    def done(self, status: int | None, headers: Mapping[str, str] | None) -> None: ...


class RateLimiter(Protocol):
    """What the model layer calls before every provider request."""

    async def acquire(self, key: EndpointKey, limits: RateLimits, *, request_bytes: int) -> Permit:
        """Wait until the endpoint admits one more request (cancellable), then hold its slot."""
        ...

    def blocked_for(self, key: EndpointKey) -> float:
        """Seconds until the endpoint would admit a request (0 when it would now)."""
        ...

    def windows(self) -> list[tuple[EndpointKey, float]]:
        """The endpoints in a `Retry-After` window now, with its end (Unix seconds)."""
        ...

    def open_window_until(self, key: EndpointKey, until: float) -> None:
        """Keep `key`'s endpoint closed until `until` (Unix seconds): a window another process learnt."""
        ...

    async def wait_until_open(self, key: EndpointKey) -> None:
        """Return once the endpoint is out of its window, below its concurrency limit and has no
        queue (at once when it is); for admission of new agents, which takes no slot."""
        ...


class WindowSource(Protocol):
    """Where processes sharing a store share `Retry-After` windows (installed by the orchestration).

    Both methods must be cheap and must not raise: a source that cannot read or write answers
    `None` / does nothing (the limiter then holds only the windows this process knows).
    """

    def stored_window(self, key: EndpointKey) -> float | None:
        """The end (Unix seconds) of the window stored for `key` by any process, `None` without one."""
        ...

    def store_window(self, key: EndpointKey, until: float) -> None:
        """Share that `key`'s endpoint is closed until `until` (Unix seconds; a stored window only grows)."""
        ...


_window_source: WindowSource | None = None


def install_window_source(source: WindowSource | None) -> WindowSource | None:
    """Make `source` where this process's limiter shares its windows; returns the previous one."""
    global _window_source
    previous, _window_source = _window_source, source
    return previous


# --- header parsing -------------------------------------------------------------


def _duration(text: str) -> float | None:
    """OpenAI's reset durations: `1s`, `6m0s`, `20ms`, `1h2m3.5s`, or plain seconds."""
    text = text.strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    total = 0.0
    number = ""
    i = 0
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    matched = False
    while i < len(text):
        ch = text[i]
        if ch.isdigit() or ch == ".":
            number += ch
            i += 1
            continue
        unit = "ms" if text.startswith("ms", i) else ch
        if unit not in units or not number:
            return None
        try:
            total += float(number) * units[unit]
        except ValueError:
            return None
        matched = True
        number = ""
        i += len(unit)
    if number or not matched:
        return None
    return total


def _timestamp_in(text: str, now: float) -> float | None:
    """Seconds from `now` to an RFC 3339 timestamp (Anthropic's resets) or an HTTP date."""
    from datetime import datetime

    text = text.strip()
    when: float | None = None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        try:
            when = parsedate_to_datetime(text).timestamp()
        except (TypeError, ValueError, IndexError):
            return None
    return max(0.0, when - now)


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the provider asks to wait, from its headers; `None` when they name no time.

    Tried in order: `retry-after-ms`; `retry-after` (seconds or an HTTP date); then the latest of the
    exhausted limits' resets (`x-ratelimit-reset-requests`/`-tokens` whose `x-ratelimit-remaining-*`
    is `0`, Anthropic's `anthropic-ratelimit-<limit>-reset` likewise), or of all resets when none says
    which one ran out. `headers` keys are matched case-insensitively.
    """
    now = time.time() if now is None else now
    lower = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lower:
        try:
            return max(0.0, float(lower["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    if "retry-after" in lower:
        value = lower["retry-after"].strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            parsed = _timestamp_in(value, now)
            if parsed is not None:
                return parsed
    resets = _resets(lower, now)
    exhausted = [seconds for seconds, empty in resets if empty]
    chosen = exhausted or [seconds for seconds, _ in resets]
    return max(chosen) if chosen else None


def exhausted_reset(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds until a limit that a (successful) response says is used up resets, else `None`."""
    now = time.time() if now is None else now
    lower = {k.lower(): v for k, v in headers.items()}
    exhausted = [seconds for seconds, empty in _resets(lower, now) if empty]
    return max(exhausted) if exhausted else None


def _resets(lower: Mapping[str, str], now: float) -> list[tuple[float, bool]]:
    """(seconds to reset, whether that limit's remaining count is 0) for each reset header."""
    found: list[tuple[float, bool]] = []
    for name, value in lower.items():
        if name.startswith("x-ratelimit-reset-"):
            seconds = _duration(value)
            remaining = lower.get("x-ratelimit-remaining-" + name.removeprefix("x-ratelimit-reset-"))
        elif name.startswith("anthropic-ratelimit-") and name.endswith("-reset"):
            seconds = _timestamp_in(value, now)
            remaining = lower.get(name.removesuffix("-reset") + "-remaining")
        else:
            continue
        if seconds is not None:
            found.append((seconds, remaining is not None and remaining.strip() == "0"))
    return found


def _names_retry_after(headers: Mapping[str, str]) -> bool:
    return any(name.lower() in ("retry-after", "retry-after-ms") for name in headers)


# --- the in-host limiter ------------------------------------------------------------


class _Waiter:
    __slots__ = ("future", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[None] = loop.create_future()

    def wake(self) -> None:
        def _set() -> None:
            if not self.future.done():
                self.future.set_result(None)

        if self.loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            _set()
        else:
            self.loop.call_soon_threadsafe(_set)


class _Endpoint:
    """One endpoint's state. Every method runs under the limiter's lock."""

    def __init__(self, key: EndpointKey, limits: RateLimits) -> None:
        self.key = key
        self.limits = limits
        self.in_flight = 0
        self.cwnd: float = math.inf
        self.window_until = 0.0
        """Monotonic time before which no request starts."""
        self.window_wall = 0.0
        """The same moment in Unix time (for the waiting agents' display)."""
        self.last_decrease = -math.inf
        self.strikes = 0
        """Rate-limited answers in a row without a Retry-After (their default window doubles)."""
        self.starts: deque[float] = deque()
        self.tokens: deque[tuple[float, int]] = deque()
        self.token_sum = 0
        self.waiters: deque[_Waiter] = deque()
        self.watchers: list[_Waiter] = []
        """`wait_until_open` callers, woken whenever a request finishes or starts."""
        self.configure(limits)

    def configure(self, limits: RateLimits) -> None:
        self.limits = limits
        cap = limits.max_concurrent_requests
        self.cwnd = float(cap) if cap is not None and self.cwnd > cap else self.cwnd

    def ceiling(self) -> float:
        cap = self.limits.max_concurrent_requests
        return math.inf if cap is None else float(cap)

    def _prune(self, now: float) -> None:
        while self.starts and self.starts[0] <= now - 60:
            self.starts.popleft()
        while self.tokens and self.tokens[0][0] <= now - 60:
            self.token_sum -= self.tokens.popleft()[1]

    def blocked(self, now: float, tokens: int) -> tuple[WaitReason, float | None] | None:
        """Why a request cannot start now, and in how many seconds it may (`None`: on a release)."""
        if now < self.window_until:
            return "retry_after", self.window_until - now
        if self.in_flight >= max(1.0, min(self.cwnd, self.ceiling())):
            return "concurrency", None
        rpm = self.limits.requests_per_minute
        tpm = self.limits.tokens_per_minute
        if rpm is not None or tpm is not None:
            self._prune(now)
            if rpm is not None and len(self.starts) >= rpm:
                return "requests_per_minute", self.starts[len(self.starts) - rpm] + 60 - now
            if tpm is not None and self.tokens and self.token_sum + min(tokens, tpm) > tpm:
                # Wait until enough of the minute's tokens have aged out (a request bigger than
                # the whole budget waits for an empty minute rather than forever).
                need = self.token_sum + min(tokens, tpm) - tpm
                freed = 0
                for at, count in self.tokens:
                    freed += count
                    if freed >= need:
                        return "tokens_per_minute", at + 60 - now
        return None

    def start(self, now: float, tokens: int) -> None:
        self.in_flight += 1
        if self.limits.requests_per_minute is not None:
            self.starts.append(now)
        if self.limits.tokens_per_minute is not None:
            self.tokens.append((now, tokens))
            self.token_sum += tokens

    def open_window(self, now: float, seconds: float) -> None:
        seconds = min(seconds, _MAX_WINDOW_S) * (1 + random.uniform(0, _WINDOW_JITTER))
        if now + seconds > self.window_until:
            self.window_until = now + seconds
            self.window_wall = time.time() + seconds

    def rate_limited(self, now: float, started: float, retry_after: float | None) -> None:
        if retry_after is None:
            self.strikes += 1
            retry_after = min(_DEFAULT_WINDOW_S * 2 ** (self.strikes - 1), _MAX_WINDOW_S)
        else:
            self.strikes = 0
        self.open_window(now, retry_after)
        if started > self.last_decrease:
            # Once per window: the requests already in flight when it opened were refused together.
            current = min(self.cwnd, float(self.in_flight + 1))
            self.cwnd = max(1.0, math.floor(current / 2))
            self.last_decrease = now

    def succeeded(self) -> None:
        self.strikes = 0
        if self.cwnd < self.ceiling():
            self.cwnd += 1
            if self.cwnd >= self.ceiling() or (self.ceiling() == math.inf and self.cwnd > _UNBOUNDED_AGAIN):
                self.cwnd = self.ceiling()

    def wake_head(self) -> None:
        if self.waiters:
            self.waiters[0].wake()
        for watcher in self.watchers:
            watcher.wake()

    def open_now(self, now: float) -> tuple[bool, float | None]:
        """Whether a new agent may start on this endpoint now; else the seconds until it may look again
        (`None`: when a request finishes)."""
        blocked = self.blocked(now, 0)
        if blocked is not None:
            return False, blocked[1]
        return (not self.waiters), None


class _HostPermit:
    __slots__ = ("_endpoint", "_limiter", "_started")

    def __init__(self, limiter: HostRateLimiter, endpoint: _Endpoint, started: float) -> None:
        self._limiter = limiter
        self._endpoint: _Endpoint | None = endpoint
        self._started = started

    def done(self, status: int | None, headers: Mapping[str, str] | None) -> None:
        endpoint, self._endpoint = self._endpoint, None
        if endpoint is None:
            return
        self._limiter._finish(endpoint, self._started, status, headers)


class HostRateLimiter:
    """The in-process limiter: one `_Endpoint` per `EndpointKey`, shared by every loop and thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._endpoints: dict[EndpointKey, _Endpoint] = {}
        self._shared_read: dict[EndpointKey, float] = {}
        """When (monotonic) each key's stored window was last read from the `WindowSource`."""

    def _read_shared(self, key: EndpointKey) -> None:
        """Hold `key` closed for the window another process stored (read at most every 100 ms)."""
        source = _window_source
        if source is None:
            return
        now = time.monotonic()
        if now - self._shared_read.get(key, -math.inf) < _SHARED_READ_EVERY_S:
            return
        self._shared_read[key] = now
        until = source.stored_window(key)
        if until is not None:
            self._hold_until(key, until)

    def _share(self, key: EndpointKey, until: float) -> None:
        """Write a window this process learnt to the `WindowSource` (outside the lock)."""
        source = _window_source
        if source is not None:
            source.store_window(key, until)

    def _endpoint(self, key: EndpointKey, limits: RateLimits) -> _Endpoint:
        endpoint = self._endpoints.get(key)
        if endpoint is None:
            endpoint = self._endpoints[key] = _Endpoint(key, limits)
        elif endpoint.limits != limits:
            endpoint.configure(limits)
        return endpoint

    def blocked_for(self, key: EndpointKey) -> float:
        with self._lock:
            endpoint = self._endpoints.get(key)
            if endpoint is None:
                return 0.0
            now = time.monotonic()
            if now < endpoint.window_until:
                return endpoint.window_until - now
            return 0.0

    def windows(self) -> list[tuple[EndpointKey, float]]:
        """The endpoints in a `Retry-After` window now, with its end (Unix seconds)."""
        with self._lock:
            now = time.monotonic()
            return [(key, e.window_wall) for key, e in self._endpoints.items() if e.window_until > now]

    def open_window_until(self, key: EndpointKey, until: float) -> None:
        """Keep `key`'s endpoint closed until `until` (Unix seconds; a window only grows), and share it."""
        if self._hold_until(key, until):
            self._share(key, until)

    def _hold_until(self, key: EndpointKey, until: float) -> bool:
        """Keep `key`'s endpoint closed until `until`; whether that grew its window."""
        with self._lock:
            endpoint = self._endpoint(
                key, self._endpoints[key].limits if key in self._endpoints else RateLimits()
            )
            seconds = min(until - time.time(), _MAX_WINDOW_S)
            now = time.monotonic()
            if seconds > 0 and now + seconds > endpoint.window_until:
                endpoint.window_until = now + seconds
                endpoint.window_wall = until
                endpoint.wake_head()
                return True
            return False

    def saturated(self, key: EndpointKey) -> bool:
        """Whether the endpoint is in a window or at its concurrency limit (capacity admission asks)."""
        with self._lock:
            endpoint = self._endpoints.get(key)
            if endpoint is None:
                return False
            return endpoint.blocked(time.monotonic(), 0) is not None or bool(endpoint.waiters)

    async def wait_until_open(self, key: EndpointKey) -> None:
        waiter: _Waiter | None = None
        endpoint: _Endpoint | None = None
        try:
            while True:
                self._read_shared(key)
                with self._lock:
                    endpoint = self._endpoints.get(key)
                    if endpoint is None:
                        return
                    is_open, delay = endpoint.open_now(time.monotonic())
                    if is_open:
                        return
                    if waiter is None:
                        waiter = _Waiter(asyncio.get_running_loop())
                        endpoint.watchers.append(waiter)
                    elif waiter.future.done():
                        waiter.future = waiter.loop.create_future()
                await asyncio.wait((waiter.future,), timeout=delay)
        finally:
            if waiter is not None and endpoint is not None:
                with self._lock, contextlib.suppress(ValueError):
                    endpoint.watchers.remove(waiter)

    async def acquire(self, key: EndpointKey, limits: RateLimits, *, request_bytes: int) -> Permit:
        tokens = request_bytes // _BYTES_PER_TOKEN
        self._read_shared(key)
        with self._lock:
            endpoint = self._endpoint(key, limits)
            now = time.monotonic()
            if not endpoint.waiters and endpoint.blocked(now, tokens) is None:
                endpoint.start(now, tokens)
                return _HostPermit(self, endpoint, now)
            waiter = _Waiter(asyncio.get_running_loop())
            endpoint.waiters.append(waiter)
        return await self._wait(key, endpoint, waiter, tokens)

    async def _wait(self, key: EndpointKey, endpoint: _Endpoint, waiter: _Waiter, tokens: int) -> Permit:
        listener = _listener.get()
        shown: tuple[WaitReason, float | None] | None = None
        try:
            while True:
                self._read_shared(key)
                with self._lock:
                    now = time.monotonic()
                    blocked = endpoint.blocked(now, tokens)
                    if blocked is None and endpoint.waiters[0] is waiter:
                        endpoint.waiters.popleft()
                        endpoint.start(now, tokens)
                        endpoint.wake_head()
                        return _HostPermit(self, endpoint, now)
                    if waiter.future.done():
                        waiter.future = waiter.loop.create_future()
                    head = endpoint.waiters[0] is waiter
                    reason, delay = blocked if blocked is not None else ("concurrency", None)
                    until = None
                    if reason == "retry_after":
                        until = endpoint.window_wall
                    elif delay is not None:
                        until = time.time() + delay
                if listener is not None and (shown is None or shown[0] != reason or shown[1] != until):
                    shown = (reason, until)
                    listener(RateLimitWait(True, key.endpoint, reason, until))
                # A window or per-minute wait ends by the clock (only the head watches it; it wakes
                # the next one when it goes); a concurrency wait ends on a release.
                if head and delay is not None:
                    await asyncio.wait((waiter.future,), timeout=delay)
                else:
                    await waiter.future
        finally:
            with self._lock:
                if waiter in endpoint.waiters:
                    was_head = endpoint.waiters[0] is waiter
                    endpoint.waiters.remove(waiter)
                    if was_head:
                        endpoint.wake_head()
            if listener is not None and shown is not None:
                listener(RateLimitWait(False, key.endpoint))

    def _finish(
        self, endpoint: _Endpoint, started: float, status: int | None, headers: Mapping[str, str] | None
    ) -> None:
        with self._lock:
            endpoint.in_flight -= 1
            now = time.monotonic()
            before = endpoint.window_until
            if status is not None and headers is not None:
                if status in RATE_LIMITED_STATUSES or (status == 503 and _names_retry_after(headers)):
                    endpoint.rate_limited(now, started, parse_retry_after(headers))
                elif 200 <= status < 300:
                    endpoint.succeeded()
                    reset = exhausted_reset(headers)
                    if reset is not None:
                        endpoint.open_window(now, reset)
            endpoint.wake_head()
            learnt = endpoint.window_wall if endpoint.window_until > before else None
        if learnt is not None:
            self._share(endpoint.key, learnt)

    def reset(self) -> None:
        """Forget every endpoint's state (tests)."""
        with self._lock:
            self._endpoints.clear()
            self._shared_read.clear()


_limiter: RateLimiter = HostRateLimiter()


def current_rate_limiter() -> RateLimiter:
    """The limiter every provider request of this process goes through."""
    return _limiter


def install_rate_limiter(limiter: RateLimiter) -> RateLimiter:
    """Make `limiter` the process's (a worker's limiter that asks the host's); returns the previous one."""
    global _limiter
    previous, _limiter = _limiter, limiter
    return previous
