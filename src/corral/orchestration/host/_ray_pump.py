"""The host's side of Ray agents: it pulls their facts into the store and pushes requests to them.

A Ray worker cannot call the host (the driver is not callable from actors), so
the host polls. Every tick, for each worker actor that holds runs of this host,
one batched call (`pull_many`) returns each run's new session-file bytes (whole
lines from the offset the host already holds) and its unconfirmed facts
(`kernel/_remote.py`). The host appends the bytes to the session file on the
lead's machine (fsync), then makes each fact durable in the store — an ack, the
latest activity, a question, the result (`store_result`, idempotent), a
result error, a loss — and only then confirms the last fact number to the
worker (`confirm_many`), which releases them. A host that dies anywhere in
between loses nothing: the next one pulls the same facts again.

Requests (`steer`, `interrupt`, `reply`) are submitted to the store by the
controller as for tmux; the pump sends each unacknowledged one to its worker
(`accept`) and records the acknowledgement the worker returns (a resend gets
the same acknowledgement, never a second application).

Failures are facts: when Ray says the worker actor died (its node was removed,
its process killed), the pump marks its active generations `lost` with a
diagnostic naming the worker and its node; when the worker answers that it does
not hold a run any more, the same. When the cluster cannot be reached nothing is
proven: presence is `unknown` and a warning says so once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from corral.orchestration.errors import OrchestrationError
from corral.orchestration.kernel._faults import fault_point
from corral.orchestration.kernel._remote import (
    AckFact,
    ActivityFact,
    AskFact,
    EventFact,
    ExtensionFact,
    HostView,
    LostFact,
    Pulled,
    ResultErrorFact,
    ResultFact,
)
from corral.orchestration.kernel.records import GenerationRecord
from corral.runtime import RuntimeError_, RuntimeHandle

if TYPE_CHECKING:
    from corral.agent import AgentEvent
    from corral.orchestration.host._launch import LaunchWorkers
    from corral.orchestration.host.permission_layers import Definitions
    from corral.orchestration.host.ports import Extensions
    from corral.orchestration.kernel._generations import Generations
    from corral.runtime import Runtimes
    from corral.runtime._ray import RayRuntime
    from corral.settings import Settings

__all__ = ["PumpHost", "RayPump", "session_offset", "settle_unplaced_on_ray"]

PULL_S = 0.02
"""Pause between two pulls of one worker."""


def session_offset(path: Path) -> int:
    """The host's offset in a streamed session file: the end of its last whole line.

    A torn tail (the host died while appending) is cut off, so the next pull resends those bytes.
    """
    try:
        with open(path, "r+b") as handle:
            data = handle.read()
            end = data.rfind(b"\n") + 1
            if end < len(data):
                handle.truncate(end)
            return end
    except FileNotFoundError:
        return 0


def _append(path: Path, offset: int, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.lseek(fd, offset, os.SEEK_SET)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.ftruncate(fd, offset + len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


class PumpHost(Protocol):
    """What the pump needs of its host (`Host`)."""

    kernel: Generations
    settings: Settings
    on_background_error: Callable[[BaseException], None] | None

    @property
    def closed(self) -> bool: ...

    def changed(self) -> None: ...

    def warn(self, text: str) -> None: ...

    @property
    def runtime(self) -> Runtimes: ...

    host_id: str

    @property
    def workers(self) -> LaunchWorkers: ...

    @property
    def extensions(self) -> Extensions: ...

    def result_failed(self, run_id: str, message: str) -> None: ...

    def roster_loader(self, cwd: Path) -> Definitions: ...

    def agent_event(self, run_id: str, event: AgentEvent) -> None: ...


@dataclass
class _Tracked:
    handle: RuntimeHandle
    actor: str
    node: str
    session_path: Path | None
    offset: int


class RayPump:
    """Pulls the facts of this host's Ray runs into the store (see the module docstring)."""

    def __init__(self, host: PumpHost, runtime: RayRuntime) -> None:
        self.host = host
        self.runtime = runtime
        self.runs: dict[str, _Tracked] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._ending: dict[str, set[str]] = {}
        """Runs to end in their workers (by actor), once their generation is finalized."""
        self._unreachable_warned = False

    def track(self, run_id: str, handle: RuntimeHandle, generation: GenerationRecord | None) -> None:
        """Start pulling the run `run_id` of `handle`'s worker."""
        from corral.runtime._ray import parse_runtime_id

        if run_id in self.runs:
            return
        actor, node = parse_runtime_id(handle.runtime_id)
        path = Path(generation.session_path) if generation and generation.session_path else None
        offset = session_offset(path) if path is not None else 0
        self.runs[run_id] = _Tracked(handle, actor, node, path, offset)
        self._serve_worker(actor)

    def _serve_worker(self, actor: str) -> None:
        task = self._workers.get(actor)
        if task is None or task.done():
            self._workers[actor] = asyncio.get_running_loop().create_task(
                self._serve(actor), name=f"corral-ray-pump-{actor}"
            )

    def untrack(self, run_id: str) -> None:
        """Stop pulling `run_id`; its worker drops it at the next tick (its generation ended)."""
        tracked = self.runs.pop(run_id, None)
        if tracked is not None and not self.host.closed:
            self._ending.setdefault(tracked.actor, set()).add(run_id)
            self._serve_worker(tracked.actor)

    async def aclose(self) -> None:
        """Stop pulling (the agents keep running in their workers)."""
        for task in self._workers.values():
            task.cancel()
        for task in self._workers.values():
            with contextlib.suppress(BaseException):
                await task
        self._workers.clear()

    # --- the loop ------------------------------------------------------------------------------------

    async def _serve(self, actor: str) -> None:
        while not self.host.closed:
            ending = self._ending.pop(actor, set())
            for run_id in sorted(ending):
                with contextlib.suppress(RuntimeError_):
                    await self.runtime.call_worker(actor, "end", run_id)
            mine = {run_id: t for run_id, t in self.runs.items() if t.actor == actor}
            if not mine:
                if self._ending.get(actor):
                    continue
                return
            try:
                await self.tick(actor, mine)
            except Exception as exc:  # pragma: no cover - surfaced to the embedder
                if self.host.on_background_error is not None:
                    self.host.on_background_error(exc)
            await asyncio.sleep(PULL_S)

    def _view(self, run_id: str) -> tuple[GenerationRecord | None, HostView | None]:
        generation = self.host.kernel.get_generation(run_id)
        if generation is None:
            return None, None
        ask = self.host.kernel.pending_ask(run_id)
        pushed = self.host.extensions.remote_state(run_id)
        return generation, HostView(generation.phase, None if ask is None else ask.ask_id, pushed)

    async def tick(self, actor: str, mine: dict[str, _Tracked]) -> None:
        """One round for one worker: end finished runs, push requests, pull and apply facts."""
        from corral.runtime._ray import RayWorkerGone

        wanted: list[tuple[str, int, HostView]] = []
        try:
            for run_id, tracked in mine.items():
                generation, view = self._view(run_id)
                if generation is None or view is None or generation.phase == "finalized":
                    self.untrack(run_id)
                    continue
                await self._push_requests(tracked, generation, view)
                wanted.append((run_id, tracked.offset, view))
            if not wanted:
                return
            pulled: dict[str, Pulled | None] = await self.runtime.call_worker(actor, "pull_many", wanted)
        except RayWorkerGone as exc:
            self._worker_gone(actor, mine, str(exc))
            return
        except RuntimeError_ as exc:
            for tracked in mine.values():
                self.runtime.mark(tracked.handle, "unknown")
            if not self._unreachable_warned:
                self._unreachable_warned = True
                self.host.warn(f"Ray agents cannot be reached now ({exc}); retrying")
            self.host.changed()
            return
        self._unreachable_warned = False
        confirmed: list[tuple[str, int]] = []
        changed = False
        for run_id, found in pulled.items():
            held = self.runs.get(run_id)
            if held is None:
                continue
            tracked = held
            if found is None:
                changed |= self._not_held(tracked)
                continue
            self.runtime.mark(tracked.handle, "live")
            if found.session and tracked.session_path is not None:
                await asyncio.to_thread(_append, tracked.session_path, tracked.offset, found.session)
                tracked.offset = found.session_end
                changed = True
            last = 0
            for fact in found.facts:
                if isinstance(fact, ResultFact):  # the features' last step on this machine, then stored
                    note = await self.host.extensions.remote_result(run_id, tracked.session_path)
                    fault_point("after_remote_result")  # e.g. a patch landed, its result not stored yet
                    if note:
                        fact = dataclasses.replace(fact, text="\n\n".join(t for t in (fact.text, note) if t))
                self._apply(run_id, tracked, fact)
                last = fact.seq
                changed = True
            if last:
                confirmed.append((run_id, last))
        if confirmed:
            with contextlib.suppress(RuntimeError_):
                await self.runtime.call_worker(actor, "confirm_many", confirmed)
        if changed:
            self.host.changed()

    async def _push_requests(self, tracked: _Tracked, generation: GenerationRecord, view: HostView) -> None:
        if generation.phase != "active":
            return
        kernel = self.host.kernel
        for request in kernel.requests(generation.run_id):
            if request.kind == "task" or request.acknowledged:
                continue
            ack = await self.runtime.call(tracked.handle, "accept", generation.run_id, request, view)
            if ack is None:
                return  # the worker does not hold the run: the pull says so
            with contextlib.suppress(OrchestrationError):
                kernel.record_ack(
                    generation.run_id,
                    request.request_id,
                    accepted=bool(ack.accepted),
                    code=ack.ack_code,
                    message=ack.ack_message,
                )
            self.host.changed()

    def _apply(self, run_id: str, tracked: _Tracked, fact: object) -> None:
        """Make one fact durable in the store (each verb is idempotent or checked)."""
        kernel = self.host.kernel
        with contextlib.suppress(OrchestrationError):
            if isinstance(fact, AckFact):
                kernel.record_ack(
                    run_id, fact.request_id, accepted=fact.accepted, code=fact.code, message=fact.message
                )
            elif isinstance(fact, ActivityFact):
                kernel.record_activity(run_id, at=fact.at)
            elif isinstance(fact, AskFact):
                kernel.create_ask(
                    run_id, request_id=fact.request_id, question=fact.question, ask_id=fact.ask_id
                )
            elif isinstance(fact, ResultFact):
                kernel.store_result(
                    run_id,
                    fact.request_id,
                    status=fact.status,
                    text=fact.text,
                    error_code=fact.error_code,
                    error_message=fact.error_message,
                    context_tokens=fact.context_tokens,
                )
            elif isinstance(fact, ResultErrorFact):
                kernel.record_result_error(run_id, fact.request_id, message=fact.message)
                self.host.result_failed(run_id, fact.message)
            elif isinstance(fact, EventFact):
                self.host.agent_event(run_id, fact.event)
            elif isinstance(fact, ExtensionFact):
                self.host.extensions.remote_fact(run_id, fact.payload)
            elif isinstance(fact, LostFact):
                diagnostic = f"{fact.diagnostic} (on {self._where(tracked)})"
                kernel.mark_presence(run_id, "lost", diagnostic=diagnostic)
                self.host.extensions.lost(run_id, diagnostic)

    def _where(self, tracked: _Tracked) -> str:
        return self.runtime.describe(tracked.handle)

    def _not_held(self, tracked: _Tracked) -> bool:
        """The worker answered but holds no such run (it restarted, or ended it): lost."""
        run_id = tracked.handle.run_id
        self.runtime.mark(tracked.handle, "lost")
        self.untrack(run_id)
        generation = self.host.kernel.get_generation(run_id)
        if (
            generation is None
            or generation.phase not in ("starting", "active")
            or generation.presence == "lost"
        ):
            return False
        diagnostic = f"{self._where(tracked)} no longer holds this agent"
        with contextlib.suppress(OrchestrationError):
            self.host.kernel.mark_presence(run_id, "lost", diagnostic=diagnostic)
            self.host.extensions.lost(run_id, diagnostic)
        return True

    def _worker_gone(self, actor: str, mine: dict[str, _Tracked], reason: str) -> None:
        """Ray says the worker died: every active run it held is lost, naming the node."""
        for run_id, tracked in mine.items():
            self.runtime.mark(tracked.handle, "lost")
            self.untrack(run_id)
            generation = self.host.kernel.get_generation(run_id)
            if (
                generation is None
                or generation.phase not in ("starting", "active")
                or generation.presence == "lost"
            ):
                continue
            diagnostic = f"{self._where(tracked)} is gone: {reason}"
            with contextlib.suppress(OrchestrationError):
                self.host.kernel.mark_presence(run_id, "lost", diagnostic=diagnostic)
                self.host.extensions.lost(run_id, diagnostic)
        self.host.changed()


