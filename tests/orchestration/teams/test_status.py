"""The teams phase projection: one set of rules for `get_agent_status` and the terminal app's rows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from corral.orchestration.surfaces.teams import parse_spawn
from corral.orchestration.surfaces.teams._render import render_status, status_details
from corral.orchestration.teams._status import STALLED_AFTER_MS, member_status
from corral.settings import CapacitySettings, Settings, TeamsSettings
from tests._waits import eventually
from tests.orchestration.teams._teams_helpers import teams_env, write_script

ONE_READER = Settings(teams=TeamsSettings(read_agents=CapacitySettings(max_concurrent=1)))


pytestmark = pytest.mark.usefixtures("env")


async def test_rows_and_get_agent_status_share_the_phase_rules(tmp_path: Path) -> None:
    write_script(
        tmp_path, "lead", {"steps": [{"text": "x"}], "agents": {"*": [{"delay_ms": 60000, "text": "z"}]}}
    )
    async with teams_env(tmp_path, "lead", settings=ONE_READER) as env:
        await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "one", "prompt": "p"}))
        await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "two", "prompt": "p"}))
        lead = env.caller.session_id
        one = env.host.repositories.teams.roster.live_team_member(lead, "one")
        assert one is not None
        child = env.teams.context.child(one.run_id)
        assert child is not None
        await eventually(lambda: child.phase() == "thinking", env.host)

        snapshot = env.teams.control.snapshot(lead)
        result = await env.teams.control.status(env.caller, None)
        _, details = render_status(result), status_details(result)
        now = max(g.last_activity_at or g.created_at for g in snapshot.generations.values())
        rows = env.teams.control.agent_rows(snapshot, now_ms=now)
        assert [(r.name, None if r.status is None else r.status.phase, r.queue_position) for r in rows] == [
            ("one", "thinking", None),
            ("two", None, 1),
        ]
        assert {a["name"]: a["phase"] for a in details["agents"]} == {"one": "thinking", "two": "queued"}

        # Fifteen minutes without activity: both views say stalled, from the same rule.
        generation = snapshot.generations[one.run_id]
        activity = generation.last_activity_at
        assert activity is not None
        later = activity + STALLED_AFTER_MS + 1
        [stalled, _queued] = env.teams.control.agent_rows(snapshot, now_ms=later)
        assert stalled.status is not None and stalled.status.phase == "stalled"
        assert stalled.status.activity_age_ms == STALLED_AFTER_MS + 1
        assert member_status(one, generation, child, now_ms=later).phase == "stalled"
        assert member_status(one, generation, child, now_ms=activity).phase == "thinking"
        await env.teams.control.stop_teammate(env.caller, "two", None)
        await env.teams.control.stop_teammate(env.caller, "one", None)


async def test_member_status_rules_without_an_in_process_run(tmp_path: Path) -> None:
    write_script(
        tmp_path, "lead", {"steps": [{"text": "x"}], "agents": {"*": [{"delay_ms": 60000, "text": "z"}]}}
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "one", "prompt": "p"}))
        member = env.host.repositories.teams.roster.live_team_member(env.caller.session_id, "one")
        assert member is not None
        generation = env.host.kernel.get_generation(member.run_id)
        assert generation is not None
        child = env.teams.context.child(member.run_id)

        fenced = replace(member, fence="quarantined", fence_reason="teardown timed out")
        assert member_status(fenced, generation, child, now_ms=0).phase == "quarantined"
        assert member_status(fenced, generation, None, now_ms=0).phase == "quarantined"

        active = replace(generation, phase="active")
        pane = replace(active, runtime_kind="tmux", pane_id="%3", pid=None)
        handed = member_status(member, pane, None, now_ms=0)
        assert (handed.phase, handed.pane_id, handed.in_process) == ("working", "%3", False)

        for ended in ("completed", "result_error"):
            assert (
                member_status(member, replace(generation, phase=ended), None, now_ms=0).phase == "finishing"
            )

        gone = member_status(member, active, None, now_ms=0)
        assert (gone.phase, gone.lost_reason) == ("stalled", None)
        lost = member_status(
            member, replace(active, presence="lost", diagnostic="pid 7 exited"), None, now_ms=0
        )
        assert (lost.phase, lost.lost_reason) == ("stalled", "pid 7 exited")
        await env.teams.control.stop_teammate(env.caller, "one", None)
