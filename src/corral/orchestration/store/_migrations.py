"""Schema migrations of the orchestration store, keyed by `PRAGMA user_version`.

`MIGRATIONS[i]` upgrades a database from version `i` to `i + 1`. Each step runs
in its own `BEGIN IMMEDIATE` transaction together with the `user_version`
bump, so a failing step leaves the database at the previous version and a
rerun applies every step exactly once. A database whose version is newer than
`len(MIGRATIONS)` was written by newer code and is refused.

Steps run with foreign keys switched off (`PRAGMA foreign_keys` cannot change
inside a transaction, so `apply_migrations` switches it around each step) and
end with `PRAGMA foreign_key_check`: a step may rebuild a referenced table, but
it cannot commit a dangling reference.

In the store package, only `_database.py`, the `_schema_*.py` steps and this module import `sqlite3`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "apply_migrations", "schema_version"]

Migration = Callable[[sqlite3.Connection], None]
"""One numbered step; runs inside a transaction it must not end."""

_LABEL_CHECK = "length({col}) BETWEEN 1 AND 32 AND {col} GLOB '[a-z]*' AND {col} NOT GLOB '*[^a-z0-9_-]*'"

_TEAM_NAME_CHECK = "length({col}) BETWEEN 1 AND 128 AND {col} NOT GLOB '*[^A-Za-z0-9_-]*'"

_GENERATIONS = """
CREATE TABLE {table} (
    run_id               TEXT PRIMARY KEY CHECK (length(run_id) = 36),
    label                TEXT NOT NULL CHECK ({label_check}),
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
)"""
"""The `generations` table; `{table}` lets v2 build its replacement beside it."""

_GENERATIONS_INDEXES = """
CREATE INDEX generations_owner ON generations (owner_session_id);
CREATE INDEX generations_session ON generations (session_id);
CREATE INDEX generations_parent ON generations (parent_run_id);
"""

_V1 = (
    _GENERATIONS.format(table="generations", label_check=_LABEL_CHECK.format(col="label"))
    + ";"
    + _GENERATIONS_INDEXES
    + f"""
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
)


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    # `executescript` would COMMIT the step's transaction; run statement by statement instead.
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _v1(conn: sqlite3.Connection) -> None:
    """Version 1: generations, labels, requests, asks, results, result artifacts."""
    _run_script(conn, _V1)


