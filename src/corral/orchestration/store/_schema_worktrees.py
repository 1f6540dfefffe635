"""Schema step of the orchestration store for the worktrees feature; see `_migrations.py`.

Version 8 adds `worktrees` (one row per agent branch: where its worktree is,
what it started from, its state and, while a merge is applied, the merge's
journal) and `worktree_events` (every outcome, append-only). At most one merge
per repository is in flight (`worktrees_one_merge`), so two `corral merge`
calls cannot interleave their updates of one working tree.
"""

from __future__ import annotations

import sqlite3

__all__ = ["migrate"]

_V8_WORKTREES = """
CREATE TABLE worktrees (
    branch           TEXT PRIMARY KEY CHECK (length(branch) > 7 AND branch GLOB 'corral/*'),
    run_id           TEXT CHECK (run_id IS NULL OR length(run_id) = 36),
    name             TEXT NOT NULL CHECK (length(name) > 0),
    owner_session_id TEXT,
    repo             TEXT NOT NULL CHECK (length(repo) > 0),
    path             TEXT NOT NULL UNIQUE CHECK (length(path) > 0),
    head             TEXT NOT NULL CHECK (length(head) >= 40),
    base             TEXT NOT NULL CHECK (length(base) >= 40),
    tip              TEXT CHECK (tip IS NULL OR length(tip) >= 40),
    state            TEXT NOT NULL CHECK (state IN ('active', 'pending', 'merging', 'merged', 'discarded')),
    merge_head       TEXT,
    merge_commit     TEXT,
    merge_paths      TEXT CHECK (merge_paths IS NULL OR json_valid(merge_paths)),
    outcome          TEXT,
    created_at       INTEGER NOT NULL CHECK (created_at >= 0),
    updated_at       INTEGER NOT NULL CHECK (updated_at >= 0),
    CHECK ((state = 'merging') = (merge_commit IS NOT NULL AND merge_head IS NOT NULL))
);
CREATE UNIQUE INDEX worktrees_one_merge ON worktrees (repo) WHERE state = 'merging';
CREATE INDEX worktrees_run ON worktrees (run_id);
CREATE INDEX worktrees_name ON worktrees (name);
CREATE TABLE worktree_events (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    branch   TEXT NOT NULL REFERENCES worktrees (branch),
    outcome  TEXT NOT NULL CHECK (outcome IN ('created', 'committed', 'merged', 'conflict', 'refused',
                                              'nothing', 'interrupted', 'discarded', 'reaped')),
    detail   TEXT NOT NULL,
    paths    TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(paths)),
    at       INTEGER NOT NULL CHECK (at >= 0)
);
CREATE INDEX worktree_events_branch ON worktree_events (branch, event_id);
"""


def migrate(conn: sqlite3.Connection) -> None:
    """Create the worktrees tables (runs inside the migration's transaction)."""
    for statement in _V8_WORKTREES.split(";"):
        if statement.strip():
            conn.execute(statement)
