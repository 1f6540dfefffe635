"""Processes a corral host holds outside corral, found again after the host died.

An ACP agent runs as its own process group (`harness/acp/_rpc.py`), and some agents do not exit when
their input closes (Gemini CLI; a node wrapper that leaves its native child). When the host that
started one is killed (SIGKILL, a crash, the machine's OOM killer), nothing would end it: it keeps
its model connection, and its spend, with no one to deliver its result to.

So a host records each group it starts here, one small file per group under
`<data root>/held/` (`HeldProcesses.hold`), and removes it once the group is ended
(`release`). `reap_orphans` — run when a lead host recovers its tree and by `corral agents reap` —
ends every recorded group whose host is gone and whose leader is still the very process that was
started (its `ProcessStamp`: pid, start time and boot, so a reused pid is never killed), then removes
the record. A record whose group has already gone is simply removed. A group whose host is alive (another
corral process) is left alone. Descendants that left the group (`setsid`) are not found.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path

from corral._paths import corral_home, ensure_private_dir
from corral._process import ProcessStamp, group_members, process_stamp, signal_group

__all__ = ["HeldProcesses", "Orphan"]

_VERSION = 1


@dataclass(frozen=True, slots=True)
class Orphan:
    """A recorded process group whose host is gone, as `reap_orphans` found it."""

    pgid: int
    what: str
    """What it was (`ACP agent claude-agent-acp`)."""
    host_pid: int
    running: bool
    """Whether the group was still running when found (`reap_orphans` ended it; `False`: it had gone
    by itself and only its record was left)."""


def _stamp_json(stamp: ProcessStamp) -> dict[str, object]:
    return {"pid": stamp.pid, "startTicks": stamp.start_ticks, "bootId": stamp.boot_id}


def _stamp_of(value: object) -> ProcessStamp | None:
    if not isinstance(value, dict):
        return None
    pid, ticks, boot = value.get("pid"), value.get("startTicks"), value.get("bootId")
    if not isinstance(pid, int) or not isinstance(ticks, int) or not isinstance(boot, str):
        return None
    return ProcessStamp(pid, ticks, boot)


def _orphaned_members(leader: ProcessStamp) -> list[int]:
    """What is left of the group `leader` led: `[leader.pid]` when the leader is the recorded process
    (the whole group is signalled through it); else — the leader gone and its pid not reused, so
    the group id is still this group's (a new group needs a live leader with that pid) — the
    members left in it; else nothing (after a reboot every process of the record is gone, and the
    group id may be anyone's).

    Left: within one boot, a group that emptied, whose pid then led a new group whose leader exited
    too, would be taken for ours; that needs the pid space (4 M on 64-bit Linux) to wrap meanwhile."""
    if leader.alive():
        return [leader.pid]
    if process_stamp(leader.pid) is not None or not leader.same_boot():  # the pid is taken, or rebooted
        return []
    return group_members(leader.pid)


class HeldProcesses:
    """The record of the process groups this data root's hosts started (see the module docstring)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = corral_home() / "held" if root is None else root

    def _path(self, stamp: ProcessStamp) -> Path:
        return self.root / f"{stamp.pid}-{stamp.start_ticks}.json"

    def hold(self, pgid: int, *, what: str) -> Path | None:
        """Record the process group led by `pgid`, started by this process; `None` when nothing was
        recorded: the leader is already gone, there is no `/proc` to tell it apart later, or the data
        root cannot be written."""
        leader, host = process_stamp(pgid), process_stamp(os.getpid())
        if leader is None or host is None:
            return None
        path = self._path(leader)
        record = {"version": _VERSION, "what": what, "leader": _stamp_json(leader), "host": _stamp_json(host)}
        temporary = path.with_suffix(".tmp")
        try:
            ensure_private_dir(self.root)
            temporary.write_text(json.dumps(record))
            os.replace(temporary, path)
        except OSError:  # an unwritable data root must not stop the agent: it is only not recorded
            return None
        return path

    def release(self, path: Path | None) -> None:
        """Forget a group `hold` recorded (it was ended by its host)."""
        if path is not None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def running_orphans(self, *, dry_run: bool = False) -> list[Orphan]:
        """`reap_orphans`, keeping the groups that were still running (those a user is told about)."""
        return [orphan for orphan in self.reap_orphans(dry_run=dry_run) if orphan.running]

    def reap_orphans(self, *, dry_run: bool = False) -> list[Orphan]:
        """End the recorded groups whose host is gone (SIGKILL to the group) and forget them; with
        `dry_run`, only find them. A record that cannot be read is removed (kept by `dry_run`)."""
        found: list[Orphan] = []
        try:
            paths = sorted(self.root.glob("*.json"))
        except OSError:
            return found
        for path in paths:
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                record = None
            leader = _stamp_of(record.get("leader")) if isinstance(record, dict) else None
            host = _stamp_of(record.get("host")) if isinstance(record, dict) else None
            if leader is None or host is None or not isinstance(record, dict):
                if not dry_run:
                    self.release(path)
                continue
            if host.alive():
                continue
            members = _orphaned_members(leader)
            found.append(Orphan(leader.pid, str(record.get("what", "")), host.pid, running=bool(members)))
            if not dry_run:
                for pid in members:
                    if pid == leader.pid:
                        signal_group(pid, signal.SIGKILL)
                    else:
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.kill(pid, signal.SIGKILL)
                self.release(path)
        return found