_V2_TEAMS = f"""
CREATE TABLE team_members (
    run_id               TEXT PRIMARY KEY REFERENCES generations (run_id),
    lead_session_id      TEXT NOT NULL CHECK (length(lead_session_id) > 0),
    name                 TEXT NOT NULL CHECK ({_TEAM_NAME_CHECK.format(col="name")}),
    tier                 TEXT NOT NULL CHECK (length(tier) > 0),
    requested_tier       TEXT NOT NULL CHECK (length(requested_tier) > 0),
    kind                 TEXT NOT NULL CHECK (kind IN ('read', 'write')),
    depth                INTEGER NOT NULL CHECK (depth IN (0, 1)),
    parent_run_id        TEXT REFERENCES generations (run_id),
    allow_nested         INTEGER NOT NULL DEFAULT 0 CHECK (allow_nested IN (0, 1)),
    model                TEXT NOT NULL CHECK (length(model) > 0),
    thinking             TEXT NOT NULL CHECK (length(thinking) > 0),
    model_source         TEXT NOT NULL CHECK (length(model_source) > 0),
    session_context      TEXT NOT NULL DEFAULT 'none' CHECK (session_context IN ('none', 'lazy')),
    session_context_path TEXT CHECK (session_context_path IS NULL OR length(session_context_path) > 0),
    sandbox              TEXT NOT NULL CHECK (sandbox IN ('enforced', 'instruction', 'none')),
    metadata             TEXT CHECK (metadata IS NULL OR json_type(metadata) = 'object'),
    prompt               TEXT NOT NULL CHECK (length(trim(prompt)) > 0),
    live                 INTEGER NOT NULL DEFAULT 1 CHECK (live IN (0, 1)),
    fence                TEXT NOT NULL DEFAULT 'none' CHECK (fence IN ('none', 'quarantined')),
    fence_reason         TEXT,
    created_at           INTEGER NOT NULL CHECK (created_at >= 0),
    CHECK ((depth = 0) = (parent_run_id IS NULL)),
    CHECK (parent_run_id IS NULL OR parent_run_id <> run_id),
    CHECK (depth = 0 OR (kind = 'read' AND allow_nested = 0 AND session_context = 'none')),
    CHECK (fence = 'quarantined' OR fence_reason IS NULL),
    CHECK (session_context = 'lazy' OR session_context_path IS NULL)
);
CREATE UNIQUE INDEX team_members_live_name ON team_members (lead_session_id, name) WHERE live = 1;
CREATE INDEX team_members_team ON team_members (lead_session_id, created_at);
CREATE INDEX team_members_parent ON team_members (parent_run_id);

CREATE TABLE team_reports (
    report_id         TEXT PRIMARY KEY CHECK (length(report_id) > 0),
    task_id           TEXT NOT NULL CHECK (length(task_id) > 0),
    run_id            TEXT NOT NULL UNIQUE REFERENCES generations (run_id),
    request_id        TEXT NOT NULL UNIQUE REFERENCES requests (request_id),
    lead_session_id   TEXT NOT NULL CHECK (length(lead_session_id) > 0),
    name              TEXT NOT NULL CHECK ({_TEAM_NAME_CHECK.format(col="name")}),
    tier              TEXT NOT NULL CHECK (length(tier) > 0),
    kind              TEXT NOT NULL CHECK (kind IN ('read', 'write')),
    status            TEXT NOT NULL CHECK (status IN ('completed', 'failed')),
    content           TEXT NOT NULL CHECK (length(trim(content)) > 0),
    summary           TEXT,
    outcome           TEXT CHECK (outcome IS NULL OR outcome IN ('succeeded', 'blocked', 'failed', 'cancelled')),
    result            TEXT NOT NULL CHECK (json_type(result) = 'object'),
    report_source     TEXT NOT NULL CHECK (length(report_source) > 0),
    markdown_path     TEXT,
    acceptance        TEXT NOT NULL DEFAULT 'pending' CHECK (acceptance IN ('pending', 'accepted', 'rejected')),
    acceptance_reason TEXT,
    decided_at        INTEGER,
    elapsed_ms        INTEGER CHECK (elapsed_ms IS NULL OR elapsed_ms >= 0),
    tokens            INTEGER CHECK (tokens IS NULL OR tokens >= 0),
    cost_usd          REAL CHECK (cost_usd IS NULL OR cost_usd >= 0),
    created_at        INTEGER NOT NULL CHECK (created_at >= 0),
    CHECK ((acceptance = 'pending') = (decided_at IS NULL)),
    CHECK (acceptance <> 'pending' OR acceptance_reason IS NULL)
);
CREATE INDEX team_reports_team ON team_reports (lead_session_id, created_at);
CREATE INDEX team_reports_name ON team_reports (lead_session_id, name, created_at);

CREATE TABLE team_messages (
    message_id         TEXT PRIMARY KEY CHECK (length(message_id) = 36),
    lead_session_id    TEXT NOT NULL CHECK (length(lead_session_id) > 0),
    recipient          TEXT NOT NULL CHECK (length(recipient) > 0),
    recipient_run_id   TEXT REFERENCES generations (run_id),
    sender             TEXT NOT NULL CHECK (length(sender) > 0),
    sender_run_id      TEXT REFERENCES generations (run_id),
    content            TEXT NOT NULL CHECK (length(trim(content)) > 0),
    summary            TEXT NOT NULL,
    delivery           TEXT NOT NULL CHECK (delivery IN ('active-session', 'inbox')),
    created_at         INTEGER NOT NULL CHECK (created_at >= 0),
    read_at            INTEGER,
    delivered_entry_id TEXT,
    CHECK ((recipient = 'team-lead') = (recipient_run_id IS NULL)),
    CHECK (delivery <> 'active-session' OR read_at IS NOT NULL),
    CHECK (delivered_entry_id IS NULL OR (recipient = 'team-lead' AND read_at IS NOT NULL))
);
CREATE INDEX team_messages_inbox ON team_messages (lead_session_id, recipient, created_at);
CREATE INDEX team_messages_lead_unread ON team_messages (lead_session_id, created_at)
    WHERE recipient = 'team-lead' AND read_at IS NULL;

CREATE TABLE file_claims (
    lead_session_id TEXT NOT NULL CHECK (length(lead_session_id) > 0),
    path            TEXT NOT NULL CHECK (length(path) > 0 AND path NOT GLOB '/*' AND path <> '.'),
    agent           TEXT NOT NULL CHECK (length(agent) > 0),
    run_id          TEXT NOT NULL REFERENCES generations (run_id),
    since           INTEGER NOT NULL CHECK (since >= 0),
    PRIMARY KEY (lead_session_id, path)
);
CREATE INDEX file_claims_run ON file_claims (run_id);
"""


