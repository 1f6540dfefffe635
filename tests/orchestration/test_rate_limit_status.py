"""A model request waiting for its endpoint's shared rate limiter shows as `waiting (rate limit, Ns)`.

A live agent's request is made to wait by the real limiter (its endpoint in a `Retry-After` window)
with the agent loop's listener, as the HTTP transport does; every status view then says so:
`get_agent_status` and the app's rows (teams), the `agent` tool's `list` and `inspect`, and
`corral agents list`, whose host runs none of the agents and reads the wait from the store.
"""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from corral._cli._agents import agents_list
from corral.agent import AgentSession
from corral.llm import EndpointKey, HostRateLimiter, RateLimits, rate_limit_listener
from corral.orchestration.surfaces import DelegateParams, InspectParams, ListParams
from corral.orchestration.surfaces.agent._render import render_inspect, render_list
from corral.orchestration.surfaces.teams import parse_spawn
from corral.orchestration.surfaces.teams._render import render_status, status_details
from corral.tui._teams import team_detail
from tests._waits import eventually
from tests.orchestration._host_helpers import team
from tests.orchestration.teams._teams_helpers import teams_env, write_script

pytestmark = pytest.mark.usefixtures("env")

WAITING = re.compile(r"waiting \(rate limit, (\d+)s\)")
SLOW = {
    "steps": [{"text": "x"}],
    "on_exhausted": "repeat_last",
    "agents": {"*": [{"delay_ms": 60000, "text": "z"}]},
}


@asynccontextmanager
async def _waiting(agent: AgentSession) -> AsyncIterator[None]:
    """`agent` has a model request waiting out a 30 s window (until the block ends)."""
    limiter = HostRateLimiter()
    key = EndpointKey.of("http://127.0.0.1:9/v1", None)
    refused = await limiter.acquire(key, RateLimits(), request_bytes=0)
    refused.done(429, {"retry-after": "30"})

    async def request() -> None:
        with rate_limit_listener(agent._on_rate_limit):
            await limiter.acquire(key, RateLimits(), request_bytes=0)

    task = asyncio.create_task(request())
    await eventually(lambda: agent.rate_limit_wait is not None)
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert agent.rate_limit_wait is None  # the wait ended with the request


async def _agents_list(lead: AgentSession, *, teams: bool = False) -> str:
    """`corral agents list` for `lead`: its own host over the same store, running none of the agents."""
    if lead.session.path is None or not lead.session.path.exists():
        await lead.prompt("hello")  # the session file is written with the first reply
    out = io.StringIO()
    await agents_list(cwd=lead.cwd, session=str(lead.session.path), as_json=False, out=out, teams=teams)
    return out.getvalue()


def _seconds(text: str) -> int:
    match = WAITING.search(text)
    assert match is not None, text
    return int(match.group(1))


async def test_get_agent_status_and_the_apps_rows(tmp_path: Path) -> None:
    write_script(tmp_path, "lead", SLOW)
    async with teams_env(tmp_path, "lead") as env:
        await env.teams.spawn(env.caller, parse_spawn({"name": "one", "prompt": "p"}))
        member = env.host.repositories.teams.roster.live_team_member(env.caller.session_id, "one")
        assert member is not None
        child = env.teams.child(member.run_id)
        assert child is not None
        async with _waiting(child.agent):
            result = await env.teams.status(env.caller, "one")
            [snapshot] = status_details(result)["agents"]
            assert 28 <= _seconds(snapshot["rateLimit"]) <= 33
            assert snapshot["rateLimit"] in render_status(result)
            wait = child.rate_limit_wait
            assert wait is not None and wait.until_ms is not None
            [row] = env.teams.agent_rows(
                env.teams.snapshot(env.caller.session_id), now_ms=wait.until_ms - 12_000
            )
            assert row.status is not None
            assert team_detail(row.status, generation=row.generation) == "waiting (rate limit, 12s)"
            shell = await _agents_list(env.lead, teams=True)
            assert 28 <= _seconds(shell) <= 33 and shell.startswith("one\t")
        result = await env.teams.status(env.caller, "one")
        assert "rateLimit" not in status_details(result)["agents"][0]
        assert "rate limit" not in await _agents_list(env.lead, teams=True)
        await env.teams.stop_teammate(env.caller, "one", None)


async def test_the_agent_tools_list_and_inspect(tmp_path: Path) -> None:
    write_script(tmp_path, "team", SLOW)
    async with team(tmp_path, "team") as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="a"))
        [child] = t.host.runs.children()
        async with _waiting(child.agent):
            listed = (await t.controller.list(t.caller, ListParams())).to_details()
            [record] = listed["agents"]
            assert 28 <= _seconds(record["rate_limit"]) <= 33
            assert record["rate_limit"] in render_list(listed)
            inspected = (
                await t.controller.inspect(t.caller, InspectParams(agent=record["agent"]))
            ).to_details()
            assert 28 <= _seconds(inspected["rate_limit"]) <= 33
            assert "model request: waiting (rate limit, " in render_inspect(inspected)
            shell = await _agents_list(t.lead)
            # (its state is the shell's guess for a run of another host; here that host is this process)
            assert 28 <= _seconds(shell) <= 33 and shell.startswith(f"{record['agent']}\t")
        listed = (await t.controller.list(t.caller, ListParams())).to_details()
        assert "rate_limit" not in listed["agents"][0]
        assert "rate limit" not in await _agents_list(t.lead)
