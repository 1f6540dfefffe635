"""Managed agents on the Ray runtime: a real local two-node cluster, scripted models.

The agents run in worker actors (other processes); the store and the session files stay with the
host, which pulls the workers' facts. Each test asserts what the lead's session and the store hold.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import socket
import sys
import uuid
from pathlib import Path

import pytest

from corral.orchestration import ASK_TYPE, RESULT_TYPE, ManagedAgentBusyError, Repositories
from corral.orchestration.surfaces import (
    CloseParams,
    ContinueParams,
    DelegateParams,
    InspectParams,
    InterruptParams,
    ListParams,
    ReplyParams,
    SteerParams,
    TranscriptParams,
)
from corral.runtime._ray import ray_runtime
from corral.settings import RaySettings, Settings
from tests._waits import eventually
from tests.orchestration._host_helpers import WAIT, prepare_env, team, write_script
from tests.ray.conftest import RayNodes, RayTestCluster

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}
DRIVER = Path(__file__).parent / "ray_host_driver.py"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    prepare_env(tmp_path, monkeypatch)
    agents = tmp_path / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "builder.md").write_text(
        "---\nname: builder\ndescription: Runs commands.\ntools: [read, bash]\n---\nRun what you are asked.\n"
    )
    return tmp_path


def ray_settings(cluster: RayTestCluster, **extra: object) -> Settings:
    options: dict[str, object] = {
        "address": cluster.address,
        "namespace": f"t-{uuid.uuid4().hex[:8]}",
        "num_cpus": 0.1,
        "agents_per_worker": 4,
        **extra,
    }
    return Settings(runtime="ray", ray=RaySettings(**options))  # type: ignore[arg-type]


def _entries(path: str | None) -> list[dict[str, object]]:
    assert path is not None
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


async def test_delegate_runs_in_a_ray_worker_and_the_result_is_delivered_once(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    agent = [
        {"tool_calls": [{"name": "bash", "args": {"command": "echo pid=$$ && echo hi > made-by-ray.txt"}}]},
        {"text": "Made the file."},
        {"text": "Continued from the streamed session."},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team", settings=ray_settings(ray_cluster)) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="builder", task="Make it"))
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.runtime_kind == "ray"
        assert generation.pane_id is not None and generation.pane_id.startswith("ray:corral-")
        assert generation.pid is not None and generation.pid != os.getpid()  # another process
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "Made the file." in str(results[0]["content"])
        assert (env / "work" / "made-by-ray.txt").read_text() == "hi\n"
        # The session file on the lead's machine holds the agent's whole conversation.
        entries = _entries(generation.session_path)
        roles = [e["message"]["role"] for e in entries if e.get("type") == "message"]  # type: ignore[index]
        assert roles == ["user", "assistant", "toolResult", "assistant"]
        final = t.host.kernel.get_generation(started.run_id)
        assert final is not None and final.phase == "finalized"
        # `continue` picks the session up from the lead's machine (the scripted model's cursor is
        # stored in the streamed entries: it answers with the next step).
        again = await t.controller.continue_(
            t.caller, ContinueParams(session=generation.session_id, task="Go on")
        )
        assert again.session_id == generation.session_id
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert [str(r["content"]).count("Continued from the streamed session.") for r in results] == [0, 1]


async def test_ask_reply_steer_interrupt_inspect_and_close_reach_the_worker(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    agent = [
        {"tool_calls": [{"name": "ask_owner", "args": {"question": "Option A or B?"}}]},
        {"text": "working on B", "delay_ms": 60000},
        {"text": "Switched to C.", "expect": {"last_user_contains": "Owner interrupt"}},
    ]
    write_script(
        env, "team", {**LEAD, "agents": {"*": agent, "second": [{"text": "slow", "delay_ms": 60000}]}}
    )
    async with team(env, "team", settings=ray_settings(ray_cluster)) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Decide"))
        await t.quiet()  # blocked on its question, which was delivered to the lead
        asks = t.lead_entries(ASK_TYPE)
        assert len(asks) == 1 and "Option A or B?" in str(asks[0]["content"])
        with pytest.raises(ManagedAgentBusyError):
            await t.controller.steer(t.caller, SteerParams(agent="scout", message="hurry"))
        replied = await t.controller.reply(t.caller, ReplyParams(agent="scout", message="Use B."))
        assert replied.to_details()["assignment_request_id"] == started.request_id
        steered = await t.controller.steer(t.caller, SteerParams(agent="scout", message="also log it"))
        request = t.host.kernel.get_request(steered.request_id)
        assert request is not None and request.accepted is True
        inspected = (await t.controller.inspect(t.caller, InspectParams(agent="scout"))).to_details()
        assert "ask_owner" in inspected["recent_output"]
        transcript = (await t.controller.transcript(t.caller, TranscriptParams(agent="scout"))).to_details()
        assert "Option A or B?" in json.dumps(transcript)
        await t.controller.interrupt(t.caller, InterruptParams(agent="scout", message="Do C instead."))
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "Switched to C." in str(results[0]["content"])
        # close ends a working agent in its worker.
        other = await t.controller.delegate(
            t.caller, DelegateParams(definition="scout", task="Wait", label="second")
        )
        listed = (await t.controller.list(t.caller, ListParams())).to_details()["agents"]
        assert [(a["agent"], a["state"]) for a in listed] == [("second", "working")]
        closed = await t.controller.close(t.caller, CloseParams(agent="second"))
        assert closed.closed == ("second",)
        handle_runs = await ray_runtime(t.host.runtime).call_worker(
            other.pane_id.removeprefix("ray:").split("@")[0], "runs_held"
        )
        assert other.run_id not in handle_runs


async def _driver(
    env: Path, address: str, namespace: str, *labels: str, faults: str = ""
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(DRIVER),
        str(env),
        address,
        namespace,
        *labels,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "CORRAL_FAULTS": faults},
    )


async def test_an_unreachable_cluster_fails_delegate_and_changes_nothing(env: Path) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "never"}]}})
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{unused.getsockname()[1]}"
    process = await _driver(env, address, "t-unreachable", "scout")
    out, _ = await asyncio.wait_for(process.communicate(), WAIT)
    assert process.returncode == 3, out
    line = out.decode().strip()
    assert line.startswith("error pane_not_ready:") and "cannot reach the Ray cluster" in line, line
    store = Repositories.open(env / "home" / "corral.db")
    try:
        assert store.kernel.generations(include_finalized=True) == () or all(
            g.phase == "finalized" for g in store.kernel.generations(include_finalized=True)
        )
        assert store.kernel.generations() == ()
    finally:
        store.close()


async def test_host_sigkill_then_resume_collects_each_result_once(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    gate = env / "work" / "go"
    command = f"while [ ! -e {gate} ]; do sleep 0.01; done; echo done"
    agents = {
        "fast": [{"tool_calls": [{"name": "bash", "args": {"command": command}}]}, {"text": "fast result"}],
        "slow": [{"text": "slow result", "delay_ms": 4000}],
    }
    write_script(env, "team", {**LEAD, "agents": agents})
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    process = await _driver(env, ray_cluster.address, namespace, "fast", "slow")
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), WAIT * 3)
        assert line.strip() == b"started"
    finally:
        process.kill()  # SIGKILL: the host dies without cleanup, its agents keep working on Ray
        await process.wait()
    gate.write_text("")  # the fast agent finishes while no host runs
    lead_path = Path((env / "lead.txt").read_text())
    settings = Settings(
        runtime="ray",
        ray=RaySettings(address=ray_cluster.address, namespace=namespace, num_cpus=0.1, agents_per_worker=4),
    )
    async with team(env, "team", settings=settings, session_path=lead_path) as t:
        await t.quiet()
        results = sorted(str(r["content"]) for r in t.lead_entries(RESULT_TYPE))
        assert len(results) == 2, results
        assert "fast result" in results[0] and "slow result" in results[1]
        for label in ("fast", "slow"):
            generation = t.host.kernel.generation_by_label(label)
            assert generation is None  # finalized
    # A second resume delivers nothing again.
    async with team(env, "team", settings=settings, session_path=lead_path) as t:
        await t.quiet()
        assert len(t.lead_entries(RESULT_TYPE)) == 2


@pytest.mark.timeout(300)  # a node's removal and a cold worker: over 120 s beside a CPU hog
async def test_a_removed_node_makes_its_agents_lost_and_the_others_finish(
    env: Path, ray_cluster: RayTestCluster, ray_nodes: RayNodes
) -> None:
    agents = {
        "doomed": [{"text": "never", "delay_ms": 60000}],
        "fine": [{"text": "fine result", "delay_ms": 1500}],
    }
    write_script(env, "team", {**LEAD, "agents": agents})
    node = ray_nodes.add(num_cpus=2)
    on_node = ray_settings(ray_cluster, resources={node.label: 1})
    async with team(env, "team", settings=on_node) as t:
        doomed = await t.controller.delegate(
            t.caller, DelegateParams(definition="builder", task="x", label="doomed")
        )
        assert doomed.pane_id is not None
        # The next agent goes to a new worker pinned to the head node (its label resource).
        ray = ray_runtime(t.host.runtime)
        ray.config = dataclasses.replace(ray.config, resources={ray_cluster.head.label: 1})
        ray.prefix += "head-"
        fine = await t.controller.delegate(
            t.caller, DelegateParams(definition="builder", task="y", label="fine")
        )
        ray_nodes.remove(node)

        def lost() -> bool:
            current = t.host.kernel.get_generation(doomed.run_id)
            return current is not None and current.presence == "lost"

        await eventually(lost, t.host)
        current = t.host.kernel.get_generation(doomed.run_id)
        assert current is not None and current.diagnostic is not None
        assert "node" in current.diagnostic and node.node_id[:12] in current.diagnostic, current.diagnostic
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "fine result" in str(results[0]["content"])
        assert t.host.kernel.get_generation(fine.run_id) is not None
        listed = (await t.controller.list(t.caller, ListParams())).to_details()["agents"]
        assert [(a["agent"], a["state"]) for a in listed] == [("doomed", "lost")]


async def test_reap_kills_only_workers_that_hold_no_live_agent(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    from corral.orchestration.host._ray_orphans import find_ray_orphans, reap_ray_orphans

    agents = {"quick": [{"text": "quick result"}], "busy": [{"text": "slow", "delay_ms": 60000}]}
    write_script(env, "team", {**LEAD, "agents": agents})
    async with team(env, "team", settings=ray_settings(ray_cluster, agents_per_worker=1)) as t:
        ray = ray_runtime(t.host.runtime)
        busy = await t.controller.delegate(
            t.caller, DelegateParams(definition="builder", task="y", label="busy")
        )
        quick = await t.controller.delegate(
            t.caller, DelegateParams(definition="builder", task="x", label="quick")
        )
        assert busy.pane_id is not None and quick.pane_id is not None
        busy_worker = busy.pane_id.removeprefix("ray:").split("@")[0]
        quick_worker = quick.pane_id.removeprefix("ray:").split("@")[0]
        assert busy_worker != quick_worker  # one agent per worker here
        await eventually(lambda: len(t.lead_entries(RESULT_TYPE)) == 1, t.host)
        for _ in range(200):  # the host ends the finished run in its worker
            if (await ray.call_worker(quick_worker, "where"))["runs"] == []:
                break
            await asyncio.sleep(0.05)
        orphans = await find_ray_orphans(t.host.kernel, ray)
        assert [(o.name, o.reason) for o in orphans] == [(quick_worker, "idle")]
        reaped, errors = await reap_ray_orphans(t.host.kernel, ray)
        assert [o.name for o in reaped] == [quick_worker] and errors == {}
        for _ in range(200):  # Ray lists a killed actor until its death is processed
            if await ray.worker_names() == [busy_worker]:
                break
            await asyncio.sleep(0.05)
        assert await ray.worker_names() == [busy_worker]
        listed = (await t.controller.list(t.caller, ListParams())).to_details()["agents"]
        assert [(a["agent"], a["state"]) for a in listed] == [("busy", "working")]


async def test_a_fan_out_of_agents_spreads_over_workers_and_each_result_arrives_once(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    steps = [{"tool_calls": [{"name": "bash", "args": {"command": "echo $$"}}]} for _ in range(3)]
    write_script(env, "team", {**LEAD, "agents": {"*": [*steps, {"text": "fan result"}]}})
    async with team(env, "team", settings=ray_settings(ray_cluster, agents_per_worker=3)) as t:
        started = await asyncio.gather(
            *(
                t.controller.delegate(
                    t.caller, DelegateParams(definition="builder", task=f"t{i}", label=f"f{i}")
                )
                for i in range(8)
            )
        )
        workers = {s.pane_id.removeprefix("ray:").split("@")[0] for s in started if s.pane_id}
        assert len(workers) == 3  # 8 agents, 3 per worker
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        by_request = sorted(str(r["details"]["request_id"]) for r in results)  # type: ignore[index]
        assert by_request == sorted(s.request_id for s in started)
        assert all("fan result" in str(r["content"]) for r in results)


async def test_a_host_killed_before_recording_the_worker_is_adopted_by_the_next_host(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "placed result", "delay_ms": 1000}]}})
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    process = await _driver(env, ray_cluster.address, namespace, "placed", faults="before_pane_recorded")
    await asyncio.wait_for(process.communicate(), WAIT * 3)
    assert process.returncode == -signal.SIGKILL  # killed after placing, before recording the worker
    store = Repositories.open(env / "home" / "corral.db")
    try:
        generation = store.kernel.generation_by_label("placed")
        assert generation is not None and generation.pane_id is None and generation.runtime_kind == "ray"
    finally:
        store.close()
    lead_path = Path((env / "lead.txt").read_text())
    settings = Settings(
        runtime="ray",
        ray=RaySettings(address=ray_cluster.address, namespace=namespace, num_cpus=0.1, agents_per_worker=4),
    )
    async with team(env, "team", settings=settings, session_path=lead_path) as t:
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "placed result" in str(results[0]["content"])
        assert t.host.kernel.generation_by_label("placed") is None  # finalized
