"""Facts about operating-system processes, shared by the runtimes and the sandbox."""

from __future__ import annotations

import os

__all__ = ["pid_alive"]


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (a process of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
