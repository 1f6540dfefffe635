"""Orphaned Ray workers: worker actors of this data root that hold no live agent of the store.

A worker actor is detached: it outlives every host and stays on the cluster until it is killed.
`find_ray_orphans` asks each worker of this data root (by its name prefix, in the `[ray]`
namespace) which runs it holds; a worker none of whose runs is a live generation of the store
is an orphan (`idle` when it holds nothing, `finalized` when it holds only ended runs, `unplaced`
when Ray never placed it: it is not asked, it has no process).
`reap_ray_orphans` kills them (`ray.kill`). `corral agents reap` and `corral doctor` use both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral.runtime import RuntimeError_

if TYPE_CHECKING:
    from corral.orchestration.kernel._generations import Generations
    from corral.runtime._ray import RayRuntime

__all__ = ["RayOrphan", "find_ray_orphans", "has_ray_generations", "reap_ray_orphans"]

_WHERE_TIMEOUT_S = 10.0
"""How long a placed worker has to say what it holds (it answers in milliseconds when it lives)."""


@dataclass(frozen=True, slots=True)
class RayOrphan:
    """A worker actor no live agent accounts for."""

    name: str
    where: str
    """`node <ip> (<hostname>)`, pid."""
    reason: str
    """`idle` (it holds no run: a warm worker, ready for the next agent), `finalized` (it holds only
    runs whose generation ended) or `unplaced` (Ray never placed it: it waits for resources no node
    has free)."""


def has_ray_generations(kernel: Generations) -> bool:
    """Whether any generation of the store ever ran on Ray (else there is nothing to look for)."""
    return any(g.runtime_kind == "ray" for g in kernel.generations(include_finalized=True))


async def find_ray_orphans(kernel: Generations, ray: RayRuntime) -> list[RayOrphan]:
    """This data root's workers that hold no live generation of the store.

    Raises:
        RuntimeError_: The cluster cannot be reached.
    """
    live = {g.run_id for g in kernel.generations() if g.runtime_kind == "ray"}
    found: list[RayOrphan] = []
    for name in await ray.worker_names():
        if await ray.unplaced(name):  # never started: asking it would wait for a process that is not there
            found.append(RayOrphan(name, "no node (Ray never placed it)", "unplaced"))
            continue
        try:
            info = await ray.call_worker(name, "where", timeout=_WHERE_TIMEOUT_S)
        except RuntimeError_:
            continue  # died meanwhile
        runs = [str(run) for run in info.get("runs", [])]
        if any(run in live for run in runs):
            continue
        where = f"node {info.get('node_ip')} ({info.get('hostname')}), pid {info.get('pid')}"
        found.append(RayOrphan(name, where, "finalized" if runs else "idle"))
    return found


async def reap_ray_orphans(kernel: Generations, ray: RayRuntime) -> tuple[list[RayOrphan], dict[str, str]]:
    """Kill every orphaned worker; `(reaped, errors by worker name)`.

    Raises:
        RuntimeError_: The cluster cannot be reached.
    """
    reaped: list[RayOrphan] = []
    errors: dict[str, str] = {}
    for orphan in await find_ray_orphans(kernel, ray):
        try:
            await ray.kill_worker(orphan.name)
        except Exception as exc:  # Ray's own errors: report, go on with the others
            errors[orphan.name] = f"{type(exc).__name__}: {exc}"
        else:
            reaped.append(orphan)
    return reaped, errors
