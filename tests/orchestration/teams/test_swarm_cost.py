"""What a swarm costs the lead and the host: grouped hand-over of reports, one sandbox view per swarm."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from corral.agent.tools import ReadGuard, ReadOnlySandbox
from corral.orchestration.teams.messages.records import TEAM_MESSAGE_TYPE
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from tests._ci import require
from tests._waits import eventually

from ._teams_helpers import TeamsEnv, teams_env, write_script

pytestmark = pytest.mark.usefixtures("env")


def _report(content: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "report_and_exit", "args": {"content": content, "outcome": "succeeded"}}]}


def _swarm_script(final: dict[str, object]) -> dict[str, object]:
    members = [{"name": f"r{k}", "prompt": f"part {k}", "model_slot": "read-review"} for k in (1, 2, 3)]
    return {
        "steps": [
            {"tool_calls": [{"name": "spawn_swarm_agents", "args": {"agents": members}}]},
            {"text": "Waiting for the reports."},
            final,
        ],
        "on_exhausted": "repeat_last",
        "agents": {f"r{k}": [_report(f"full report number {k}")] for k in (1, 2, 3)},
    }


async def test_reports_that_arrive_while_the_lead_is_busy_cost_it_one_request_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    final = {
        "expect": {"context_contains": [f"full report number {k}" for k in (1, 2, 3)]},
        "text": "All three are in.",
    }
    write_script(tmp_path, "lead", _swarm_script(final))
    async with teams_env(tmp_path, "lead") as env:
        model = env.lead.model
        stream = model.stream
        requests: list[int] = []

        async def held_stream(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            requests.append(len(requests) + 1)
            if len(requests) == 2:  # the lead is busy while every report arrives
                await eventually(lambda: env.lead.pending_message_count == 3, env.host)
            async for event in stream(*args, **kwargs):
                yield event

        monkeypatch.setattr(model, "stream", held_stream)
        await env.lead.prompt("go")
        await env.quiet()
        # spawn, "waiting", then one request with all three reports (one per report would be five)
        assert len(requests) == 3
        assert env.lead.last_assistant_text() == "All three are in."
        reports = env.lead_custom(TEAM_REPORT_TYPE)
        assert sorted(r["details"]["name"] for r in reports) == ["r1", "r2", "r3"]  # each exactly once


async def test_a_swarms_read_agents_share_one_sandbox_view_of_their_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require("bwrap", "bubblewrap")
    views: list[ReadGuard] = []
    build = ReadOnlySandbox.read_guard

    def counted(self: ReadOnlySandbox, cwd: Path) -> ReadGuard:
        views.append(build(self, cwd))
        return views[-1]

    monkeypatch.setattr(ReadOnlySandbox, "read_guard", counted)
    write_script(tmp_path, "lead", _swarm_script({"text": "done"}))
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        spawned = env.tool_results("spawn_swarm_agents")[0]["details"]["spawned"]
        assert [s["sandbox"] for s in spawned] == ["enforced"] * 3
        reports = env.lead_custom(TEAM_REPORT_TYPE)
        assert sorted(r["details"]["name"] for r in reports) == ["r1", "r2", "r3"]
    # one view for the three members (each used to build two: the admission check and its tools)
    assert len(views) == 1


async def test_a_swarm_reads_the_agent_definitions_once_queued_members_included(tmp_path: Path) -> None:
    """Every member's launch looks up its definition (a budget override); the definition files are
    read once for the whole swarm, not once per member — also by members that waited in the queue."""
    from corral.settings import CapacitySettings, Settings, TeamsSettings

    write_script(tmp_path, "lead", _swarm_script({"text": "done"}))
    settings = Settings(
        teams=TeamsSettings(read_agents=CapacitySettings(max_concurrent=1), read_sandbox="off")
    )
    async with teams_env(tmp_path, "lead", settings=settings) as env:
        reads: list[Path] = []
        read = env.host._read_roster

        def counted(cwd: Path) -> Any:
            reads.append(cwd)
            return read(cwd)

        env.host._read_roster = counted
        await env.lead.prompt("go")
        await env.quiet()
        spawned = env.tool_results("spawn_swarm_agents")[0]["details"]["spawned"]
        assert [s.get("queued", False) for s in spawned] == [False, True, True]
        reports = env.lead_custom(TEAM_REPORT_TYPE)
        assert sorted(r["details"]["name"] for r in reports) == ["r1", "r2", "r3"]
    assert len(reads) == 1


def _wave_script(members: int, final: dict[str, object]) -> dict[str, object]:
    agents = [{"name": f"w{k}", "prompt": f"part {k}", "model_slot": "read-review"} for k in range(members)]
    return {
        "steps": [
            {"tool_calls": [{"name": "spawn_swarm_agents", "args": {"agents": agents}}]},
            {"text": "Waiting for the reports."},
            final,
            {"text": "Noted."},
        ],
        "on_exhausted": "repeat_last",
        "agents": {f"w{k}": [_report(f"full report number {k} " + "x" * 200)] for k in range(members)},
    }


def _record_requests(model: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The contexts the lead's model receives, one per request."""
    stream = model.stream
    contexts: list[Any] = []

    async def recorded(context: Any, options: Any) -> AsyncIterator[Any]:
        contexts.append(context)
        async for event in stream(context, options):
            yield event

    monkeypatch.setattr(model, "stream", recorded)
    return contexts


