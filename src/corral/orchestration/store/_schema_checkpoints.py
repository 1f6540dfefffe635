"""Schema step v5 of the orchestration store: specialist checkpoints; see `_migrations.py`.

Version 5 adds `checkpoints`: one row per specialist checkpoint id
(`checkpoint:<64 hex>`). A `ready` row holds the whole checkpoint record as
JSON with its creation and expiry times; retiring it (`deleted` or
`expired`) replaces the JSON by the small retirement record and sets
`retired_at`, so the payload cannot be continued from or replayed again.
The store keeps rows; `teams/checkpoints/records.py` decides what a valid
record is (a row that fails those rules is reported as corrupt, never
rewritten behind the user's back).

In the store package, only `_database.py`, `_schema_*.py` and `_migrations.py` import sqlite3.
"""

from __future__ import annotations

import sqlite3

__all__ = ["migrate"]

_V5_CHECKPOINTS = """
CREATE TABLE checkpoints (
    checkpoint_id TEXT PRIMARY KEY
                  CHECK (length(checkpoint_id) = 75 AND checkpoint_id GLOB 'checkpoint:*'),
    state         TEXT NOT NULL CHECK (state IN ('ready', 'deleted', 'expired')),
    record        TEXT NOT NULL CHECK (length(record) > 0),
    created_at    INTEGER CHECK (created_at IS NULL OR created_at >= 0),
    expires_at    INTEGER CHECK (expires_at IS NULL OR expires_at >= 0),
    retired_at    INTEGER CHECK (retired_at IS NULL OR retired_at >= 0),
    CHECK ((state = 'ready') = (retired_at IS NULL)),
    CHECK (state <> 'ready' OR (created_at IS NOT NULL AND expires_at IS NOT NULL))
);
CREATE INDEX checkpoints_ready_expiry ON checkpoints (expires_at) WHERE state = 'ready';
"""


def migrate(conn: sqlite3.Connection) -> None:
    """Create the `checkpoints` table (runs inside the migration's transaction)."""
    for statement in _V5_CHECKPOINTS.split(";"):
        if statement.strip():
            conn.execute(statement)
