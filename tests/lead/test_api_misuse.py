"""Misusing the Python API: a bad option, a closed lead, a second data root, no model for agents.

Each is refused with a `UsageError` (or the tool's `invalid_request`) that says what to do, and
changes nothing durable.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import corral
from corral.errors import UsageError

from .conftest import WAIT, ApiEnv


async def test_a_mistyped_isolation_is_refused_before_anything_starts(api_env: ApiEnv) -> None:
    home_before = sorted(api_env.root.rglob("*"))
    with pytest.raises(UsageError, match=r"isolation='worktre'.*'shared' or 'worktree'"):
        async with corral.open_lead(api_env.work, isolation="worktre"):  # type: ignore[arg-type]
            pass
    with pytest.raises(UsageError, match=r"merge='on_accept'.*'manual' or 'on-accept'"):
        async with corral.open_lead(api_env.work, merge="on_accept"):  # type: ignore[arg-type]
            pass
    assert sorted(api_env.root.rglob("*")) == home_before  # no session, no store


async def test_a_closed_lead_says_so(api_env: ApiEnv) -> None:
    async with corral.open_lead(api_env.work) as lead:
        pass
    for use in (
        lambda: lead.call("agent", {"action": "list"}),
        lambda: lead.delegate("scout", "late"),
        lambda: lead.agents(),
        lambda: lead.next_item(timeout=0),
        lambda: lead.collect(),
        lambda: lead.wait_quiet(timeout=0),
    ):
        with pytest.raises(UsageError, match="this lead is closed"):
            await use()
    with pytest.raises(UsageError, match="this lead is closed"):
        lead.merge("writer")
    with pytest.raises(UsageError, match="this lead is closed"):
        lead.record_report_acceptance("r1", "accepted")
    with pytest.raises(UsageError, match="this lead is closed"):
        lead.save_cursor(None)
    with pytest.raises(UsageError, match="this lead is closed"):
        async for _ in lead.items():
            pass


async def test_a_second_data_root_in_one_process_is_refused(api_env: ApiEnv) -> None:
    other = api_env.root / "other-home"
    async with corral.open_lead(api_env.work, home=api_env.home) as first:
        with pytest.raises(UsageError, match=r"data root.*other-home.*one data root"):
            async with corral.open_lead(api_env.work, home=other):
                pass
        assert os.environ["CORRAL_HOME"] == str(api_env.home)
        assert not other.exists()
        handle = await first.delegate("scout", "look", label="s1")
        result = await handle.result(timeout=WAIT)
        # The agent's session lives under the lead's own data root, beside its store.
        assert Path(result.details["session_path"]).is_relative_to(api_env.home)
    async with corral.open_lead(api_env.work, home=other) as second:  # the first one is closed
        assert second.session_path.is_relative_to(other)


async def test_without_a_model_delegate_says_agents_need_one(api_env: ApiEnv) -> None:
    (api_env.root / "config" / "corral" / "settings.toml").write_text("")
    async with corral.open_lead(api_env.work) as lead:
        out = await lead.call("agent", {"action": "delegate", "definition": "scout", "task": "x"})
        assert not out.ok and out.category == "invalid_request"
        assert "agents need a model: set `default_model`" in out.text and "pass `model=`" in out.text
        assert "corral/program" not in out.text and "unknown provider" not in out.text
        with pytest.raises(corral.LeadCallError, match="agents need a model"):
            await lead.delegate("scout", "x")
        assert await lead.agents() == []  # nothing was started or recorded
        teams = await lead.call("agent", {"action": "list"})
        assert teams.ok
    # The lead's own model is what its agents inherit: `model=` makes the same call work.
    async with corral.open_lead(api_env.work, model="scripted/team") as lead:
        handle = await lead.delegate("scout", "x")
        assert (await handle.result(timeout=WAIT)).text.endswith("agent result")


async def test_a_swarm_whose_every_member_fails_has_an_error_category(api_env: ApiEnv) -> None:
    agents = [
        {"name": "one", "prompt": "Look.", "cwd": "nowhere-1"},
        {"name": "two", "prompt": "Look.", "cwd": "nowhere-2"},
    ]
    async with corral.open_lead(api_env.work, surfaces=("teams",)) as lead:
        out = await lead.call("spawn_swarm_agents", {"agents": agents})
        assert not out.ok and out.details is not None
        error = out.details["error"]
        assert error["category"] == "invalid_request" and error["operation"] == "spawn_swarm_agents"
        assert error["message"].startswith("No agent was started: 2 of 2 members failed; one: ")
        assert [f["category"] for f in out.details["failed"]] == ["invalid_request", "invalid_request"]
        assert out.details["spawned"] == []
        with pytest.raises(corral.LeadCallError) as raised:
            await lead.spawn_swarm(agents)
        assert raised.value.category == "invalid_request"
        assert raised.value.details["error"]["category"] == "invalid_request"
        # One member started: the call succeeded, with no error object.
        mixed = await lead.call(
            "spawn_swarm_agents", {"agents": [agents[0], {"name": "ok", "prompt": "Look."}]}
        )
        assert mixed.ok and mixed.details is not None and "error" not in mixed.details


async def test_open_lead_errors_name_the_argument_not_the_cli_flag(api_env: ApiEnv) -> None:
    missing = api_env.work / "missing"
    with pytest.raises(UsageError, match=r"open_lead\(cwd='.*missing'\): not a directory") as raised:
        async with corral.open_lead(missing):
            pass
    assert "--cwd" not in str(raised.value)
    with pytest.raises(UsageError) as raised:
        async with corral.open_lead(api_env.work, surfaces=("bogus",)):
            pass
    assert "--surfaces" not in str(raised.value) and "unknown surface 'bogus'" in str(raised.value)
