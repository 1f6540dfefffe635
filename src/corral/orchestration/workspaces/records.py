"""The workspace records that cross between the lead and a node: plain, picklable, frozen."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import ClassVar, Literal

from corral.orchestration.host.protocol import LaunchError

__all__ = [
    "WORKSPACE_MODES",
    "PatchKind",
    "PatchOutcome",
    "PathProblem",
    "SharedCheck",
    "Snapshot",
    "Unpacked",
    "WorkspaceIdentity",
    "WorkspaceLaunch",
    "WorkspaceMode",
    "WorkspacePatch",
]

WorkspaceMode = Literal["auto", "shared", "snapshot"]
"""How a remote agent gets its workspace: `auto` (in place when the node shares it, else a snapshot),
`shared` (in place; refused when the node does not share it) or `snapshot` (always a snapshot)."""
WORKSPACE_MODES: tuple[WorkspaceMode, ...] = ("auto", "shared", "snapshot")

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


@dataclass(frozen=True, slots=True)
class WorkspaceLaunch:
    """Workspaces' part of a worker launch (`host.protocol.WorkerLaunch`): the workspace a remote
    worker's node must share, or the snapshot it works on instead. A Ray worker opens it
    (`_remote.open_workspace`); a tmux worker on the lead's machine needs nothing of it."""

    extension: ClassVar[str] = "workspaces"
    identity: WorkspaceIdentity
    """The agent's workspace on the lead (its cwd's path, git top and HEAD)."""
    _: KW_ONLY
    mode: WorkspaceMode = "shared"
    """How the node gets it (`[ray] workspace`; a moved agent always goes on in place: `shared`)."""
    writes: bool = True
    """Whether the agent may change files (a write agent's patch comes back from a snapshot)."""
    snapshot: Snapshot | None = None
    """The lead's workspace as a snapshot, when the mode may use one."""

    def to_json(self) -> dict[str, object]:
        """The part as a JSON object (the snapshot's pack in base64)."""
        snapshot = self.snapshot
        return {
            "identity": self.identity.to_json(),
            "mode": self.mode,
            "writes": self.writes,
            "snapshot": None
            if snapshot is None
            else {
                "top": snapshot.top,
                "subdir": snapshot.subdir,
                "head": snapshot.head,
                "base": snapshot.base,
                "tree": snapshot.tree,
                "pack": base64.b64encode(snapshot.pack).decode(),
                "skipped": list(snapshot.skipped),
                "attributes": snapshot.attributes,
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> WorkspaceLaunch:
        """The part `to_json` wrote.

        Raises:
            LaunchError: A field is missing or not valid.
        """
        identity, mode, writes, snapshot = (data.get(k) for k in ("identity", "mode", "writes", "snapshot"))
        if not isinstance(identity, dict) or not isinstance(identity.get("cwd"), str):
            raise LaunchError("the launch's workspaces part has no `identity` with a `cwd`")
        chosen = next((m for m in WORKSPACE_MODES if m == mode), None)
        if chosen is None:
            raise LaunchError(f"the launch's workspaces `mode` is not one of {', '.join(WORKSPACE_MODES)}")
        if not isinstance(writes, bool):
            raise LaunchError("the launch's workspaces `writes` is not true or false")
        if snapshot is not None and not isinstance(snapshot, dict):
            raise LaunchError("the launch's workspaces `snapshot` is not an object")
        return cls(
            WorkspaceIdentity.from_json(identity),
            mode=chosen,
            writes=writes,
            snapshot=None if snapshot is None else _snapshot(snapshot),
        )


def _snapshot(data: Mapping[str, object]) -> Snapshot:
    skipped = data.get("skipped")
    try:
        return Snapshot(
            top=str(data["top"]),
            subdir=str(data["subdir"]),
            head=str(data["head"]),
            base=str(data["base"]),
            tree=str(data["tree"]),
            pack=base64.b64decode(str(data["pack"]), validate=True),
            skipped=tuple(str(p) for p in skipped) if isinstance(skipped, list) else (),
            attributes=bool(data.get("attributes")),
        )
    except KeyError as exc:
        raise LaunchError(f"the launch's workspaces snapshot has no `{exc.args[0]}`") from None
    except binascii.Error as exc:
        raise LaunchError(f"the launch's workspaces snapshot pack is not base64: {exc}") from None
