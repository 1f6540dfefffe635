"""A `Retry-After` window learnt by the host holds back an agent in a tmux worker process.

A real in-process agent and a real `corral worker` in a private tmux server, both on a provider
model (a fake OpenAI-compatible endpoint on 127.0.0.1) with the same endpoint and key. The host's
agent is refused with `Retry-After`; the worker's limiter reads that window from the store, so the
tmux agent waits (its stored wait says `retry_after`) and its request reaches the endpoint only
after the window.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from corral.agent import AgentSession
from corral.llm import ModelRegistry
from corral.orchestration.ratelimits import stored_waits
from corral.orchestration.surfaces import DelegateParams
from corral.session import SessionManager
from corral.settings import Settings
from tests.llm.fake_server import FakeProviderServer, FakeReply, RecordedRequest
from tests.orchestration._host_helpers import eventually, prepare_env, team, write_script
from tests.runtime._tmux_fixtures import tmux_socket

__all__ = ["tmux_socket"]

RETRY_AFTER_S = 6
"""Long enough that the worker is up and asking well inside the window."""


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

    def respond(request: RecordedRequest) -> FakeReply:
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
            await local.prompt("in-process question")
            assert len(server.requests) == 1 and window_end
            assert "in-process question" in _task_of(server.requests[0])

            started = await t.controller.delegate(
                t.caller, DelegateParams(definition="prober", task="tmux question")
            )
            generation = t.host.kernel.get_generation(started.run_id)
            assert generation is not None and generation.runtime_kind == "tmux"

            # The worker's agent waits out the host's window (its wait is stored by the worker) ...
            def waiting_for_the_window() -> bool:
                wait = stored_waits(t.host.kernel.db, [started.run_id]).get(started.run_id)
                return wait is not None and wait.reason == "retry_after"

            await eventually(waiting_for_the_window, t.host)  # the worker's commit signals the host
            assert len(server.requests) == 1
            # ... and asks only after it.
            await t.quiet()
            tmux_requests = [r for r in server.requests if "tmux question" in _task_of(r)]
            assert tmux_requests, [_task_of(r) for r in server.requests]
            assert all(r.at >= window_end[0] for r in tmux_requests)
