"""The worktrees feature on the host's ports: the extension (commit on end, result details, settling
crashed merges) and the launch stage that isolates a new writer (`IsolationStage`)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from corral.orchestration.errors import OrchestrationError
from corral.orchestration.host.ports import Extensions, HostExtension
from corral.orchestration.worktrees._repository import Worktrees as WorktreeRows

if TYPE_CHECKING:
    from corral.orchestration.host._launch import LaunchDraft
    from corral.orchestration.store._database import Database
    from corral.orchestration.worktrees._worktrees import Isolation, Worktrees

__all__ = ["IsolationStage", "WorktreesExtension", "worktrees_of"]


class WorktreesExtension(HostExtension):
    """Isolated writers' worktrees over their rows (the git layer loads on first use)."""

    def __init__(self, rows: WorktreeRows) -> None:
        """Args:
        rows: The worktrees' repository over the host's database; worktrees go under its data root.
        """
        self.rows = rows
        self._trees: Worktrees | None = None

    @property
    def trees(self) -> Worktrees:
        """The `Worktrees` service."""
        if self._trees is None:
            from corral.orchestration.worktrees._worktrees import Worktrees

            self._trees = Worktrees(self.rows, home=self.rows.db.path.parent)
        return self._trees

    async def work_done(self, run_id: str, summary: str) -> str | None:
        """Commit an isolated run's work on its branch; the result's line naming the branch."""
        if not self.rows.has_worktrees():
            return None
        return await self.trees.work_done(run_id, summary)

    async def result_details(self, run_id: str) -> Mapping[str, object] | None:
        """`branch`, `base`, `diffStat` and `merge` of an isolated run."""
        if not self.rows.has_worktrees() or self.rows.worktree_for_run(run_id) is None:
            return None
        report = await asyncio.to_thread(self.trees.report_of, run_id)
        return None if report is None else report.details()

    async def lead_attached(self, lead_session_id: str) -> Sequence[str]:
        """Settle merges a killed process left journaled; one sentence each."""
        if not self.rows.has_worktrees():
            return ()
        try:
            return await asyncio.to_thread(self.trees.recover)
        except OrchestrationError as exc:  # never keeps the lead from starting
            return (f"interrupted merges could not be settled now ({exc}); `corral merge` retries",)


def worktrees_of(extensions: Extensions, db: Database) -> Worktrees:
    """The worktrees service among a host's `extensions`, registering the extension on first use."""
    extension = next((e for e in extensions if isinstance(e, WorktreesExtension)), None)
    if extension is None:
        extension = WorktreesExtension(WorktreeRows(db))
        extensions.add(extension)
    return extension.trees


class IsolationStage:
    """A launch stage (`host._launch.LaunchStage`): the new agent's own worktree and branch.

    Entered before the generation is recorded: it makes the worktree from the draft's cwd, and the
    agent then runs there under the run id the branch names. A failed launch abandons it (the
    worktree is removed and recorded `discarded` with `failure` as the reason).

    Args:
        extensions: The host's extensions (the worktrees extension is registered on first use).
        db: The host's database.
        name: The agent's name or label (the branch is named after it).
        owner_session_id: The session that owns the agent (`None`: none recorded).
        failure: Why the worktree is discarded when the launch fails (`the delegation failed`).
    """

    def __init__(
        self,
        extensions: Extensions,
        db: Database,
        *,
        name: str,
        owner_session_id: str | None,
        failure: str,
    ) -> None:
        self._extensions = extensions
        self._db = db
        self.name = name
        self.owner_session_id = owner_session_id
        self.failure = failure
        self.isolation: Isolation | None = None
        """The worktree made by `enter`."""

    async def enter(self, draft: LaunchDraft) -> None:
        """Make the worktree; the agent's cwd becomes the draft's cwd mapped into it."""
        trees = worktrees_of(self._extensions, self._db)
        self.isolation = await asyncio.to_thread(
            trees.isolate,
            draft.cwd,
            name=self.name,
            run_id=str(uuid.uuid4()),
            owner_session_id=self.owner_session_id,
        )
        draft.cwd = self.isolation.cwd
        draft.run_id = self.isolation.record.run_id

    async def undo(self) -> None:
        """Remove the worktree of a launch that failed."""
        if self.isolation is not None:
            trees = worktrees_of(self._extensions, self._db)
            await asyncio.to_thread(trees.abandon, self.isolation.record.branch, self.failure)
