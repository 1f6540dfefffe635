"""The workspaces feature on the lead's machine: a launch stage that takes the snapshot, and a host
extension that lands a remote write agent's patch before its result is stored.

The patch travels in the agent's own session file (a `corral-workspace-patch` custom entry the
worker appends before the result), which the Ray pump streams to the lead's machine ahead of the
result, so nothing new crosses the network and a host that crashed finds it again. Landing is
idempotent: a patch that is already in the workspace (its reverse applies) counts as applied.

Every host has the extension, so this module imports only the port: the snapshot and patch code
(and the records) load inside the functions that use them, with the first Ray agent.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from corral.orchestration.host.ports import HostExtension

if TYPE_CHECKING:
    from corral.orchestration.host._launch import LaunchDraft
    from corral.orchestration.kernel.records import GenerationRecord
    from corral.orchestration.teams.roster.records import FileClaimRecord
    from corral.orchestration.workspaces.records import (
        Snapshot,
        WorkspaceLaunch,
        WorkspaceMode,
        WorkspacePatch,
    )

__all__ = ["PATCH_ENTRY", "SnapshotStage", "WorkspacesExtension", "patch_entry_data"]

PATCH_ENTRY = "corral-workspace-patch"
"""The custom entry type of a write agent's patch in its session file."""


def patch_entry_data(patch: WorkspacePatch, top: str) -> dict[str, object]:
    """The `corral-workspace-patch` entry's data: where it applies and the patch in base64."""
    return {
        "top": top,
        "base": patch.base,
        "files": list(patch.files),
        "diff": base64.b64encode(patch.diff).decode(),
    }


class SnapshotStage:
    """A launch stage (`host._launch.LaunchStage`): a snapshot of the agent's cwd, taken off the loop.

    Used for Ray agents when `[ray] workspace` is `auto` or `snapshot`; the worker gets it with the
    launch and uses it where its node does not share the workspace (or always, for `snapshot`).
    """

    def __init__(self, mode: WorkspaceMode) -> None:
        self.mode = mode
        self.snapshot: Snapshot | None = None

    async def enter(self, draft: LaunchDraft) -> None:
        """Take the snapshot of `draft.cwd` (raises `InvalidRequestError` when it cannot be shipped)."""
        from corral.orchestration.workspaces._snapshot import take_snapshot

        self.snapshot = await asyncio.to_thread(take_snapshot, draft.cwd)

    async def undo(self) -> None:
        """Nothing to undo: the snapshot commit is an unreferenced object in the lead's repository."""


def _last_patch(session_path: Path) -> dict[str, object] | None:
    found: dict[str, object] | None = None
    with open(session_path, encoding="utf-8") as handle:
        for line in handle:
            if PATCH_ENTRY not in line:
                continue
            entry = json.loads(line)
            if entry.get("type") == "custom" and entry.get("customType") == PATCH_ENTRY:
                data = entry.get("data")
                found = data if isinstance(data, dict) else None
    return found


def _land(session_path: Path, claims: Sequence[FileClaimRecord], run_id: str) -> str | None:
    from corral.orchestration.workspaces._apply import apply_patch, is_applied
    from corral.orchestration.workspaces.records import WorkspacePatch

    data = _last_patch(session_path)
    if data is None:
        return None
    top = Path(str(data["top"]))
    files = data.get("files")
    patch = WorkspacePatch(
        base=str(data["base"]),
        files=tuple(str(f) for f in files) if isinstance(files, list) else (),
        diff=base64.b64decode(str(data["diff"])),
    )
    if patch.empty:
        return "Workspace: the agent changed no files."
    if is_applied(top, patch):
        outcome_message = f"the agent's changes to {len(patch.files)} file(s) are in the workspace"
        return f"Workspace: {outcome_message} ({', '.join(patch.files)})."
    outcome = apply_patch(top, patch, claims=claims, run_id=run_id)
    if outcome.applied:
        return f"Workspace: {outcome.message} ({', '.join(patch.files)})."
    return f"Workspace: {outcome.message}."


class WorkspacesExtension(HostExtension):
    """Lands remote write agents' patches on the lead's machine (one at a time), under the team's
    file claims: a path another agent claims refuses the whole patch (`apply_patch`).

    Args:
        claims_of: The file claims of the team the run belongs to (read when its patch lands);
            `None`: no claims are known (nothing is refused for a claim).
    """

    def __init__(self, claims_of: Callable[[str], Sequence[FileClaimRecord]] | None = None) -> None:
        self._lock = asyncio.Lock()
        self._claims_of = claims_of

    def handoff_launch(self, generation: GenerationRecord, runtime: str) -> WorkspaceLaunch:
        """A moved agent goes on in place: its worker's node must share the workspace (the cwd's path,
        git top and HEAD), else the worker refuses it (a worker on this machine always does)."""
        from corral.orchestration.workspaces._snapshot import identify
        from corral.orchestration.workspaces.records import WorkspaceLaunch

        return WorkspaceLaunch(identify(Path(generation.cwd), tree=False), mode="shared", writes=True)

    async def remote_result(self, run_id: str, session_path: Path | None) -> str | None:
        """Apply the run's patch, if its session carries one; the result's line saying what happened."""
        if session_path is None or not session_path.is_file():
            return None
        async with self._lock:
            claims = () if self._claims_of is None else tuple(self._claims_of(run_id))
            return await asyncio.to_thread(_land, session_path, claims, run_id)
