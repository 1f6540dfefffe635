"""The host's runtimes behind one face: in-process always, tmux and Ray when first needed, others registered
(`Runtimes`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from corral.settings import RaySettings

    from ._ray import RayRuntime

__all__ = ["Runtimes"]


class Runtimes:
    """The host's runtimes behind one face: in-process always, tmux and Ray when first needed.

    This is the one place a runtime kind maps to a runtime: calls taking a handle go to the
    runtime of `handle.kind`, and the launch pipeline asks `worker(kind)` for the runtime of a
    worker generation. A further worker runtime slots in with `register` (nothing else in the
    core names runtime kinds). `start` with a `program` is in-process, with a `remote` launch on Ray
    (imported only when first used). `stop_all` stops in-process
    agents only: worker agents outlive their host.
    """

    def __init__(
        self,
        inprocess: InProcessRuntime,
        tmux_socket: Path | None = None,
        *,
        ray_settings: RaySettings | None = None,
        data_root: Path | None = None,
    ) -> None:
        self.inprocess = inprocess
        self._tmux: TmuxRuntime | None = None
        self._tmux_socket = tmux_socket
        self._registered: dict[str, WorkerRuntime] = {}
        self._ray: RayRuntime | None = None
        self._ray_settings = ray_settings
        self._data_root = data_root

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

    @property
    def ray(self) -> RayRuntime:
        """The Ray runtime (created on first use; it connects on its first call)."""
        if self._ray is None:
            from ._ray import RayRuntime, ray_config

            self._ray = RayRuntime(ray_config(self._ray_settings), data_root=self._data_root or Path.cwd())
        return self._ray

    @property
    def has_ray(self) -> bool:
        """Whether the Ray runtime was used."""
        return self._ray is not None

    def register(self, runtime: WorkerRuntime) -> None:
        """Add a worker runtime of a further kind (`runtime.kind`, e.g. a distributed one).

        Raises:
            ValueError: The kind is built in or already registered.
        """
        if runtime.kind in ("inprocess", "tmux", "ray") or runtime.kind in self._registered:
            raise ValueError(f"a runtime of kind {runtime.kind!r} is already there")
        self._registered[runtime.kind] = runtime

    def worker(self, kind: str) -> WorkerRuntime:
        """The worker runtime of `kind` (`tmux`, or one registered).

        Raises:
            RuntimeError_: No worker runtime of that kind is there.
        """
        if kind == "tmux":
            return self.tmux
        runtime = self._registered.get(kind)
        if runtime is None:
            raise RuntimeError_(f"no {kind!r} runtime is available here")
        return runtime

    def _for(self, handle: RuntimeHandle) -> InProcessRuntime | WorkerRuntime | RayRuntime:
        if handle.kind == "tmux":
            return self.tmux
        if handle.kind == "ray":
            return self.ray
        return self._registered.get(handle.kind) or self.inprocess

    async def start(self, spec: LaunchSpec) -> RuntimeHandle:
        """Start in-process when `spec.program` is set, on Ray with `spec.remote`, else in tmux."""
        if spec.program is not None:
            return await self.inprocess.start(spec)
        if spec.remote is not None:
            return await self.ray.start(spec)
        return await self.tmux.start(spec)

    def adopt(self, handle: RuntimeHandle, pid: int | None) -> None:
        """Watch a tmux or Ray handle recorded by another host."""
        if handle.kind == "ray":
            self.ray.adopt(handle, pid)
        elif handle.kind in self._registered:
            self._registered[handle.kind].adopt(handle, pid)
        else:
            self.tmux.adopt(handle, pid)

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
        """Capture evidence before `recent_output`/`process_evidence` (tmux, Ray); nothing in-process."""
        if handle.kind == "tmux":
            await self.tmux.prepare_evidence(handle)
        elif handle.kind == "ray":
            await self.ray.prepare_evidence(handle)

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
        """Stop every in-process agent (host shutdown); tmux and Ray agents keep running."""
        await self.inprocess.stop_all()