def _v2(conn: sqlite3.Connection) -> None:
    """Version 2: teams names in `generations.label`; team members, reports, messages and file claims.

    SQLite cannot alter a CHECK, so `generations` is rebuilt the documented way
    (https://www.sqlite.org/lang_altertable.html, section 7): create the new
    table, copy every row (rowids included, so insertion order survives), drop
    the old one, rename, recreate its indexes. `apply_migrations` runs the step
    with foreign keys off and checks them before committing.
    """
    columns = ", ".join(row[1] for row in conn.execute("PRAGMA table_info(generations)").fetchall())
    label_check = _TEAM_NAME_CHECK.format(col="label")
    conn.execute(_GENERATIONS.format(table="generations_v2", label_check=label_check))
    conn.execute(f"INSERT INTO generations_v2 (rowid, {columns}) SELECT rowid, {columns} FROM generations")
    conn.execute("DROP TABLE generations")
    conn.execute("ALTER TABLE generations_v2 RENAME TO generations")
    _run_script(conn, _GENERATIONS_INDEXES)
    _run_script(conn, _V2_TEAMS)


def _v3(conn: sqlite3.Connection) -> None:
    """Version 3: assigned checks, repair ledgers, spawn assignment columns (`_schema_checks`)."""
    from corral.orchestration.store import _schema_checks

    _schema_checks.migrate(conn)


def _v4(conn: sqlite3.Connection) -> None:
    """Version 4: completion groups (`_schema_groups`)."""
    from corral.orchestration.store import _schema_groups

    _schema_groups.migrate(conn)


def _v5(conn: sqlite3.Connection) -> None:
    """Version 5: specialist checkpoints (`_schema_checkpoints`)."""
    from corral.orchestration.store import _schema_checkpoints

    _schema_checkpoints.migrate(conn)


def _v6(conn: sqlite3.Connection) -> None:
    """Version 6: a checkpointed member's admission-time source observation, kept durably so its
    checkpoint can still be saved after a host restart."""
    conn.execute(
        "ALTER TABLE team_members ADD COLUMN checkpoint_source TEXT CHECK (checkpoint_source IS NULL OR json_valid(checkpoint_source))"
    )


_V7_LABELS = f"""
CREATE TABLE labels_v7 (
    lead_session_id TEXT NOT NULL CHECK (length(lead_session_id) > 0),
    label           TEXT NOT NULL CHECK ({_LABEL_CHECK.format(col="label")}),
    run_id          TEXT NOT NULL UNIQUE REFERENCES generations (run_id),
    claimed_at      INTEGER NOT NULL,
    PRIMARY KEY (lead_session_id, label)
)
"""


def _v7(conn: sqlite3.Connection) -> None:
    """Version 7: labels are scoped to the lead whose tree holds them, not the whole data root.

    `labels` is rebuilt with `lead_session_id` (the owner of a top-level generation, the
    parent's owner for an agent-started one; delegation is one level deep) in the key, so
    a live or lost `scout` of one lead no longer blocks `scout` in another. Every row is
    kept (rowids included); the old labels were unique across the data root, so they are
    unique per lead too.
    """
    conn.execute(_V7_LABELS)
    conn.execute(
        "INSERT INTO labels_v7 (rowid, lead_session_id, label, run_id, claimed_at)"
        " SELECT l.rowid, COALESCE(p.owner_session_id, g.owner_session_id), l.label, l.run_id, l.claimed_at"
        " FROM labels l JOIN generations g ON g.run_id = l.run_id"
        " LEFT JOIN generations p ON p.run_id = g.parent_run_id"
    )
    kept = conn.execute("SELECT (SELECT count(*) FROM labels) - (SELECT count(*) FROM labels_v7)").fetchone()[
        0
    ]
    if kept:
        raise sqlite3.IntegrityError(
            f"migration to schema version 7 would drop {kept} label(s) without a generation"
        )
    conn.execute("DROP TABLE labels")
    conn.execute("ALTER TABLE labels_v7 RENAME TO labels")


def _v8(conn: sqlite3.Connection) -> None:
    """Version 8: agents' git worktrees and every outcome of their merges (`_schema_worktrees.py`)."""
    from corral.orchestration.store import _schema_worktrees

    _schema_worktrees.migrate(conn)


