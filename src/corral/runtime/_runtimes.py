"""The host's runtimes behind one face: in-process always, tmux when first needed, further worker
runtimes (Ray) registered (`Runtimes`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ._base import (
    LaunchSpec,
    PresenceVerdict,
    ProcessEvidence,
    RecentOutput,
    RuntimeError_,
    RuntimeHandle,
    WorkerRuntime,
)
from ._inprocess import InProcessRuntime
from ._tmux import TmuxRuntime

__all__ = ["Runtimes"]


class Runtimes:
    """The host's runtimes behind one face: in-process always, tmux when first needed, others registered.

    This is the one place a runtime kind maps to a runtime: calls taking a handle go to the
    runtime of `handle.kind`, and the launch pipeline asks `worker(kind)` for the runtime of a
    worker generation. A further worker runtime slots in with `register`, or with `register_lazy`
    when it is made on first use (the composition root registers Ray that way, so nothing imports
    Ray before a Ray run); nothing else in the core names runtime kinds. `start` with a `program`
    is in-process. `stop_all` stops in-process agents only: worker agents outlive their host.
    """

    def __init__(self, inprocess: InProcessRuntime, tmux_socket: Path | None = None) -> None:
        self.inprocess = inprocess
        self._tmux: TmuxRuntime | None = None
        self._tmux_socket = tmux_socket
        self._registered: dict[str, WorkerRuntime] = {}
        self._lazy: dict[str, Callable[[], WorkerRuntime]] = {}

    @property
    def tmux(self) -> TmuxRuntime:
        """The tmux runtime (created on first use)."""
        if self._tmux is None:
            self._tmux = TmuxRuntime(socket=self._tmux_socket)
        return self._tmux

    @property
    def has_tmux(self) -> bool:
        """Whether the tmux runtime was used."""
        return self._tmux is not None

    def _check_free(self, kind: str) -> None:
        if kind in ("inprocess", "tmux") or kind in self._registered or kind in self._lazy:
            raise ValueError(f"a runtime of kind {kind!r} is already there")

    def register(self, runtime: WorkerRuntime) -> None:
        """Add a worker runtime of a further kind (`runtime.kind`, e.g. a distributed one).

        Raises:
            ValueError: The kind is built in or already registered.
        """
        self._check_free(runtime.kind)
        self._registered[runtime.kind] = runtime

    def register_lazy(self, kind: str, make: Callable[[], WorkerRuntime]) -> None:
        """Add a worker runtime of `kind` that `make` builds when it is first needed.

        Raises:
            ValueError: The kind is built in or already registered.
        """
        self._check_free(kind)
        self._lazy[kind] = make

    def worker(self, kind: str) -> WorkerRuntime:
        """The worker runtime of `kind` (`tmux`, or one registered; a lazy one is made now).

        Raises:
            RuntimeError_: No worker runtime of that kind is there.
        """
        if kind == "tmux":
            return self.tmux
        runtime = self._registered.get(kind)
        if runtime is None:
            make = self._lazy.get(kind)
            if make is None:
                raise RuntimeError_(f"no {kind!r} runtime is available here")
            runtime = self._registered[kind] = make()
            if runtime.kind != kind:
                raise RuntimeError_(f"the {kind!r} runtime was made as {runtime.kind!r}")
        return runtime

    def offers(self, kind: str) -> bool:
        """Whether a worker runtime of `kind` is there (made or registered to be made)."""
        return kind == "tmux" or kind in self._registered or kind in self._lazy

    def made(self, kind: str) -> WorkerRuntime | None:
        """The worker runtime of `kind` if it was made already (`None`: not used yet; never makes it)."""
        if kind == "tmux":
            return self._tmux
        return self._registered.get(kind)

    def _for(self, handle: RuntimeHandle) -> InProcessRuntime | WorkerRuntime:
        if handle.kind != "inprocess" and self.offers(handle.kind):
            return self.worker(handle.kind)
        return self.inprocess  # a kind not offered here: a foreign handle (presence `unknown`)

    async def start(self, spec: LaunchSpec) -> RuntimeHandle:
        """Start in-process when `spec.program` is set, else in tmux (other worker runtimes start
        through `worker(kind)`)."""
        if spec.program is not None:
            return await self.inprocess.start(spec)
        return await self.tmux.start(spec)

    def adopt(self, handle: RuntimeHandle, pid: int | None) -> None:
        """Watch a worker handle recorded by another host (or started here); a kind not offered here
        stays unobserved (its presence `unknown`)."""
        if self.offers(handle.kind):
            self.worker(handle.kind).adopt(handle, pid)

    async def refresh(self) -> None:
        """Refresh the tmux runtime's pane inventory (when tmux is in use)."""
        if self._tmux is not None:
            await self._tmux.refresh()

    def owns(self, handle: RuntimeHandle) -> bool:
        """Whether the in-process runtime started `handle`."""
        return self.inprocess.owns(handle)

    def presence(self, handle: RuntimeHandle) -> PresenceVerdict:
        """The handle's runtime's verdict."""
        return self._for(handle).presence(handle)

    async def prepare_evidence(self, handle: RuntimeHandle) -> None:
        """Capture evidence before `recent_output`/`process_evidence` (worker runtimes); nothing in-process."""
        if handle.kind != "inprocess" and self.offers(handle.kind):
            await self.worker(handle.kind).prepare_evidence(handle)

    def recent_output(
        self, handle: RuntimeHandle, *, lines: int = 80, max_bytes: int = 16384
    ) -> RecentOutput:
        """The handle's runtime's recent output."""
        return self._for(handle).recent_output(handle, lines=lines, max_bytes=max_bytes)

    def process_evidence(self, handle: RuntimeHandle) -> list[ProcessEvidence]:
        """The handle's runtime's process evidence."""
        return self._for(handle).process_evidence(handle)

    async def stop(self, handle: RuntimeHandle) -> None:
        """Stop through the handle's runtime."""
        await self._for(handle).stop(handle)

    def forget(self, handle: RuntimeHandle) -> None:
        """Drop bookkeeping of a finished agent."""
        self._for(handle).forget(handle)

    async def stop_all(self) -> None:
        """Stop every in-process agent (host shutdown); worker agents keep running."""
        await self.inprocess.stop_all()
