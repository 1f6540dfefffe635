"""Pooled HTTP connections for the provider models: one pool per endpoint per event loop.

Every provider model gets its own `httpx2.AsyncClient` (the SDKs want one), but
that client owns no connections: its transport, `_PooledTransport`, sends each
request through the pool of the running event loop for the request's origin
(scheme, host and port). The pool is an `httpx2.AsyncClient` made on the
loop's first request to that origin, with keep-alive on (pydantic-ai's limits:
1,000 connections, 100 kept idle for 4 s) and the environment's proxies
(`HTTPS_PROXY`, `NO_PROXY`, ...), so a hundred agents talking to one endpoint
share a few warm connections instead of opening one per request, and making a
model costs no TLS set-up at all.

TLS: one verifying SSL context for the whole process (`default_ssl_context`,
the system CA certificates, `SSL_CERT_FILE`/`SSL_CERT_DIR` honoured), loaded on
first use and shared by every pool — loading the CA bundle is what used to
cost each agent 20-25 ms. A plain `http://` origin gets a context with no CA
loaded at all (it is never used for TLS; were it, verification would fail
closed). `warm_ssl_context()` loads the shared one ahead of time (the
background start-up warm-up does).

Pools are tied to their event loop (connections cannot move between loops), so
a model works from successive loops: each gets its own pools. A loop's pools
are closed inside it when it shuts down (`asyncio.run` finalizes async
generators before closing the loop; see `_LoopPools`), so no socket outlives
its loop. `close_http_pools()` closes the running loop's idle pools earlier.

Rate limits: a model's transport also holds its endpoint's `EndpointKey` and `RateLimits`; every
request waits for the process's limiter (`corral.llm._ratelimit`) before it is sent and reports its
status and headers back: at once for a refused request (`429`, `529`, `503`), so the window opens
for every other agent before they send, else when its body is closed (the slot is held while a
reply streams).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING

import httpx2

from corral._version import __version__
from corral.llm._ratelimit import EndpointKey, Permit, RateLimits, current_rate_limiter

if TYPE_CHECKING:
    import ssl

__all__ = ["close_http_pools", "model_http_client", "pool_count", "warm_ssl_context"]

_KEEPALIVE = httpx2.Limits(max_connections=1000, max_keepalive_connections=100, keepalive_expiry=4.0)
"""pydantic-ai's pool limits; idle connections are dropped after 4 s, before the 5 s after which many servers
(uvicorn, Node, llama.cpp's) close them, so a request rarely meets a connection the server is closing."""

_TIMEOUT = httpx2.Timeout(600.0, connect=5.0)
"""5 s to connect, 600 s to read (the OpenAI and Anthropic SDKs' defaults)."""

_USER_AGENT = f"corral/{__version__}"

_lock = threading.Lock()


@functools.cache
def _verifying_context() -> ssl.SSLContext:
    """The process's one verifying SSL context (the system CA store), loaded once."""
    import httpcore2

    return httpcore2.default_ssl_context()


@functools.cache
def _plain_context() -> ssl.SSLContext:
    """The context handed to a plain-HTTP pool: verifying, with no CA loaded (never used for TLS)."""
    import ssl

    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def warm_ssl_context() -> None:
    """Load the shared SSL context now (thread-safe), so the first HTTPS request does not wait for it."""
    with _lock:
        _verifying_context()


class _Pool:
    """One origin's pooled client in one loop, and how many of its responses are still open."""

    def __init__(self, scheme: str) -> None:
        if scheme == "https":
            with _lock:
                context = _verifying_context()
        else:
            context = _plain_context()
        self.client = httpx2.AsyncClient(verify=context, limits=_KEEPALIVE, trust_env=True, timeout=None)
        self.in_flight = 0


class _LoopPools:
    """The pools of one event loop, closed when the loop shuts down.

    A small async generator, started on the loop and kept here, makes the loop's
    `shutdown_asyncgens()` (which `asyncio.run`, `asyncio.Runner` and pytest-asyncio
    all call before closing a loop) close the pools inside that loop.
    """

    def __init__(self) -> None:
        self.by_origin: dict[str, _Pool] = {}
        self.keeper: AsyncGenerator[None, None] | None = None

    async def start(self) -> None:
        self.keeper = self._keep()
        await anext(self.keeper)

    async def _keep(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            await self.close(busy_too=True)

    async def close(self, *, busy_too: bool) -> None:
        for key, pool in list(self.by_origin.items()):
            if busy_too or pool.in_flight == 0:
                del self.by_origin[key]
                await pool.client.aclose()


_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopPools] = weakref.WeakKeyDictionary()


async def _pool_for(url: httpx2.URL) -> _Pool:
    loop = asyncio.get_running_loop()
    pools = _loops.get(loop)
    if pools is None:
        pools = _loops[loop] = _LoopPools()
        await pools.start()
    key = f"{url.scheme}://{url.host}:{url.port}"
    pool = pools.by_origin.get(key)
    if pool is None or pool.client.is_closed:
        pool = pools.by_origin[key] = _Pool(url.scheme)
    return pool


_REFUSED = frozenset({429, 503, 529})
"""Statuses reported to the limiter as soon as the response starts (the window opens for everyone)."""


class _CountedStream(httpx2.AsyncByteStream):
    """A pooled response's body; closing it marks the request finished (and frees its rate-limit slot)."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, pool: _Pool, finish: tuple[Permit, httpx2.Response] | None
    ) -> None:
        self._inner = inner
        self._pool: _Pool | None = pool
        self._finish = finish

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            if self._pool is not None:
                self._pool.in_flight -= 1
                self._pool = None
            if self._finish is not None:
                permit, response = self._finish
                self._finish = None
                permit.done(response.status_code, response.headers)


class _PooledTransport(httpx2.AsyncBaseTransport):
    """A model client's transport: the running loop's pool for the request's origin, behind the
    endpoint's rate limiter when it has one."""

    def __init__(self, limit: tuple[EndpointKey, RateLimits] | None = None) -> None:
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        permit: Permit | None = None
        if self._limit is not None:
            key, limits = self._limit
            size = request.headers.get("content-length")
            permit = await current_rate_limiter().acquire(
                key, limits, request_bytes=int(size) if size and size.isdigit() else 0
            )
        try:
            pool = await _pool_for(request.url)
            pool.in_flight += 1
            try:
                response = await pool.client.send(request, stream=True)
            except BaseException:
                pool.in_flight -= 1
                raise
        except BaseException:
            if permit is not None:
                permit.done(None, None)
            raise
        finish = None
        if permit is not None:
            if response.status_code in _REFUSED:
                permit.done(response.status_code, response.headers)
            else:
                finish = (permit, response)
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        response.stream = _CountedStream(stream, pool, finish)
        return response

    async def aclose(self) -> None:
        """Nothing to close: the pools belong to their loop (`close_http_pools`)."""


def model_http_client(
    headers: Mapping[str, str] | None = None, *, rate_limit: tuple[EndpointKey, RateLimits] | None = None
) -> httpx2.AsyncClient:
    """A provider model's HTTP client over the shared pools.

    Timeouts are the SDKs': 5 s to connect, 600 s per read. With `rate_limit`, every request
    goes through that endpoint's limiter first. `headers` are sent with every request.
    """
    client = httpx2.AsyncClient(
        timeout=_TIMEOUT, transport=_PooledTransport(rate_limit), headers={"User-Agent": _USER_AGENT}
    )
    if headers:
        client.headers.update(headers)
    return client


async def close_http_pools() -> None:
    """Close the running loop's idle pools (their kept-alive connections); busy ones stay for their owner."""
    pools = _loops.get(asyncio.get_running_loop())
    if pools is not None:
        await pools.close(busy_too=False)


def pool_count() -> int:
    """How many pools the running loop holds (for tests and benchmarks)."""
    pools = _loops.get(asyncio.get_running_loop())
    return 0 if pools is None else len(pools.by_origin)
