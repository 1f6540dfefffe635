"""A `Retry-After` window learnt by the host holds back an agent in a tmux worker process.

A real in-process agent and a real `corral worker` in a private tmux server, both on a provider
model (a fake OpenAI-compatible endpoint on 127.0.0.1) with the same endpoint and key. The host's
agent is refused with `Retry-After`; the worker's limiter reads that window from the store, so the
tmux agent waits (its stored wait says `retry_after`) and its request reaches the endpoint only
after the window.

The window opens only once the worker is up: the endpoint holds the worker's first request until
the host's agent has been refused, then answers it with a tool call, so the worker's next request
is the one the window holds back. A loaded machine that starts the worker slowly cannot close the
window before the worker asks.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from corral.agent import AgentSession
from corral.llm import ModelRegistry
from corral.llm._ratelimit import _SHARED_READ_EVERY_S
from corral.orchestration.ratelimits import stored_waits
from corral.orchestration.surfaces import DelegateParams
from corral.session import SessionManager
from corral.settings import Settings
from tests._waits import eventually
from tests.llm.fake_server import FakeProviderServer, FakeReply, FakeToolCall, RecordedRequest
from tests.orchestration._host_helpers import STARTUP_WAIT, WAIT, prepare_env, team, write_script
from tests.runtime._tmux_fixtures import tmux_socket

__all__ = ["tmux_socket"]

RETRY_AFTER_S = 6
"""The worker already runs and only has to finish an `ls` to ask again: well inside the window."""


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    prepare_env(tmp_path, monkeypatch)
    return tmp_path


def _task_of(request: RecordedRequest) -> str:
    return str(request.body)


async def test_a_window_learnt_in_the_host_holds_back_a_tmux_agent(env: Path, tmux_socket: Path) -> None:
    write_script(env, "team", {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"})
    agents = env / "config" / "agents"
    agents.mkdir(parents=True)
    (agents / "prober.md").write_text(
        "---\nname: prober\ndescription: Asks the fake endpoint.\nmodel: fake/m\ntools: [ls]\n---\nAnswer.\n",
        encoding="utf-8",
    )
    lock = threading.Lock()
    window_end: list[float] = []
    worker_asked = threading.Event()
    window_learnt = threading.Event()

    def respond(request: RecordedRequest) -> FakeReply:
        if "tmux question" in _task_of(request) and not worker_asked.is_set():
            # The worker is up: hold its first request until the host has learnt the window.
            worker_asked.set()
            if not window_learnt.wait(WAIT):
                return FakeReply(status=500, error_message="the host never learnt the window")
            # The worker's limiter read the store before this request and trusts that read for
            # `_SHARED_READ_EVERY_S`: held at least that long, its next request reads the store again.
            stale_until = request.at + _SHARED_READ_EVERY_S
            threading.Event().wait(max(0.0, stale_until - time.monotonic()))
            return FakeReply(tool_calls=[FakeToolCall("ls", {"path": "."})])
        with lock:
            if not window_end:
                # Taken before the 429 is written: a client's window can only end later than this.
                window_end.append(time.monotonic() + RETRY_AFTER_S)
                return FakeReply(
                    status=429, error_message="slow down", headers={"retry-after": str(RETRY_AFTER_S)}
                )
        return FakeReply(text="probed")

    with FakeProviderServer() as server:
        server.responder = respond
        settings = Settings.model_validate(
            {
                "runtime": "tmux",
                "providers": {
                    "fake": {
                        "base_url": server.base_url,
                        "api": "openai-chat",
                        "models": [{"id": "m", "context_window": 32768, "max_tokens": 512}],
                    }
                },
                "retry": {"max_retries": 0},
            }
        )
        registry = ModelRegistry(settings, environ={}, cwd=env / "work")
        async with team(env, "team", settings=settings, tmux_socket=tmux_socket, registry=registry) as t:
            # The host's own agent: refused with Retry-After (no retries: it ends with the error).
            local = AgentSession(
                session=SessionManager.create(env / "work", sessions_root=env / "sessions"),
                model=registry.create_model(registry.resolve("fake/m"), cwd=env / "work"),
                thinking_level="off",
                tools=[],
                cwd=env / "work",
                settings=settings,
            )
            started = await t.controller.delegate(
                t.caller, DelegateParams(definition="prober", task="tmux question")
            )
            generation = t.host.kernel.get_generation(started.run_id)
            assert generation is not None and generation.runtime_kind == "tmux"
            await eventually(worker_asked.is_set, timeout=STARTUP_WAIT)  # the worker's start-up
            try:
                await local.prompt("in-process question")
            finally:
                window_learnt.set()
            assert len(server.requests) == 2 and window_end
            assert "in-process question" in _task_of(server.requests[1])

            # The worker's agent waits out the host's window (its wait is stored by the worker) ...
            def waiting_for_the_window() -> bool:
                wait = stored_waits(t.host.kernel.db, [started.run_id]).get(started.run_id)
                return wait is not None and wait.reason == "retry_after"

            await eventually(waiting_for_the_window, t.host)  # the worker's commit signals the host
            assert len(server.requests) == 2
            # ... and asks again only after it.
            await t.quiet()
            tmux_requests = [r for r in server.requests if "tmux question" in _task_of(r)][1:]
            assert tmux_requests, [_task_of(r) for r in server.requests]
            assert all(r.at >= window_end[0] for r in tmux_requests)
