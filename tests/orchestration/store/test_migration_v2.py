"""Schema v2: the `generations` rebuild (relaxed label CHECK) and the teams tables.

A v1 database is built by running only the first migration on a raw
connection and filling it through a `Store` wrapped around that connection
(the store's v1 methods only touch v1 tables), so every v1 table holds rows
written the way the product writes them.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from corral.orchestration import NewGeneration, NewTeamMember, Repositories
from corral.orchestration.kernel._generations import Generations
from corral.orchestration.store._database import INLINE_RESULT_LIMIT, Database
from corral.orchestration.store._migrations import (
    MIGRATIONS,
    SCHEMA_VERSION,
    apply_migrations,
    schema_version,
)
from tests.orchestration._store_helpers import LEAD, new_generation

V1_TABLES = ("generations", "labels", "requests", "asks", "results", "result_artifacts")
TEAM_TABLES = ("team_members", "team_reports", "team_messages", "file_claims")


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


class _V1Generations(Generations):
    """The kernel repository as v1 wrote labels: one data-root-wide `labels` table without a lead column."""

    def _choose_label(self, new: NewGeneration, lead: str) -> str:
        if new.label is not None:
            return new.label
        taken = {row["label"] for row in self._all("SELECT label FROM labels")}
        return next(
            name
            for name in (new.definition, *(f"{new.definition}-{i}" for i in range(2, 99)))
            if name not in taken
        )

    def _claim_label(self, lead: str, label: str, run_id: str, now: int) -> None:
        self._execute("INSERT INTO labels (label, run_id, claimed_at) VALUES (?, ?, ?)", (label, run_id, now))


def _build_v1(path: Path) -> None:
    """A v1 database with rows in every v1 table, all from the store's own methods."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    conn = _connect(path)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode = WAL")
    assert apply_migrations(conn, MIGRATIONS[:1]) == 1
    db = Database(conn, path=path, readonly=False, tracer=None, clock=lambda: 5_000)  # ties: rowid orders
    kernel = _V1Generations(db)
    try:
        planner, _ = new_generation(kernel, session_id="p1", definition="planner", delegating=True)
        new_generation(kernel, session_id="c1", owner="p1", parent_run_id=planner.run_id)
        asker, asker_task = new_generation(kernel, session_id="s-ask", label="asker")
        kernel.create_ask(asker.run_id, request_id=asker_task.request_id, question="Which file?")
        steered, _ = new_generation(kernel, session_id="s-steer", label="steered")
        kernel.submit_request(steered.run_id, owner_session_id=LEAD, kind="steer", text="left")
        done, done_task = new_generation(kernel, session_id="s-done", label="done")
        kernel.store_result(done.run_id, done_task.request_id, status="completed", text="finished")
        kernel.mark_delivered(done_task.request_id, owner_session_id=LEAD, entry_id="entry-1")
        kernel.materialize_artifact(done_task.request_id)
        big, big_task = new_generation(kernel, session_id="s-big", label="big")
        kernel.store_result(
            big.run_id, big_task.request_id, status="completed", text="y" * (INLINE_RESULT_LIMIT + 1)
        )
        new_generation(kernel, session_id="s-start", label="starter", ack=False)
        # A finalized row (v1 finalize would touch v2 tables, so write the v1 effect directly).
        gone, _ = new_generation(kernel, session_id="s-gone", label="gone")
        conn.execute("DELETE FROM labels WHERE run_id = ?", (gone.run_id,))
        conn.execute(
            "UPDATE generations SET phase = 'finalized', finalized_at = 6000 WHERE run_id = ?", (gone.run_id,)
        )
    finally:
        db.close()


_V1_COLUMNS = {"labels": "label, run_id, claimed_at"}


def _rows(path: Path, tables: tuple[str, ...] = V1_TABLES) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return {
            # v7 adds `labels.lead_session_id`; the v1 columns must survive unchanged.
            table: conn.execute(
                f"SELECT rowid, {_V1_COLUMNS.get(table, '*')} FROM {table} ORDER BY rowid"
            ).fetchall()
            for table in tables
        }
    finally:
        conn.close()


