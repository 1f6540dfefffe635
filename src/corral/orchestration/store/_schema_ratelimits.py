"""Schema step of the orchestration store for the shared rate limits; see `_migrations.py`.

Version 10 adds `rate_limit_waits`: one row per agent run whose model request is waiting for its
endpoint's shared rate limiter right now (written when the wait starts, deleted when the request is
sent or the run ends), so status views in other processes (`corral agents list`, the lead's host
for an agent in a tmux pane) can show `waiting (rate limit, Ns)`.

Version 12 adds `rate_limit_windows`: one row per endpoint and API-key fingerprint whose
`Retry-After` window some process learnt (the host or a tmux worker), with when it ends, so every
process's limiter holds its requests back until then (rows are kept; an ended window is ignored).
"""

from __future__ import annotations

import sqlite3

__all__ = ["migrate", "migrate_windows"]

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


_V12_RATE_LIMIT_WINDOWS = """
CREATE TABLE rate_limit_windows (
    endpoint TEXT NOT NULL,
    key_id   TEXT NOT NULL,
    until_ms INTEGER NOT NULL CHECK (until_ms >= 0),
    PRIMARY KEY (endpoint, key_id)
)
"""


def migrate_windows(conn: sqlite3.Connection) -> None:
    """Create the `rate_limit_windows` table (runs inside the migration's transaction)."""
    conn.execute(_V12_RATE_LIMIT_WINDOWS)
