"""A swarm of agents against a rate-limited endpoint: the limiter every agent of the host shares.

Real agents (`AgentSession`), real models from the registry and real HTTP to a fake
OpenAI-compatible endpoint on 127.0.0.1 that records when each request arrived.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from corral.agent import AgentSession, RateLimitWaitEvent
from corral.llm import ModelRegistry
from corral.settings import Settings
from tests.llm.fake_server import FakeProviderServer, FakeReply, RecordedRequest

from .helpers import TIMEOUT, Harness

SWARM = 10
RETRY_AFTER_S = 1.0


def _registry(server: FakeProviderServer, **provider: Any) -> ModelRegistry:
    settings = Settings.model_validate(
        {
            "providers": {
                "fake": {
                    "base_url": server.base_url,
                    "api": "openai-chat",
                    "models": [{"id": "m", "context_window": 32768, "max_tokens": 512}],
                    **provider,
                }
            }
        }
    )
    return ModelRegistry(settings, environ={})


def _fast_retry_settings() -> Settings:
    # An agent left to its own schedule would retry after 20-25 ms, well inside the window.
    return Settings.model_validate({"retry": {"base_delay_ms": 20, "max_retries": 3}})


def _swarm(
    harness: Harness, registry: ModelRegistry, count: int
) -> tuple[list[AgentSession], list[list[RateLimitWaitEvent]]]:
    agents: list[AgentSession] = []
    waits: list[list[RateLimitWaitEvent]] = []
    for _ in range(count):
        model = registry.create_model(registry.resolve("fake/m"))
        agent, _rec = harness.agent(model, settings=_fast_retry_settings(), sleep=asyncio.sleep)
        seen: list[RateLimitWaitEvent] = []
        agent.subscribe(
            lambda event, seen=seen: seen.append(event) if isinstance(event, RateLimitWaitEvent) else None
        )
        agents.append(agent)
        waits.append(seen)
    return agents, waits


class _Burst:
    """The endpoint's behaviour: the first `SWARM` requests, held until all have arrived, are refused
    together with `Retry-After`; every later one must arrive after that window and is answered."""

    def __init__(self) -> None:
        self.barrier = threading.Barrier(SWARM, timeout=TIMEOUT)
        self.lock = threading.Lock()
        self.seen = 0
        self.window_end: float | None = None

    def __call__(self, request: RecordedRequest) -> FakeReply:
        with self.lock:
            self.seen += 1
            in_burst = self.seen <= SWARM
        if not in_burst:
            return FakeReply(text="done")
        self.barrier.wait()
        with self.lock:
            # Taken before the 429 is written: a client's window can only end later than this.
            self.window_end = time.monotonic() + RETRY_AFTER_S
        return FakeReply(
            status=429,
            error_message="Rate limit reached for requests",
            headers={"retry-after": f"{RETRY_AFTER_S:g}"},
        )


async def test_a_swarm_hit_by_429_waits_out_retry_after_together_and_all_finish(harness: Harness) -> None:
    with FakeProviderServer() as server:
        burst = _Burst()
        server.responder = burst
        agents, waits = _swarm(harness, _registry(server), SWARM)
        await asyncio.wait_for(
            asyncio.gather(*(a.prompt(f"task {n}") for n, a in enumerate(agents))), 4 * TIMEOUT
        )

        # all finish, none fails
        assert [a.last_assistant_text() for a in agents] == ["done"] * SWARM
        assert all(a.last_reply is not None and a.last_reply.stop_reason == "stop" for a in agents)
        # no request reached the endpoint before the Retry-After window had passed
        assert burst.window_end is not None
        later = server.requests[SWARM:]
        assert later and all(r.at >= burst.window_end for r in later), [
            round(burst.window_end - r.at, 3) for r in later if r.at < burst.window_end
        ]
        # the bound: each agent's refused request and one retry, nothing more
        assert len(server.requests) <= 2 * SWARM
        # every agent was shown waiting for the provider's window, and stopped waiting
        for seen in waits:
            assert any(e.waiting and e.reason == "retry_after" and e.until_ms for e in seen), seen
            assert seen[-1].waiting is False
        assert all(a.rate_limit_wait is None for a in agents)


async def test_max_concurrent_requests_caps_the_whole_swarm(harness: Harness) -> None:
    with FakeProviderServer() as server:
        server.default_reply = FakeReply(text="slow steady reply", chunk_delay=0.05)
        agents, waits = _swarm(harness, _registry(server, max_concurrent_requests=2), 6)
        await asyncio.wait_for(asyncio.gather(*(a.prompt("go") for a in agents)), 4 * TIMEOUT)
        assert [a.last_assistant_text() for a in agents] == ["slow steady reply"] * 6
        assert len(server.requests) == 6
        assert server.peak_in_flight == 2
        assert sum(any(e.reason == "concurrency" for e in seen) for seen in waits) >= 1


async def test_a_400_mentioning_5000_fails_at_once_without_retrying(harness: Harness) -> None:
    with FakeProviderServer() as server:
        server.queue_error(400, "max_tokens is too large: 5000 is more than this model supports (500)")
        [agent], _ = _swarm(harness, _registry(server), 1)
        await asyncio.wait_for(agent.prompt("go"), TIMEOUT)
        assert len(server.requests) == 1  # neither corral nor the SDK retried it
        assert agent.last_reply is not None and agent.last_reply.stop_reason == "error"
        assert (agent.last_reply.error_message or "").startswith("400 ")


async def test_a_503_is_retried_once_by_corral_not_by_the_sdk(harness: Harness) -> None:
    with FakeProviderServer() as server:
        server.queue_error(503, "upstream busy")
        server.queue_text("recovered")
        [agent], _ = _swarm(harness, _registry(server), 1)
        await asyncio.wait_for(agent.prompt("go"), TIMEOUT)
        assert agent.last_assistant_text() == "recovered"
        assert len(server.requests) == 2
        # corral's retry (its failed reply stays in the file), not the SDK's hidden one
        errors = [
            e
            for e in agent.session.entries
            if e.type == "message" and getattr(e.message, "stop_reason", None) == "error"
        ]
        assert len(errors) == 1 and "503" in (errors[0].message.error_message or "")
