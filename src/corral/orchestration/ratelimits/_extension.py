"""Rate-limit waits as a host extension: each run's `rate_limit_wait` events, kept in the store."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from corral.agent import RateLimitWaitEvent
from corral.llm import EndpointKey, current_rate_limiter, install_window_source
from corral.orchestration.errors import OrchestrationError
from corral.orchestration.host.ports import HostExtension

from ._repository import RateLimitWaits, RateLimitWindows
from .records import RateLimitWaitRecord, SharedWindow, SharedWindows

if TYPE_CHECKING:
    from corral.agent import AgentEvent
    from corral.orchestration.store._database import Database

__all__ = ["RateLimitsExtension", "StoredWindows", "stored_waits"]


class StoredWindows:
    """The store as the limiter's `WindowSource`: windows shared by the host and its tmux workers.

    A store that cannot be read or written (closed, busy, full disk) shares nothing: the limiter then
    holds only the windows its own process learnt.
    """

    def __init__(self, db: Database) -> None:
        self._windows = RateLimitWindows(db)

    def stored_window(self, key: EndpointKey) -> float | None:
        """The end (Unix seconds) of the window stored for `key`, `None` without one."""
        try:
            until_ms = self._windows.until_ms(key.endpoint, key.key_id)
        except OrchestrationError:
            return None
        return None if until_ms is None else until_ms / 1000

    def store_window(self, key: EndpointKey, until: float) -> None:
        """Store that `key`'s endpoint is closed until `until` (Unix seconds)."""
        with contextlib.suppress(OrchestrationError):
            self._windows.store(key.endpoint, key.key_id, math.ceil(until * 1000))


class RateLimitsExtension(HostExtension):
    """Keeps the store's `rate_limit_waits` current for the runs of this process, and shares the
    limiter's windows with the other processes of the store (it installs `StoredWindows`)."""

    def __init__(self, db: Database, *, on_change: Callable[[], None] | None = None) -> None:
        """Args:
        db: The store's database.
        on_change: Called when a run starts or stops waiting (the host's `changed`, so front ends refresh).
        """
        self.waits = RateLimitWaits(db)
        install_window_source(StoredWindows(db))
        self._on_change = on_change
        self._waiting: set[str] = set()

    def agent_event(self, run_id: str, event: AgentEvent) -> None:
        """A run's agent started or stopped waiting for its endpoint's limiter: store it."""
        if not isinstance(event, RateLimitWaitEvent):
            return
        if event.waiting and event.reason is not None:
            self.waits.record(
                RateLimitWaitRecord(run_id, event.endpoint, event.reason, event.since_ms, event.until_ms)
            )
            self._waiting.add(run_id)
        elif run_id in self._waiting:
            self._waiting.discard(run_id)
            self.waits.clear(run_id)
        else:
            return
        if self._on_change is not None:
            self._on_change()

    def remote_fact(self, run_id: str, payload: object) -> None:
        """A Ray worker learnt an endpoint's window: this process's limiter keeps it closed too, and
        every worker gets it with its next pull (`remote_state`)."""
        if isinstance(payload, SharedWindow):
            current_rate_limiter().open_window_until(
                EndpointKey(payload.endpoint, payload.key_id), payload.until
            )

    def remote_state(self, run_id: str) -> SharedWindows | None:
        """The open `Retry-After` windows of this process's limiter (learnt here or from a worker)."""
        now = time.time()
        windows = tuple(
            SharedWindow(key.endpoint, key.key_id, until)
            for key, until in current_rate_limiter().windows()
            if until > now
        )
        return SharedWindows(windows) if windows else None

    def released(self, run_id: str) -> None:
        """The run ended: no wait of it remains."""
        if run_id in self._waiting:
            self._waiting.discard(run_id)
            self.waits.clear(run_id)

    def lost(self, run_id: str, reason: str) -> None:
        """The run is gone from this process: no wait of it remains here."""
        self.released(run_id)


def stored_waits(db: Database, run_ids: Sequence[str]) -> dict[str, RateLimitWaitRecord]:
    """The waits stored for `run_ids` (by this or another process)."""
    return RateLimitWaits(db).for_runs(run_ids)
