"""Facts about operating-system processes, shared by the runtimes, the sandbox and the harnesses."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ProcessStamp",
    "children_by_parent",
    "group_members",
    "kill_group",
    "pid_alive",
    "process_stamp",
    "process_tree",
    "signal_group",
    "stat_fields",
]


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (a process of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of `/proc/<pid>/stat` after the command (field 3, the state, first), or `None`
    when there is no such process (or no `/proc`). The command may hold spaces and parentheses:
    the fields after its last `)` are fixed."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()


def _numbered() -> list[str]:
    """The pids in `/proc` now (none where there is no `/proc`)."""
    try:
        return [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return []


def children_by_parent() -> dict[int, list[int]]:
    """Every process's children now, by parent pid (from `/proc`; empty where there is none)."""
    children: dict[int, list[int]] = {}
    for entry in _numbered():
        fields = stat_fields(entry)
        if fields is not None and len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (read from `/proc`; just `[pid]` where there is no `/proc`)."""
    children = children_by_parent()
    found, frontier = [pid], [pid]
    while frontier:
        for child in children.get(frontier.pop(), ()):
            found.append(child)
            frontier.append(child)
    return found


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes in process group `pgid` now (from `/proc`)."""
    members = []
    for entry in _numbered():
        fields = stat_fields(entry)
        if fields is not None and len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def signal_group(pgid: int, signum: int) -> None:
    """Send `signum` to process group `pgid`; a group already gone (or not ours) is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def kill_group(process: asyncio.subprocess.Process, grace: float) -> None:
    """End the process group `process` leads: SIGTERM, up to `grace` seconds for its leader to exit,
    then SIGKILL whatever is left; returns once the leader is reaped."""
    signal_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), grace)
    signal_group(process.pid, signal.SIGKILL)
    await process.wait()


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


@dataclass(frozen=True, slots=True)
class ProcessStamp:
    """One process, told apart from a later one that reuses its pid: its pid, its start time (clock
    ticks after boot, `/proc/<pid>/stat` field 22) and the boot it started in."""

    pid: int
    start_ticks: int
    boot_id: str

    def same_boot(self) -> bool:
        """Whether the machine has not restarted since this process started."""
        return self.boot_id == _boot_id()

    def alive(self) -> bool:
        """Whether this very process still exists (not a zombie, not a later one with its pid)."""
        if not self.same_boot():
            return False
        fields = stat_fields(self.pid)
        if fields is None or len(fields) < 20 or fields[0] == "Z":
            return False
        return int(fields[19]) == self.start_ticks


def process_stamp(pid: int) -> ProcessStamp | None:
    """The stamp of process `pid` now, or `None` when it does not exist (or there is no `/proc`)."""
    fields = stat_fields(pid)
    if fields is None or len(fields) < 20:
        return None
    return ProcessStamp(pid, int(fields[19]), _boot_id())
