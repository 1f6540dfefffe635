"""Exactly-once at the store: atomic result + completion, delivery marked once across racing writers."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from corral.orchestration import Repositories, StoreError
from tests.orchestration._store_helpers import LEAD, dump, new_generation


class _Crash(Exception):
    """Raised by the tracer to simulate a crash between two statements."""


def test_crash_between_result_and_completion_leaves_neither(db_path: Path) -> None:
    armed = {"on": False}

    def tracer(sql: str, _params: tuple[object, ...]) -> None:
        if armed["on"] and sql.startswith("UPDATE generations SET phase = 'completed'"):
            raise _Crash

    with Repositories.open(db_path, tracer=tracer) as traced:
        generation, task = new_generation(traced.kernel, session_id="s1")
        before = dump(db_path)
        armed["on"] = True
        with pytest.raises(_Crash):
            traced.kernel.store_result(generation.run_id, task.request_id, status="completed", text="done")
        assert dump(db_path) == before
        assert traced.kernel.get_result(task.request_id) is None
        assert traced.kernel.get_generation(generation.run_id).phase == "active"  # type: ignore[union-attr]
        armed["on"] = False
        traced.kernel.store_result(generation.run_id, task.request_id, status="completed", text="done")
        assert traced.kernel.get_generation(generation.run_id).phase == "completed"  # type: ignore[union-attr]


def test_crash_after_insert_of_a_large_result_leaves_no_artifact_row(db_path: Path) -> None:
    armed = {"on": False}

    def tracer(sql: str, _params: tuple[object, ...]) -> None:
        if armed["on"] and sql.startswith("UPDATE generations SET phase = 'completed'"):
            raise _Crash

    with Repositories.open(db_path, tracer=tracer) as traced:
        generation, task = new_generation(traced.kernel, session_id="s1")
        armed["on"] = True
        with pytest.raises(_Crash):
            traced.kernel.store_result(
                generation.run_id, task.request_id, status="completed", text="x" * 100_000
            )
        assert traced.kernel.get_artifact(task.request_id) is None
        assert not [p for p in traced.db.results_dir.iterdir() if p.name.endswith(".staged")]
        armed["on"] = False
        result = traced.kernel.store_result(
            generation.run_id, task.request_id, status="completed", text="y" * 100_000
        )
        assert traced.kernel.result_text(result) == "y" * 100_000


def test_failing_commit_rolls_back(db_path: Path) -> None:
    armed = {"on": False}

    def tracer(sql: str, _params: tuple[object, ...]) -> None:
        if armed["on"] and sql == "COMMIT":
            raise _Crash

    with Repositories.open(db_path, tracer=tracer) as traced:
        generation, task = new_generation(traced.kernel, session_id="s1")
        armed["on"] = True
        with pytest.raises(_Crash):
            traced.kernel.store_result(generation.run_id, task.request_id, status="completed", text="done")
        armed["on"] = False
        assert traced.kernel.get_result(task.request_id) is None


def test_mark_delivered_reports_whether_this_call_did_it(store: Repositories) -> None:
    generation, task = new_generation(store.kernel, session_id="s1")
    store.kernel.store_result(generation.run_id, task.request_id, status="completed", text="done")
    assert store.kernel.mark_delivered(task.request_id, owner_session_id=LEAD, entry_id="entry-1") is True
    assert store.kernel.mark_delivered(task.request_id, owner_session_id=LEAD, entry_id="entry-2") is False
    result = store.kernel.get_result(task.request_id)
    assert result is not None and result.delivery == "delivered" and result.delivered_entry_id == "entry-1"
    assert store.kernel.undelivered_results(LEAD) == ()
    assert store.kernel.finalize_generation(generation.run_id, owner_session_id=LEAD).phase == "finalized"


def test_mark_delivered_exactly_once_across_racing_threads(store: Repositories, db_path: Path) -> None:
    generation, task = new_generation(store.kernel, session_id="s1")
    store.kernel.store_result(generation.run_id, task.request_id, status="completed", text="done")
    racers = 6
    barrier = threading.Barrier(racers)
    outcomes: list[bool] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def race(index: int) -> None:
        try:
            with Repositories.open(db_path) as own:  # one connection per racer, like separate processes
                barrier.wait(timeout=10)
                did = own.kernel.mark_delivered(
                    task.request_id, owner_session_id=LEAD, entry_id=f"entry-{index}"
                )
            with lock:
                outcomes.append(did)
        except BaseException as exc:
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
    assert sorted(outcomes) == [False] * (racers - 1) + [True]


_RACER = """
import sys
from pathlib import Path
from corral.orchestration import Repositories
path, request_id, entry, go = sys.argv[1:5]
with Repositories.open(Path(path)) as store:
    while not Path(go).exists():
        pass
    print(store.kernel.mark_delivered(request_id, owner_session_id="lead-session", entry_id=entry))
