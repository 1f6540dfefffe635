"""Orphaned tmux workers: panes no live generation accounts for, found and removed.

Orphans: a pane of the private server whose generation is finalized, or that
no live generation of the store names, is reported by `find_orphans` and
removed by `reap_orphans` (identity-proven, never silently). A worker whose
host died before recording its pane is named by its command line
(`--run-id`), so it is no orphan: the next host adopts it.

`corral doctor` reports them (its `tmux_workers` check) and `corral agents reap` removes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral.runtime import PaneInfo, RuntimeError_, TmuxRuntime

if TYPE_CHECKING:
    from corral.orchestration.kernel._generations import Generations

__all__ = ["Orphan", "find_orphans", "reap_orphans"]


@dataclass(frozen=True, slots=True)
class Orphan:
    """A pane no live generation accounts for."""

    pane: PaneInfo
    reason: str
    """`finalized` (its generation ended) or `unknown` (no generation of the store names it)."""
    run_id: str | None = None


async def find_orphans(kernel: Generations, tmux: TmuxRuntime) -> list[Orphan] | None:
    """Panes of the private server whose generation is finalized or unknown (`None`: tmux failed)."""
    panes = await tmux.panes()
    if panes is None:
        return None
    tmux_generations = [g for g in kernel.generations(include_finalized=True) if g.runtime_kind == "tmux"]
    live = {g.pane_id: g for g in tmux_generations if g.pane_id and g.phase != "finalized"}
    ended = {g.pane_id: g for g in tmux_generations if g.pane_id and g.phase == "finalized"}
    # A live generation whose host died before recording its pane: its worker is no orphan.
    unrecorded = {
        pane.pane_id
        for placing in tmux_generations
        if placing.pane_id is None and placing.phase != "finalized"
        if (pane := tmux.pane_running(panes, ("--run-id", placing.run_id))) is not None
    }
    orphans: list[Orphan] = []
    for pane in panes:
        if pane.pane_id in unrecorded:
            continue
        generation = live.get(pane.pane_id)
        if generation is not None and (generation.pid is None or generation.pid == pane.pid):
            continue
        finished = ended.get(pane.pane_id)
        if finished is not None and (finished.pid is None or finished.pid == pane.pid):
            orphans.append(Orphan(pane, "finalized", finished.run_id))
        else:
            orphans.append(Orphan(pane, "unknown"))
    return orphans


async def reap_orphans(kernel: Generations, tmux: TmuxRuntime) -> tuple[list[Orphan], dict[str, str]]:
    """Kill every orphan pane (identity-proven); `(reaped, errors by pane id)`.

    Raises:
        RuntimeError_: tmux could not list the panes.
    """
    orphans = await find_orphans(kernel, tmux)
    if orphans is None:
        raise RuntimeError_(f"cannot list the panes of the tmux server at {tmux.socket}")
    reaped: list[Orphan] = []
    errors: dict[str, str] = {}
    for orphan in orphans:
        try:
            await tmux.kill_pane(orphan.pane)
        except RuntimeError_ as exc:
            errors[orphan.pane.pane_id] = str(exc)
        else:
            reaped.append(orphan)
    return reaped, errors
