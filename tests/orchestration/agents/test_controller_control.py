"""Controller scenarios for live control: ask/reply, steer, interrupt, inspect, transcript, close."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from corral.orchestration import (
    ASK_TYPE,
    RESULT_TYPE,
    ManagedAgentBusyError,
    TargetAmbiguousError,
    TargetNotFoundError,
)
from corral.orchestration.surfaces import (
    CloseParams,
    DelegateParams,
    InspectParams,
    InterruptParams,
    ListParams,
    ReplyParams,
    SteerParams,
    TranscriptParams,
)
from tests._waits import eventually
from tests.orchestration._host_helpers import Team, team, write_script

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}


async def _record(t: Team, label: str) -> dict[str, object]:
    listed = (await t.controller.list(t.caller, ListParams())).to_details()
    return next(a for a in listed["agents"] if a["agent"] == label)


async def test_ask_owner_is_delivered_once_and_reply_continues(env: Path) -> None:
    agent = [
        {"tool_calls": [{"name": "ask_owner", "args": {"question": "Option A or B?"}}]},
        {"text": "Chose B as told.", "expect": {"last_user_contains": "Owner reply"}},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team") as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Decide"))
        await t.quiet()  # quiet: the only agent is blocked on its question
        asks = t.lead_entries(ASK_TYPE)
        assert len(asks) == 1 and "Option A or B?" in asks[0]["content"]
        assert [g.label for g in t.host.blocked_or_lost(t.caller.session_id)] == ["scout"]
        record = await _record(t, "scout")
        assert record["state"] == "blocked"
        assert "reply" in record["available_actions"] and "steer" not in record["available_actions"]
        with pytest.raises(ManagedAgentBusyError):
            await t.controller.steer(t.caller, SteerParams(agent="scout", message="hurry"))
        replied = await t.controller.reply(t.caller, ReplyParams(agent="scout", message="Use B."))
        details = replied.to_details()
        assert details["ask_id"] == asks[0]["details"]["ask_id"]
        assert details["assignment_request_id"] == started.request_id
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "Chose B as told." in results[0]["content"]
        assert len(t.lead_entries(ASK_TYPE)) == 1
        with pytest.raises(TargetNotFoundError):  # the agent is gone: nothing to reply to
            await t.controller.reply(t.caller, ReplyParams(agent="scout", message="again"))


async def test_ask_owner_must_be_alone(env: Path) -> None:
    agent = [
        {
            "tool_calls": [
                {"name": "ask_owner", "args": {"question": "Q?"}},
                {"name": "ls", "args": {}},
            ]
        },
        {"text": "gave up asking"},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team") as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x"))
        await t.quiet()
        assert t.lead_entries(ASK_TYPE) == []
        assert "gave up asking" in t.lead_entries(RESULT_TYPE)[0]["content"]


async def test_steer_is_applied_after_the_tool_batch(env: Path) -> None:
    gate = env / "work" / "go"
    agent = [
        {
            "tool_calls": [
                {"name": "bash", "args": {"command": f"while [ ! -f {gate} ]; do sleep 0.01; done; echo ok"}}
            ]
        },
        {"text": "steered result", "expect": {"last_user_contains": "Also check the docs"}},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team") as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="implementer", task="x"))
        child = t.host.runs.child(started.run_id)
        await eventually(lambda: bool(child.running_processes()))
        steered = await t.controller.steer(
            t.caller, SteerParams(agent="implementer", message="Also check the docs")
        )
        assert steered.to_details()["assignment_request_id"] == started.request_id
        gate.write_text("")
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "steered result" in results[0]["content"]


async def test_interrupt_cancels_slow_model_and_continues_same_assignment(env: Path) -> None:
    agent = [
        {"text": "thinking slowly", "delay_ms": 60000},
        {"text": "switched approach", "expect": {"last_user_contains": "Owner interrupt"}},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team") as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x"))
        child = t.host.runs.child(started.run_id)
        await eventually(lambda: not child.agent.is_idle)
        result = await t.controller.interrupt(
            t.caller, InterruptParams(agent="scout", message="Try another way")
        )
        assert result.to_details()["action"] == "interrupt"
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "switched approach" in results[0]["content"]
        assert results[0]["details"]["request_id"] == started.request_id


async def test_interrupt_kills_running_bash_and_inspect_shows_it(env: Path) -> None:
    agent = [
        {"tool_calls": [{"name": "bash", "args": {"command": "sleep 30"}}]},
        {"text": "done differently", "expect": {"last_user_contains": "Owner interrupt"}},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team") as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="implementer", task="x"))
        child = t.host.runs.child(started.run_id)
        await eventually(lambda: bool(child.running_processes()))
        inspected = (await t.controller.inspect(t.caller, InspectParams(agent="implementer"))).to_details()
        assert inspected["pane_id"] == started.pane_id
        assert inspected["recent_output_truncated"] is False
        assert "→ bash" in inspected["recent_output"]
        assert inspected["process"] and "sleep 30" in inspected["process"][0]["cmdline"]
        pid = inspected["process"][0]["pid"]
        await t.controller.interrupt(t.caller, InterruptParams(agent="implementer", message="stop that"))
        await t.quiet()
        assert "done differently" in t.lead_entries(RESULT_TYPE)[0]["content"]
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def test_transcript_bounds_large_tool_results(env: Path) -> None:
    agent = [
        {"tool_calls": [{"name": "bash", "args": {"command": "python3 -c \"print('x' * 10000)\""}}]},
        {"tool_calls": [{"name": "ask_owner", "args": {"question": "Seen it?"}}]},
        {"text": "ok"},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team") as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="implementer", task="Print a lot"))
        await t.quiet()
        shown = (await t.controller.transcript(t.caller, TranscriptParams(agent="implementer"))).to_details()
        text = shown["transcript"]
        assert text.startswith("user:\nPrint a lot")
        assert "tool bash:" in text and "tool ask_owner:" in text
        assert "[... middle of tool result omitted ...]" in text
        assert shown["transcript_truncated"] is True
        await t.controller.close(t.caller, CloseParams(agent="implementer"))


async def test_close_stops_agent_and_frees_label(env: Path) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "slow", "delay_ms": 60000}]}})
    async with team(env, "team") as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x"))
        child = t.host.runs.child(started.run_id)
        closed = (await t.controller.close(t.caller, CloseParams(agent="scout"))).to_details()
        assert closed == {
            "ok": True,
            "action": "close",
            "agent": "scout",
            "presentation_agent_definition": "scout",
        }
        assert child.finished.is_set()
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.phase == "finalized"
        assert t.host.kernel.generation_by_label("scout") is None
        await t.quiet()
        assert t.lead_entries(RESULT_TYPE) == []


async def test_close_refused_while_result_undelivered(env: Path) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "done"}]}})
    async with team(env, "team") as t:
        t.host.unregister_owner(t.caller.session_id)  # the owner cannot receive deliveries for now
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x"))
        await eventually(lambda: t.host.kernel.undelivered_results(t.caller.session_id) != (), t.host)
        with pytest.raises(TargetAmbiguousError, match="durable result"):
            await t.controller.close(t.caller, CloseParams(agent="scout"))
        t.host.register_owner(t.lead)
        t.host.recovery.recover(t.caller.session_id)
        await t.quiet()
        assert len(t.lead_entries(RESULT_TYPE)) == 1
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.phase == "finalized"
