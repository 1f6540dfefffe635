"""Schema migrations of the orchestration store, keyed by `PRAGMA user_version`.

`MIGRATIONS[i]` upgrades a database from version `i` to `i + 1`. Each step runs
in its own `BEGIN IMMEDIATE` transaction together with the `user_version`
bump, so a failing step leaves the database at the previous version and a
rerun applies every step exactly once. A database whose version is newer than
`len(MIGRATIONS)` was written by newer code and is refused.

Only `_store.py` and this module import `sqlite3`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "apply_migrations", "schema_version"]

Migration = Callable[[sqlite3.Connection], None]
"""One numbered step; runs inside a transaction it must not end."""

_LABEL_CHECK = "length({col}) BETWEEN 1 AND 32 AND {col} GLOB '[a-z]*' AND {col} NOT GLOB '*[^a-z0-9_-]*'"

_V1 = f"""
CREATE TABLE generations (
    run_id               TEXT PRIMARY KEY CHECK (length(run_id) = 36),
    label                TEXT NOT NULL CHECK ({_LABEL_CHECK.format(col="label")}),
    definition           TEXT NOT NULL CHECK (length(definition) > 0),
    owner_session_id     TEXT NOT NULL CHECK (length(owner_session_id) > 0),
    parent_run_id        TEXT REFERENCES generations (run_id),
    parent_label         TEXT,
    delegating           INTEGER NOT NULL DEFAULT 0 CHECK (delegating IN (0, 1)),
    cwd                  TEXT NOT NULL CHECK (length(cwd) > 0),
    session_id           TEXT NOT NULL CHECK (length(session_id) > 0),
    session_path         TEXT,
    runtime_kind         TEXT NOT NULL CHECK (runtime_kind IN ('inprocess', 'tmux', 'ray')),
    pid                  INTEGER CHECK (pid IS NULL OR pid > 0),
    host_id              TEXT,
    pane_id              TEXT,
    phase                TEXT NOT NULL DEFAULT 'starting'
                         CHECK (phase IN ('starting', 'active', 'completed', 'result_error', 'finalized')),
    presence             TEXT NOT NULL DEFAULT 'live' CHECK (presence IN ('live', 'lost', 'unknown')),
    active_request_id    TEXT,
    completed_request_id TEXT,
    created_at           INTEGER NOT NULL CHECK (created_at >= 0),
    started_at           INTEGER,
    finalized_at         INTEGER,
    last_activity_at     INTEGER CHECK (last_activity_at IS NULL OR last_activity_at >= 0),
    updated_at           INTEGER NOT NULL,
    tokens               INTEGER CHECK (tokens IS NULL OR tokens >= 0),
    cleanup_error        TEXT,
    result_error         TEXT,
    diagnostic           TEXT CHECK (diagnostic IS NULL OR length(diagnostic) <= 256),
    CHECK (parent_run_id IS NULL OR parent_run_id <> run_id),
    CHECK (parent_run_id IS NULL OR delegating = 0),
    CHECK (active_request_id IS NULL OR completed_request_id IS NULL),
    CHECK (phase <> 'active' OR active_request_id IS NOT NULL),
    CHECK (active_request_id IS NULL OR phase IN ('active', 'finalized')),
    CHECK (phase <> 'completed' OR completed_request_id IS NOT NULL),
    CHECK (phase <> 'result_error' OR result_error IS NOT NULL),
    CHECK ((phase = 'finalized') = (finalized_at IS NOT NULL))
);
CREATE INDEX generations_owner ON generations (owner_session_id);
CREATE INDEX generations_session ON generations (session_id);
CREATE INDEX generations_parent ON generations (parent_run_id);

CREATE TABLE labels (
    label      TEXT PRIMARY KEY CHECK ({_LABEL_CHECK.format(col="label")}),
    run_id     TEXT NOT NULL UNIQUE REFERENCES generations (run_id),
    claimed_at INTEGER NOT NULL
);

CREATE TABLE requests (
    request_id      TEXT PRIMARY KEY CHECK (length(request_id) = 36),
    run_id          TEXT NOT NULL REFERENCES generations (run_id),
    kind            TEXT NOT NULL CHECK (kind IN ('task', 'steer', 'interrupt', 'reply')),
    ask_id          TEXT REFERENCES asks (ask_id),
    payload         TEXT NOT NULL CHECK (length(trim(payload)) > 0),
    created_at      INTEGER NOT NULL,
    delivered_at    INTEGER,
    acknowledged_at INTEGER,
    accepted        INTEGER CHECK (accepted IN (0, 1)),
    ack_code        TEXT CHECK (ack_code IN ('busy', 'idle', 'invalid', 'identity', 'delivery', 'ambiguous')),
    ack_message     TEXT,
    CHECK ((kind = 'reply') = (ask_id IS NOT NULL)),
    CHECK ((acknowledged_at IS NULL) = (accepted IS NULL)),
    CHECK ((accepted = 0) = (ack_code IS NOT NULL))
);
CREATE UNIQUE INDEX requests_one_task ON requests (run_id) WHERE kind = 'task';
CREATE UNIQUE INDEX requests_one_unacknowledged ON requests (run_id) WHERE acknowledged_at IS NULL;