"""


def test_mark_delivered_exactly_once_across_processes(
    store: Repositories, db_path: Path, tmp_path: Path
) -> None:
    generation, task = new_generation(store.kernel, session_id="s1")
    store.kernel.store_result(generation.run_id, task.request_id, status="completed", text="done")
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(db_path), task.request_id, f"proc-{i}", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    go.touch()
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outputs.append(out.strip())
    assert sorted(outputs) == ["False", "True"]
    result = store.kernel.get_result(task.request_id)
    assert result is not None and result.delivered_entry_id in {"proc-0", "proc-1"}


def test_finalize_refuses_while_the_result_is_undelivered(store: Repositories) -> None:
    generation, task = new_generation(store.kernel, session_id="s1")
    store.kernel.store_result(generation.run_id, task.request_id, status="completed", text="done")
    with pytest.raises(Exception) as raised:
        store.kernel.finalize_generation(generation.run_id, owner_session_id=LEAD)
    assert getattr(raised.value, "category", None) == "target_ambiguous"
    assert store.kernel.generation_by_label(generation.label) is not None


def test_a_busy_writer_surfaces_as_agent_busy_not_sqlite(db_path: Path, store: Repositories) -> None:
    import sqlite3

    generation, _ = new_generation(store.kernel, session_id="s1")
    blocker = sqlite3.connect(db_path, isolation_level=None)
    try:
        with Repositories.open(db_path) as other:
            other.db._conn.execute("PRAGMA busy_timeout = 50")
            blocker.execute("BEGIN IMMEDIATE")
            with pytest.raises(Exception) as raised:
                other.kernel.mark_presence(generation.run_id, "lost")
        assert not isinstance(raised.value, sqlite3.Error)
        assert getattr(raised.value, "category", None) == "agent_busy"
    finally:
        if blocker.in_transaction:
            blocker.execute("ROLLBACK")
        blocker.close()
    assert not isinstance(StoreError("x"), sqlite3.Error)


def test_the_delivered_mark_of_an_ended_run_also_finalizes_it_in_the_same_transaction(db_path: Path) -> None:
    """`mark_delivered(finalize=True)`: one commit marks the result delivered and finalizes the
    generation (its label freed); a crash before that commit leaves both undone."""
    armed = {"on": False}
    commits: list[str] = []

    def tracer(sql: str, _params: tuple[object, ...]) -> None:
        if sql == "COMMIT":
            commits.append(sql)
        if armed["on"] and sql.startswith("UPDATE generations SET phase = 'finalized'"):
            raise _Crash

    with Repositories.open(db_path, tracer=tracer) as traced:
        kernel = traced.kernel
        generation, task = new_generation(kernel, session_id="s1")
        kernel.store_result(generation.run_id, task.request_id, status="completed", text="done")
        armed["on"] = True
        with pytest.raises(_Crash):
            kernel.mark_delivered(task.request_id, owner_session_id=LEAD, entry_id="e1", finalize=True)
        assert kernel.get_result(task.request_id).delivery == "pending"  # type: ignore[union-attr]
        assert kernel.get_generation(generation.run_id).phase == "completed"  # type: ignore[union-attr]
        armed["on"] = False
        commits.clear()
        assert kernel.mark_delivered(task.request_id, owner_session_id=LEAD, entry_id="e1", finalize=True)
        assert commits == ["COMMIT"]
        assert kernel.get_result(task.request_id).delivery == "delivered"  # type: ignore[union-attr]
        assert kernel.get_generation(generation.run_id).phase == "finalized"  # type: ignore[union-attr]
        assert kernel.generation_by_label(generation.label) is None


def test_the_delivered_mark_leaves_a_generation_open_that_may_not_be_finalized_yet(
    store: Repositories,
) -> None:
    """A live child agent keeps its parent open: the mark is made, the finalize is left for later."""
    kernel = store.kernel
    parent, task = new_generation(kernel, session_id="s1", delegating=True)
    new_generation(kernel, session_id="s2", owner=parent.session_id, parent_run_id=parent.run_id)
    kernel.store_result(parent.run_id, task.request_id, status="completed", text="done")
    assert kernel.mark_delivered(task.request_id, owner_session_id=LEAD, entry_id="e1", finalize=True)
    assert kernel.get_result(task.request_id).delivery == "delivered"  # type: ignore[union-attr]
    assert kernel.get_generation(parent.run_id).phase == "completed"  # type: ignore[union-attr]
