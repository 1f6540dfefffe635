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
