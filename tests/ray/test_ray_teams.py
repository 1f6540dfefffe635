"""Teams agents on the Ray runtime: a real local two-node cluster, scripted models.

With `runtime = "ray"`, `spawn_agent` / `spawn_swarm_agents` place members on Ray worker actors. Their
tools are the in-process member tools over a port whose calls cross to the lead's host as facts;
the host applies them through its `Teams` (reports, messages, claims, checks) and pushes the answers
and the member's inbox back. Each test asserts what the lead's session and the store hold.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path

import pytest

from corral.orchestration.teams.commands import SendMessageRequest
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.orchestration.teams.results import MemberSnapshot
from corral.settings import RaySettings, Settings, TeamsSettings
from tests._waits import eventually
from tests.orchestration._host_helpers import WAIT, team
from tests.orchestration.teams._git_helpers import make_repo
from tests.orchestration.teams._teams_helpers import TeamsEnv, teams_env, write_script
from tests.ray.conftest import RayNodes, RayTestCluster

DRIVER = Path(__file__).parent / "ray_host_driver.py"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from tests.orchestration._host_helpers import prepare_env

    prepare_env(tmp_path, monkeypatch)
    return tmp_path


def ray_settings(cluster: RayTestCluster, **extra: object) -> Settings:
    options: dict[str, object] = {
        "address": cluster.address,
        "namespace": f"t-{uuid.uuid4().hex[:8]}",
        "num_cpus": 0.1,
        "agents_per_worker": 4,
        **extra,
    }
    return Settings(
        runtime="ray",
        ray=RaySettings(**options),  # type: ignore[arg-type]
        teams=TeamsSettings(read_sandbox="off"),
    )


def _report(content: str, **expect: object) -> dict[str, object]:
    step: dict[str, object] = {
        "tool_calls": [{"name": "report_and_exit", "args": {"content": content, "outcome": "succeeded"}}]
    }
    if expect:
        step["expect"] = expect
    return step


def _wait_for(gate: Path) -> dict[str, object]:
    command = f"while [ ! -e {gate} ]; do sleep 0.01; done; echo through"
    return {"tool_calls": [{"name": "bash", "args": {"command": command}}]}


def _reports(env: TeamsEnv) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for entry in env.lead_custom(TEAM_REPORT_TYPE):
        found.setdefault(entry["details"]["name"], []).append(str(entry["content"]))
    return found


async def test_a_swarm_on_ray_reports_once_each_and_takes_messages_claims_and_stop(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    work = env / "work"
    gate, never = work / "go", work / "never"
    members = [
        {"name": "r1", "prompt": "Look.", "model_slot": "read-review"},
        {"name": "w1", "prompt": "Change a.txt.", "model_slot": "write-patch"},
        {"name": "s1", "prompt": "Wait.", "model_slot": "read-collect"},
    ]
    write_script(
        env,
        "lead",
        {
            "steps": [
                {"tool_calls": [{"name": "spawn_swarm_agents", "args": {"agents": members}}]},
                {"text": "Waiting for the reports."},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "r1": [  # ends without a report: the recovery prompt, then its text is the report
                    {"tool_calls": [{"name": "bash", "args": {"command": "echo pid=$$"}}]},
                    {"text": "r1 looked around"},
                    {"expect": {"last_user_contains": "without a final report"}, "text": "r1 found nothing"},
                ],
                "w1": [
                    {
                        "tool_calls": [
                            {"name": "claim_file", "args": {"paths": ["a.txt"]}},
                            {"name": "send_message", "args": {"content": "w1 is on it", "summary": "status"}},
                        ]
                    },
                    _wait_for(gate),
                    {
                        "expect": {"context_contains": ["the secret is 42"]},
                        "tool_calls": [{"name": "write", "args": {"path": "a.txt", "content": "42\n"}}],
                    },
                    _report("w1 wrote a.txt with 42"),
                ],
                "s1": [_wait_for(never)],
            },
        },
    )
    async with teams_env(env, "lead", settings=ray_settings(ray_cluster)) as t:
        await t.lead.prompt("go")
        spawned = t.tool_results("spawn_swarm_agents")[0]
        assert not spawned.get("isError"), spawned
        repos = t.host.repositories.teams
        lead_id = t.caller.session_id
        runs = {s["name"]: s["runId"] for s in spawned["details"]["spawned"]}
        assert [s["mode"] for s in spawned["details"]["spawned"]] == ["ray"] * 3
        for name in ("r1", "w1", "s1"):
            generation = t.host.kernel.get_generation(runs[name])
            assert generation is not None and generation.runtime_kind == "ray", name
            assert generation.pane_id is not None and generation.pane_id.startswith("ray:corral-")
            assert generation.pid is not None and generation.pid != os.getpid()
        # w1's claim and its message to the lead went through the lead's `Teams`.
        await eventually(lambda: [c.path for c in repos.roster.file_claims(lead_id)] == ["a.txt"], t.host)
        await eventually(
            lambda: any(
                m.sender == "w1" and m.content == "w1 is on it"
                for m in repos.messages.read_team_inbox(
                    lead_id, "team-lead", unread_only=False, mark_as_read=False
                )
            ),
            t.host,
        )
        # A message from the lead reaches w1 on its worker (injected once, then marked read).
        sent = await t.teams.messages.send_message(t.caller, SendMessageRequest("w1", "the secret is 42"))
        assert sent.recipient == "w1"
        await eventually(
            lambda: all(
                m.read_at is not None
                for m in repos.messages.read_team_inbox(lead_id, "w1", unread_only=False, mark_as_read=False)
            ),
            t.host,
        )
        gate.write_text("")
        await eventually(lambda: set(_reports(t)) >= {"r1", "w1"}, t.host)
        assert (work / "a.txt").read_text() == "42\n"
        # Status and health see s1 working on its Ray worker.
        status = await t.teams.control.status(t.caller, "s1")
        (s1_row,) = [m for m in status.agents if isinstance(m, MemberSnapshot) and m.name == "s1"]
        assert s1_row.phase == "working" and s1_row.in_pane and (s1_row.pane_id or "").startswith("ray:")
        health = await t.teams.control.check_teammate(t.caller, "s1")
        assert health.health == "healthy" and health.alive
        # An interrupt reaches s1 on its worker: its running bash is cancelled, the agent stays.
        interrupted = await t.teams.control.interrupt_teammate(t.caller, "s1")
        assert interrupted.status == "interrupted", interrupted
        s1_live = t.host.kernel.get_generation(runs["s1"])
        assert s1_live is not None and s1_live.phase == "active"
        # Stop reaches the member on Ray: its run ends and its generation is finalized.
        stopped = await t.teams.control.stop_teammate(t.caller, "s1", "enough")
        assert stopped.stopped, stopped
        await t.quiet()
        reports = _reports(t)
        assert reports["r1"] == [reports["r1"][0]] and "r1 found nothing" in reports["r1"][0]
        assert len(reports["w1"]) == 1 and "w1 wrote a.txt with 42" in reports["w1"][0]
        assert repos.roster.team_member(runs["s1"]) is not None
        s1 = t.host.kernel.get_generation(runs["s1"])
        assert s1 is None or s1.phase == "finalized"
        # The reports are stored once each, and the claims were released with the runs.
        stored = {r.name: r for r in repos.reports.team_reports(lead_id)}
        assert len(repos.reports.team_reports(lead_id)) == 2
        assert stored["r1"].report_source == "assistant-text" and stored["r1"].content == "r1 found nothing"
        assert stored["w1"].report_source == "report_and_exit"
        assert repos.roster.file_claims(lead_id) == ()


async def test_an_assigned_check_of_a_member_on_ray_runs_on_its_node(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    make_repo(env / "work", {"README": "x\n"})
    check = {
        "name": "node",
        "command": f"echo $PPID > {env / 'check-ppid.txt'} && echo checked-on-node && test -f made.txt",
        "timeoutSeconds": 60,
    }
    write_script(
        env,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {
                                "name": "c1",
                                "prompt": "Make made.txt.",
                                "model_slot": "write-patch",
                                "checks": [check],
                            },
                        }
                    ]
                },
                {"text": "Waiting for the report."},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "c1": [
                    {"tool_calls": [{"name": "write", "args": {"path": "made.txt", "content": "x\n"}}]},
                    _report("c1 made it"),
                ]
            },
        },
    )
    async with teams_env(env, "lead", settings=ray_settings(ray_cluster)) as t:
        await t.lead.prompt("go")
        spawned = t.tool_results("spawn_agent")[0]["details"]
        generation = t.host.kernel.get_generation(spawned["runId"])
        assert generation is not None and generation.runtime_kind == "ray"
        worker_pid = generation.pid
        assert worker_pid is not None and worker_pid != os.getpid()
        await eventually(lambda: "c1" in _reports(t), t.host)
        await t.quiet()
        (entry,) = t.lead_custom(TEAM_REPORT_TYPE)
        (check_id,) = entry["details"]["verification"]["check_ids"]
        record = t.host.repositories.teams.checks.get_check(check_id)
        assert entry["details"]["verification"]["state"] == "passed", record
        # The command ran in the worker process's workspace on its node (its shell's parent is the
        # worker actor), and its output is in the check's log on the lead's machine.
        assert int((env / "check-ppid.txt").read_text()) == worker_pid
        assert record is not None and record.state == "passed"
        assert "checked-on-node" in Path(record.log_path).read_text()


async def test_host_sigkill_while_members_work_on_ray_then_resume_delivers_each_report_once(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    gate = env / "work" / "go"
    agents = {
        "fast": [_wait_for(gate), _report("fast report")],
        "slow": [{**_report("slow report"), "delay_ms": 3000}],
    }
    write_script(env, "team", {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": agents})
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(DRIVER),
        str(env),
        ray_cluster.address,
        namespace,
        "--teams",
        "fast",
        "slow",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), WAIT * 3)
        assert line.strip() == b"started"
    finally:
        process.kill()  # SIGKILL: the host dies without cleanup, its members keep working on Ray
        await process.wait()
    gate.write_text("")  # the fast member reports while no host runs: its call waits on its worker
    lead_path = Path((env / "lead.txt").read_text())
    settings = ray_settings(ray_cluster, namespace=namespace)
    async with team(env, "team", settings=settings, session_path=lead_path, surfaces=("teams",)) as t:
        await eventually(lambda: len(t.lead_entries(TEAM_REPORT_TYPE)) == 2, t.host)
        await t.quiet()
        contents = sorted(str(r["content"]) for r in t.lead_entries(TEAM_REPORT_TYPE))
        assert len(contents) == 2, contents
        assert "fast report" in contents[0] and "slow report" in contents[1]
        lead_id = t.caller.session_id
        stored = t.host.repositories.teams.reports.team_reports(lead_id)
        assert sorted(r.name for r in stored) == ["fast", "slow"]
        for member in t.host.repositories.teams.roster.team_members(lead_id):
            generation = t.host.kernel.get_generation(member.run_id)
            assert generation is None or generation.phase == "finalized"
    # A second resume delivers nothing again.
    async with team(env, "team", settings=settings, session_path=lead_path, surfaces=("teams",)) as t:
        await t.quiet()
        assert len(t.lead_entries(TEAM_REPORT_TYPE)) == 2


async def test_spawns_queue_while_the_cluster_has_no_room_and_start_when_a_member_ends(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    # One agent per worker, each worker asking for 400 of node-1's 1000 units of its label
    # resource: the cluster hosts two members; the third waits for room.
    gates = {name: env / "work" / f"go-{name}" for name in ("a1", "a2", "a3")}
    members = [{"name": name, "prompt": "Wait.", "model_slot": "read-collect"} for name in gates]
    write_script(
        env,
        "lead",
        {
            "steps": [
                {"tool_calls": [{"name": "spawn_swarm_agents", "args": {"agents": members}}]},
                {"text": "Waiting for the reports."},
            ],
            "on_exhausted": "repeat_last",
            "agents": {name: [_wait_for(gate), _report(f"{name} done")] for name, gate in gates.items()},
        },
    )
    settings = ray_settings(
        ray_cluster, num_cpus=0, agents_per_worker=1, resources={ray_cluster.worker.label: 400}
    )
    async with teams_env(env, "lead", settings=settings) as t:
        await t.lead.prompt("go")
        spawned = {s["name"]: s for s in t.tool_results("spawn_swarm_agents")[0]["details"]["spawned"]}
        assert [spawned[n]["queued"] for n in ("a1", "a2", "a3")] == [False, False, True], spawned
        assert spawned["a3"]["queuePosition"] == 1
        repos = t.host.repositories.teams
        lead_id = t.caller.session_id
        assert repos.roster.live_team_member(lead_id, "a3") is None  # not started: no generation
        gates["a2"].write_text("")  # a2 reports and ends: its worker's slot frees, a3 takes it
        await eventually(lambda: repos.roster.live_team_member(lead_id, "a3") is not None, t.host)
        a3 = repos.roster.live_team_member(lead_id, "a3")
        assert a3 is not None
        generation = t.host.kernel.get_generation(a3.run_id)
        assert generation is not None and generation.runtime_kind == "ray"
        gates["a1"].write_text("")
        gates["a3"].write_text("")
        await eventually(lambda: set(_reports(t)) == {"a1", "a2", "a3"}, t.host)
        await t.quiet()
        assert {name: len(found) for name, found in _reports(t).items()} == {"a1": 1, "a2": 1, "a3": 1}


async def test_a_host_killed_right_after_storing_a_ray_members_report_delivers_it_once_on_resume(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    # The host dies (a fault point: SIGKILL) in the middle of applying the member's report call:
    # the report row is committed, the answer never reached the worker. The next host gets the call
    # again from the worker, answers it from the stored report, and delivers that report once.
    write_script(
        env,
        "team",
        {
            "steps": [{"text": "noted"}],
            "on_exhausted": "repeat_last",
            "agents": {"once": [_report("once report")]},
        },
    )
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(DRIVER),
        str(env),
        ray_cluster.address,
        namespace,
        "--teams",
        "once",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "CORRAL_FAULTS": "after_result_row"},
    )
    try:
        assert await asyncio.wait_for(process.wait(), WAIT * 3) == -9  # killed at the fault point
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    lead_path = Path((env / "lead.txt").read_text())
    settings = ray_settings(ray_cluster, namespace=namespace)
    async with team(env, "team", settings=settings, session_path=lead_path, surfaces=("teams",)) as t:
        lead_id = t.caller.session_id
        assert [r.name for r in t.host.repositories.teams.reports.team_reports(lead_id)] == ["once"]
        await eventually(lambda: len(t.lead_entries(TEAM_REPORT_TYPE)) == 1, t.host)
        await t.quiet()
        (entry,) = t.lead_entries(TEAM_REPORT_TYPE)
        assert "once report" in str(entry["content"])
        assert [r.name for r in t.host.repositories.teams.reports.team_reports(lead_id)] == ["once"]
    async with team(env, "team", settings=settings, session_path=lead_path, surfaces=("teams",)) as t:
        await t.quiet()
        assert len(t.lead_entries(TEAM_REPORT_TYPE)) == 1


async def test_a_member_on_a_removed_node_is_lost_and_its_group_slot_settles_interrupted(
    env: Path, ray_cluster: RayTestCluster, ray_nodes: RayNodes
) -> None:
    node = ray_nodes.add(num_cpus=2)
    members = [{"name": "doomed", "prompt": "Wait.", "model_slot": "read-collect"}]
    write_script(
        env,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_swarm_agents",
                            "args": {"agents": members, "completion_group": {"delivery": "all-settled"}},
                        }
                    ]
                },
                {"text": "Waiting for the reports."},
            ],
            "on_exhausted": "repeat_last",
            "agents": {"doomed": [_wait_for(env / "work" / "never")]},
        },
    )
    async with teams_env(env, "lead", settings=ray_settings(ray_cluster, resources={node.label: 1})) as t:
        await t.lead.prompt("go")
        (spawned,) = t.tool_results("spawn_swarm_agents")[0]["details"]["spawned"]
        run_id = spawned["runId"]
        repos = t.host.repositories.teams
        member = repos.roster.team_member(run_id)
        assert member is not None and member.slot_id is not None
        ray_nodes.remove(node)

        def settled() -> bool:
            slot = repos.groups.completion_slot(member.slot_id)  # type: ignore[arg-type]
            return slot is not None and slot.status == "interrupted"

        await eventually(settled, t.host)
        generation = t.host.kernel.get_generation(run_id)
        assert generation is not None and generation.presence == "lost"
        assert generation.diagnostic is not None and node.node_id[:12] in generation.diagnostic
        slot = repos.groups.completion_slot(member.slot_id)
        assert slot is not None and generation.diagnostic in (slot.reason or "")
