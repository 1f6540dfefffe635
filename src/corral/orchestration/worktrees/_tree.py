"""An agent's worktree: create it from the lead's tree, commit its work, measure it, remove it.

The agent starts from what the user sees: the lead's HEAD **plus** the lead's
uncommitted changes (tracked modifications, staged or not, and untracked files
that `.gitignore` does not exclude). Those changes are captured without touching
the user's index or files: a copy of the index takes `git add -A` and
`git write-tree`, and `git commit-tree` turns the tree into a *snapshot commit*
whose parent is HEAD. The agent's branch starts at the snapshot (or at HEAD when
the tree is clean); that commit is the agent's **base**, so the agent's own work
is exactly `base..tip`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from corral.orchestration.worktrees._git import GitError, git, git_env, rev_parse

__all__ = [
    "DiffStat",
    "NewWorktree",
    "commit_worktree",
    "create_worktree",
    "diff_stat",
    "disk_usage",
    "remove_worktree",
    "snapshot_commit",
    "working_tree",
]

SNAPSHOT_MESSAGE = "corral: the lead's uncommitted changes"
"""Message of a snapshot commit (never merged back: merges squash past it)."""


@dataclass(frozen=True, slots=True)
class NewWorktree:
    """A worktree `create_worktree` made."""

    path: Path
    """The worktree's directory."""
    branch: str
    """Its branch (`corral/<name>-<short run id>`)."""
    head: str
    """The lead's HEAD when it was made."""
    base: str
    """The commit the branch starts from: the snapshot commit, or `head` when the tree was clean."""

    @property
    def snapshot(self) -> bool:
        """Whether the base is a snapshot of uncommitted changes (not the lead's HEAD)."""
        return self.base != self.head


@dataclass(frozen=True, slots=True)
class DiffStat:
    """What a branch changed since its base."""

    files: tuple[str, ...]
    """Changed paths, sorted, relative to the repository's top."""
    insertions: int
    """Added lines (binary files count none)."""
    deletions: int
    """Removed lines."""

    def text(self) -> str:
        """`3 files changed, 10 insertions(+), 2 deletions(-)`, git's own summary line."""
        if not self.files:
            return "no changes"
        count = len(self.files)
        return (
            f"{count} file{'s' if count != 1 else ''} changed, "
            f"{self.insertions} insertion{'s' if self.insertions != 1 else ''}(+), "
            f"{self.deletions} deletion{'s' if self.deletions != 1 else ''}(-)"
        )


def _git_dir(repo: Path) -> Path:
    return Path(git(repo, "rev-parse", "--absolute-git-dir").stdout.strip())


def working_tree(repo: Path) -> str:
    """The tree id of the working tree's current state: HEAD plus every uncommitted change (modified,
    staged, deleted, untracked and not ignored).

    Neither the user's index nor any file in the working tree is touched: the
    index is copied to a private temporary file and `git add -A` runs against
    the copy (so stat data stays valid and unchanged files are not re-hashed).
    """
    git_dir = _git_dir(repo)
    with tempfile.TemporaryDirectory(prefix="corral-index-") as scratch:
        index = Path(scratch) / "index"
        live = git_dir / "index"
        if live.is_file():
            shutil.copyfile(live, index)
        env = git_env(index_file=index)
        git(repo, "add", "-A", "--", ".", env=env)
        return git(repo, "write-tree", env=env).stdout.strip()


def snapshot_commit(repo: Path, head: str) -> str:
    """A commit of the working tree's current state on top of `head`, or `head` itself when clean
    (`working_tree`: nothing of the user's is touched)."""
    tree = working_tree(repo)
    if tree == rev_parse(repo, f"{head}^{{tree}}"):
        return head
    return git(
        repo, "commit-tree", tree, "-p", head, "-m", SNAPSHOT_MESSAGE, env=git_env(as_corral=True)
    ).stdout.strip()


def create_worktree(repo: Path, *, path: Path, branch: str) -> NewWorktree:
    """Create branch `branch` and a worktree for it at `path`, from the lead's tree as it is now.

    Args:
        repo: The top of the lead's working tree.
        path: Where the worktree goes (must not exist; never inside `repo`).
        branch: The new branch's name.

    Raises:
        GitError: The branch exists, or git failed; nothing is left behind.
    """
    head = rev_parse(repo, "HEAD^{commit}")
    base = snapshot_commit(repo, head)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Writing the files dominates (a 10,000-file tree); parallel checkout overlaps the writes.
    git(repo, "-c", "checkout.workers=4", "worktree", "add", "--quiet", "-b", branch, str(path), base)
    return NewWorktree(path=path, branch=branch, head=head, base=base)


def commit_worktree(path: Path, message: str) -> str:
    """Commit everything in the worktree at `path` (as corral, hooks skipped); return the new tip.

    Returns the current tip unchanged when there is nothing to commit.
    """
    git(path, "add", "-A", "--", ".")
    if git(path, "diff", "--cached", "--quiet", ok=(0, 1)).returncode == 1:
        git(
            path,
            "commit",
            "--quiet",
            "--no-verify",
            "--no-gpg-sign",
            "-F",
            "-",
            env=git_env(as_corral=True),
            stdin=message,
        )
    return rev_parse(path, "HEAD^{commit}")


def diff_stat(repo: Path, base: str, tip: str) -> DiffStat:
    """What `tip` changed since `base` (renames counted as a delete and an add)."""
    output = git(repo, "diff", "--numstat", "--no-renames", "-z", base, tip).stdout
    files: list[str] = []
    insertions = deletions = 0
    for record in output.split("\0"):
        if not record:
            continue
        added, removed, name = record.split("\t", 2)
        files.append(name)
        insertions += int(added) if added.isdigit() else 0
        deletions += int(removed) if removed.isdigit() else 0
    return DiffStat(files=tuple(sorted(files)), insertions=insertions, deletions=deletions)


def remove_worktree(repo: Path, path: Path, branch: str | None) -> None:
    """Remove the worktree at `path` and delete `branch` (each only if it is there).

    A directory git no longer knows is deleted outright, then `git worktree prune`
    forgets stale entries.
    """
    if path.exists():
        removed = git(repo, "worktree", "remove", "--force", "--force", str(path), check=False)
        if removed.returncode != 0 and path.exists():
            shutil.rmtree(path)
    git(repo, "worktree", "prune")
    if (
        branch is not None
        and git(repo, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}", ok=(0, 1)).returncode == 0
    ):
        deleted = git(repo, "branch", "-D", "--quiet", branch, check=False)
        if deleted.returncode != 0:
            raise GitError(f"Cannot delete branch {branch} in {repo}: {deleted.stderr}")


def disk_usage(path: Path) -> int:
    """Bytes the files under `path` occupy on disk (allocated blocks; symlinks not followed)."""
    total = 0
    for root, dirs, names in os.walk(path, followlinks=False):
        for name in (*names, *dirs):
            try:
                stat = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            total += stat.st_blocks * 512
    return total
