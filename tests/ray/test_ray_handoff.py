"""Handoff to Ray: a live in-process agent moves onto a Ray worker actor and goes on there (a real
local cluster, the scripted model only for the agent's decisions)."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from corral.orchestration import RESULT_TYPE, Repositories
from corral.orchestration.host.texts import REMOTE_HANDOFF_PROMPT
from corral.orchestration.surfaces import CloseParams, DelegateParams, SteerParams
from corral.orchestration.surfaces.teams import parse_spawn
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.session import SessionManager
from corral.settings import RaySettings, Settings, TeamsSettings
from tests._ci import unavailable
from tests._waits import eventually
from tests.orchestration._host_helpers import WAIT, prepare_env, team, write_script
from tests.orchestration.host.test_handoff import model_calls
from tests.ray.conftest import RayTestCluster
from tests.ray.test_ray_agents import DRIVER, ray_settings

__all__ = ["model_calls"]

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}
SLOW = {"text": "working", "delay_ms": 60000}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data root whose `scout` definition runs in-process even when `runtime = "ray"`."""
    prepare_env(tmp_path, monkeypatch)
    agents = tmp_path / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "local.md").write_text(
        "---\nname: local\ndescription: Reads.\ntools: [read, ls]\nruntime: inprocess\n---\nLook around.\n"
    )
    return tmp_path


def _entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_a_live_agent_moved_to_ray_finishes_there_and_a_moved_one_takes_steer_and_close(
    env: Path, ray_cluster: RayTestCluster, model_calls: dict[str, list[object]]
) -> None:
    mover = [SLOW, {"text": "Finished on Ray.", "expect": {"last_user_contains": REMOTE_HANDOFF_PROMPT}}]
    lingerer = [SLOW, {"text": "still working on Ray", "delay_ms": 60000}]
    write_script(env, "team", {**LEAD, "agents": {"mover": mover, "lingerer": lingerer}})
    async with team(env, "team", settings=ray_settings(ray_cluster)) as t:
        assert t.host.handoff_target() == "ray"  # `runtime = "ray"`: a handoff goes to Ray
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="local", task="Survey", label="mover")
        )
        assert started.session_path is not None
        first = t.host.kernel.get_generation(started.run_id)
        assert first is not None and first.runtime_kind == "inprocess"
        await eventually(lambda: len(model_calls.get("mover", [])) >= 1)  # in its slow model call
        session_path = Path(started.session_path)
        before = _entries(session_path)

        moved = await t.host.handoff(started.run_id)

        assert (moved.status, moved.reason, moved.runtime) == ("moved", "moved", "ray"), moved.message
        assert moved.pane_id is not None and moved.pane_id.startswith("ray:corral-")
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.runtime_kind == "ray"
        assert generation.pane_id == moved.pane_id and generation.pid not in (None, os.getpid())
        assert generation.session_path == str(session_path)  # the host keeps the real session file
        assert t.host.runs.child(started.run_id) is None  # the in-process run is gone
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "Finished on Ray." in str(results[0]["content"])
        final = t.host.kernel.get_generation(started.run_id)
        assert final is not None and final.phase == "finalized"
        # The same session file on the lead's machine: the entries before the move are unchanged and
        # every later one (the aborted reply, the handoff prompt, the worker's answer) chains onto it.
        after = _entries(session_path)
        assert after[: len(before)] == before
        later = after[len(before) - 1 :]
        assert all(entry["parentId"] == prev["id"] for prev, entry in itertools.pairwise(later))
        texts = [json.dumps(entry) for entry in after[len(before) :]]
        assert any(REMOTE_HANDOFF_PROMPT in text for text in texts)
        assert any("Finished on Ray." in text for text in texts)
        assert sum("Survey" in json.dumps(entry) for entry in after) == 1  # the task was not re-sent
        with SessionManager.open(session_path, read_only=True) as saved:  # a valid Pi session file
            assert len(saved.entries) == len(after) - 1
        await t.quiet()
        assert len(t.lead_entries(RESULT_TYPE)) == 1  # delivered once

        # A moved agent still working on Ray: steer and close reach it there.
        other = await t.controller.delegate(
            t.caller, DelegateParams(definition="local", task="Wait", label="lingerer")
        )
        await eventually(lambda: len(model_calls.get("lingerer", [])) >= 1)
        moved = await t.host.handoff(other.run_id, runtime="ray")
        assert moved.status == "moved", moved.message
        steered = await t.controller.steer(t.caller, SteerParams(agent="lingerer", message="also log it"))
        request = t.host.kernel.get_request(steered.request_id)
        assert request is not None and request.accepted is True  # the worker acknowledged it
        await t.controller.close(t.caller, CloseParams(agent="lingerer"))

        def closed() -> bool:
            generation = t.host.kernel.get_generation(other.run_id)
            return generation is not None and generation.phase == "finalized"

        await t.host.wait_for(closed, WAIT)
        assert len(t.lead_entries(RESULT_TYPE)) == 1  # nothing was delivered for the closed one


