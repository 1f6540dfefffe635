"""Schema step of the orchestration store for the shared rate limits; see `_migrations.py`.

Version 10 adds `rate_limit_waits`: one row per agent run whose model request is waiting for its
endpoint's shared rate limiter right now (written when the wait starts, deleted when the request is
sent or the run ends), so status views in other processes (`corral agents list`, the lead's host
for an agent in a tmux pane) can show `waiting (rate limit, Ns)`.
"""

from __future__ import annotations

import sqlite3

__all__ = ["migrate"]

_V10_RATE_LIMIT_WAITS = """
CREATE TABLE rate_limit_waits (
    run_id   TEXT PRIMARY KEY CHECK (length(run_id) > 0),
    endpoint TEXT NOT NULL,
    reason   TEXT NOT NULL CHECK (reason IN ('retry_after', 'concurrency', 'requests_per_minute',
                                             'tokens_per_minute')),
    since_ms INTEGER NOT NULL CHECK (since_ms >= 0),
    until_ms INTEGER CHECK (until_ms IS NULL OR until_ms >= 0)
)
"""


def migrate(conn: sqlite3.Connection) -> None:
    """Create the `rate_limit_waits` table (runs inside the migration's transaction)."""
    conn.execute(_V10_RATE_LIMIT_WAITS)