def _schema(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        return {
            name: sql
            for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL")
        }
    finally:
        conn.close()


@pytest.fixture
def v1_path(tmp_path: Path) -> Path:
    path = tmp_path / "home" / "corral.db"
    _build_v1(path)
    return path


def test_v1_database_migrates_keeping_every_row_and_reference(v1_path: Path) -> None:
    before = _rows(v1_path)
    assert all(before[table] for table in V1_TABLES), "the v1 fixture fills every table"
    order_before = [row[0] for row in before["generations"]]
    with Repositories.open(v1_path) as store:
        assert [g.run_id for g in store.kernel.generations(include_finalized=True)] == [
            row[1] for row in before["generations"]
        ]
    assert _rows(v1_path) == before
    assert [row[0] for row in _rows(v1_path)["generations"]] == order_before
    conn = _connect(v1_path)
    try:
        assert schema_version(conn) == SCHEMA_VERSION
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        for table in ("labels", "requests", "asks", "results"):
            parents = {row[2] for row in conn.execute(f"PRAGMA foreign_key_list({table})")}
            assert "generations" in parents, table
        assert {row[2] for row in conn.execute("PRAGMA foreign_key_list(generations)")} == {"generations"}
        indexes = {row[1] for row in conn.execute("PRAGMA index_list(generations)")}
        assert {"generations_owner", "generations_session", "generations_parent"} <= indexes
        # References are still enforced on the rebuilt table.
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("DELETE FROM generations")
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO requests (request_id, run_id, kind, payload, created_at)"
                " VALUES ('00000000-0000-4000-8000-000000000000', 'missing', 'steer', 'x', 0)"
            )
    finally:
        conn.close()
    assert set(TEAM_TABLES) <= set(_schema(v1_path))


def test_the_migrated_store_keeps_working(v1_path: Path) -> None:
    with Repositories.open(v1_path) as store:
        done = store.kernel.generation_by_label("done")
        assert done is not None
        assert store.kernel.finalize_generation(done.run_id, owner_session_id=LEAD).phase == "finalized"
        again, _ = new_generation(store.kernel, session_id="s-new", label="done")
        assert again.label == "done"
        _g, _t, member = store.teams.roster.create_team_generation(
            NewGeneration(
                definition="read-review",
                owner_session_id=LEAD,
                cwd="/w",
                session_id="s-team",
                task="Review.",
                label="Review_2",
            ),
            NewTeamMember(
                lead_session_id=LEAD,
                name="Review_2",
                tier="read-review",
                requested_tier="read-review",
                kind="read",
                model="m/x",
                thinking="off",
                model_source="lead",
                sandbox="enforced",
                prompt="Review.",
            ),
        )
        assert member.live


def _insert_generation(conn: sqlite3.Connection, label: str, n: int) -> None:
    conn.execute(
        "INSERT INTO generations (run_id, label, definition, owner_session_id, cwd, session_id, runtime_kind,"
        " created_at, updated_at) VALUES (?, ?, 'd', 'o', '/w', ?, 'inprocess', 0, 0)",
        (f"00000000-0000-4000-8000-{n:012d}", label, f"s{n}"),
    )


def test_generations_accept_teams_names_but_labels_stay_strict(v1_path: Path) -> None:
    with Repositories.open(v1_path):
        pass
    conn = _connect(v1_path)
    counter = itertools.count(1)
    try:
        for label in ("Review_2", "x" * 100, "A-b_C", "9lives"):
            n = next(counter)
            _insert_generation(conn, label, n)
            run_id = f"00000000-0000-4000-8000-{n:012d}"
            with pytest.raises(sqlite3.IntegrityError):
                conn.execute(
                    "INSERT INTO labels (label, run_id, claimed_at) VALUES (?, ?, 0)", (label, run_id)
                )
        for label in ("has space", "dot.ted", "", "x" * 129):
            with pytest.raises(sqlite3.IntegrityError):
                _insert_generation(conn, label, next(counter))
    finally:
        conn.close()


