"""The host's runtimes behind one face: in-process always, tmux when first needed (`Runtimes`)."""

from __future__ import annotations

from pathlib import Path

from ._base import LaunchSpec, PresenceVerdict, ProcessEvidence, RecentOutput, RuntimeHandle
from ._inprocess import InProcessRuntime
from ._tmux import TmuxRuntime

__all__ = ["Runtimes"]


class Runtimes:
    """The host's runtimes behind one face: in-process always, tmux when first needed.

    Calls taking a handle go to the runtime of `handle.kind`; `start` with a
    `program` is in-process. `stop_all` stops in-process agents only: tmux
    agents outlive their host.
    """

    def __init__(self, inprocess: InProcessRuntime, tmux_socket: Path | None = None) -> None:
        self.inprocess = inprocess
        self._tmux: TmuxRuntime | None = None
        self._tmux_socket = tmux_socket

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

    def _for(self, handle: RuntimeHandle) -> InProcessRuntime | TmuxRuntime:
        return self.tmux if handle.kind == "tmux" else self.inprocess

    async def start(self, spec: LaunchSpec) -> RuntimeHandle:
        """Start in-process when `spec.program` is set, else in tmux."""
        if spec.program is not None:
            return await self.inprocess.start(spec)
        return await self.tmux.start(spec)

    def owns(self, handle: RuntimeHandle) -> bool:
        """Whether the in-process runtime started `handle`."""
        return self.inprocess.owns(handle)

    def presence(self, handle: RuntimeHandle) -> PresenceVerdict:
        """The handle's runtime's verdict."""
        return self._for(handle).presence(handle)

    async def prepare_evidence(self, handle: RuntimeHandle) -> None:
        """Capture evidence before `recent_output`/`process_evidence` (tmux); nothing in-process."""
        if handle.kind == "tmux":
            await self.tmux.prepare_evidence(handle)

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
        """Stop every in-process agent (host shutdown); tmux agents keep running."""
        await self.inprocess.stop_all()
