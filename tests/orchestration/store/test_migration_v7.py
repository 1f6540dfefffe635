"""Schema v7: `labels` scoped per lead (`lead_session_id` in the key).

A v6 database is built with the first six steps and rows written the way v6 wrote them (labels
unique across the data root); the real step must keep every row, give each label its lead (the
owner, or the parent's owner for an agent-started generation) and roll back as a whole.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from corral.orchestration import NewGeneration, Repositories
from corral.orchestration.store._migrations import MIGRATIONS, apply_migrations, schema_version

RUN = "00000000-0000-4000-8000-{:012d}"


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _generation(conn: sqlite3.Connection, n: int, label: str, owner: str, parent: int | None = None) -> None:
    conn.execute(
        "INSERT INTO generations (run_id, label, definition, owner_session_id, parent_run_id, delegating, cwd,"
        " session_id, runtime_kind, created_at, updated_at) VALUES (?, ?, 'scout', ?, ?, ?, '/w', ?, 'inprocess',"
        " 1, 1)",
        (
            RUN.format(n),
            label,
            owner,
            None if parent is None else RUN.format(parent),
            int(parent is None),
            f"s{n}",
        ),
    )
    conn.execute("INSERT INTO labels (label, run_id, claimed_at) VALUES (?, ?, ?)", (label, RUN.format(n), n))


@pytest.fixture
def v6_path(tmp_path: Path) -> Path:
    path = tmp_path / "corral.db"
    conn = _connect(path)
    try:
        assert apply_migrations(conn, MIGRATIONS[:6]) == 6
        _generation(conn, 1, "planner", "lead-a")
        _generation(conn, 2, "helper", "s1", parent=1)  # started by planner: lead-a's tree
        _generation(conn, 3, "scout", "lead-b")
    finally:
        conn.close()
    return path


def test_v6_labels_get_their_lead_and_stay(v6_path: Path) -> None:
    with Repositories.open(v6_path) as store:
        assert store.kernel.generation_by_label("helper", session_id="lead-a") is not None
        assert store.kernel.generation_by_label("scout", session_id="lead-a") is None
        # lead-a may now take `scout`, which lead-b holds.
        generation, _ = store.kernel.create_generation(
            NewGeneration(definition="scout", owner_session_id="lead-a", cwd="/w", session_id="s9", task="t")
        )
        assert generation.label == "scout"
    conn = _connect(v6_path)
    try:
        assert schema_version(conn) == len(MIGRATIONS)
        rows = conn.execute(
            "SELECT rowid, lead_session_id, label, claimed_at FROM labels ORDER BY rowid"
        ).fetchall()
        assert rows[:3] == [
            (1, "lead-a", "planner", 1),
            (2, "lead-a", "helper", 2),
            (3, "lead-b", "scout", 3),
        ]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        with pytest.raises(sqlite3.IntegrityError):  # still unique within a lead
            conn.execute(
                "INSERT INTO labels (lead_session_id, label, run_id, claimed_at) VALUES ('lead-a', 'helper', ?, 0)",
                (RUN.format(3),),
            )
    finally:
        conn.close()


def test_a_failing_step_leaves_v6_intact(v6_path: Path) -> None:
    def crashing(conn: sqlite3.Connection) -> None:
        MIGRATIONS[6](conn)
        raise RuntimeError("crash after the rebuild")

    conn = _connect(v6_path)
    try:
        with pytest.raises(RuntimeError, match="crash after"):
            apply_migrations(conn, [*MIGRATIONS[:6], crashing])
        assert schema_version(conn) == 6
        columns = [row[1] for row in conn.execute("PRAGMA table_info(labels)")]
        assert columns == ["label", "run_id", "claimed_at"]
        assert conn.execute("SELECT count(*) FROM labels").fetchone()[0] == 3
    finally:
        conn.close()
