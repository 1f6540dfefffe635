"""Host: restart recovery (lost generations, undelivered results), quiet detection, blocked/lost listing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from corral.agent.tools import BashTool
from corral.lead._host import ComposedHost
from corral.llm import ModelRegistry
from corral.orchestration import RESULT_TYPE, ManagedAgentBusyError, Repositories, load_roster
from corral.orchestration.surfaces import (
    CloseParams,
    DelegateParams,
    ListParams,
    SteerParams,
    TranscriptParams,
)
from corral.settings import Settings
from tests._waits import eventually
from tests.orchestration._host_helpers import team, write_script

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}


def _second_host(env: Path) -> ComposedHost:
    return ComposedHost(
        repositories=Repositories.open(env / "home" / "corral.db"),
        registry=ModelRegistry(Settings(), cwd=env / "work"),
        sessions_root=env / "sessions",
        roster_loader=lambda cwd: load_roster(cwd, user_dir=env / "none", trust=False),
    )


async def test_generation_of_a_dead_host_is_lost_and_closable(env: Path) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "slow", "delay_ms": 60000}]}})
    async with team(env, "team") as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x"))
        await t.host.runtime.stop_all()  # the first host "dies": its in-process agent is gone
        second = _second_host(env)
        try:
            caller = await second.attach_lead(t.lead, surfaces=())
            generation = second.kernel.get_generation(started.run_id)
            assert generation is not None and generation.presence == "lost"
            assert generation.phase == "active"  # assignment unresolved, not completed or failed
            record = (await second.controller.list(caller, ListParams())).to_details()["agents"][0]
            assert record["state"] == "lost"
            assert record["available_actions"] == ["transcript", "close"]
            assert [g.label for g in second.blocked_or_lost(caller.session_id)] == ["scout"]
            shown = await second.controller.transcript(caller, TranscriptParams(agent="scout"))
            assert shown.transcript.startswith("user:\nx")
            with pytest.raises(ManagedAgentBusyError):
                await second.controller.steer(caller, SteerParams(agent="scout", message="hi"))
            await second.wait_until_quiet(caller.session_id)
            await second.controller.close(caller, CloseParams(agent="scout"))
            assert second.kernel.generations() == ()
        finally:
            await second.aclose()


async def test_recovery_delivers_an_undelivered_result_once(env: Path) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "finished while the owner was away"}]}})
    async with team(env, "team") as t:
        t.host.unregister_owner(t.caller.session_id)
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x"))
        await eventually(lambda: t.host.kernel.undelivered_results(t.caller.session_id) != (), t.host)
        assert t.lead_entries(RESULT_TYPE) == []
        second = _second_host(env)
        try:
            caller = await second.attach_lead(t.lead, surfaces=())
            await second.wait_until_quiet(caller.session_id)
            # attaching again (another restart) must not deliver it twice
            third = _second_host(env)
            try:
                await third.attach_lead(t.lead, surfaces=())
                await third.wait_until_quiet(caller.session_id)
            finally:
                await third.aclose()
        finally:
            await second.aclose()
        entries = t.lead_entries(RESULT_TYPE)
        assert len(entries) == 1 and entries[0]["details"]["request_id"] == started.request_id
        result = t.host.kernel.get_result(started.request_id)
        assert result is not None and result.delivery == "delivered"


async def test_busy_owner_gets_result_as_steering_once(env: Path) -> None:
    gate = env / "work" / "go"
    script = {
        "steps": [
            {
                "text": "lead is busy",
                "tool_calls": [
                    {"name": "bash", "args": {"command": f"while [ ! -f {gate} ]; do sleep 0.01; done"}}
                ],
            },
            {"text": "lead saw it", "expect": {"last_user_contains": "Agent result"}},
        ],
        "on_exhausted": "repeat_last",
        "agents": {"*": [{"text": "quick result"}]},
    }
    write_script(env, "team", script)
    async with team(env, "team") as t:
        import asyncio

        t.lead.register_tool(BashTool(env / "work"))
        run = asyncio.ensure_future(t.lead.prompt("work on something"))
        await eventually(lambda: not t.lead.is_idle)
        await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x"))
        # The lead's tool batch is still running: the result must be queued as steering.
        await eventually(lambda: t.lead.pending_message_count == 1, t.host)
        gate.write_text("")
        await t.quiet()
        await run
        entries = t.lead_entries(RESULT_TYPE)
        assert len(entries) == 1
        texts = [m for m in t.lead.messages if getattr(m, "role", "") == "assistant"]
        assert [m.text for m in texts] == ["lead is busy", "lead saw it"]


async def test_agent_task_failure_is_lost_not_completion(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from corral.orchestration.kernel._child import ManagedChild

    def broken(self: ManagedChild, note: str | None = None) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ManagedChild, "_finish", broken)
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "never stored"}]}})
    async with team(env, "team") as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x"))
        await t.quiet()
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.presence == "lost" and generation.phase == "active"
        assert "disk on fire" in (generation.diagnostic or "")
        assert [g.label for g in t.host.blocked_or_lost(t.caller.session_id)] == ["scout"]
        assert t.lead_entries(RESULT_TYPE) == []


async def test_wait_for_rechecks_at_each_host_change_and_times_out(env: Path) -> None:
    write_script(env, "team", {"steps": [{"text": "ok"}], "on_exhausted": "repeat_last"})
    async with team(env, "team") as t:
        await t.host.wait_for(lambda: True, 0.01)  # already true: returns without a change
        checked: list[int] = []
        flag = {"set": False}

        def predicate() -> bool:
            checked.append(1)
            return flag["set"]

        waiter = asyncio.ensure_future(t.host.wait_for(predicate, 5))
        await asyncio.sleep(0)  # the waiter checked once and now waits for a change
        assert len(checked) == 1 and not waiter.done()
        flag["set"] = True
        t.host.changed()
        await asyncio.wait_for(waiter, 5)
        assert len(checked) == 2  # re-checked at the change, never on a timer
        with pytest.raises(TimeoutError):
            await t.host.wait_for(lambda: False, 0.05)


def _nested_team(env: Path) -> Path:
    """Scripts and definitions for `boss` (delegates `inner`, then waits for it) and `busy`, both
    diggers held at the returned gate file."""
    definitions = env / "config" / "agents"
    definitions.mkdir(parents=True, exist_ok=True)
    (definitions / "digger.md").write_text(
        "---\nname: digger\ndescription: Digs.\ntools: [bash]\n---\nDig.\n"
    )
    (definitions / "boss.md").write_text(
        "---\nname: boss\ndescription: Delegates.\ntools: [bash]\nagents: [digger]\n---\nDelegate.\n"
    )
    gate = env / "work" / "go"
    hold = {"name": "bash", "args": {"command": f"while [ ! -f {gate} ]; do sleep 0.01; done"}}
    delegate = {"action": "delegate", "definition": "digger", "task": "dig", "label": "inner"}
    agents = {
        "boss": [{"tool_calls": [{"name": "agent", "args": delegate}]}, {"text": "waiting for inner"}],
        "inner": [{"tool_calls": [hold]}, {"text": "inner done"}],
        "busy": [{"tool_calls": [hold]}, {"text": "busy done"}],
    }
    write_script(env, "team", {**LEAD, "agents": agents})
    return gate


async def _nested_running(t: Any) -> None:
    """Delegate `boss` and `busy`; return once `boss` waits for `inner` and both diggers work."""
    await t.controller.delegate(t.caller, DelegateParams(definition="boss", task="build"))
    await t.controller.delegate(t.caller, DelegateParams(definition="digger", task="x", label="busy"))

    def running() -> bool:
        children = {child.label: child for child in t.host.runs.children()}
        return (
            set(children) == {"boss", "inner", "busy"}
            and children["boss"].waiting
            and all(children[name].busy for name in ("inner", "busy"))
        )

    await eventually(running, t.host)


async def test_a_change_wakes_only_the_children_that_wait_for_one(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Host.changed` wakes a child waiting for its sub-agent, not the children that are working
    (at 1,000 agents waking every child on every change cost 10 M wake-ups); the waiting one still
    finishes once its sub-agent's result arrives."""
    from corral.orchestration.kernel._child import ManagedChild

    gate = _nested_team(env)
    wakes: dict[str, int] = {}
    real_wake = ManagedChild.wake

    def counted(self: ManagedChild) -> None:
        wakes[self.label] = wakes.get(self.label, 0) + 1
        real_wake(self)

    monkeypatch.setattr(ManagedChild, "wake", counted)
    async with team(env, "team") as t:
        await _nested_running(t)
        wakes.clear()
        for _ in range(3):
            t.host.changed()
        assert wakes == {"boss": 3}
        gate.write_text("")
        await t.quiet()
        texts = sorted(entry["content"].rsplit("\n", 1)[-1] for entry in t.lead_entries(RESULT_TYPE))
        assert texts == ["busy done", "waiting for inner"]


