"""The worktrees feature as a host extension: commit on end, result details, settling crashed merges."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from corral.orchestration.errors import OrchestrationError
from corral.orchestration.host.ports import HostExtension

if TYPE_CHECKING:
    from corral.orchestration.store._store import Store
    from corral.orchestration.worktrees._worktrees import Worktrees

__all__ = ["WorktreesExtension", "worktrees_of"]


class WorktreesExtension(HostExtension):
    """Isolated writers' worktrees over one store (the git layer loads on first use)."""

    def __init__(self, store: Store) -> None:
        """Args:
        store: The host's store; worktrees go under its data root.
        """
        self.store = store
        self._trees: Worktrees | None = None

    @property
    def trees(self) -> Worktrees:
        """The `Worktrees` service."""
        if self._trees is None:
            from corral.orchestration.worktrees._worktrees import Worktrees

            self._trees = Worktrees(self.store, home=self.store.path.parent)
        return self._trees

    async def work_done(self, run_id: str, summary: str) -> str | None:
        """Commit an isolated run's work on its branch; the result's line naming the branch."""
        if not self.store.has_worktrees():
            return None
        return await self.trees.work_done(run_id, summary)

    async def result_details(self, run_id: str) -> Mapping[str, object] | None:
        """`branch`, `base`, `diffStat` and `merge` of an isolated run."""
        if not self.store.has_worktrees() or self.store.worktree_for_run(run_id) is None:
            return None
        report = await asyncio.to_thread(self.trees.report_of, run_id)
        return None if report is None else report.details()

    async def lead_attached(self, lead_session_id: str) -> Sequence[str]:
        """Settle merges a killed process left journaled; one sentence each."""
        if not self.store.has_worktrees():
            return ()
        try:
            return await asyncio.to_thread(self.trees.recover)
        except OrchestrationError as exc:  # never keeps the lead from starting
            return (f"interrupted merges could not be settled now ({exc}); `corral merge` retries",)


def worktrees_of(extensions: list[HostExtension], store: Store) -> Worktrees:
    """The worktrees service among a host's `extensions`, registering the extension on first use."""
    extension = next((e for e in extensions if isinstance(e, WorktreesExtension)), None)
    if extension is None:
        extension = WorktreesExtension(store)
        extensions.append(extension)
    return extension.trees
