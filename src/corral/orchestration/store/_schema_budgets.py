"""Schema step of the orchestration store for the budgets feature; see `_migrations.py`.

Version 9 adds `budget_trees` (one row per lead: its tree's limits and the spend of every agent it
owns, nested, summed) and `budget_agents` (one row per generation: its limits, its spend, whether
it got its wrap-up notice and why it was stopped). Spend is added to both rows in one transaction,
so the tree's sum never disagrees with its agents'. See `corral.orchestration.budgets`.

Version 11 adds `budget_spend_facts`: the id of every Ray worker's spend fact the host recorded, written
in the spend's transaction, so a fact pulled again by a restarted host is counted once.

Version 13 adds `budget_reservations`: one row per agent whose model request is in flight, holding
its estimate (tokens and cost) against its tree until the reply's usage replaces it (in the spend's
transaction). A row of a generation that is no longer running (finished, or marked lost) counts
nothing, so a process killed mid-request blocks its tree only until its run ends or is found lost.
"""

from __future__ import annotations

import sqlite3

__all__ = ["migrate", "migrate_reservations", "migrate_spend_facts"]

_LIMITS = """
    tokens_limit     INTEGER CHECK (tokens_limit IS NULL OR tokens_limit > 0),
    cost_limit       REAL CHECK (cost_limit IS NULL OR cost_limit > 0),
    ms_limit         INTEGER CHECK (ms_limit IS NULL OR ms_limit > 0),
    soft             REAL NOT NULL DEFAULT 0.8 CHECK (soft > 0 AND soft <= 1),
    tokens           INTEGER NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    cost_usd         REAL NOT NULL DEFAULT 0 CHECK (cost_usd >= 0),
    requests         INTEGER NOT NULL DEFAULT 0 CHECK (requests >= 0),
    estimated        INTEGER NOT NULL DEFAULT 0 CHECK (estimated >= 0),
    exhausted        TEXT,
    updated_at       INTEGER NOT NULL CHECK (updated_at >= 0)"""

_V9_BUDGETS = f"""
CREATE TABLE budget_trees (
    tree_id          TEXT PRIMARY KEY CHECK (length(tree_id) > 0),
    started_at       INTEGER CHECK (started_at IS NULL OR started_at >= 0),
    lead_told        INTEGER NOT NULL DEFAULT 0 CHECK (lead_told IN (0, 1)),
{_LIMITS}
);
CREATE TABLE budget_agents (
    run_id           TEXT PRIMARY KEY CHECK (length(run_id) = 36),
    tree_id          TEXT NOT NULL REFERENCES budget_trees (tree_id),
    session_id       TEXT NOT NULL CHECK (length(session_id) > 0),
    label            TEXT NOT NULL CHECK (length(label) > 0),
    started_at       INTEGER NOT NULL CHECK (started_at >= 0),
    noticed          INTEGER NOT NULL DEFAULT 0 CHECK (noticed IN (0, 1)),
    final_taken      INTEGER NOT NULL DEFAULT 0 CHECK (final_taken IN (0, 1)),
{_LIMITS}
);
CREATE INDEX budget_agents_tree ON budget_agents (tree_id);
CREATE INDEX budget_agents_session ON budget_agents (session_id);
"""


def migrate(conn: sqlite3.Connection) -> None:
    """Create the budgets tables (runs inside the migration's transaction)."""
    for statement in _V9_BUDGETS.split(";"):
        if statement.strip():
            conn.execute(statement)


_V11_SPEND_FACTS = """
CREATE TABLE budget_spend_facts (
    run_id           TEXT NOT NULL REFERENCES budget_agents (run_id),
    fact_id          TEXT NOT NULL CHECK (length(fact_id) > 0),
    PRIMARY KEY (run_id, fact_id)
) WITHOUT ROWID
"""


def migrate_spend_facts(conn: sqlite3.Connection) -> None:
    """Create the table of recorded Ray spend facts (runs inside the migration's transaction)."""
    conn.execute(_V11_SPEND_FACTS)


_V13_RESERVATIONS = """
CREATE TABLE budget_reservations (
    run_id           TEXT PRIMARY KEY REFERENCES budget_agents (run_id),
    tree_id          TEXT NOT NULL REFERENCES budget_trees (tree_id),
    tokens           INTEGER NOT NULL CHECK (tokens >= 0),
    cost_usd         REAL NOT NULL CHECK (cost_usd >= 0),
    reserved_at      INTEGER NOT NULL CHECK (reserved_at >= 0)
);
CREATE INDEX budget_reservations_tree ON budget_reservations (tree_id)
"""


def migrate_reservations(conn: sqlite3.Connection) -> None:
    """Create the table of model requests in flight and their estimates (inside the migration's transaction)."""
    for statement in _V13_RESERVATIONS.split(";"):
        if statement.strip():
            conn.execute(statement)
