"""The `corral` command starts without the cyclic garbage collector.

A run imports ~1,500 modules (corral, pydantic-ai and the provider SDK). Nearly everything they
create lives as long as the process, and none of it is cyclic garbage, yet the collector scans it
again and again as the heap grows: ~0.2 s of CPU before the first model request. So the console
script (`corral.cli.console_main`) pauses the collector before it runs the command
(`pause_for_startup`), and it comes back once the command has started (`started`): the objects
made so far are frozen (`gc.freeze`, the collector never scans them again) and collection is
enabled as usual.

`started` is called where every long-running command passes once its agent exists — the app, `corral
run`, `corral mcp` (when it opens its lead) and `corral worker` all build an `AgentSession` — and by
`corral.cli.main` when any command returns. A provider SDK still being imported in the background
(`llm/_deferred.py`) keeps the pause until that import ends (`hold`, taken before its thread
starts), so its ~1,000 modules are frozen with the rest.

Nothing here acts unless `pause_for_startup` ran: a program that imports corral as a library keeps
its collector as it set it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable

__all__ = ["hold", "owns_process", "pause_for_startup", "started"]


class _Pause:
    """The collector's start-up pause: held by the start-up and by background imports."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holds = 0
        self._starting = False
        self.owned = False
        """Whether the `corral` command runs this process (it paused the collector at start-up)."""

    def pause(self) -> None:
        with self._lock:
            self.owned = True
            if self._starting or self._holds or not gc.isenabled():
                return
            gc.disable()
            self._starting = True
            self._holds = 1

    def started(self) -> None:
        with self._lock:
            if not self._starting:
                return
            self._starting = False
            self._release()

    def hold(self) -> bool:
        with self._lock:
            if not self._holds:
                return False
            self._holds += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._release()

    def _release(self) -> None:
        self._holds -= 1
        if self._holds == 0:
            gc.freeze()
            gc.enable()


_PAUSE = _Pause()


def pause_for_startup() -> None:
    """Pause the collector until the command has started (if it is enabled and not paused already)."""
    _PAUSE.pause()


def started() -> None:
    """The command has started: freeze what start-up made and collect again (once the pause's other
    holders are done). Does nothing when start-up did not pause the collector or already resumed it."""
    _PAUSE.started()


def owns_process() -> bool:
    """Whether the `corral` command runs this process (not a program using corral as a library):
    process-wide collector policies (the host's `gc.freeze`, `orchestration/host/_heap.py`) apply
    only then."""
    return _PAUSE.owned


def hold() -> Callable[[], None]:
    """Keep a start-up pause (if there is one) until the returned function is called (once): for an
    import about to run in the background."""
    if not _PAUSE.hold():
        return _nothing
    released = threading.Event()

    def release() -> None:
        if not released.is_set():
            released.set()
            _PAUSE.release()

    return release


def _nothing() -> None:
    return None
