"""The workspace records that cross between the lead and a node: plain, picklable, frozen."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "PatchKind",
    "PatchOutcome",
    "PathProblem",
    "SharedCheck",
    "Snapshot",
    "Unpacked",
    "WorkspaceIdentity",
    "WorkspaceMode",
    "WorkspacePatch",
]

WorkspaceMode = Literal["auto", "shared", "snapshot"]
"""How a remote agent gets its workspace: `auto` (in place when the node shares it, else a snapshot),
`shared` (in place; refused when the node does not share it) or `snapshot` (always a snapshot)."""

PatchKind = Literal["applied", "empty", "conflict", "claimed"]


@dataclass(frozen=True, slots=True)
class WorkspaceIdentity:
    """What a node must see to share the lead's workspace (taken on the lead by `identify`)."""

    cwd: str
    """The agent's working directory on the lead (absolute)."""
    top: str | None
    """The top of its git working tree, or `None` outside a git repository with a commit."""
    head: str | None
    """HEAD's commit id."""
    tree: str | None
    """The tree id of HEAD plus every uncommitted change: equal only for the very same working tree
    (`None`: not compared — `identify(..., tree=False)`, a cheaper check of path and HEAD only)."""

    def to_json(self) -> dict[str, str | None]:
        """The identity as a JSON object (for a worker's launch description)."""
        return {"cwd": self.cwd, "top": self.top, "head": self.head, "tree": self.tree}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> WorkspaceIdentity:
        """The identity `to_json` wrote."""

        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)

        return cls(cwd=str(data["cwd"]), top=text("top"), head=text("head"), tree=text("tree"))


@dataclass(frozen=True, slots=True)
class SharedCheck:
    """The node's answer to "do I see the lead's workspace?" (`check_shared`, run on the node)."""

    shared: bool
    """Whether the agent can work in place."""
    reason: str
    """Why not (empty when shared): one sentence naming what differs."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The lead's workspace as it was: HEAD plus uncommitted changes, as a git pack of one tree."""

    top: str
    """The top of the lead's working tree."""
    subdir: str
    """The agent's cwd relative to `top` (`""` for the top itself)."""
    head: str
    """The lead's HEAD when the snapshot was taken."""
    base: str
    """The lead's commit of that state (HEAD itself when nothing was uncommitted); patches apply to it."""
    tree: str
    """`base`'s tree id."""
    pack: bytes
    """A git pack with the tree and every tree and blob under it."""
    skipped: tuple[str, ...] = ()
    """Submodules (gitlinks) that are not shipped: their directories arrive empty."""
    attributes: bool = False
    """Whether the tree holds `.gitattributes` files (the node then turns their conversions off)."""


@dataclass(frozen=True, slots=True)
class Unpacked:
    """A snapshot unpacked on a node: a private git repository whose one commit is the snapshot."""

    root: Path
    """The private directory (the repository's top), mode 0700."""
    cwd: Path
    """Where the agent works: `root / snapshot.subdir`."""
    commit: str
    """The node's commit of the snapshot tree (patches are taken against it)."""
    base: str
    """The lead's `Snapshot.base`, carried into the patch."""
    tree: str
    """The snapshot's tree id (the same on both sides: git verified the objects)."""


@dataclass(frozen=True, slots=True)
class WorkspacePatch:
    """A write agent's changes to a snapshot: a binary git patch (full blob ids, no renames)."""

    base: str
    """The lead's snapshot commit the patch was taken against."""
    files: tuple[str, ...]
    """Changed paths, sorted, relative to the repository's top."""
    diff: bytes
    """`git diff --binary --full-index` output (empty when nothing changed)."""

    @property
    def empty(self) -> bool:
        """Whether the agent changed nothing."""
        return not self.files


@dataclass(frozen=True, slots=True)
class PathProblem:
    """One path a patch could not be applied to, and why."""

    path: str
    why: str


@dataclass(frozen=True, slots=True)
class PatchOutcome:
    """What `apply_patch` did: everything (`applied`, `empty`) or nothing (`conflict`, `claimed`)."""

    kind: PatchKind
    files: tuple[str, ...]
    """The paths the patch changes (applied, or left unchanged when refused)."""
    problems: tuple[PathProblem, ...]
    """Per path, why it was refused (empty when applied)."""
    message: str
    """One sentence for the lead: what happened and, when refused, what to do."""

    @property
    def applied(self) -> bool:
        """Whether the workspace now holds the agent's changes (trivially so for an empty patch)."""
        return self.kind in ("applied", "empty")
