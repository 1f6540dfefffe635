"""Ownership chain: lead → delegating agent → leaf; visibility, allowlists, children gate, cascade close."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.orchestration import RESULT_TYPE, Caller, InvalidRequestError, TargetNotFoundError
from corral.orchestration.surfaces import CloseParams, DelegateParams, ListParams, SteerParams
from tests._waits import eventually
from tests.orchestration._host_helpers import team, write_script

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}
DELEGATE_SCOUT = {
    "tool_calls": [{"name": "agent", "args": {"action": "delegate", "definition": "scout", "task": "look"}}]
}


async def test_delegating_agent_waits_for_its_agent_then_reports(env: Path) -> None:
    agents = {
        "implementer": [
            DELEGATE_SCOUT,
            {"text": "waiting for scout"},
            {"text": "implementer done; scout said: {{ last_custom.agent }}"},
        ],
        "scout": [{"text": "scout found it"}],
    }
    write_script(env, "team", {**LEAD, "agents": agents})
    async with team(env, "team") as t:
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="implementer", task="build")
        )
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1, [r["content"] for r in results]
        assert results[0]["details"]["agent"] == "implementer"
        assert "implementer done; scout said: scout" in results[0]["content"]
        # the scout's result went to the implementer's session, not the lead's
        generations = t.host.kernel.generations(include_finalized=True)
        scout = next(g for g in generations if g.label == "scout")
        assert scout.owner_session_id == started.session_id and scout.parent_run_id == started.run_id
        assert not scout.delegating
        assert all(g.phase == "finalized" for g in generations)


async def test_visibility_allowlist_and_cascade_close(env: Path) -> None:
    agents = {
        "implementer": [DELEGATE_SCOUT, {"text": "waiting for scout"}],
        "scout": [{"text": "slow scout", "delay_ms": 60000}],
    }
    write_script(env, "team", {**LEAD, "agents": agents})
    async with team(env, "team") as t:
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="implementer", task="build")
        )
        child = t.host.runs.child(started.run_id)
        await eventually(
            lambda: child.waiting and t.host.kernel.generation_by_label("scout") is not None, t.host
        )
        listed = (await t.controller.list(t.caller, ListParams())).to_details()
        records = {a["agent"]: a for a in listed["agents"]}
        assert records["implementer"]["state"] == "blocked"
        assert "steer" in records["implementer"]["available_actions"]
        assert "interrupt" not in records["implementer"]["available_actions"]
        assert records["scout"]["parent_label"] == "implementer"
        assert records["scout"]["available_actions"] == []
        with pytest.raises(TargetNotFoundError):
            await t.controller.steer(t.caller, SteerParams(agent="scout", message="hi"))
        # the delegating agent sees only its direct agents and only its allowlist
        child_caller = Caller(child.agent, scope="managed-agent", allowed=("scout",), run_id=started.run_id)
        own = (await t.controller.list(child_caller, ListParams())).to_details()
        assert [a["agent"] for a in own["agents"]] == ["scout"]
        assert [d["name"] for d in own["agent_definitions"]] == ["scout"]
        with pytest.raises(InvalidRequestError, match="not allowed"):
            await t.controller.delegate(child_caller, DelegateParams(definition="researcher", task="x"))
        closed = await t.controller.close(t.caller, CloseParams(agent="implementer"))
        assert closed.closed == ("scout", "implementer")
        assert t.host.kernel.generations() == ()
        await t.quiet()
        assert t.lead_entries(RESULT_TYPE) == []


async def test_lead_uses_the_agent_tool_surface(env: Path) -> None:
    lead = {
        "steps": [
            {
                "tool_calls": [
                    {"name": "agent", "args": {"action": "delegate", "definition": "scout", "task": "look"}}
                ]
            },
            {"text": "ok"},
        ],
        "on_exhausted": "repeat_last",
        "agents": {"scout": [{"text": "scout report"}]},
    }
    write_script(env, "team", lead)
    async with team(env, "team", surfaces=("agent",)) as t:
        assert "agent" in {tool.name for tool in t.lead.tools}
        await t.lead.prompt("start")
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "scout report" in results[0]["content"]
        tool_results = [m for m in t.lead.messages if getattr(m, "role", "") == "toolResult"]
        assert tool_results and tool_results[0].details["ok"] is True
        assert tool_results[0].details["agent"] == "scout"
        assert tool_results[0].details["request_id"] == results[0]["details"]["request_id"]