async def test_the_tree_of_an_owner_is_found_without_comparing_records(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Host.tree` finds an owner's generations transitively through maps: no record is compared
    with another (a list-membership test made it quadratic: 11 M comparisons at 1,000 agents)."""
    from corral.orchestration.kernel.records import GenerationRecord

    gate = _nested_team(env)
    async with team(env, "team") as t:
        await _nested_running(t)
        compared: list[int] = []
        real_eq = GenerationRecord.__eq__

        def counted(self: GenerationRecord, other: object) -> bool:
            compared.append(1)
            return bool(real_eq(self, other))

        monkeypatch.setattr(GenerationRecord, "__eq__", counted)
        labels = sorted(g.label for g in t.host.tree(t.caller.session_id))
        boss = next(g for g in t.host.kernel.generations() if g.label == "boss")
        below_boss = [g.label for g in t.host.tree(boss.session_id)]
        assert compared == []
        monkeypatch.undo()
        assert labels == ["boss", "busy", "inner"]
        assert below_boss == ["inner"]
        gate.write_text("")
        await t.quiet()


async def test_the_live_runs_hold_no_entry_for_an_agent_that_ended(env: Path) -> None:
    """`Host.runs` holds each running agent (its child, runtime handle, and a delegating agent's
    session as an owner) and the waiting one among the waiters; once the agents ended and their
    results were delivered, nothing of them is left, while the lead stays attached."""
    gate = _nested_team(env)
    async with team(env, "team") as t:
        await _nested_running(t)
        runs = t.host.runs
        by_label = {child.label: child for child in runs.children()}
        assert runs.child_count() == 3
        assert all(runs.runtime_handle(child.run_id) is not None for child in by_label.values())
        boss = by_label["boss"]
        assert runs.is_owner(boss.agent.session.session_id)  # it delegates: results come to it
        assert not runs.is_owner(by_label["busy"].agent.session.session_id)
        assert runs.waiting() == (boss,)
        assert runs.lead(t.caller.session_id) is t.caller and runs.is_owner(t.caller.session_id)

        gate.write_text("")
        await t.quiet()

        assert runs.child_count() == 0 and runs.children() == [] and runs.waiting() == ()
        assert all(runs.get(child.run_id) is None for child in by_label.values())
        assert not runs.is_owner(boss.agent.session.session_id)
        assert not runs.has_worker_runs()
        assert runs.lead(t.caller.session_id) is t.caller and runs.is_owner(t.caller.session_id)
