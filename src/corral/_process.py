"""Facts about operating-system processes, shared by the runtimes, the sandbox and the harnesses."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProcessStamp", "pid_alive", "process_stamp", "process_tree", "stat_fields"]


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


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (read from `/proc`; just `[pid]` where there is no `/proc`)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return [pid]
    for entry in entries:
        if not entry.isdigit():
            continue
        fields = stat_fields(entry)
        if fields is not None and len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, frontier = [pid], [pid]
    while frontier:
        for child in children.get(frontier.pop(), ()):
            found.append(child)
            frontier.append(child)
    return found


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
