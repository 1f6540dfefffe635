"""Schema step v4 of the orchestration store: completion groups (`spec/teams-detail.md` §8).

The original keeps one JSON journal per group; here the journal is three tables
written in one transaction per event:

* `completion_groups` — the group and its binding (team, lead session,
  submission, policy) and whether it is sealed.
* `completion_group_slots` — one row per member seed, in member order, with its
  status, queue and run identities, settlement reason and report receipt.
* `completion_group_deliveries` — the planned index deliveries, each with the
  inbox message that stores its text for `read_inbox` and its wake receipt.

CHECKs hold the journal's invariants where SQLite can state them: ids have the
spec's shape, a queued slot has a queue id, a running slot a run, a reported
slot a run and a receipt, exactly the settled-without-report states carry a
reason, an enqueued delivery names its inbox message, an observed wake names
its session entry.

In the store package, only `_database.py`, `_schema_*.py` and `_migrations.py` import sqlite3.
"""

from __future__ import annotations

import sqlite3

__all__ = ["migrate"]

_TEAM_NAME_CHECK = "length({col}) BETWEEN 1 AND 128 AND {col} NOT GLOB '*[^A-Za-z0-9_-]*'"

_HEX64 = "[0-9a-f]" * 64

_V4 = f"""
CREATE TABLE completion_groups (
    group_id        TEXT PRIMARY KEY CHECK (group_id GLOB 'group:{_HEX64}'),
    lead_session_id TEXT NOT NULL CHECK (length(lead_session_id) > 0),
    team            TEXT NOT NULL CHECK (length(team) > 0),
    submission_id   TEXT NOT NULL CHECK (length(submission_id) > 0),
    delivery_mode   TEXT NOT NULL CHECK (delivery_mode IN ('immediate', 'all-settled')),
    sealed          INTEGER NOT NULL DEFAULT 0 CHECK (sealed IN (0, 1)),
    created_at      INTEGER NOT NULL CHECK (created_at >= 0),
    sealed_at       INTEGER,
    CHECK ((sealed = 1) = (sealed_at IS NOT NULL))
);
CREATE INDEX completion_groups_lead ON completion_groups (lead_session_id, created_at);

CREATE TABLE completion_group_slots (
    slot_id    TEXT PRIMARY KEY,
    group_id   TEXT NOT NULL REFERENCES completion_groups (group_id),
    slot_index INTEGER NOT NULL CHECK (slot_index >= 0),
    name       TEXT NOT NULL CHECK ({_TEAM_NAME_CHECK.format(col="name")}),
    status     TEXT NOT NULL DEFAULT 'pending'
               CHECK (status IN ('pending', 'queued', 'running', 'reported', 'rejected', 'cancelled',
                                 'interrupted')),
    queue_id   TEXT CHECK (queue_id IS NULL OR length(queue_id) > 0),
    run_id     TEXT CHECK (run_id IS NULL OR length(run_id) > 0),
    reason     TEXT CHECK (reason IS NULL OR length(trim(reason)) > 0),
    receipt    TEXT CHECK (receipt IS NULL OR json_type(receipt) = 'object'),
    updated_at INTEGER NOT NULL CHECK (updated_at >= 0),
    UNIQUE (group_id, slot_index),
    UNIQUE (group_id, name),
    CHECK (slot_id = group_id || ':' || slot_index),
    CHECK (status <> 'queued' OR queue_id IS NOT NULL),
    CHECK (status NOT IN ('pending', 'queued') OR run_id IS NULL),
    CHECK (status NOT IN ('running', 'reported') OR run_id IS NOT NULL),
    CHECK ((status = 'reported') = (receipt IS NOT NULL)),
    CHECK ((status IN ('rejected', 'cancelled', 'interrupted')) = (reason IS NOT NULL))
);

CREATE TABLE completion_group_deliveries (
    delivery_id     TEXT PRIMARY KEY CHECK (delivery_id GLOB 'delivery:{_HEX64}'),
    group_id        TEXT NOT NULL REFERENCES completion_groups (group_id),
    lead_session_id TEXT NOT NULL CHECK (length(lead_session_id) > 0),
    kind            TEXT NOT NULL CHECK (kind IN ('member', 'urgent', 'settled')),
    slot_ids        TEXT NOT NULL CHECK (json_type(slot_ids) = 'array' AND json_array_length(slot_ids) > 0),
    index_json      TEXT NOT NULL CHECK (json_type(index_json) = 'object'),
    text            TEXT NOT NULL CHECK (length(trim(text)) > 0),
    status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'enqueued')),
    message_id      TEXT UNIQUE REFERENCES team_messages (message_id),
    wake_state      TEXT CHECK (wake_state IS NULL OR wake_state IN ('pending', 'observed')),
    wake_entry_id   TEXT CHECK (wake_entry_id IS NULL OR length(wake_entry_id) > 0),
    wake_error      TEXT,
    created_at      INTEGER NOT NULL CHECK (created_at >= 0),
    reserved_at     INTEGER,
    observed_at     INTEGER,
    CHECK ((status = 'enqueued') = (message_id IS NOT NULL)),
    CHECK (wake_state IS NULL OR status = 'enqueued'),
    CHECK ((wake_state IS NULL) = (reserved_at IS NULL)),
    CHECK ((wake_state = 'observed') = (wake_entry_id IS NOT NULL)),
    CHECK ((wake_state = 'observed') = (observed_at IS NOT NULL)),
    CHECK (wake_error IS NULL OR wake_state IS NOT NULL)
);
CREATE INDEX completion_group_deliveries_group ON completion_group_deliveries (group_id);
CREATE INDEX completion_group_deliveries_lead ON completion_group_deliveries (lead_session_id, created_at);
"""


def migrate(conn: sqlite3.Connection) -> None:
    """Create the completion-group tables (runs inside the migration's transaction)."""
    for statement in _V4.split(";"):
        if statement.strip():
            conn.execute(statement)