def test_v1_refuses_teams_names(tmp_path: Path) -> None:
    conn = _connect(tmp_path / "v1.db")
    try:
        apply_migrations(conn, MIGRATIONS[:1])
        with pytest.raises(sqlite3.IntegrityError):
            _insert_generation(conn, "Review_2", 1)
    finally:
        conn.close()


class _CrashAfter:
    """A connection stand-in whose `execute` raises right after running a chosen statement."""

    def __init__(self, conn: sqlite3.Connection, marker: str) -> None:
        self._conn = conn
        self._marker = marker

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        cursor = self._conn.execute(sql, params)
        if sql.strip().startswith(self._marker):
            raise RuntimeError(f"crash after {self._marker}")
        return cursor


@pytest.mark.parametrize(
    "marker", ["INSERT INTO generations_v2", "DROP TABLE generations", "CREATE TABLE file_claims"]
)
def test_a_crash_inside_the_step_leaves_v1_intact(v1_path: Path, marker: str) -> None:
    rows, schema = _rows(v1_path), _schema(v1_path)

    def crashing_v2(conn: sqlite3.Connection) -> None:
        MIGRATIONS[1](_CrashAfter(conn, marker))  # type: ignore[arg-type]

    conn = _connect(v1_path)
    try:
        with pytest.raises(RuntimeError, match="crash after"):
            apply_migrations(conn, [MIGRATIONS[0], crashing_v2])
        assert schema_version(conn) == 1
        assert not conn.in_transaction
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1  # restored after the step
    finally:
        conn.close()
    assert _rows(v1_path) == rows and _schema(v1_path) == schema
    with Repositories.open(v1_path) as store:  # the real step still applies afterwards
        assert store.kernel.generation_by_label("asker") is not None
    assert _rows(v1_path) == rows


def test_a_killed_migration_leaves_v1_intact(v1_path: Path) -> None:
    rows, schema = _rows(v1_path), _schema(v1_path)
    script = textwrap.dedent(
        f"""
        import os, signal, sqlite3
        from corral.orchestration.store._migrations import MIGRATIONS, apply_migrations

        class Killer:
            def __init__(self, conn):
                self.conn = conn
            def execute(self, sql, params=()):
                cursor = self.conn.execute(sql, params)
                if sql.startswith("ALTER TABLE generations_v2"):
                    os.kill(os.getpid(), signal.SIGKILL)
                return cursor

        conn = sqlite3.connect({str(v1_path)!r}, isolation_level=None)
        conn.execute("PRAGMA foreign_keys = ON")
        apply_migrations(conn, [MIGRATIONS[0], lambda c: MIGRATIONS[1](Killer(c))])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=60, env=dict(os.environ)
    )
    assert done.returncode == -9, done.stderr
    assert _rows(v1_path) == rows and _schema(v1_path) == schema
    conn = _connect(v1_path)
    try:
        assert schema_version(conn) == 1
    finally:
        conn.close()


def test_a_step_that_breaks_a_reference_is_rolled_back(tmp_path: Path) -> None:
    conn = _connect(tmp_path / "fk.db")

    def dangling(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        c.execute("CREATE TABLE child (parent_id INTEGER REFERENCES parent (id))")
        c.execute("INSERT INTO child VALUES (42)")  # foreign keys are off inside a step

    try:
        with pytest.raises(sqlite3.IntegrityError, match="broken foreign key"):
            apply_migrations(conn, [dangling])
        assert schema_version(conn) == 0
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'child'").fetchall() == []
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    finally:
        conn.close()


def test_foreign_keys_setting_is_restored_not_forced(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "off.db", isolation_level=None)
    try:
        seen: list[int] = []

        def step(c: sqlite3.Connection) -> None:
            seen.append(c.execute("PRAGMA foreign_keys").fetchone()[0])

        apply_migrations(conn, [step])
        assert seen == [0]
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 0
        conn.execute("PRAGMA foreign_keys = ON")
        apply_migrations(conn, [step, step])
        assert seen == [0, 0]
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    finally:
        conn.close()
