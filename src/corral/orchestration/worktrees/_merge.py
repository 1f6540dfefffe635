"""Merging an agent's branch back into the lead's working tree, safely.

`plan_merge` decides everything without touching the user's tree: the new
commit is built from objects only (`git merge-tree --write-tree`, `git
commit-tree`). Then `apply_merge` moves the tree and HEAD in two steps, each
safe on its own:

1. `git read-tree -m -u <old HEAD> <new commit>` updates the index and the
   files that the merge changes, and refuses (changing nothing) when one of
   them has local changes or an untracked file is in the way;
2. `git update-ref HEAD <new> <old>` moves the branch, compare-and-set.

**The user's uncommitted changes are never overwritten**: a merge that would
change a path the user has modified, staged, deleted or created (untracked,
not ignored) is refused with those paths named; the user commits or stashes
them and merges again. corral never stashes on the user's behalf. Nor does a
merge replace a file git does not track in HEAD — an ignored `.env` that a
branch un-ignores and adds, an ignored file where the branch adds a directory,
ignored files inside a directory where the branch adds a file — unless the
file already holds exactly the branch's content (`git read-tree -u` itself
overwrites ignored files, so this is checked first, `in_the_way`).

A branch that started from a *snapshot* of uncommitted changes is merged
relative to that snapshot (the agent's own work, `base..tip`, not the user's
changes it started from) and lands as one squashed commit whose only parent
is HEAD, so the snapshot never enters the user's history. A branch that
started from HEAD fast-forwards when HEAD has not moved, and otherwise gets
an ordinary merge commit.

`settle_merge` finishes what a killed process left between the two steps: the
next run finds the merge journaled in the store and either completes it (the
files were already in place) or reports the tree unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from corral.orchestration.kernel._faults import fault_point
from corral.orchestration.worktrees._git import GitError, git, git_env, is_ancestor, rev_parse

__all__ = [
    "MergeBlocked",
    "MergePlan",
    "apply_merge",
    "dirty_paths",
    "in_the_way",
    "plan_merge",
    "settle_merge",
]

MergeKind = Literal["fast-forward", "merge", "squash"]
BlockedKind = Literal["nothing", "conflict", "dirty", "busy"]


@dataclass(frozen=True, slots=True)
class MergePlan:
    """A merge ready to apply: every object exists, nothing in the user's tree has changed yet."""

    repo: Path
    """The top of the lead's working tree."""
    branch: str
    """The agent's branch."""
    tip: str
    """The branch's commit being merged."""
    head: str
    """The lead's HEAD the plan was made against."""
    commit: str
    """The commit HEAD will point at (the tip itself for a fast-forward)."""
    kind: MergeKind
    """`fast-forward`, `merge` (two parents) or `squash` (a branch started from a snapshot)."""
    paths: tuple[str, ...]
    """Paths the merge changes in the working tree, sorted."""


@dataclass(frozen=True, slots=True)
class MergeBlocked:
    """Why a merge did not happen; the user's tree is as it was."""

    kind: BlockedKind
    """`nothing` (already merged or no changes), `conflict`, `dirty` (uncommitted changes in the
    way) or `busy` (a merge, rebase or cherry-pick is in progress)."""
    paths: tuple[str, ...]
    """The conflicting or overlapping paths (empty for `nothing`/`busy`)."""
    message: str
    """One sentence for the user, saying what to do."""


