"""Capacity admission and the shared rate limiter: a queued spawn does not start into a closed endpoint.

Teams agents on a real provider model (a fake OpenAI-compatible endpoint on 127.0.0.1), one read
slot: the running agent's request is refused with `Retry-After` and, without retries, the agent
ends at once, freeing its slot while the endpoint's window is still open. The queued agent is
admitted to the slot but starts (its generation is created) only after the window.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from corral.llm import ModelRegistry
from corral.orchestration.surfaces.teams import parse_spawn
from corral.settings import Settings
from tests._waits import eventually
from tests.llm.fake_server import FakeProviderServer, FakeReply, RecordedRequest
from tests.orchestration.teams._teams_helpers import teams_env, write_script

pytestmark = pytest.mark.usefixtures("env")

RETRY_AFTER_S = 2.0


async def test_a_queued_spawn_waits_for_the_endpoints_window(tmp_path: Path) -> None:
    write_script(tmp_path, "lead", {"steps": [{"text": "x"}], "on_exhausted": "repeat_last"})
    lock = threading.Lock()
    window_end: list[float] = []

    def respond(request: RecordedRequest) -> FakeReply:
        with lock:
            if not window_end:
                window_end.append(time.time() + RETRY_AFTER_S)  # wall clock, as generations record it
                return FakeReply(status=429, error_message="slow down", headers={"retry-after": "2"})
        return FakeReply(text="all done")

    with FakeProviderServer() as server:
        server.responder = respond
        provider = {
            "base_url": server.base_url,
            "api": "openai-chat",
            "models": [{"id": "m", "context_window": 32768, "max_tokens": 512}],
        }
        settings = Settings.model_validate(
            {
                "providers": {"fake": provider},
                "favorite_models": {"read-review": {"model": "fake/m"}},
                "teams": {"read_agents": {"max_concurrent": 1}, "read_sandbox": "off"},
                "retry": {"max_retries": 0},
            }
        )
        registry = ModelRegistry(settings, environ={}, cwd=tmp_path / "work")
        async with teams_env(tmp_path, "lead", settings=settings, registry=registry) as env:
            lead = env.caller.session_id
            await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "first", "prompt": "p"}))
            queued = await env.teams.spawning.spawn(
                env.caller, parse_spawn({"name": "second", "prompt": "p"})
            )
            assert queued.queued is True

            def second_started() -> bool:
                member = env.host.repositories.teams.roster.live_team_member(lead, "second")
                return member is not None and env.host.kernel.get_generation(member.run_id) is not None

            await eventually(lambda: bool(window_end))
            await eventually(second_started, env.host)
            member = env.host.repositories.teams.roster.live_team_member(lead, "second")
            assert member is not None
            generation = env.host.kernel.get_generation(member.run_id)
            assert generation is not None
            # admitted to the free slot, but started only once the provider's window was over
            assert generation.created_at >= window_end[0] * 1000
            await eventually(lambda: len(server.requests) >= 2)
            # exactly the first member's refused request and the second's (a third would be a retry
            # the settings do not allow); a failure names what was sent
            sent = [(r.body.get("model"), str(r.body.get("messages"))[-120:]) for r in server.requests]
            assert len(sent) == 2 and sent[1][0] == "m", sent
            await env.teams.control.stop_teammate(env.caller, "second", None)
