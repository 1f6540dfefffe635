"""Identify, check, snapshot, unpack and diff a workspace (git over argv; blocking: call off the loop).

`identify`, `take_snapshot` run on the lead; `check_shared`, `unpack`, `collect_patch` and `discard`
run on the node, in the worker that hosts the agent.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from corral.orchestration.errors import InvalidRequestError
from corral.orchestration.workspaces.records import (
    SharedCheck,
    Snapshot,
    Unpacked,
    WorkspaceIdentity,
    WorkspaceMode,
    WorkspacePatch,
)
from corral.orchestration.worktrees._git import git, git_bytes, git_env, rev_parse
from corral.orchestration.worktrees._tree import snapshot_commit, working_tree

__all__ = [
    "SNAPSHOT_LIMIT_BYTES",
    "WorkspaceNotSharedError",
    "check_shared",
    "collect_patch",
    "discard",
    "identify",
    "needs_snapshot",
    "take_snapshot",
    "unpack",
]

SNAPSHOT_LIMIT_BYTES = 256 * 1024 * 1024
"""The largest snapshot (compressed pack) the lead ships; a bigger workspace needs a shared filesystem."""

_SNAPSHOT_MESSAGE = "corral: snapshot of the lead's workspace"
_PREFIX = "corral-workspace-"
# Raw bytes on both sides: no clean/smudge filters, no end-of-line conversion, no ident expansion, so
# the node's files are the snapshot's blobs and a patch's preimages are the lead's blobs.
_RAW_ATTRIBUTES = "* -text -filter -ident -eol -working-tree-encoding\n"


class WorkspaceNotSharedError(InvalidRequestError):
    """`workspace = "shared"` was asked for, but the node does not see the lead's workspace."""


def _git_top(cwd: Path) -> Path | None:
    """The top of the git working tree holding `cwd` when it has a commit, else `None`."""
    found = git(cwd, "rev-parse", "--show-toplevel", check=False)
    if found.returncode != 0 or not found.stdout.strip():
        return None
    top = Path(found.stdout.strip())
    if git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).returncode != 0:
        return None
    return top


def identify(cwd: Path, *, tree: bool = True) -> WorkspaceIdentity:
    """What the lead's workspace at `cwd` is, for `check_shared` on a node (run on the lead).

    Args:
        tree: Also take the tree id of the uncommitted changes (hashes every changed file); without
            it the node compares the path and HEAD only (three quick git calls).
    """
    cwd = cwd.resolve()
    top = _git_top(cwd) if cwd.is_dir() else None
    if top is None:
        return WorkspaceIdentity(cwd=str(cwd), top=None, head=None, tree=None)
    return WorkspaceIdentity(
        cwd=str(cwd),
        top=str(top),
        head=rev_parse(top, "HEAD^{commit}"),
        tree=working_tree(top) if tree else None,
    )


def check_shared(identity: WorkspaceIdentity) -> SharedCheck:
    """Whether this machine sees the lead's workspace (run on the node, by the worker).

    Shared means: the directory exists at the same path, in a git working tree with the same top,
    the same HEAD and (when the identity carries it) the same uncommitted changes (the same tree id).
    Outside git only the directory's existence can be checked.
    """
    cwd = Path(identity.cwd)
    if not cwd.is_dir():
        return SharedCheck(False, f"{cwd} does not exist on this node")
    if identity.top is None:
        return SharedCheck(True, "")
    top = _git_top(cwd)
    if top is None or str(top) != identity.top:
        return SharedCheck(False, f"{cwd} on this node is not in the git working tree {identity.top}")
    head = rev_parse(top, "HEAD^{commit}")
    if head != identity.head:
        return SharedCheck(
            False, f"HEAD of {top} is {head[:12]} on this node, {str(identity.head)[:12]} on the lead"
        )
    if identity.tree is not None and working_tree(top) != identity.tree:
        return SharedCheck(False, f"the uncommitted changes in {top} differ between this node and the lead")
    return SharedCheck(True, "")


def needs_snapshot(mode: WorkspaceMode, check: SharedCheck) -> bool:
    """Whether the agent works on a snapshot, given the mode and the node's check.

    Raises:
        WorkspaceNotSharedError: `mode` is `shared` and the node does not share the workspace.
    """
    if mode == "snapshot":
        return True
    if check.shared:
        return False
    if mode == "shared":
        raise WorkspaceNotSharedError(
            f'workspace = "shared", but the node does not share the lead\'s workspace: {check.reason}; '
            'use workspace = "auto" to ship a snapshot, or mount the workspace at the same path'
        )
    return True


