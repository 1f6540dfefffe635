"""Typed rows of the worktrees feature (tables `worktrees` and `worktree_events`)."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Literal

__all__ = ["WorktreeEvent", "WorktreeOutcome", "WorktreeRecord", "WorktreeState"]

WorktreeState = Literal["active", "pending", "merging", "merged", "discarded"]
"""`active` while the agent runs; `pending` once its work is committed and awaits a merge;
`merging` while a merge is being applied (the journal a crash leaves behind); `merged` and
`discarded` are final (the worktree and branch are gone)."""

WorktreeOutcome = Literal[
    "created", "committed", "merged", "conflict", "refused", "nothing", "interrupted", "discarded", "reaped"
]
"""What one event records: the worktree was made, the agent's work committed, a merge landed,
hit conflicts, was refused (uncommitted changes or an operation in progress), had nothing to
merge, was interrupted by a crash (the tree is the old one), or the worktree was discarded
(by hand) or reaped (as an orphan)."""


@dataclass(frozen=True, slots=True)
class WorktreeRecord:
    """One agent's worktree and branch, as stored."""

    branch: str
    """`corral/<label or name>-<short run id>` (primary key)."""
    name: str
    """The agent's label or team name."""
    repo: Path
    """The top of the lead's working tree the branch merges back into."""
    path: Path
    """The worktree's directory."""
    head: str
    """The lead's HEAD when the worktree was made."""
    base: str
    """The commit the branch started from (a snapshot of uncommitted changes, or `head`)."""
    state: WorktreeState
    """See `WorktreeState`."""
    created_at: int
    """When the worktree was made (Unix ms)."""
    updated_at: int
    """Last change of this row (Unix ms)."""
    _: KW_ONLY
    run_id: str | None = None
    """The generation running in it (set once the generation exists)."""
    owner_session_id: str | None = None
    """The session that owns the agent (its lead)."""
    tip: str | None = None
    """The branch's commit when the agent last ended."""
    merge_head: str | None = None
    """While `merging`: the lead's HEAD the merge started from."""
    merge_commit: str | None = None
    """While `merging`: the commit HEAD is moving to."""
    merge_paths: tuple[str, ...] = ()
    """While `merging`: the paths the merge changes."""
    outcome: str | None = None
    """The last outcome's sentence (what the user was told)."""

    @property
    def snapshot(self) -> bool:
        """Whether the branch started from a snapshot of the lead's uncommitted changes."""
        return self.base != self.head


@dataclass(frozen=True, slots=True)
class WorktreeEvent:
    """One durable outcome of a worktree (row of `worktree_events`)."""

    event_id: int
    """Increasing id."""
    branch: str
    """The worktree's branch."""
    outcome: WorktreeOutcome
    """See `WorktreeOutcome`."""
    detail: str
    """The sentence the user was told."""
    paths: tuple[str, ...]
    """Conflicting or overlapping paths, when there were any."""
    at: int
    """When (Unix ms)."""
