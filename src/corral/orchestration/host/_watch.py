"""The host's worker watch: generations that run on worker runtimes (tmux panes, Ray actors).

A worker runs its agent in another process and writes its facts (acks, results, questions) to the
shared store; each worker runtime's start step (`WorkerStart`: `ProcessWorkers` for `corral
worker` processes, or the one the composition root registers, Ray's) brings them there. The host
watches every such run the same way (`track`): the one bounded poll of the host refreshes the
runtimes' presence, reads the watched runs in one store read, marks a run whose worker is gone
`lost`, delivers a completed run's result and a pending question through the host's deliveries,
and signals `changed` when a run moved or another process committed (`ForeignWrites`, injected by
the host) — so waits on host state (`wait_for`) see workers' writes within one interval.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from corral.orchestration.errors import OrchestrationError
from corral.orchestration.host._launch import LaunchHost, ProcessWorkers, WorkerStart

if TYPE_CHECKING:
    from corral.orchestration.host.ports import Extensions
    from corral.orchestration.kernel.records import RequestRecord
    from corral.runtime import RuntimeHandle

__all__ = ["WATCH_S", "ForeignCommits", "WatchDeliveries", "WatchHost", "WorkerWatch"]

WATCH_S = 0.05
"""How often the watch polls while worker runs are watched (seconds)."""


class ForeignCommits(Protocol):
    """Whether another process committed to the store since the last call (`ForeignWrites`)."""

    def changed(self) -> bool: ...


class WatchDeliveries(Protocol):
    """What the watch hands a worker run's result or question to (the host's deliveries)."""

    def delivering(self, request_id: str) -> bool: ...

    def asking(self, ask_id: str) -> bool: ...

    async def result(self, request_id: str) -> None: ...

    async def ask(self, run_id: str, ask_id: str) -> None: ...


class WatchHost(LaunchHost, Protocol):
    """What the watch needs of the host (`Host`)."""

    on_background_error: Callable[[BaseException], None] | None

    @property
    def closed(self) -> bool: ...

    @property
    def extensions(self) -> Extensions: ...

    @property
    def deliveries(self) -> WatchDeliveries: ...

    def spawn_background(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]: ...

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> None: ...


class WorkerWatch:
    """The start steps of the worker runtimes and the watch over their runs (see the module docstring).

    Args:
        host: The host whose worker runs are watched.
        foreign_commits: Makes the check for other processes' commits (on the watch's first round).
    """

    def __init__(self, host: WatchHost, foreign_commits: Callable[[], ForeignCommits]) -> None:
        self.host = host
        self._foreign_commits = foreign_commits
        self._kinds: dict[str, Callable[[], WorkerStart]] = {}
        self._steps: dict[str, WorkerStart] = {}
        self._watcher: asyncio.Task[None] | None = None
        self._signature: object = None

    def register(self, kind: str, make: Callable[[], WorkerStart]) -> None:
        """The start step of the worker runtime `kind` (made on first use); without one, a kind starts
        `corral worker` processes (`ProcessWorkers`). The composition root registers Ray's.

        Raises:
            ValueError: `kind` has one already.
        """
        if kind in self._kinds or kind in self._steps:
            raise ValueError(f"the {kind!r} runtime has a start step already")
        self._kinds[kind] = make

    def of(self, kind: str) -> WorkerStart:
        """The start step of the worker runtime `kind` (see `register`)."""
        found = self._steps.get(kind)
        if found is None:
            make = self._kinds.get(kind)
            found = self._steps[kind] = ProcessWorkers(self.host, kind) if make is None else make()
        return found

    def track(self, run_id: str, handle: RuntimeHandle, *, pid: int | None) -> None:
        """Watch a generation on the worker runtime `handle.kind`: discover its results and asks
        through the store (its runtime's `WorkerStart.watch` brings its facts there first, e.g. Ray's
        pump, `_ray_pump.py`)."""
        host = self.host
        host.runtime.adopt(handle, pid)
        host.runs.watch(run_id, handle)
        self.of(handle.kind).watch(run_id, handle, host.kernel.get_generation(run_id))
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch(), name="corral-worker-watch")

    def untrack(self, run_id: str) -> None:
        """Stop watching a worker generation."""
        host = self.host
        handle = host.runs.runtime_handle(run_id)
        if handle is not None and handle.kind in self._steps:
            self._steps[handle.kind].unwatch(run_id)
        watched = host.runs.unwatch(run_id)
        if watched is not None:
            if watched.runtime_handle is not None:
                host.runtime.forget(watched.runtime_handle)
            host.changed()  # no longer watched: an `await_ack` for it returns

    async def await_ack(self, run_id: str, request_id: str, *, timeout: float = 30.0) -> RequestRecord | None:
        """Wait until the worker acknowledged `request_id` (worker runs: requests go through the store), or
        its run is no longer watched, or `timeout` passed; returns the request as it is then.

        The worker's ack is another process's commit: the watch signals it (`_watch`)."""
        kernel = self.host.kernel

        def settled() -> bool:
            request = kernel.get_request(request_id)
            return request is None or request.acknowledged or not self.host.runs.on_worker(run_id)

        with contextlib.suppress(TimeoutError):
            await self.host.wait_for(settled, timeout)
        return kernel.get_request(request_id)

    async def aclose(self) -> None:
        """Stop the watch and close every start step made so far."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(BaseException):
                await self._watcher
        for steps in list(self._steps.values()):
            await steps.aclose()

    async def _watch(self) -> None:
        """Poll the store for worker generations' results and asks and deliver them (same routines).

        The one bounded poll of the host: workers change the store from other processes and tmux
        panes die without telling anyone, so every `WATCH_S` it refreshes the panes, reads
        the watched runs and signals `changed` when they moved or another process committed
        (`ForeignWrites`) — waits on host state (`wait_for`) then see workers' writes too.
        """
        host = self.host
        foreign: ForeignCommits | None = None
        while host.runs.has_worker_runs() and not host.closed:
            try:
                if foreign is None:
                    foreign = self._foreign_commits()
                await host.runtime.refresh()
                self._watch_once(foreign.changed())
            except Exception as exc:  # pragma: no cover - surfaced to the embedder
                if host.on_background_error is not None:
                    host.on_background_error(exc)
            await asyncio.sleep(WATCH_S)

    def _watch_once(self, written_elsewhere: bool = False) -> None:
        """One round of the watch; `written_elsewhere`: another process committed since the last one
        (checked before this round reads, so a later commit is seen by the next)."""
        host = self.host
        runs = host.runs
        deliveries = host.deliveries
        signature: list[object] = []
        run_ids = runs.worker_runs()
        watched = host.kernel.watch(run_ids)  # one read for every run
        for run_id in run_ids:
            seen = watched.get(run_id)
            if seen is None or seen.generation.phase == "finalized":
                self.untrack(run_id)
                signature.append(run_id)
                continue
            generation = seen.generation
            handle = runs.runtime_handle(run_id)
            presence = host.runtime.presence(handle) if handle is not None else "unknown"
            if (
                presence == "lost"
                and generation.presence != "lost"
                and generation.phase in ("starting", "active")
                and generation.pid is not None
            ):
                with contextlib.suppress(OrchestrationError):
                    generation = host.kernel.mark_presence(
                        run_id,
                        "lost",
                        diagnostic=f"tmux pane {generation.pane_id} or worker {generation.pid} is gone",
                    )
            if (
                generation.phase == "completed"
                and generation.completed_request_id is not None
                and not deliveries.delivering(generation.completed_request_id)
                and runs.is_owner(generation.owner_session_id)
            ):
                host.spawn_background(deliveries.result(generation.completed_request_id))
            ask = seen.pending_ask
            if (
                ask is not None
                and ask.delivered_entry_id is None
                and not deliveries.asking(ask.ask_id)
                and runs.is_owner(generation.owner_session_id)
            ):
                host.spawn_background(deliveries.ask(run_id, ask.ask_id))
            acked = seen.acknowledged
            signature.append(
                (run_id, generation.phase, generation.presence, generation.pid, presence, ask, acked)
            )
        for extension in host.extensions:
            extension.polled()
        if signature != self._signature or written_elsewhere:
            self._signature = signature
            host.changed()
