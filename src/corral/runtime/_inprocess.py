"""The in-process runtime: a managed agent runs as an asyncio task in the host.

`start` creates a task for the launch's `ChildProgram`; `presence` is `live`
while the task runs and `lost` once it ended (a handle from another process
is `unknown`); `stop` cancels the task and waits for it, which aborts the
model request and kills the bash tool's process groups (their cancellation
handling does that). `recent_output` renders the child's activity lines,
bounded like a terminal capture.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid

from corral.runtime._base import (
    ChildProgram,
    LaunchSpec,
    PresenceVerdict,
    ProcessEvidence,
    RecentOutput,
    RuntimeError_,
    RuntimeHandle,
)

__all__ = ["InProcessRuntime", "bound_output"]


def bound_output(lines: list[str], *, max_lines: int, max_bytes: int) -> RecentOutput:
    """Keep the last `max_lines` lines, then the last `max_bytes` UTF-8 bytes (boundary safe)."""
    text = "\n".join(lines[-max_lines:] if max_lines > 0 else [])
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return RecentOutput(text=text, truncated=False)
    tail = data[len(data) - max_bytes :]
    while tail and (tail[0] & 0xC0) == 0x80:
        tail = tail[1:]
    return RecentOutput(text=tail.decode("utf-8", errors="ignore"), truncated=True)


class InProcessRuntime:
    """Runs each managed agent as an asyncio task of this process."""

    kind = "inprocess"

    def __init__(self, *, host_tag: str | None = None) -> None:
        self._tag = host_tag or uuid.uuid4().hex[:8]
        self._counter = itertools.count(1)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._programs: dict[str, ChildProgram] = {}

    async def start(self, spec: LaunchSpec) -> RuntimeHandle:
        """Start `spec.program` as a task; the handle's id is `inproc-<host>-<n>`."""
        if spec.program is None:
            raise RuntimeError_(f"the in-process runtime needs a program to run agent {spec.label}")
        runtime_id = f"inproc-{self._tag}-{next(self._counter)}"
        task = asyncio.get_running_loop().create_task(spec.program.run(), name=f"corral-agent-{spec.label}")
        task.add_done_callback(_consume)
        self._tasks[runtime_id] = task
        self._programs[runtime_id] = spec.program
        return RuntimeHandle(runtime_id=runtime_id, kind=self.kind, run_id=spec.run_id)

    def owns(self, handle: RuntimeHandle) -> bool:
        """Whether this runtime started `handle` (in this process)."""
        return handle.runtime_id in self._tasks

    def presence(self, handle: RuntimeHandle) -> PresenceVerdict:
        """`live` while the task runs, `lost` once it ended, `unknown` for a foreign handle."""
        task = self._tasks.get(handle.runtime_id)
        if task is None:
            return "unknown"
        return "lost" if task.done() else "live"

    def recent_output(
        self, handle: RuntimeHandle, *, lines: int = 80, max_bytes: int = 16384
    ) -> RecentOutput:
        """The child's activity lines, bounded."""
        program = self._programs.get(handle.runtime_id)
        if program is None:
            return RecentOutput(text="", truncated=False)
        return bound_output(program.activity_lines(), max_lines=lines, max_bytes=max_bytes)

    def process_evidence(self, handle: RuntimeHandle) -> list[ProcessEvidence]:
        """Processes the child's bash tool runs now (at most 8)."""
        program = self._programs.get(handle.runtime_id)
        if program is None or self.presence(handle) != "live":
            return []
        return program.running_processes()[:8]

    async def stop(self, handle: RuntimeHandle) -> None:
        """Cancel the task and wait until it ended."""
        task = self._tasks.get(handle.runtime_id)
        if task is None or task.done():
            return
        if task is asyncio.current_task():
            raise RuntimeError_(f"agent {handle.run_id} cannot stop itself")
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    def forget(self, handle: RuntimeHandle) -> None:
        """Drop a finished task's bookkeeping."""
        task = self._tasks.get(handle.runtime_id)
        if task is not None and task.done():
            self._tasks.pop(handle.runtime_id, None)
            self._programs.pop(handle.runtime_id, None)

    async def stop_all(self) -> None:
        """Stop every running agent (host shutdown)."""
        for runtime_id in list(self._tasks):
            await self.stop(RuntimeHandle(runtime_id=runtime_id, kind=self.kind, run_id=""))


def _consume(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()