def _v9(conn: sqlite3.Connection) -> None:
    """Version 9: budgets of agent trees and agents, and their spend (`_schema_budgets.py`)."""
    from corral.orchestration.store import _schema_budgets

    _schema_budgets.migrate(conn)


def _v10(conn: sqlite3.Connection) -> None:
    """Version 10: model requests waiting for their endpoint's shared rate limiter (`_schema_ratelimits.py`)."""
    from corral.orchestration.store import _schema_ratelimits

    _schema_ratelimits.migrate(conn)


def _v11(conn: sqlite3.Connection) -> None:
    """Version 11: the ids of Ray spend facts already recorded, so each counts once (`_schema_budgets.py`)."""
    from corral.orchestration.store import _schema_budgets

    _schema_budgets.migrate_spend_facts(conn)


def _v12(conn: sqlite3.Connection) -> None:
    """Version 12: `Retry-After` windows shared by the processes of a store (`_schema_ratelimits.py`)."""
    from corral.orchestration.store import _schema_ratelimits

    _schema_ratelimits.migrate_windows(conn)


def _v13(conn: sqlite3.Connection) -> None:
    """Version 13: budget reservations of model requests in flight (`_schema_budgets.py`)."""
    from corral.orchestration.store import _schema_budgets

    _schema_budgets.migrate_reservations(conn)


MIGRATIONS: tuple[Migration, ...] = (
    _v1, _v2, _v3, _v4, _v5, _v6, _v7, _v8, _v9, _v10, _v11, _v12, _v13,
)  # fmt: skip
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
    """Bring the database up to `len(steps)`: a new (empty) database in one transaction, an existing
    one a transaction per step.

    `conn` must be in autocommit mode (`isolation_level=None`). The current
    version is re-read inside each step's transaction, so two processes
    migrating at once apply every step once. Each step runs with foreign keys
    off (a table rebuild must be able to drop a referenced table) and
    `PRAGMA foreign_key_check` must come back empty before its COMMIT; the
    connection's `foreign_keys` setting is restored afterwards, also on failure.

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
    foreign_keys = bool(conn.execute("PRAGMA foreign_keys").fetchone()[0])
    while True:
        # `PRAGMA foreign_keys` is a no-op inside a transaction: switch it before BEGIN.
        conn.execute("PRAGMA foreign_keys = OFF")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                version = schema_version(conn)
                if version > len(steps):
                    raise NewerSchemaError(version, len(steps))
                if version == len(steps):
                    conn.execute("COMMIT")
                    return applied
                # A new database is made whole in one transaction: one commit (one fsync) instead of
                # one per step — every `--no-session` run and every first start makes one. An existing
                # one moves a step per transaction.
                last = len(steps) if version == 0 else version + 1
                reached, failed = _apply_steps(conn, steps, version, last)
                # PRAGMA takes no parameters; the value is an int we computed.
                conn.execute(f"PRAGMA user_version = {reached:d}")
                conn.execute("COMMIT")
                if failed is not None:
                    raise failed
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        finally:
            conn.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")
        applied += last - version
        if last == len(steps):
            return applied


def _apply_steps(
    conn: sqlite3.Connection, steps: Sequence[Migration], first: int, last: int
) -> tuple[int, BaseException | None]:
    """Run steps `first` to `last - 1` inside the caller's transaction, each in a savepoint: the
    version reached, and the error of the step that failed after others succeeded. That step is
    rolled back alone and the ones before it are kept, as when each had its own transaction (the
    caller commits them, then raises the error); a failing first step raises at once."""
    for step in range(first, last):
        conn.execute("SAVEPOINT migration_step")
        try:
            steps[step](conn)
            _check_foreign_keys(conn, step + 1)
        except BaseException as exc:
            if step == first:
                raise
            conn.execute("ROLLBACK TO migration_step")
            conn.execute("RELEASE migration_step")
            return step, exc
        conn.execute("RELEASE migration_step")
    return last, None


def _check_foreign_keys(conn: sqlite3.Connection, version: int) -> None:
    """Raise if the step left any row whose reference does not resolve."""
    violations = conn.execute("PRAGMA foreign_key_check").fetchall()
    if violations:
        table, rowid, parent = violations[0][0], violations[0][1], violations[0][2]
        raise sqlite3.IntegrityError(
            f"migration to schema version {version} left {len(violations)} broken foreign key(s),"
            f" first in {table} row {rowid} referencing {parent}"
        )
