"""The workspace of one remote run, end to end: what a runtime calls on each side.

Lead (host)                                   node (the worker that hosts the agent)
-----------                                   --------------------------------------
`plan_for(cwd, mode, writes)`  ── launch ──▶  `open_workspace(plan, parent)`
                                               → `NodeWorkspace` (in place or unpacked), or
                                               → `SnapshotNeeded` (no snapshot in the plan yet)
`with_snapshot(plan)`          ── launch ──▶  `open_workspace(...)` → `NodeWorkspace`
                                               … the agent works in `NodeWorkspace.cwd` …
`PatchLanding.land(...)`  ◀── with result ──  `close_workspace(workspace)` → patch or `None`

The snapshot is taken only when the node asked for it (a shared filesystem costs nothing but the
check), and a write agent's patch is landed before its result is stored, so the result can say
whether its changes reached the workspace.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from corral.orchestration.teams.roster.records import FileClaimRecord
from corral.orchestration.workspaces._apply import apply_patch
from corral.orchestration.workspaces._snapshot import (
    check_shared,
    collect_patch,
    discard,
    identify,
    needs_snapshot,
    take_snapshot,
    unpack,
)
from corral.orchestration.workspaces.records import (
    PatchOutcome,
    Snapshot,
    Unpacked,
    WorkspaceIdentity,
    WorkspaceMode,
    WorkspacePatch,
)

__all__ = [
    "NodeWorkspace",
    "PatchLanding",
    "SnapshotNeeded",
    "WorkspacePlan",
    "close_workspace",
    "open_workspace",
    "plan_for",
    "with_snapshot",
]


@dataclass(frozen=True, slots=True)
class WorkspacePlan:
    """What the lead sends with a remote launch about the agent's workspace."""

    identity: WorkspaceIdentity
    """The lead's workspace, for the node's shared-filesystem check."""
    mode: WorkspaceMode
    """`auto`, `shared` or `snapshot` (`[ray] workspace`)."""
    writes: bool
    """Whether the agent may change files (its changes on a snapshot come back as a patch)."""
    snapshot: Snapshot | None = None
    """The snapshot, once the node asked for one (`SnapshotNeeded`)."""


@dataclass(frozen=True, slots=True)
class SnapshotNeeded:
    """The node's answer when it does not share the workspace and the plan carries no snapshot yet."""

    reason: str
    """Why the node does not share it (empty when `mode` is `snapshot`)."""


@dataclass(frozen=True, slots=True)
class NodeWorkspace:
    """Where a remote agent works, held by its worker until the run ends."""

    cwd: Path
    """The agent's working directory on the node."""
    writes: bool
    unpacked: Unpacked | None
    """The private snapshot directory, or `None` when the agent works in place."""
    reason: str = ""
    """Why the agent works on a snapshot (the shared check's answer; empty when in place)."""

    @property
    def shared(self) -> bool:
        """Whether the agent works in the lead's own workspace."""
        return self.unpacked is None


def plan_for(cwd: Path, mode: WorkspaceMode, *, writes: bool) -> WorkspacePlan:
    """The plan of a new remote run whose agent works in `cwd` (on the lead; blocking git)."""
    return WorkspacePlan(identity=identify(cwd), mode=mode, writes=writes)


def with_snapshot(plan: WorkspacePlan) -> WorkspacePlan:
    """`plan` with a snapshot of the lead's workspace as it is now (on the lead; blocking git).

    Raises:
        InvalidRequestError: The workspace cannot be shipped (not git, or too large).
    """
    return dataclasses.replace(plan, snapshot=take_snapshot(Path(plan.identity.cwd)))


def open_workspace(plan: WorkspacePlan, parent: Path) -> NodeWorkspace | SnapshotNeeded:
    """Decide and prepare the agent's workspace on this node (on the node; blocking git).

    Raises:
        WorkspaceNotSharedError: `mode` is `shared` and this node does not see the workspace.
    """
    check = check_shared(plan.identity)
    if not needs_snapshot(plan.mode, check):
        return NodeWorkspace(cwd=Path(plan.identity.cwd), writes=plan.writes, unpacked=None)
    if plan.snapshot is None:
        return SnapshotNeeded(check.reason)
    unpacked = unpack(plan.snapshot, parent)
    return NodeWorkspace(cwd=unpacked.cwd, writes=plan.writes, unpacked=unpacked, reason=check.reason)


def close_workspace(workspace: NodeWorkspace) -> WorkspacePatch | None:
    """End the agent's workspace: a write agent's patch on a snapshot, else `None` (on the node).

    The private snapshot directory is removed either way.
    """
    if workspace.unpacked is None:
        return None
    try:
        return collect_patch(workspace.unpacked) if workspace.writes else None
    finally:
        discard(workspace.unpacked)


class PatchLanding:
    """Lands write agents' patches on the lead, one at a time per workspace (in a thread)."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    async def land(
        self,
        top: Path,
        patch: WorkspacePatch,
        *,
        claims: Sequence[FileClaimRecord] = (),
        run_id: str | None = None,
    ) -> PatchOutcome:
        """`apply_patch` off the event loop, serialized per repository top."""
        lock = self._locks.setdefault(str(top), asyncio.Lock())
        async with lock:
            return await asyncio.to_thread(apply_patch, top, patch, claims=claims, run_id=run_id)