async def settle_unplaced_on_ray(host: PumpHost, generations: list[GenerationRecord]) -> None:
    """Settle Ray generations whose host died after placing them and before recording their worker.

    The workers of this data root decide: a worker that holds the run is recorded as its place and
    watched (its facts are pulled as for any Ray agent, so its result is delivered once); no worker
    holding it proves it never started, and the generation is marked `lost` so it can be closed.
    When the cluster cannot be asked nothing is proven and nothing changes (a warning says so).
    """
    from corral.runtime._ray import ray_runtime

    ray = ray_runtime(host.runtime)
    held: dict[str, tuple[str, dict[str, object]]] = {}
    try:
        for name in await ray.worker_names():
            try:
                info = await ray.call_worker(name, "where", timeout=30.0)
            except RuntimeError_:
                continue  # died meanwhile: it holds nothing
            for run in info.get("runs", []):
                held[str(run)] = (name, info)
    except RuntimeError_ as exc:
        labels = ", ".join(g.label for g in generations)
        host.warn(
            f"Agents {labels}: their host stopped while placing them on Ray and the cluster cannot be "
            f"asked ({exc}); left as they are."
        )
        return
    for generation in generations:
        run_id = generation.run_id
        found = held.get(run_id)
        with contextlib.suppress(OrchestrationError):
            if found is None:
                host.kernel.mark_presence(
                    run_id,
                    "lost",
                    diagnostic="its host stopped while placing it on Ray, and no Ray worker of this data root holds it",
                )
                continue
            name, info = found
            pid = info.get("pid")
            handle = RuntimeHandle(runtime_id=f"ray:{name}@{info.get('node_ip')}", kind="ray", run_id=run_id)
            host.kernel.record_started(
                run_id,
                host_id=host.host_id,
                pid=pid if isinstance(pid, int) else None,
                pane_id=handle.runtime_id,
            )
            host.workers.track(run_id, handle, pid=pid if isinstance(pid, int) else None)
    host.changed()
