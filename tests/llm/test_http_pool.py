"""Provider models share pooled, kept-alive connections and one SSL context (`_providers/_http.py`)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpcore2
import pytest

from corral.llm import DoneEvent, ErrorEvent, LlmContext, Model, StreamOptions, TextContent, UserMessage
from corral.llm._providers import _http, create_provider_model

from ._provider_contract import make_info, server
from .fake_server import FakeProviderServer, FakeReply

__all__ = ["server"]

AGENTS = 12


def _model(base_url: str) -> Model:
    return create_provider_model(make_info("openai-chat", id="fake-model-1"), api_key="k", base_url=base_url)


async def _ask(model: Model) -> DoneEvent | ErrorEvent:
    context = LlmContext("be brief", [UserMessage(content=[TextContent(text="hi")])])
    last: Any = None
    async for event in model.stream(context, StreamOptions()):
        last = event
    assert isinstance(last, DoneEvent | ErrorEvent)
    return last


def _wait_until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


@pytest.fixture
def ssl_loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts verifying SSL contexts created (each loads the system CA store)."""
    calls: list[int] = []
    real = httpcore2.default_ssl_context

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(httpcore2, "default_ssl_context", counted)
    _http._verifying_context.cache_clear()
    yield calls
    _http._verifying_context.cache_clear()


async def test_agents_share_one_kept_alive_connection(server: FakeProviderServer) -> None:
    server.default_reply = FakeReply(text="ok")
    models = [_model(server.base_url) for _ in range(AGENTS)]
    for model in models:
        for _ in range(2):
            reply = await _ask(model)
            assert isinstance(reply, DoneEvent), reply
    assert len(server.requests) == 2 * AGENTS
    assert server.connections_accepted == 1
    assert _http.pool_count() == 1
    # Headers and chunks go out as separate small writes: with Nagle's algorithm on, each request
    # on the kept-alive connection would wait ~40 ms for the client's delayed ACK.
    assert server.nagle_connections == 0


async def test_concurrent_agents_reuse_the_pool_afterwards(server: FakeProviderServer) -> None:
    server.default_reply = FakeReply(text="ok")
    models = [_model(server.base_url) for _ in range(AGENTS)]
    replies = await asyncio.gather(*(_ask(model) for model in models))
    assert all(isinstance(reply, DoneEvent) for reply in replies)
    opened = server.connections_accepted
    assert 1 <= opened <= AGENTS
    replies = await asyncio.gather(*(_ask(model) for model in models))
    assert all(isinstance(reply, DoneEvent) for reply in replies)
    # The second round runs over the connections kept alive by the first.
    assert server.connections_accepted == opened


def _refused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_no_ssl_context_per_model(server: FakeProviderServer, ssl_loads: list[int]) -> None:
    server.default_reply = FakeReply(text="ok")
    plain = [_model(server.base_url) for _ in range(AGENTS)]
    for model in plain:
        assert isinstance(await _ask(model), DoneEvent)
    assert ssl_loads == [], "a plain-HTTP endpoint loads no CA store"
    # An HTTPS endpoint (nothing listens: the requests fail at connect, after the pool is made).
    secure = [_model(f"https://127.0.0.1:{_refused_port()}/v1") for _ in range(AGENTS)]
    assert ssl_loads == [], "making a model loads no CA store"
    for model in secure:
        reply = await _ask(model)
        assert isinstance(reply, ErrorEvent)
    assert ssl_loads == [1], "one verifying context for the whole process"


def test_pools_close_when_their_loop_ends(server: FakeProviderServer) -> None:
    server.default_reply = FakeReply(text="ok")
    model = _model(server.base_url)
    assert isinstance(asyncio.run(_ask(model)), DoneEvent)
    # The loop closed its pool on the way out: the server sees the connection end.
    _wait_until(lambda: not server._connections)
    # The same model works from a later loop, over a new pool.
    assert isinstance(asyncio.run(_ask(model)), DoneEvent)
    assert server.connections_accepted == 2
    _wait_until(lambda: not server._connections)


async def test_close_http_pools_closes_idle_connections(server: FakeProviderServer) -> None:
    server.default_reply = FakeReply(text="ok")
    assert isinstance(await _ask(_model(server.base_url)), DoneEvent)
    assert _http.pool_count() == 1
    await _http.close_http_pools()
    assert _http.pool_count() == 0
    await asyncio.to_thread(_wait_until, lambda: not server._connections)
    # A later request opens a new pool.
    assert isinstance(await _ask(_model(server.base_url)), DoneEvent)
    assert server.connections_accepted == 2


async def test_close_http_pools_keeps_a_pool_with_a_request_in_flight(server: FakeProviderServer) -> None:
    server.queue(FakeReply(text=["slow", " reply", " here"], chunk_delay=0.2))
    model = _model(server.base_url)
    task = asyncio.ensure_future(_ask(model))
    await asyncio.to_thread(_wait_until, lambda: len(server.requests) == 1)
    await _http.close_http_pools()
    assert _http.pool_count() == 1
    reply = await task
    assert isinstance(reply, DoneEvent), reply
    await _http.close_http_pools()
    assert _http.pool_count() == 0
