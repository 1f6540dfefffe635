"""Fault injection for crash tests: `fault_point(name)` SIGKILLs the process when asked to.

`CORRAL_FAULTS` names points, comma-separated, each optionally `name:N` to fire
on the N-th hit (default the first). The variable is read once; when it is
unset a fault point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

__all__ = ["fault_point"]


def _parse(spec: str) -> dict[str, int]:
    points: dict[str, int] = {}
    for part in spec.split(","):
        name, _, count = part.strip().partition(":")
        if name:
            points[name] = int(count) if count.isdigit() and int(count) > 0 else 1
    return points


_ARMED: dict[str, int] = _parse(os.environ.get("CORRAL_FAULTS", ""))
_HITS: dict[str, int] = {}


def fault_point(name: str) -> None:
    """Kill this process with SIGKILL if `CORRAL_FAULTS` arms `name` and this is the chosen hit."""
    if not _ARMED:
        return
    target = _ARMED.get(name)
    if target is None:
        return
    hits = _HITS.get(name, 0) + 1
    _HITS[name] = hits
    if hits == target:
        os.kill(os.getpid(), signal.SIGKILL)
