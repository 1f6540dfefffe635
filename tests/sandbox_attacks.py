"""Attack scripts shared by the sandbox tests (tests/agent/tools and tests/e2e)."""

from __future__ import annotations

__all__ = ["fork_flood"]


def fork_flood(label: str) -> str:
    """Python source that forks up to 2,000 children, each parked until a signal ends it.

    It exits with `<label> after <n>: <strerror>` when a fork is refused; the
    children go with the sandboxed command (its pid namespace or cgroup).
    """
    return (
        "import os, signal, sys\n"
        "n = 0\n"
        "try:\n"
        "    while n < 2000:\n"
        "        if os.fork() == 0:\n"
        "            signal.pause()\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError as exc:\n"
        f'    sys.exit("{label} after %d: %s" % (n, exc.strerror))\n'
    )
