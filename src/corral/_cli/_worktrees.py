"""`corral merge` and the worktree parts of `corral doctor` and `corral agents reap`.

Exit codes of `corral merge`: 0 merged (or nothing left to merge, or discarded), 1 not merged
(conflicts, or uncommitted changes in the way: the paths are named), 2 bad input (no such
agent or branch, still running, its repository gone), with one line on stderr. Merging a
branch that was already merged or discarded is "nothing left to merge": exit 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from corral._units import format_bytes

if TYPE_CHECKING:
    from corral.orchestration import Repositories
    from corral.orchestration.worktrees._worktrees import Worktrees

__all__ = ["live_runs", "merge", "reap_worktrees", "worktree_summary"]


def live_runs(store: Repositories) -> frozenset[str]:
    """Run ids of generations that may still be working (not finalized, not lost)."""
    return frozenset(
        g.run_id
        for g in store.kernel.generations()
        if g.phase in ("starting", "active") and g.presence != "lost"
    )


def _trees(store: Repositories) -> Worktrees:
    from corral.orchestration.worktrees._worktrees import Worktrees

    return Worktrees(store.worktrees, home=store.db.path.parent)


def _repos(cwd: Path) -> tuple[Path, ...]:
    from corral.orchestration.worktrees._git import NotAGitRepositoryError, repo_toplevel

    try:
        return (repo_toplevel(cwd),)
    except NotAGitRepositoryError:
        return ()


def merge(ref: str, *, discard: bool, out: TextIO, err: TextIO) -> int:
    """`corral merge <label|name|branch> [--discard]`."""
    from corral.orchestration import OrchestrationError, Repositories
    from corral.orchestration.store._database import default_store_path

    try:
        store = Repositories.open(default_store_path())
    except OrchestrationError as exc:
        err.write(f"corral: error: {' '.join(str(exc).split())}\n")
        return 2
    try:
        trees = _trees(store)
        try:
            for note in trees.recover():
                out.write(note + "\n")
            outcome = trees.discard(ref) if discard else trees.merge(ref)
        except OrchestrationError as exc:
            err.write(f"corral: error: {' '.join(str(exc).split())}\n")
            return 2
        out.write(outcome.message + "\n")
        for path in outcome.paths:
            out.write(f"  {path}\n")
        return 0 if outcome.ok else 1
    finally:
        store.close()


def worktree_summary(store: Repositories, cwd: Path) -> tuple[str, str]:
    """(`ok`/`warn`, one line) for `corral doctor`: kept worktrees, their disk use, pending merges, orphans."""
    trees = _trees(store)
    kept = trees.usage()
    orphans = trees.orphans(live_runs=live_runs(store), repos=_repos(cwd))
    merging = [u.record.branch for u in kept if u.record.state == "merging"]
    pending = [u.record.branch for u in kept if u.record.state == "pending"]
    used = sum(u.bytes for u in kept) + sum(o.bytes for o in orphans)
    parts = [f"{len(kept)} agent worktree(s) kept ({format_bytes(used)} on disk)"]
    if pending:
        parts.append(f"{len(pending)} awaiting `corral merge`: {', '.join(pending)}")
    status = "ok"
    if merging:
        status = "warn"
        parts.append(f"interrupted merge(s) {', '.join(merging)}: `corral merge <branch>` settles them")
    if orphans:
        status = "warn"
        unmerged = sum(o.unmerged for o in orphans)
        parts.append(
            f"{len(orphans)} orphaned worktree(s)/branch(es) ({unmerged} with unmerged work): "
            + ", ".join(str(o.branch or o.path) for o in orphans)
            + "; `corral agents reap` removes them (`--force` for unmerged work)"
        )
    return status, "; ".join(parts)


def reap_worktrees(store: Repositories, *, cwd: Path, force: bool, dry_run: bool, out: TextIO) -> int:
    """The worktree half of `corral agents reap`; 1 when unmerged work was kept (without `--force`)."""
    trees = _trees(store)
    runs = live_runs(store)
    if dry_run:
        orphans = trees.orphans(live_runs=runs, repos=_repos(cwd))
        for orphan in orphans:
            what = orphan.branch or str(orphan.path)
            flag = " (unmerged work)" if orphan.unmerged else ""
            out.write(f"orphan worktree {what}{flag}, {format_bytes(orphan.bytes)}: {orphan.reason}\n")
        out.write(f"{len(orphans)} orphan worktree(s)/branch(es)\n")
        return 0
    removed, kept = trees.reap(live_runs=runs, force=force, repos=_repos(cwd))
    for orphan in removed:
        out.write(f"reaped worktree {orphan.branch or orphan.path}: {orphan.reason}\n")
    for orphan in kept:
        out.write(
            f"kept {orphan.branch or orphan.path}: it holds unmerged work "
            f"(merge or discard it with `corral merge`, or reap with --force)\n"
        )
    out.write(f"{len(removed)} orphan worktree(s) reaped, {len(kept)} kept\n")
    return 1 if kept else 0