def _in_progress(repo: Path) -> str | None:
    git_dir = Path(git(repo, "rev-parse", "--absolute-git-dir").stdout.strip())
    for marker, what in (
        ("MERGE_HEAD", "a merge"),
        ("rebase-merge", "a rebase"),
        ("rebase-apply", "a rebase or am"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"),
        ("REVERT_HEAD", "a revert"),
    ):
        if (git_dir / marker).exists():
            return what
    return None


def dirty_paths(repo: Path) -> frozenset[str]:
    """Paths with uncommitted changes: modified, staged, deleted, unmerged or untracked (not ignored)."""
    output = git(
        repo,
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=none",
    ).stdout
    return frozenset(record[3:] for record in output.split("\0") if len(record) > 3)


def _overlap(changed: tuple[str, ...], dirty: frozenset[str]) -> tuple[str, ...]:
    hits: set[str] = set()
    for path in changed:
        if path in dirty:
            hits.add(path)
            continue
        prefix = path + "/"
        hits.update(d for d in dirty if d.startswith(prefix) or path.startswith(d + "/"))
    return tuple(sorted(hits))


def _z(output: str) -> list[str]:
    return [field for field in output.split("\0") if field]


def in_the_way(repo: Path, head: str, commit: str) -> tuple[str, ...]:
    """Files of the user's tree, not tracked in `head` (ignored ones included), that moving the
    tree from `head` to `commit` would replace or delete; sorted.

    A path the merge adds is in the way when a file or symlink is there with other content than
    the branch's (identical content is not lost), when a directory is there holding untracked
    files (each is named), or when one of its leading directories is a file or symlink of the
    user's instead.
    """
    added = _z(git(repo, "diff", "--name-only", "--no-renames", "--diff-filter=A", "-z", head, commit).stdout)
    hits: set[str] = set()
    compare: list[str] = []
    prefixes: set[str] = set()
    for path in added:
        parts = path.split("/")
        prefixes.update("/".join(parts[:i]) for i in range(1, len(parts)))
        target = repo / path
        if target.is_symlink() or target.is_file():
            compare.append(path)
        elif target.is_dir():
            hits.update(_z(git(repo, "ls-files", "--others", "-z", "--", f":(literal){path}/").stdout))
        elif os.path.lexists(target):
            hits.add(path)  # a socket, fifo or device: never replaced
    blocking = {p for p in prefixes if os.path.lexists(repo / p) and not _real_dir(repo / p)}
    if blocking:
        tracked = set(
            _z(git(repo, "ls-tree", "-r", "-z", "--name-only", head, "--", *_literal(blocking)).stdout)
        )
        hits.update(blocking - tracked)
    if compare:
        theirs: dict[str, tuple[str, str]] = {}
        for record in _z(git(repo, "ls-tree", "-r", "-z", commit, "--", *_literal(compare)).stdout):
            meta, name = record.split("\t", 1)
            mode, _kind, oid = meta.split()
            theirs[name] = (mode, oid)
        files = [p for p in compare if not (repo / p).is_symlink()]
        oids = git(repo, "hash-object", "--", *files).stdout.split() if files else []
        ours = dict(zip(files, oids, strict=True))
        for path in compare:
            mode, oid = theirs.get(path, ("", ""))
            if (repo / path).is_symlink():
                link = os.readlink(repo / path)
                same = (
                    mode == "120000" and git(repo, "hash-object", "--stdin", stdin=link).stdout.strip() == oid
                )
            else:
                same = mode in ("100644", "100755") and ours.get(path) == oid
            if not same:
                hits.add(path)
    return tuple(sorted(hits))


def _real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _literal(paths: set[str] | list[str]) -> list[str]:
    return [f":(literal){p}" for p in sorted(paths)]


def _refusal(branch: str, dirty: tuple[str, ...], ignored: tuple[str, ...]) -> MergeBlocked:
    parts: list[str] = []
    if dirty:
        parts.append(
            f"{branch} changes files you have uncommitted changes in: {', '.join(dirty)}; commit or stash them"
        )
    if ignored:
        parts.append(
            f"{branch} would replace files of yours that git does not track: {', '.join(ignored)}; "
            "move them aside (or delete them)"
        )
    return MergeBlocked(
        "dirty",
        tuple(sorted({*dirty, *ignored})),
        "; ".join(parts) + ", then merge again (nothing was changed).",
    )


def _merge_tree(repo: Path, ours: str, theirs: str) -> tuple[str, tuple[str, ...]]:
    """(tree, conflicting paths) of merging `theirs` into `ours`; objects only."""
    done = git(
        repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs, ok=(0, 1)
    )
    fields = done.stdout.split("\0")
    if done.returncode == 0:
        return fields[0].strip(), ()
    return "", tuple(sorted({name for name in fields[1:] if name}))


def plan_merge(
    repo: Path, *, branch: str, base: str, snapshot: bool, message: str
) -> MergePlan | MergeBlocked:
    """Work out how `branch` (started at `base`) merges into the lead's HEAD; change nothing.

    Args:
        repo: The top of the lead's working tree.
        branch: The agent's branch.
        base: The commit the branch started from (a snapshot commit or the lead's HEAD then).
        snapshot: Whether `base` is a snapshot of uncommitted changes.
        message: The merge commit's message.

    Raises:
        GitError: The branch is gone or git failed.
    """
    busy = _in_progress(repo)
    if busy is not None:
        return MergeBlocked(
            "busy", (), f"{repo} is in the middle of {busy}; finish or abort it, then merge {branch} again."
        )
    tip = rev_parse(repo, f"refs/heads/{branch}^{{commit}}")
    head = rev_parse(repo, "HEAD^{commit}")
    if tip == base or is_ancestor(repo, tip, head):
        return MergeBlocked("nothing", (), f"{branch} has nothing to merge: its work is already in HEAD.")
    kind: MergeKind
    if not snapshot and is_ancestor(repo, head, tip):
        kind, commit = "fast-forward", tip
    else:
        if snapshot:
            # HEAD's tree with the snapshot as parent: merge-tree then takes the snapshot as the base,
            # so only base..tip (the agent's own work) is applied.
            ours = git(
                repo,
                "commit-tree",
                f"{head}^{{tree}}",
                "-p",
                base,
                "-m",
                "corral: merge base",
                env=git_env(as_corral=True),
            ).stdout.strip()
        else:
            ours = head
        tree, conflicts = _merge_tree(repo, ours, tip)
        if conflicts:
            return MergeBlocked(
                "conflict",
                conflicts,
                f"{branch} conflicts with HEAD in {', '.join(conflicts)}; nothing was changed and the branch is kept "
                f"(resolve with `git merge {branch}` yourself, or discard it).",
            )
        if tree == rev_parse(repo, f"{head}^{{tree}}"):
            return MergeBlocked(
                "nothing", (), f"{branch} has nothing to merge: its changes are already in HEAD."
            )
        parents = ["-p", head] if snapshot else ["-p", head, "-p", tip]
        kind = "squash" if snapshot else "merge"
        commit = git(
            repo, "commit-tree", tree, *parents, "-F", "-", env=git_env(as_corral=True), stdin=message
        ).stdout.strip()
    changed = tuple(
        sorted(
            p
            for p in git(repo, "diff", "--name-only", "--no-renames", "-z", head, commit).stdout.split("\0")
            if p
        )
    )
    overlap = _overlap(changed, dirty_paths(repo))
    untracked = tuple(p for p in in_the_way(repo, head, commit) if p not in overlap)
    if overlap or untracked:
        return _refusal(branch, overlap, untracked)
    return MergePlan(repo=repo, branch=branch, tip=tip, head=head, commit=commit, kind=kind, paths=changed)


def apply_merge(plan: MergePlan) -> MergeBlocked | None:
    """Move the working tree, then HEAD, to `plan.commit`; `None` when merged.

    Returns a `MergeBlocked` (and leaves the tree as it was) when git refuses to
    update the files (something appeared in the way since the plan) or HEAD moved.
    """
    untracked = in_the_way(plan.repo, plan.head, plan.commit)  # what appeared since the plan
    if untracked:
        return _refusal(plan.branch, (), untracked)
    moved = git(plan.repo, "read-tree", "-m", "-u", plan.head, plan.commit, check=False)
    if moved.returncode != 0:
        return MergeBlocked(
            "dirty",
            plan.paths,
            f"git refused to update the files {plan.branch} changes ({moved.stderr}); nothing was changed.",
        )
    fault_point("worktree_merge_tree")
    updated = git(
        plan.repo,
        "update-ref",
        "-m",
        f"corral: merge {plan.branch}",
        "HEAD",
        plan.commit,
        plan.head,
        check=False,
    )
    if updated.returncode != 0:
        git(plan.repo, "read-tree", "-m", "-u", plan.commit, plan.head, check=False)
        return MergeBlocked(
            "busy", (), f"HEAD moved while {plan.branch} was merging; nothing was changed, merge again."
        )
    return None


def settle_merge(
    repo: Path, *, head: str, commit: str, paths: tuple[str, ...]
) -> Literal["merged", "old", "moved"]:
    """Finish a merge a killed process left journaled: `merged`, `old` (tree unchanged) or `moved`.

    * HEAD already at `commit`: the merge happened (the files are made to match if needed).
    * HEAD still at `head` and the index already holds the merged paths: the files were
      updated, only the ref was not; HEAD is moved (compare-and-set) and the merge is complete.
    * HEAD still at `head` otherwise: nothing was applied; the tree is the old one.
    * HEAD elsewhere: the user moved on; nothing is touched.
    """
    current = rev_parse(repo, "HEAD^{commit}")
    at_new = (
        not paths
        or git(repo, "diff-index", "--cached", "--quiet", commit, "--", *paths, ok=(0, 1)).returncode == 0
    )
    if current == commit:
        if not at_new:
            git(repo, "read-tree", "-m", "-u", head, commit, check=False)
        return "merged"
    if current != head:
        return "moved"
    if at_new:
        try:
            git(repo, "update-ref", "-m", "corral: finish an interrupted merge", "HEAD", commit, head)
        except GitError:
            return "moved"
        return "merged"
    return "old"
