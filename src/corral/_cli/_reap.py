"""`corral agents reap`: orphaned tmux panes, Ray worker actors, ACP agent processes and agent
worktrees, reported or removed."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from corral.orchestration._repositories import Repositories

__all__ = ["reap"]


async def reap(*, out: TextIO, dry_run: bool = False, force: bool = False, cwd: Path | None = None) -> int:
    """`corral agents reap`: report (and unless `dry_run`, remove) orphans: panes of the private tmux
    server, Ray worker actors of this data root that hold no live agent (when agents ran on Ray),
    ACP agents' process groups whose host is gone (`corral._held`), and agent worktrees and
    `corral/*` branches (`_worktrees.reap_worktrees`).

    Returns 0 when nothing is left orphaned, 1 when a pane could not be reaped, tmux failed, or a
    worktree with unmerged work was kept (without `force`).
    """
    from corral.orchestration.store._database import default_store_path

    store = Repositories.open(default_store_path())
    try:
        panes = await _reap_panes(store, out=out, dry_run=dry_run)
        _reap_held(out=out, dry_run=dry_run)
        from corral.orchestration.host._ray_orphans import has_ray_generations

        if has_ray_generations(store.kernel):
            panes = max(panes, await _reap_ray(store, out=out, dry_run=dry_run, cwd=cwd or Path.cwd()))
        trees = 0
        if store.worktrees.has_worktrees() or cwd is not None:
            from corral._cli._worktrees import reap_worktrees

            trees = reap_worktrees(store, cwd=cwd or Path.cwd(), force=force, dry_run=dry_run, out=out)
        return max(panes, trees)
    finally:
        store.close()


def _reap_held(*, out: TextIO, dry_run: bool) -> None:
    """Report (and unless `dry_run`, end) the process groups a dead host left running."""
    from corral._held import HeldProcesses

    orphans = HeldProcesses().running_orphans(dry_run=dry_run)
    verb = "orphan" if dry_run else "ended"
    for orphan in orphans:
        print(
            f"{verb} {orphan.what} (process group {orphan.pgid}): its host process {orphan.host_pid} is gone",
            file=out,
        )
    if orphans:
        print(f"{len(orphans)} orphan agent process group(s){'' if dry_run else ' ended'}", file=out)


async def _reap_ray(store: Repositories, *, out: TextIO, dry_run: bool, cwd: Path) -> int:
    """Report (and unless `dry_run`, kill) orphaned Ray workers; 1 when the cluster failed or a kill did."""
    from corral.orchestration.host._ray_orphans import find_ray_orphans, reap_ray_orphans
    from corral.runtime import RuntimeError_
    from corral.runtime._ray import RayRuntime, ray_config
    from corral.settings import load_settings

    ray = RayRuntime(ray_config(load_settings(cwd).ray), data_root=store.db.path.parent)
    try:
        if dry_run:
            orphans = await find_ray_orphans(store.kernel, ray)
            for orphan in orphans:
                print(f"orphan Ray worker {orphan.name} on {orphan.where}: {orphan.reason}", file=out)
            print(f"{len(orphans)} orphan Ray worker(s)", file=out)
            return 0
        reaped, errors = await reap_ray_orphans(store.kernel, ray)
    except RuntimeError_ as exc:
        print(f"Ray workers not checked: {exc}", file=out)
        return 1
    for orphan in reaped:
        print(f"reaped Ray worker {orphan.name} on {orphan.where}: {orphan.reason}", file=out)
    for name, error in errors.items():
        print(f"not reaped Ray worker {name}: {error}", file=out)
    print(f"{len(reaped)} orphan Ray worker(s) reaped", file=out)
    return 1 if errors else 0


async def _reap_panes(store: Repositories, *, out: TextIO, dry_run: bool) -> int:
    from corral._tmux.orphans import find_orphans, reap_orphans
    from corral.runtime import RuntimeError_, TmuxRuntime

    tmux = TmuxRuntime()
    if dry_run:
        orphans = await find_orphans(store.kernel, tmux)
        if orphans is None:
            print(f"cannot list the panes of the tmux server at {tmux.socket}", file=out)
            return 1
        for orphan in orphans:
            print(
                f"orphan {orphan.pane.pane_id} pid {orphan.pane.pid} {orphan.pane.title!r}: {orphan.reason}",
                file=out,
            )
        print(f"{len(orphans)} orphan pane(s)", file=out)
        return 0
    try:
        reaped, errors = await reap_orphans(store.kernel, tmux)
    except RuntimeError_ as exc:
        print(str(exc), file=out)
        return 1
    for orphan in reaped:
        print(
            f"reaped {orphan.pane.pane_id} pid {orphan.pane.pid} {orphan.pane.title!r}: {orphan.reason}",
            file=out,
        )
    for pane_id, error in errors.items():
        print(f"not reaped {pane_id}: {error}", file=out)
    print(f"{len(reaped)} orphan pane(s) reaped", file=out)
    return 1 if errors else 0