async def _run_until_reported(env: TeamsEnv, members: int, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Prompt the lead to spawn its swarm and wait until every report is in and the lead is idle;
    the contexts its model received, one per request."""
    contexts = _record_requests(env.lead.model, monkeypatch)
    await env.lead.prompt("go")
    await env.quiet()
    await eventually(lambda: len(env.lead_custom(TEAM_REPORT_TYPE)) == members and env.lead.is_idle, env.host)
    return contexts


async def test_a_swarm_larger_than_the_read_cap_costs_the_lead_three_requests_whatever_its_waves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from corral.settings import CapacitySettings, Settings, TeamsSettings

    members = 9  # three waves of three
    final = {
        "expect": {"context_contains": [f"full report number {k} " for k in range(members)]},
        "text": "All nine are in.",
    }
    write_script(tmp_path, "lead", _wave_script(members, final))
    settings = Settings(teams=TeamsSettings(read_agents=CapacitySettings(max_concurrent=3)))
    async with teams_env(tmp_path, "lead", settings=settings) as env:
        contexts = await _run_until_reported(env, members, monkeypatch)
        # spawn, "waiting", then one request that carries all nine reports (two per wave before: eight)
        assert len(contexts) == 3
        assert env.lead.last_assistant_text() == "All nine are in."
        reports = env.lead_custom(TEAM_REPORT_TYPE)
        assert sorted(r["details"]["name"] for r in reports) == sorted(f"w{k}" for k in range(members))


def _texts(context: Any) -> list[str]:
    out = []
    for message in context.messages:
        content = getattr(message, "content", None)
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(getattr(block, "text", "") for block in content)
    return out


async def test_a_delivered_report_reaches_the_leads_requests_in_full_exactly_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from corral.settings import CapacitySettings, Settings, TeamsSettings

    members = 4
    write_script(tmp_path, "lead", _wave_script(members, {"text": "All four are in."}))
    settings = Settings(teams=TeamsSettings(read_agents=CapacitySettings(max_concurrent=2)))
    async with teams_env(tmp_path, "lead", settings=settings) as env:
        contexts = await _run_until_reported(env, members, monkeypatch)
        await env.lead.prompt("What next?")  # later requests of the same session
        await env.lead.prompt("And then?")
        assert len(contexts) == 5
        for k in range(members):
            body = f"full report number {k} "
            carrying = [i for i, context in enumerate(contexts) if any(body in t for t in _texts(context))]
            assert carrying == [2], (k, carrying)  # the one request after the swarm, never again
            later = [
                t for context in contexts[3:] for t in _texts(context) if f"Report from agent w{k} " in t
            ]
            assert len(later) == 2 and all("shown in full once already" in t and ".md" in t for t in later)
        # the session keeps every report in full, once
        stored = env.lead_custom(TEAM_REPORT_TYPE)
        assert sorted(r["details"]["name"] for r in stored) == [f"w{k}" for k in range(members)]
        assert all(f"full report number {r['details']['name'][1:]} " in r["content"] for r in stored)


async def test_a_swarm_whose_last_member_ends_without_a_report_still_wakes_the_lead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """r1's report goes in without a request of its own while r2 runs; r2 is then stopped from
    outside the lead's turn (the app, the Python API) and leaves no report: the lead still wakes."""
    members = [{"name": f"r{k}", "prompt": f"part {k}", "model_slot": "read-review"} for k in (1, 2)]
    script = {
        "steps": [
            {"tool_calls": [{"name": "spawn_swarm_agents", "args": {"agents": members}}]},
            {"text": "Waiting for the reports."},
            {"expect": {"context_contains": ["full report number 1"]}, "text": "r1 is in."},
        ],
        "on_exhausted": "repeat_last",
        "agents": {"r1": [_report("full report number 1")], "r2": [{"delay_ms": 60000, "text": "z"}]},
    }
    write_script(tmp_path, "lead", script)
    async with teams_env(tmp_path, "lead") as env:
        contexts = _record_requests(env.lead.model, monkeypatch)
        await env.lead.prompt("go")
        await eventually(lambda: len(env.lead_custom(TEAM_REPORT_TYPE)) == 1 and env.lead.is_idle, env.host)
        assert len(contexts) == 2  # r1's report did not wake the lead: r2 still runs
        stopped = await env.teams.control.stop_teammate(env.caller, "r2", None)
        assert stopped.outcome == "stopped"
        await eventually(lambda: len(contexts) == 3 and env.lead.is_idle, env.host)
        assert env.lead.last_assistant_text() == "r1 is in."
        notices = [m["content"] for m in env.lead_custom(TEAM_MESSAGE_TYPE)]
        assert len(notices) == 1 and "Agent r2 ended without a report" in notices[0]


async def test_a_swarm_member_whose_run_is_lost_neither_holds_its_siblings_nor_the_leads_wake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """r2's run raises (lost, no report; its run stays in the host's maps) while r1 and r3 run: it no
    longer counts as still to report, so r3's report, the last, wakes the lead."""
    from corral.orchestration.kernel._child import ManagedChild

    gate = tmp_path / "gate"
    members = [{"name": f"r{k}", "prompt": f"part {k}", "model_slot": "read-review"} for k in (1, 2, 3)]
    script = {
        "steps": [
            {"tool_calls": [{"name": "spawn_swarm_agents", "args": {"agents": members}}]},
            {"text": "Waiting for the reports."},
            {"expect": {"context_contains": ["full report number 1", "full report number 3"]}, "text": "In."},
        ],
        "on_exhausted": "repeat_last",
        "agents": {
            "r1": [_report("full report number 1")],
            "r2": [{"text": "z"}],
            "r3": [
                {
                    "tool_calls": [
                        {
                            "name": "bash",
                            "args": {"command": f"until [ -e {gate} ]; do sleep 0.01; done", "timeout": 120},
                        }
                    ]
                },
                _report("full report number 3"),
            ],
        },
    }
    write_script(tmp_path, "lead", script)
    assignment = ManagedChild._assignment

    async def raising(self: ManagedChild) -> None:
        if self.label == "r2":
            raise RuntimeError("the run broke")
        await assignment(self)

    monkeypatch.setattr(ManagedChild, "_assignment", raising)
    from corral.settings import Settings, TeamsSettings

    settings = Settings(teams=TeamsSettings(read_sandbox="off"))
    async with teams_env(tmp_path, "lead", settings=settings) as env:
        env.host.on_background_error = None
        contexts = _record_requests(env.lead.model, monkeypatch)
        await env.lead.prompt("go")
        await eventually(lambda: len(env.lead_custom(TEAM_REPORT_TYPE)) == 1 and env.lead.is_idle, env.host)
        assert len(contexts) == 2  # r1's report waits for r3
        gate.touch()
        await eventually(lambda: len(contexts) == 3 and env.lead.is_idle, env.host)
        assert env.lead.last_assistant_text() == "In."
        assert sorted(r["details"]["name"] for r in env.lead_custom(TEAM_REPORT_TYPE)) == ["r1", "r3"]
