"""Leaving the process quickly once a command has finished.

When a command returns, everything durable is already written and closed:
session entries are `os.write`n to their files as they happen (no Python
buffer holds them), store transactions are committed and the store is closed
by the host, and a run's temporary data root is removed. What remains is the
interpreter's own teardown — garbage-collecting every module and object of a
run (a swarm's sessions, messages and events) — which took 0.3-0.4 s and
writes nothing. `exit_now` skips it: it runs the `atexit` handlers (logging's
flush, finalizers of temporary files), flushes stdout and stderr and leaves
with `os._exit`.

It only does so when no other non-daemon thread is alive: such a thread may
still be writing, and the interpreter's normal exit waits for it. Then
`exit_now` returns and the caller exits normally.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

__all__ = ["exit_now"]


def _other_threads_running() -> bool:
    main = threading.main_thread()
    return any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate())


def exit_now(code: int) -> None:
    """Exit with `code` without the interpreter's teardown, or return when another thread still runs."""
    if _other_threads_running():
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            # As the interpreter does when stdout cannot be flushed (a closed pipe): 120.
            if stream is sys.stdout and code == 0:
                code = 120
    os._exit(code)
