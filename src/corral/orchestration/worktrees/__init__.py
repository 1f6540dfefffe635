"""Per-agent git worktrees and a safe merge back (`isolation = "worktree"`).

An isolated write agent runs in its own worktree on branch
`corral/<label or name>-<short run id>`, made from the lead's HEAD plus the
lead's uncommitted changes. When it ends its work is committed on the branch;
`Worktrees.merge` applies the branch to the lead's working tree (fast-forward,
three-way merge, or a squash for a branch that started from uncommitted
changes) without ever overwriting uncommitted changes, and every outcome is
recorded in the store. See docs/teams.md ("Isolated writers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from corral.orchestration.worktrees._git import GitError, NotAGitRepositoryError
    from corral.orchestration.worktrees._tree import DiffStat
    from corral.orchestration.worktrees._worktrees import (
        Isolation,
        MergeOutcome,
        Orphan,
        WorktreeReport,
        Worktrees,
        WorktreeUsage,
        branch_name,
    )
    from corral.orchestration.worktrees.records import (
        WorktreeEvent,
        WorktreeOutcome,
        WorktreeRecord,
        WorktreeState,
    )

__all__ = [
    "DiffStat",
    "GitError",
    "Isolation",
    "MergeOutcome",
    "NotAGitRepositoryError",
    "Orphan",
    "WorktreeEvent",
    "WorktreeOutcome",
    "WorktreeRecord",
    "WorktreeReport",
    "WorktreeState",
    "WorktreeUsage",
    "Worktrees",
    "branch_name",
]

_HOMES = {
    "GitError": "_git",
    "NotAGitRepositoryError": "_git",
    "DiffStat": "_tree",
    "WorktreeEvent": "records",
    "WorktreeOutcome": "records",
    "WorktreeRecord": "records",
    "WorktreeState": "records",
}


def __getattr__(name: str) -> Any:
    """Load the feature on first use: the store imports this package for its rows, and a lead that
    never isolates an agent should not pay for the git layer at start-up."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module = importlib.import_module(f"{__name__}.{_HOMES.get(name, '_worktrees')}")
    value = getattr(module, name)
    globals()[name] = value
    return value
