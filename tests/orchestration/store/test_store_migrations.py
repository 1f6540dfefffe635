"""Schema migrations: a new database in one transaction, an existing one a transaction per step,
applied once, newer databases refused.

These drive `apply_migrations` directly with plain `sqlite3` connections and
their own step lists, because the real schema has a single step and the
behaviour under test (rollback of a failing step, rerun idempotence) needs
several.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.orchestration import SCHEMA_VERSION, Repositories, StoreVersionError
from corral.orchestration.store._migrations import (
    MIGRATIONS,
    NewerSchemaError,
    apply_migrations,
    schema_version,
)


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    try:
        yield connection
    finally:
        connection.close()


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_each_step_is_applied_once_across_reruns(conn: sqlite3.Connection) -> None:
    calls: list[int] = []

    def step(n: int) -> object:
        def run(c: sqlite3.Connection) -> None:
            calls.append(n)
            c.execute(f"CREATE TABLE t{n} (x INTEGER)")

        return run

    steps = [step(1), step(2)]
    assert apply_migrations(conn, steps) == 2  # type: ignore[arg-type]
    assert apply_migrations(conn, steps) == 0  # type: ignore[arg-type]
    steps.append(step(3))
    assert apply_migrations(conn, steps) == 1  # type: ignore[arg-type]
    assert calls == [1, 2, 3]
    assert schema_version(conn) == 3
    assert {"t1", "t2", "t3"} <= _tables(conn)


def test_a_failing_step_rolls_back_and_keeps_the_previous_version(conn: sqlite3.Connection) -> None:
    def good(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE good (x INTEGER)")

    def bad(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE half_done (x INTEGER)")
        c.execute("INSERT INTO missing_table VALUES (1)")

    with pytest.raises(sqlite3.OperationalError):
        apply_migrations(conn, [good, bad])
    assert schema_version(conn) == 1
    assert "good" in _tables(conn) and "half_done" not in _tables(conn)
    assert not conn.in_transaction

    def fixed(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE half_done (x INTEGER)")

    assert apply_migrations(conn, [good, fixed]) == 1
    assert schema_version(conn) == 2


def test_a_new_database_is_made_in_one_commit_and_an_existing_one_a_commit_per_step(
    conn: sqlite3.Connection,
) -> None:
    # Every `--no-session` run and every first start makes a new database: one commit (one fsync),
    # not one per step. An existing database keeps each step it finishes (its own commit).
    statements: list[str] = []
    conn.set_trace_callback(statements.append)

    def commits() -> int:
        count = sum(1 for sql in statements if sql.strip().upper() == "COMMIT")
        statements.clear()
        return count

    assert apply_migrations(conn, MIGRATIONS[:3]) == 3
    assert (schema_version(conn), commits()) == (3, 1)
    assert apply_migrations(conn, MIGRATIONS) == len(MIGRATIONS) - 3
    assert (schema_version(conn), commits()) == (len(MIGRATIONS), len(MIGRATIONS) - 3)


def test_a_newer_database_is_refused(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(NewerSchemaError, match="newer"):
        apply_migrations(conn, MIGRATIONS)
    assert _tables(conn) == set()


def test_store_refuses_a_newer_database_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "corral.db"
    with Repositories.open(path):
        pass
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(StoreVersionError, match="newer than this corral supports") as raised:
        Repositories.open(path)
    assert raised.value.category == "internal_failure"
    assert "\n" not in str(raised.value)


def test_store_creates_the_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "corral.db"
    with Repositories.open(path):
        pass
    raw = sqlite3.connect(path)
    try:
        assert schema_version(raw) == SCHEMA_VERSION
        assert {"generations", "labels", "requests", "asks", "results", "result_artifacts"} <= _tables(raw)
    finally:
        raw.close()
    with Repositories.open(path):  # reopening does not migrate again
        pass


def test_readonly_store_refuses_an_unmigrated_database(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    sqlite3.connect(path).close()
    with pytest.raises(StoreVersionError, match="schema version 0"):
        Repositories.open(path, readonly=True)