def take_snapshot(cwd: Path, *, limit: int = SNAPSHOT_LIMIT_BYTES) -> Snapshot:
    """The lead's workspace at `cwd` as it is now, ready to ship (run on the lead).

    Nothing of the user's is touched: the uncommitted changes are captured through a copy of the
    index (`snapshot_commit`, as isolated writers' worktrees do).

    Raises:
        InvalidRequestError: `cwd` is not in a git repository with a commit, or the snapshot is larger
            than `limit` bytes.
    """
    cwd = cwd.resolve()
    top = _git_top(cwd) if cwd.is_dir() else None
    if top is None:
        raise InvalidRequestError(
            f"{cwd} is not inside a git repository with a commit, so it cannot be shipped to a node as a "
            "snapshot: run `git init` and commit, or mount it at the same path on the node (shared filesystem)"
        )
    head = rev_parse(top, "HEAD^{commit}")
    base = snapshot_commit(top, head)
    tree = rev_parse(top, f"{base}^{{tree}}")
    objects = [tree]
    skipped: list[str] = []
    attributes = False
    listing = git(top, "ls-tree", "-r", "-t", "-z", "--full-tree", tree).stdout
    for record in listing.split("\0"):
        if not record:
            continue
        meta, path = record.split("\t", 1)
        _mode, kind, oid = meta.split(" ")
        if kind == "commit":
            skipped.append(path)
        else:
            objects.append(oid)
            attributes = attributes or path.rpartition("/")[2] == ".gitattributes"
    pack = git_bytes(top, "pack-objects", "--stdout", "-q", stdin="\n".join(objects).encode() + b"\n").stdout
    if len(pack) > limit:
        raise InvalidRequestError(
            f"the snapshot of {top} is {len(pack) / 2**20:.0f} MiB, more than the {limit / 2**20:.0f} MiB "
            "corral ships to a node; mount the workspace at the same path on the nodes (shared filesystem) "
            "or make it smaller (ignore build outputs in .gitignore)"
        )
    subdir = cwd.relative_to(top).as_posix()
    return Snapshot(
        top=str(top),
        subdir="" if subdir == "." else subdir,
        head=head,
        base=base,
        tree=tree,
        pack=pack,
        skipped=tuple(sorted(skipped)),
        attributes=attributes,
    )


def unpack(snapshot: Snapshot, parent: Path) -> Unpacked:
    """Unpack `snapshot` into a new private directory under `parent` (run on the node).

    The directory is a git repository of its own whose one commit is the snapshot (git checks every
    object of the pack), so the agent can use git there and `collect_patch` finds its changes.
    """
    parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    root = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=parent))
    try:
        git(root, "-c", "init.defaultBranch=corral-snapshot", "init", "--quiet", ".")
        for key, value in (
            ("core.autocrlf", "false"),
            ("core.symlinks", "true"),
            ("core.fileMode", "true"),
            ("user.name", "corral agent"),
            ("user.email", "corral@localhost"),
        ):
            git(root, "config", key, value)
        if snapshot.attributes:  # matching attributes per path doubles the checkout: only when needed
            (root / ".git" / "info").mkdir(exist_ok=True)
            (root / ".git" / "info" / "attributes").write_text(_RAW_ATTRIBUTES)
        git_bytes(root, "index-pack", "--stdin", "--strict", stdin=snapshot.pack)
        git(root, "read-tree", snapshot.tree)
        # Writing the files dominates; parallel checkout overlaps the writes (as worktrees do).
        git(root, "-c", "checkout.workers=4", "checkout-index", "--all", "--force", "--quiet")
        git(root, "update-index", "-q", "--refresh", check=False)
        commit = git(
            root,
            "commit-tree",
            snapshot.tree,
            "-m",
            f"{_SNAPSHOT_MESSAGE} {snapshot.top} at {snapshot.head[:12]}",
            env=git_env(as_corral=True),
        ).stdout.strip()
        git(root, "update-ref", "HEAD", commit)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    cwd = root / snapshot.subdir if snapshot.subdir else root
    cwd.mkdir(parents=True, exist_ok=True)
    return Unpacked(root=root, cwd=cwd, commit=commit, base=snapshot.base, tree=snapshot.tree)


def collect_patch(unpacked: Unpacked) -> WorkspacePatch:
    """The agent's changes to the snapshot, committed or not, as a binary patch (run on the node).

    Everything not ignored counts: modified, deleted, new files, and commits the agent made.
    """
    root = unpacked.root
    git(root, "add", "--all", "--", ".")
    common = ("--cached", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-relative")
    names = git(root, "diff", *common, "--name-only", "-z", unpacked.commit).stdout
    files = tuple(sorted(name for name in names.split("\0") if name))
    if not files:
        return WorkspacePatch(base=unpacked.base, files=(), diff=b"")
    diff = git_bytes(
        root,
        "diff",
        *common,
        "--binary",
        "--full-index",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        unpacked.commit,
    ).stdout
    return WorkspacePatch(base=unpacked.base, files=files, diff=diff)


def discard(unpacked: Unpacked) -> None:
    """Remove the private directory (a read agent's, or a write agent's once its patch is collected)."""
    root = unpacked.root
    if root.name.startswith(_PREFIX) and root.is_dir():
        for folder, dirs, _files in os.walk(root):
            for name in dirs:  # read-only directories the agent left would stop rmtree
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o700)
        shutil.rmtree(root, ignore_errors=True)
