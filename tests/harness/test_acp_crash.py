"""An ACP agent's host killed with SIGKILL (a fault point, or mid-turn): on restart the agent's result
is delivered exactly once, or the agent is lost — never a duplicate."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from corral.orchestration import RESULT_TYPE, Repositories
from tests._waits import eventually
from tests.orchestration._host_helpers import STARTUP_WAIT, write_script

HERE = Path(__file__).parent
DRIVER = HERE / "acp_crash_driver.py"
FAKE = HERE / "fake_acp_agent.py"


def _setup(root: Path) -> dict[str, str]:
    agents = root / "agents"
    agents.mkdir(parents=True)
    front = {"name": "fake", "harness": "acp", "command": [sys.executable, str(FAKE)], "runtime": "inprocess"}
    (agents / "fake.md").write_text(f"---\n{json.dumps(front)}\n---\n")
    write_script(root, "lead", {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"})
    return {
        **os.environ,
        "CORRAL_HOME": str(root / "home"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "CORRAL_SCRIPTS": str(root / "scripts"),
        "FAKE_ACP_LOG": str(root / "fake.jsonl"),
    }


def _run(root: Path, task: str, env: dict[str, str], *again: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DRIVER), str(root), task, *again],
        env=env,
        capture_output=True,
        text=True,
        timeout=STARTUP_WAIT * 2,
    )


def _lead_results(root: Path) -> list[str]:
    lead = Path((root / "lead.txt").read_text())
    found = []
    for line in lead.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "custom_message" and entry.get("customType") == RESULT_TYPE:
            found.append(str(entry["content"]))
    return found


def test_a_result_stored_before_the_crash_is_delivered_once_after_restart(tmp_path: Path) -> None:
    env = _setup(tmp_path)
    crashed = _run(tmp_path, "TOOL: read notes", {**env, "CORRAL_FAULTS": "after_result_row"})
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
    assert _lead_results(tmp_path) == []
    resumed = _run(tmp_path, "TOOL: read notes", env)
    assert resumed.returncode == 0 and "done" in resumed.stdout, resumed.stderr[-2000:]
    results = _lead_results(tmp_path)
    assert len(results) == 1 and "The notes say 42." in results[0]
    again = _run(tmp_path, "TOOL: read notes", env)  # a third start delivers nothing more
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(_lead_results(tmp_path)) == 1


async def _kill_host_mid_turn(root: Path, env: dict[str, str]) -> tuple[int, int]:
    """Start the driver on a prompt that keeps the agent's turn going (with a `sleep` child), check the
    agent's group is recorded as held, SIGKILL the driver; the agent's and its child's pids."""
    pids = root / "pids"
    driver = subprocess.Popen(
        [sys.executable, str(DRIVER), str(root), f"SPAWN {pids} then wait"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await eventually(lambda: pids.exists() and len(pids.read_text().split()) == 2, timeout=STARTUP_WAIT)
        agent_pid, child_pid = (int(pid) for pid in pids.read_text().split())
        held = list((root / "home" / "held").glob("*.json"))
        assert [path.name.split("-")[0] for path in held] == [str(agent_pid)]  # recorded while it runs
        driver.send_signal(signal.SIGKILL)
        driver.wait(STARTUP_WAIT)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    return agent_pid, child_pid


def _lost_with_no_result(root: Path) -> bool:
    with Repositories.open(root / "home" / "corral.db") as store:
        (generation,) = store.kernel.generations(include_finalized=True)
    return (
        generation.presence == "lost" and generation.completed_request_id is None and not _lead_results(root)
    )


async def test_a_host_killed_mid_turn_leaves_a_lost_agent_and_no_result(tmp_path: Path) -> None:
    env = _setup(tmp_path)
    agent_pid, _child = await _kill_host_mid_turn(tmp_path, env)
    resumed = _run(tmp_path, "unused", env)
    assert resumed.returncode == 0 and "done" in resumed.stdout, resumed.stderr[-2000:]
    assert _lost_with_no_result(tmp_path)
    # The agent's stdin closed with its host; an agent that ends on end of input (the fake) is gone.
    await eventually(lambda: not _running(agent_pid))


async def test_an_agent_that_outlives_its_killed_host_is_ended_by_the_next_host(tmp_path: Path) -> None:
    env = {**_setup(tmp_path), "FAKE_ACP_STAY": "1"}  # it does not exit when its input closes
    agent_pid, child_pid = await _kill_host_mid_turn(tmp_path, env)
    try:
        # Its host is gone and its input closed, and the agent and its child still run.
        assert _running(agent_pid) and _running(child_pid)
        resumed = _run(tmp_path, "unused", env)
        assert resumed.returncode == 0 and "done" in resumed.stdout, resumed.stderr[-2000:]
        await eventually(lambda: not _running(agent_pid) and not _running(child_pid))
        assert list((tmp_path / "home" / "held").glob("*.json")) == []
        assert _lost_with_no_result(tmp_path)
    finally:
        for pid in (agent_pid, child_pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() and not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("how", ["loaded", "seeded"])
def test_a_host_killed_after_the_continued_session_is_ready_loses_only_the_continued_run(
    tmp_path: Path, how: str
) -> None:
    env = _setup(tmp_path)
    if how == "loaded":  # the fake offers session/load
        (tmp_path / "acp-sessions").mkdir()
        env["FAKE_ACP_SESSIONS"] = str(tmp_path / "acp-sessions")
    crashed = _run(tmp_path, "first task ALPHA", {**env, "CORRAL_FAULTS": f"acp_session_{how}"}, "RECALL")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
    log = [json.loads(line) for line in (tmp_path / "fake.jsonl").read_text().splitlines()]
    methods = [m.get("method") for m in log]
    assert methods.count("session/prompt") == 1  # killed before the continued run's prompt
    assert ("session/load" in methods) is (how == "loaded")
    assert len(_lead_results(tmp_path)) == 1  # the first run's result was delivered before the crash
    for _ in range(2):  # a restart, and a third start, deliver nothing more
        resumed = _run(tmp_path, "first task ALPHA", env, "RECALL")
        assert resumed.returncode == 0 and "done" in resumed.stdout, resumed.stderr[-2000:]
        results = _lead_results(tmp_path)
        assert len(results) == 1 and "Hello from the fake agent." in results[0]
    with Repositories.open(tmp_path / "home" / "corral.db") as store:
        first, second = sorted(store.kernel.generations(include_finalized=True), key=lambda g: g.created_at)
    assert first.completed_request_id is not None
    assert second.presence == "lost" and second.completed_request_id is None
    assert first.session_id == second.session_id