async def test_a_handoff_to_an_unreachable_cluster_leaves_the_agent_lost_with_a_diagnostic(
    env: Path, model_calls: dict[str, list[object]]
) -> None:
    if importlib.util.find_spec("ray") is None:
        unavailable("Ray is not installed (make test installs the ray extra)")
    write_script(env, "team", {**LEAD, "agents": {"*": [SLOW]}})
    settings = Settings(runtime="ray", ray=RaySettings(address="127.0.0.1:9"))  # nothing listens there
    async with team(env, "team", settings=settings) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="local", task="Survey"))
        await eventually(lambda: len(model_calls.get("local", [])) >= 1)

        moved = await t.host.handoff(started.run_id)

        assert (moved.status, moved.reason, moved.runtime) == ("failed", "start_failed", "ray"), moved.message
        assert "cannot reach the Ray cluster" in moved.message
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.presence == "lost"
        assert generation.runtime_kind == "ray" and generation.pane_id is None  # never two runners
        assert generation.diagnostic is not None
        assert generation.diagnostic.startswith("handoff to ray failed: the worker could not start")
        assert t.host.runs.child(started.run_id) is None and not t.host.runs.on_worker(started.run_id)
        await t.controller.close(t.caller, CloseParams(agent="local"))  # a lost agent can be closed
        closed = t.host.kernel.get_generation(started.run_id)
        assert closed is not None and closed.phase == "finalized"


async def test_a_live_teams_agent_moved_to_ray_reports_once_through_the_lead_host(
    env: Path, ray_cluster: RayTestCluster, model_calls: dict[str, list[object]]
) -> None:
    report = {"content": "Reviewed on Ray", "summary": "reviewed", "outcome": "succeeded"}
    agent = [
        SLOW,
        {
            "tool_calls": [{"name": "report_and_exit", "args": report}],
            "expect": {"last_user_contains": REMOTE_HANDOFF_PROMPT, "tools_include": ["report_and_exit"]},
        },
        {"text": "bye"},
    ]
    write_script(env, "team", {**LEAD, "agents": {"r1": agent}})
    ray = ray_settings(ray_cluster).ray
    settings = Settings(ray=ray, teams=TeamsSettings(read_sandbox="off"))  # teams spawn in-process
    async with team(env, "team", surfaces=("teams",), settings=settings) as t:
        spawned = await t.host.teams.spawn(
            t.caller, parse_spawn({"name": "r1", "prompt": "Review it.", "model_slot": "read-review"})
        )
        run_id = spawned.run_id
        await eventually(lambda: len(model_calls.get("r1", [])) >= 1)  # in its slow model call
        assert t.host.handoff_target() == "tmux"  # `runtime = "inprocess"`: asked for explicitly below

        moved = await t.host.handoff(run_id, runtime="ray")

        assert (moved.status, moved.runtime) == ("moved", "ray"), moved.message
        generation = t.host.kernel.get_generation(run_id)
        assert generation is not None and generation.runtime_kind == "ray"
        assert generation.pid not in (None, os.getpid())
        await t.quiet()
        reports = t.lead_entries(TEAM_REPORT_TYPE)
        assert len(reports) == 1 and "Reviewed on Ray" in str(reports[0]["content"])
        member = t.host.repositories.teams.roster.team_member(run_id)
        assert member is not None
        await t.host.wait_for(
            lambda: (g := t.host.kernel.get_generation(run_id)) is not None and g.phase == "finalized", WAIT
        )
        assert len(t.lead_entries(TEAM_REPORT_TYPE)) == 1  # reported once


async def test_a_refused_handoff_to_ray_changes_nothing_and_never_contacts_the_cluster(
    env: Path, model_calls: dict[str, list[object]]
) -> None:
    if importlib.util.find_spec("ray") is None:
        unavailable("Ray is not installed (make test installs the ray extra)")
    asking = [{"tool_calls": [{"name": "ask_owner", "args": {"question": "A or B?"}}]}]
    write_script(env, "team", {**LEAD, "agents": {"*": asking}})
    settings = Settings(runtime="ray", ray=RaySettings(address="127.0.0.1:9"))  # never reached
    async with team(env, "team", settings=settings) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="local", task="Decide"))
        await t.host.wait_for(lambda: t.host.kernel.pending_ask(started.run_id) is not None, WAIT)
        before = t.host.kernel.get_generation(started.run_id)
        refused = await t.host.handoff(started.run_id)

        assert (refused.status, refused.reason, refused.runtime) == ("refused", "ask_pending", "ray")
        assert t.host.kernel.get_generation(started.run_id) == before  # still in-process, as it was
        child = t.host.runs.child(started.run_id)
        assert not child.handing_off and not child.finished.is_set()
        assert t.host.runs.runtime_handle(started.run_id).kind == "inprocess" and not t.host.runs.on_worker(
            started.run_id
        )
        assert t.host.runtime.made("ray") is None  # the Ray runtime was never made: no connection


async def test_a_host_killed_after_placing_a_moved_agent_on_ray_is_adopted_and_delivers_once(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    moved = {
        "text": "moved result",
        "delay_ms": 1000,
        "expect": {"last_user_contains": REMOTE_HANDOFF_PROMPT},
    }
    write_script(env, "team", {**LEAD, "agents": {"*": [SLOW, moved]}})
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(DRIVER),
        str(env),
        ray_cluster.address,
        namespace,
        "--handoff",
        "mover",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "CORRAL_FAULTS": "before_pane_recorded"},
    )
    await asyncio.wait_for(process.communicate(), WAIT * 3)
    assert process.returncode == -signal.SIGKILL  # killed after the worker took it, before recording it
    store = Repositories.open(env / "home" / "corral.db")
    try:
        generation = store.kernel.generation_by_label("mover")
        assert generation is not None and generation.runtime_kind == "ray" and generation.pane_id is None
    finally:
        store.close()
    settings = Settings(
        runtime="ray",
        ray=RaySettings(address=ray_cluster.address, namespace=namespace, num_cpus=0.1, agents_per_worker=4),
    )
    async with team(env, "team", settings=settings, session_path=Path((env / "lead.txt").read_text())) as t:
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "moved result" in str(results[0]["content"])
        assert t.host.kernel.generation_by_label("mover") is None  # finalized
