"""Teams lifecycle fences, the 200-spawn burst, lazy session context and costs, in one process."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from corral.orchestration.errors import InvalidRequestError
from corral.orchestration.surfaces.teams import parse_spawn
from corral.orchestration.surfaces.teams._render import (
    render_status,
    render_stop,
    status_details,
    stop_details,
)
from corral.orchestration.teams import _control as _team_control
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.orchestration.teams.spawning import _launch as spawn_launch
from corral.settings import CapacitySettings, Settings, TeamsSettings
from tests._waits import eventually

from ._teams_helpers import teams_env, write_script

pytestmark = pytest.mark.usefixtures("env")


REPORT = {"tool_calls": [{"name": "report_and_exit", "args": {"content": "done", "outcome": "succeeded"}}]}


async def test_a_teardown_that_does_not_settle_is_quarantined_and_fences_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_team_control, "TEARDOWN_TIMEOUT_S", 0.2)
    write_script(
        tmp_path, "lead", {"steps": [{"text": "x"}], "agents": {"*": [{"delay_ms": 60000, "text": "z"}]}}
    )
    async with teams_env(tmp_path, "lead") as env:
        first = await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "stuck", "prompt": "p"}))
        runtime = env.host.runtime
        real_stop = runtime.stop
        gate = asyncio.Event()

        async def slow_stop(handle: Any) -> None:
            await gate.wait()  # the run does not settle until the gate opens
            await real_stop(handle)

        monkeypatch.setattr(runtime, "stop", slow_stop)
        result = await env.teams.control.stop_teammate(env.caller, "stuck", None)
        text, details = render_stop(result), stop_details(result)
        assert details["stopped"] is False and details["quarantined"] is True, text
        assert "quarantined" in text
        member = env.host.repositories.teams.roster.team_member(first.run_id)
        assert member is not None and member.fence == "quarantined" and member.live
        result = await env.teams.control.status(env.caller, "stuck")
        _, status = render_status(result), status_details(result)
        assert status["agents"][0]["phase"] == "quarantined"
        with pytest.raises(InvalidRequestError, match="cannot be restarted yet"):
            await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "stuck", "prompt": "again"}))
        # Unrelated work is not blocked by the fence.
        other = await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "other", "prompt": "p"}))
        assert other.queued is False
        gate.set()
        await eventually(
            lambda: (
                env.host.repositories.teams.roster.live_team_member(env.caller.session_id, "stuck") is None
            ),
            env.host,
        )
        old = env.host.repositories.teams.roster.team_member(first.run_id)
        assert old is not None and old.fence == "none" and not old.live
        again = await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "stuck", "prompt": "again"}))
        assert again.run_id != first.run_id
        monkeypatch.setattr(runtime, "stop", real_stop)
        for name in ("stuck", "other"):
            await env.teams.control.stop_teammate(env.caller, name, None)


async def test_a_burst_of_200_spawns_never_overshoots_and_drains_in_fifo_order(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {"steps": [{"text": "ok"}], "on_exhausted": "repeat_last", "agents": {"*": [REPORT]}},
    )
    settings = Settings(teams=TeamsSettings(read_agents=CapacitySettings(max_concurrent=8)))
    async with teams_env(tmp_path, "lead", settings=settings) as env:
        capacity = env.teams.capacity(env.caller.session_id)
        peak = 0
        stop = asyncio.Event()

        async def watch() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, capacity.snapshot().kinds["read"].active)
                running = sum(1 for g in env.host.kernel.generations() if g.phase in ("starting", "active"))
                peak = max(peak, running)
                await asyncio.sleep(0)

        watcher = asyncio.create_task(watch())
        names = [f"b{i:03d}" for i in range(200)]
        outcomes = await asyncio.gather(
            *(
                env.teams.spawning.spawn(
                    env.caller, parse_spawn({"name": n, "prompt": "p", "model_slot": "read-collect"})
                )
                for n in names
            )
        )
        queued = [o.name for o in outcomes if o.queued]
        assert len(queued) >= 192 - 8  # almost all of them had to wait
        await env.quiet()
        stop.set()
        await watcher
        assert peak <= 8
        generations = env.host.kernel.generations(include_finalized=True)
        started = [g.label for g in generations]
        assert sorted(started) == names  # each admitted exactly once
        assert [n for n in started if n in queued] == queued  # queued ones started in FIFO order
        assert len({e["details"]["report_id"] for e in env.lead_custom(TEAM_REPORT_TYPE)}) == 200
        snapshot = capacity.snapshot().kinds["read"]
        assert snapshot.active == 0 and snapshot.queued_names == ()


async def test_lazy_session_context_is_written_offered_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {"text": "We decided to keep the API stable. password=hunter2"},
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {"name": "ctx", "prompt": "p", "session_context": "lazy"},
                        }
                    ]
                },
                {"text": "Waiting."},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "ctx": [
                    {
                        "expect": {"last_user_contains": "session-context"},
                        "tool_calls": [{"name": "read", "args": {"path": "{{ env.CTX_PATH }}"}}],
                    },
                    REPORT,
                ]
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("first")
        spawned: dict[str, Any] = {}
        directory = env.teams.data_dir(env.caller.session_id) / "session-context"

        async def spawn_and_capture() -> None:
            await env.lead.prompt("second")

        # Point the child's read at the file it will be given (named after the run).
        original = spawn_launch._write_session_context

        def capture(data_dir: Any, prepared: Any, run_id: str) -> Path | None:
            path = original(data_dir, prepared, run_id)
            spawned["path"] = path
            if path is not None:
                monkeypatch.setenv("CTX_PATH", str(path))
                spawned["text"] = path.read_text()
            return path

        monkeypatch.setattr(spawn_launch, "_write_session_context", capture)
        await spawn_and_capture()
        await env.quiet()
        assert spawned["path"] is not None and spawned["path"].parent == directory
        assert "keep the API stable" in spawned["text"] and "hunter2" not in spawned["text"]
        [result] = env.tool_results("spawn_agent")
        assert result["details"]["sessionContextAvailable"] is True
        assert not spawned["path"].exists()  # removed when the run settled
        member = env.host.repositories.teams.roster.team_member(result["details"]["runId"])
        assert member is not None and member.session_context == "lazy"


async def test_costs_sum_the_lead_and_every_agent(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "usage": {"input": 100, "output": 10},
                    "tool_calls": [{"name": "spawn_agent", "args": {"name": "c1", "prompt": "p"}}],
                },
                {"text": "Waiting.", "usage": {"input": 100, "output": 10}},
            ],
            "on_exhausted": "repeat_last",
            "agents": {"c1": [{"usage": {"input": 7, "output": 3}, **REPORT}]},
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        costs = env.teams.reports.costs(env.caller.session_id)
        [(name, agent)] = costs.agents
        assert name == "c1" and agent.input_tokens == 7 and agent.output_tokens == 3
        assert costs.combined.input_tokens == costs.lead.input_tokens + 7
        assert costs.lead.input_tokens >= 200 and costs.combined.complete