CREATE TABLE asks (
    ask_id             TEXT PRIMARY KEY CHECK (length(ask_id) = 36),
    run_id             TEXT NOT NULL REFERENCES generations (run_id),
    request_id         TEXT NOT NULL REFERENCES requests (request_id),
    question           TEXT NOT NULL CHECK (length(trim(question)) > 0),
    state              TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'answered', 'abandoned')),
    reply              TEXT,
    created_at         INTEGER NOT NULL,
    resolved_at        INTEGER,
    delivered_entry_id TEXT,
    CHECK ((state = 'pending') = (resolved_at IS NULL)),
    CHECK ((state = 'answered') = (reply IS NOT NULL))
);
CREATE UNIQUE INDEX asks_one_pending ON asks (run_id) WHERE state = 'pending';

CREATE TABLE results (
    request_id         TEXT PRIMARY KEY REFERENCES requests (request_id),
    run_id             TEXT NOT NULL UNIQUE REFERENCES generations (run_id),
    owner_session_id   TEXT NOT NULL CHECK (length(owner_session_id) > 0),
    status             TEXT NOT NULL CHECK (status IN ('completed', 'failed')),
    text               TEXT,
    artifact_path      TEXT,
    error_code         TEXT CHECK (error_code IN ('empty_result', 'result_too_large', 'write_failure')),
    error_message      TEXT,
    context_tokens     INTEGER CHECK (context_tokens IS NULL OR context_tokens >= 0),
    created_at         INTEGER NOT NULL,
    delivery           TEXT NOT NULL DEFAULT 'pending' CHECK (delivery IN ('pending', 'delivered')),
    delivered_entry_id TEXT,
    delivered_at       INTEGER,
    CHECK ((status = 'completed') = (error_code IS NULL)),
    CHECK (status <> 'completed' OR (text IS NULL) <> (artifact_path IS NULL)),
    CHECK (status <> 'failed' OR (text IS NULL AND artifact_path IS NULL)),
    CHECK (text IS NULL OR length(trim(text)) > 0),
    CHECK ((delivery = 'delivered') = (delivered_entry_id IS NOT NULL)),
    CHECK ((delivery = 'delivered') = (delivered_at IS NOT NULL))
);
CREATE INDEX results_owner_pending ON results (owner_session_id) WHERE delivery = 'pending';

CREATE TABLE result_artifacts (
    request_id TEXT PRIMARY KEY REFERENCES results (request_id),
    path       TEXT NOT NULL UNIQUE,
    size       INTEGER NOT NULL CHECK (size >= 0),
    sha256     TEXT NOT NULL CHECK (length(sha256) = 64),
    created_at INTEGER NOT NULL
);
"""


def _v1(conn: sqlite3.Connection) -> None:
    """Version 1: generations, labels, requests, asks, results, result artifacts."""
    for statement in _V1.split(";"):
        if statement.strip():
            conn.execute(statement)


MIGRATIONS: tuple[Migration, ...] = (_v1,)
"""Every step, in order; `MIGRATIONS[i]` takes version `i` to `i + 1`."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The version this code writes."""


class NewerSchemaError(Exception):
    """The database's `user_version` is newer than `len(steps)` (mapped by the store)."""

    def __init__(self, found: int, supported: int) -> None:
        super().__init__(f"database schema version {found} is newer than supported version {supported}")
        self.found = found
        self.supported = supported


def schema_version(conn: sqlite3.Connection) -> int:
    """The database's `PRAGMA user_version`."""
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def apply_migrations(conn: sqlite3.Connection, steps: Sequence[Migration] = MIGRATIONS) -> int:
    """Bring the database up to `len(steps)`, one transaction per step.

    `conn` must be in autocommit mode (`isolation_level=None`). The current
    version is re-read inside each step's transaction, so two processes
    migrating at once apply every step once.

    Args:
        conn: An open read-write connection outside any transaction.
        steps: The migration steps (tests pass their own).

    Returns:
        The number of steps this call applied.

    Raises:
        NewerSchemaError: The database is newer than `len(steps)`.
        sqlite3.Error: A step failed; its transaction was rolled back.
    """
    applied = 0
    current = schema_version(conn)
    if current > len(steps):
        raise NewerSchemaError(current, len(steps))
    if current == len(steps):
        return applied  # up to date: no write lock needed
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = schema_version(conn)
            if version > len(steps):
                raise NewerSchemaError(version, len(steps))
            if version == len(steps):
                conn.execute("COMMIT")
                return applied
            steps[version](conn)
            # PRAGMA takes no parameters; the value is an int we computed.
            conn.execute(f"PRAGMA user_version = {version + 1:d}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        applied += 1
