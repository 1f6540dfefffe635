"""`corral._held`: process groups a host started, ended by a later host once their host is gone."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral._held import HeldProcesses
from corral._process import ProcessStamp, process_stamp, stat_fields
from tests._waits import eventually

SLEEPER = [sys.executable, "-c", "import time; time.sleep(300)"]


@pytest.fixture
def group() -> Iterator[subprocess.Popen[bytes]]:
    """A process leading its own group, as an ACP agent does."""
    process = subprocess.Popen(SLEEPER, start_new_session=True)
    yield process
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _gone_host() -> ProcessStamp:
    """The stamp of a process that has exited (a host killed before it could end its agents)."""
    host = subprocess.Popen([sys.executable, "-c", "pass"])
    stamp = process_stamp(host.pid)
    host.wait()
    assert stamp is not None and not stamp.alive()
    return stamp


def _orphan(held: HeldProcesses, leader: int) -> Path:
    """A record of `leader`'s group as a host that has died left it."""
    path = held.hold(leader, what="ACP agent fake")
    assert path is not None
    record = json.loads(path.read_text())
    gone = _gone_host()
    record["host"] = {"pid": gone.pid, "startTicks": gone.start_ticks, "bootId": gone.boot_id}
    path.write_text(json.dumps(record))
    return path


def test_a_group_whose_host_is_alive_is_left_alone(tmp_path: Path, group: subprocess.Popen[bytes]) -> None:
    held = HeldProcesses(tmp_path / "held")
    path = held.hold(group.pid, what="ACP agent fake")
    assert path is not None and path.exists()
    assert held.reap_orphans() == []  # this process, its host, is alive
    assert group.poll() is None and path.exists()
    held.release(path)
    assert not path.exists()


def test_a_group_whose_host_is_gone_is_ended_and_forgotten(
    tmp_path: Path, group: subprocess.Popen[bytes]
) -> None:
    held = HeldProcesses(tmp_path / "held")
    path = _orphan(held, group.pid)
    [seen] = held.reap_orphans(dry_run=True)
    assert seen.running and seen.pgid == group.pid and seen.what == "ACP agent fake"
    assert group.poll() is None and path.exists()  # a dry run changes nothing
    [ended] = held.reap_orphans()
    assert ended.running
    assert group.wait(timeout=30) == -signal.SIGKILL
    assert not path.exists()


def test_a_reused_pid_is_never_killed(tmp_path: Path, group: subprocess.Popen[bytes]) -> None:
    held = HeldProcesses(tmp_path / "held")
    path = _orphan(held, group.pid)
    record = json.loads(path.read_text())
    record["leader"]["startTicks"] -= 1  # the recorded leader started earlier: this one only has its pid
    path.write_text(json.dumps(record))
    [found] = held.reap_orphans()
    assert not found.running
    assert group.poll() is None  # not ours: left running
    assert not path.exists()


def test_an_unreadable_record_is_removed(tmp_path: Path) -> None:
    held = HeldProcesses(tmp_path / "held")
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "1-2.json").write_text("{not json")
    (tmp_path / "held" / "3-4.json").write_text(json.dumps({"leader": {"pid": "x"}}))
    assert held.reap_orphans(dry_run=True) == []
    assert len(list((tmp_path / "held").iterdir())) == 2
    assert held.reap_orphans() == []
    assert list((tmp_path / "held").iterdir()) == []


def test_an_unwritable_data_root_records_nothing(tmp_path: Path, group: subprocess.Popen[bytes]) -> None:
    (tmp_path / "file").write_text("")
    assert HeldProcesses(tmp_path / "file" / "held").hold(group.pid, what="x") is None


async def _leaderless_group(tmp_path: Path, held: HeldProcesses) -> tuple[subprocess.Popen[bytes], int, Path]:
    """A recorded group whose leader exited, leaving its child in the group: the leader, the child's
    pid and the record."""
    code = "import subprocess, sys; c = subprocess.Popen(['sleep', '300']); print(c.pid, flush=True); sys.stdin.read()"
    leader = subprocess.Popen(
        [sys.executable, "-c", code], start_new_session=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert leader.stdout is not None and leader.stdin is not None
    member = int(leader.stdout.readline())
    path = _orphan(held, leader.pid)
    leader.stdin.close()
    leader.wait(timeout=30)  # the leader is gone; its child stays in the group
    leader.stdout.close()
    assert _running(member)
    return leader, member, path


async def test_members_left_in_a_group_whose_leader_exited_are_ended(tmp_path: Path) -> None:
    held = HeldProcesses(tmp_path / "held")
    _leader, member, _path = await _leaderless_group(tmp_path, held)
    try:
        [found] = held.reap_orphans()
        assert found.running
        await eventually(lambda: not _running(member))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)


async def test_a_record_from_an_earlier_boot_kills_nothing(tmp_path: Path) -> None:
    held = HeldProcesses(tmp_path / "held")
    _leader, member, path = await _leaderless_group(tmp_path, held)
    try:
        record = json.loads(path.read_text())
        record["leader"]["bootId"] = "an-earlier-boot"  # this group id may be anyone's now
        path.write_text(json.dumps(record))
        [found] = held.reap_orphans()
        assert not found.running
        assert _running(member) and not path.exists()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)


def _running(pid: int) -> bool:
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def test_corral_agents_reap_reports_and_ends_an_orphan_group(
    tmp_path: Path, group: subprocess.Popen[bytes]
) -> None:
    corral = str(Path(sys.executable).with_name("corral"))
    env = {**os.environ, "CORRAL_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    _orphan(HeldProcesses(tmp_path / "home" / "held"), group.pid)
    shown = subprocess.run([corral, "agents", "reap", "--dry-run"], env=env, capture_output=True, text=True)
    assert f"orphan ACP agent fake (process group {group.pid})" in shown.stdout, shown.stdout + shown.stderr
    assert group.poll() is None
    reaped = subprocess.run([corral, "agents", "reap"], env=env, capture_output=True, text=True)
    assert f"ended ACP agent fake (process group {group.pid})" in reaped.stdout, reaped.stdout + reaped.stderr
    assert group.wait(timeout=30) == -signal.SIGKILL
