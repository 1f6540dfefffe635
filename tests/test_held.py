"""`corral._held`: process groups a host started, ended by a later host once their host is gone."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from corral._held import HeldProcesses
from corral._process import stat_fields
from tests._held_records import group, orphan_record
from tests._waits import eventually

__all__ = ["group"]


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
    path = orphan_record(held, group.pid)
    [seen] = held.reap_orphans(dry_run=True)
    assert seen.running and seen.pgid == group.pid and seen.what == "ACP agent fake"
    assert group.poll() is None and path.exists()  # a dry run changes nothing
    [ended] = held.reap_orphans()
    assert ended.running
    assert group.wait(timeout=30) == -signal.SIGKILL
    assert not path.exists()


def test_a_reused_pid_is_never_killed(tmp_path: Path, group: subprocess.Popen[bytes]) -> None:
    held = HeldProcesses(tmp_path / "held")
    path = orphan_record(held, group.pid)
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
    path = orphan_record(held, leader.pid)
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
