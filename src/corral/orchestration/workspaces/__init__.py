"""Workspaces of agents that run on another machine (the Ray runtime): shared, or a shipped snapshot.

An agent works in its lead's working directory. On another node that directory may or may not be
the same one:

* **Shared filesystem** — the node sees the lead's cwd at the same path, in the same git repository
  at the same HEAD with the same uncommitted changes (`check_shared`, which runs *on the node*
  against the `WorkspaceIdentity` the lead took with `identify`). The agent works in place, as on
  the lead's machine.
* **Snapshot** — otherwise the lead ships a snapshot (`take_snapshot`): the tracked files at HEAD
  plus every uncommitted change (modified, staged, deleted, untracked and not ignored), as a git
  pack of one tree, so it is binary-safe and verified by git itself. The node unpacks it into a
  private directory (`unpack`) that is a git repository of its own with the snapshot as its one
  commit. A read agent works there and its directory is discarded. A write agent's changes come back
  as a binary git patch against the snapshot (`collect_patch`), which the lead's host applies to the
  real workspace (`apply_patch`): all or nothing, never over a path another agent has claimed, and
  never over a change the user made since the snapshot — conflicts are reported path by path and
  the workspace is left exactly as it was.

`_remote` strings these together for a runtime: `plan_for` and `with_snapshot` on the lead,
`open_workspace` and `close_workspace` in the node's worker, `PatchLanding` back on the lead.

Pure git over argv subprocesses (the worktrees feature's `git` helpers); no Ray. See
docs/runtimes.md ("Workspaces").
"""

from __future__ import annotations

from corral.orchestration.workspaces._apply import apply_patch
from corral.orchestration.workspaces._remote import (
    NodeWorkspace,
    PatchLanding,
    SnapshotNeeded,
    WorkspacePlan,
    close_workspace,
    open_workspace,
    plan_for,
    with_snapshot,
)
from corral.orchestration.workspaces._snapshot import (
    SNAPSHOT_LIMIT_BYTES,
    WorkspaceNotSharedError,
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
    PathProblem,
    SharedCheck,
    Snapshot,
    Unpacked,
    WorkspaceIdentity,
    WorkspaceMode,
    WorkspacePatch,
)

__all__ = [
    "SNAPSHOT_LIMIT_BYTES",
    "NodeWorkspace",
    "PatchLanding",
    "PatchOutcome",
    "PathProblem",
    "SharedCheck",
    "Snapshot",
    "SnapshotNeeded",
    "Unpacked",
    "WorkspaceIdentity",
    "WorkspaceMode",
    "WorkspaceNotSharedError",
    "WorkspacePatch",
    "WorkspacePlan",
    "apply_patch",
    "check_shared",
    "close_workspace",
    "collect_patch",
    "discard",
    "identify",
    "needs_snapshot",
    "open_workspace",
    "plan_for",
    "take_snapshot",
    "unpack",
    "with_snapshot",
]
