"""Restart recovery: what a host does for an owner's generations when the owner is attached.

In-process generations of the owner's tree whose host process is proven gone (`Host.host_gone`)
are marked `lost`; worker generations with a recorded worker are watched again (`WorkerWatch.track`);
a result that could not be written by a run that is over settles as failed; undelivered results
are delivered once and delivered but unfinalized generations are finalized (through the host's
deliveries); a pending question of a child still running here is delivered. Nothing is guessed:
a generation whose host may still be running stays as it is (its presence is `unknown`).
Worker generations whose worker was never recorded are settled by their runtime's start step
(`unplaced`). The first recovery in a process also ends the process groups (ACP agents) that a
dead host of this data root left running (`corral._held`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from corral._held import HeldProcesses
from corral.orchestration.host._watch import WatchHost
from corral.runtime import RuntimeHandle

if TYPE_CHECKING:
    from corral.orchestration.kernel.records import GenerationRecord

__all__ = ["Recovery", "RecoveryHost"]

_log = logging.getLogger("corral.host")


class RecoveryHost(WatchHost, Protocol):
    """What recovery needs of the host (`Host`)."""

    def tree(self, owner_session_id: str) -> list[GenerationRecord]: ...

    def host_gone(self, generation: GenerationRecord) -> bool: ...


class Recovery:
    """Restart recovery of an owner's generations (see the module docstring)."""

    def __init__(self, host: RecoveryHost) -> None:
        self.host = host
        self._held_reaped = False

    def recover(self, owner_session_id: str) -> None:
        """Restart recovery for one owner session (see the module docstring)."""
        host = self.host
        if not self._held_reaped:
            self._held_reaped = True
            for orphan in HeldProcesses().reap_orphans():
                if orphan.running:
                    _log.warning(
                        "ended %s (process group %d), left running by host process %d, which is gone",
                        orphan.what,
                        orphan.pgid,
                        orphan.host_pid,
                    )
        for generation in host.tree(owner_session_id):
            if (
                generation.presence != "lost"
                and generation.phase in ("starting", "active")
                and host.host_gone(generation)
            ):
                host.kernel.mark_presence(
                    generation.run_id,
                    "lost",
                    diagnostic=f"host process {generation.pid} of this in-process agent is gone",
                )
        for generation in host.tree(owner_session_id):
            if (
                generation.runtime_kind != "inprocess"
                and host.runtime.offers(generation.runtime_kind)
                and generation.pane_id is not None
                and generation.presence != "lost"
                and generation.phase in ("starting", "active", "completed")
                and not host.runs.on_worker(generation.run_id)
            ):
                handle = RuntimeHandle(
                    runtime_id=generation.pane_id, kind=generation.runtime_kind, run_id=generation.run_id
                )
                host.workers.track(generation.run_id, handle, pid=generation.pid)
        for generation in host.tree(owner_session_id):
            # A result that could not be written (a full disk) by a run that is over: nothing else
            # will settle it, so it settles as failed, with the write error, and is delivered below.
            if (
                generation.owner_session_id == owner_session_id
                and generation.phase == "result_error"
                and host.runs.child(generation.run_id) is None
                and not host.runs.on_worker(generation.run_id)
            ):
                host.kernel.settle_result_error(generation.run_id)
        for generation in host.tree(owner_session_id):
            if generation.owner_session_id != owner_session_id:
                continue
            if generation.phase == "completed" and generation.completed_request_id is not None:
                host.spawn_background(host.deliveries.result(generation.completed_request_id))
            elif generation.phase == "active" and host.runs.child(generation.run_id) is not None:
                ask = host.kernel.pending_ask(generation.run_id)
                if ask is not None and ask.delivered_entry_id is None:
                    host.spawn_background(host.deliveries.ask(generation.run_id, ask.ask_id))
        host.changed()

    async def unplaced(self, owner_session_id: str) -> None:
        """Settle worker generations whose host died before it recorded their worker (pane, actor).

        The store names the worker runtime from the moment a start or a handoff begins, but the
        worker is recorded only once it exists. Each runtime's start step settles its own
        (`WorkerStart.settle_unplaced`: tmux asks its pane inventory, Ray its workers): a worker
        that runs the generation is adopted, none proves it never started (`lost`), and when
        nothing can be proven nothing changes (a warning says so).
        """
        host = self.host
        unplaced: dict[str, list[GenerationRecord]] = {}
        for generation in host.tree(owner_session_id):
            if (
                generation.runtime_kind != "inprocess"
                and host.runtime.offers(generation.runtime_kind)
                and generation.pane_id is None
                and generation.presence != "lost"
                and generation.phase in ("starting", "active")
                and generation.run_id not in host.placing
            ):
                unplaced.setdefault(generation.runtime_kind, []).append(generation)
        if not unplaced:
            return
        for kind, generations in sorted(unplaced.items()):
            await host.workers.of(kind).settle_unplaced(generations)
        host.changed()
