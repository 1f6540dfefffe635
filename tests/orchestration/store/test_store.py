"""The orchestration store: schema constraints, identity-checked mutations, atomicity, file modes."""

from __future__ import annotations

import dataclasses
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from corral.orchestration import (
    AgentLabelExistsError,
    InvalidRequestError,
    ManagedAgentBusyError,
    NewGeneration,
    OrchestrationError,
    Repositories,
    StoreError,
    TargetAmbiguousError,
    TargetNotFoundError,
    default_store_path,
)
from corral.orchestration.store._database import INLINE_RESULT_LIMIT, ForeignWrites
from tests.orchestration._store_helpers import LEAD, dump, new_generation


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- opening, files, pragmas ---------------------------------------------------------------------


def test_open_creates_private_directory_and_files(store: Repositories, db_path: Path) -> None:
    new_generation(store.kernel, session_id="s1")  # a write, so -wal and -shm exist
    assert _mode(db_path.parent) == 0o700
    for name in ("corral.db", "corral.db-wal", "corral.db-shm"):
        assert _mode(db_path.parent / name) == 0o600, name


def test_live_state_writes_group_commit_and_every_other_write_syncs(
    store: Repositories, db_path: Path
) -> None:
    generation, task = new_generation(store.kernel, session_id="s1", ack=False)
    run_id = generation.run_id
    statements: list[str] = []
    store.db._conn.set_trace_callback(statements.append)

    def transactions() -> list[list[str]]:
        """The statements of each transaction, with the pragmas just around it."""
        groups: list[list[str]] = [[]]
        for statement in statements:
            groups[-1].append(statement)
            if statement in ("COMMIT", "PRAGMA synchronous = FULL") and not (
                statement == "COMMIT" and groups[-1][0] == "PRAGMA synchronous = NORMAL"
            ):
                groups.append([])
        statements.clear()
        return [g for g in groups if g]

    store.kernel.record_started(run_id, pid=1)
    store.kernel.record_ack(run_id, task.request_id, accepted=True)
    store.kernel.record_activity(run_id)
    relaxed = transactions()
    assert len(relaxed) == 3
    for group in relaxed:  # no fsync of their own: NORMAL around the commit, FULL again after
        assert group[0] == "PRAGMA synchronous = NORMAL" and group[1] == "BEGIN IMMEDIATE"
        assert group[-2:] == ["COMMIT", "PRAGMA synchronous = FULL"]
    store.kernel.finalize_generation(run_id, owner_session_id=LEAD)
    durable = transactions()
    assert durable and all("PRAGMA synchronous = NORMAL" not in group for group in durable)
    assert store.db._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    # what was group-committed is in the database for any other reader
    conn = sqlite3.connect(db_path)
    try:
        row = conn.execute("SELECT pid, phase FROM generations WHERE run_id = ?", (run_id,)).fetchone()
    finally:
        conn.close()
    assert row == (1, "finalized")


def test_open_tightens_an_existing_loose_database_file(db_path: Path) -> None:
    db_path.parent.mkdir(mode=0o755)
    db_path.touch(mode=0o644)
    db_path.chmod(0o644)
    with Repositories.open(db_path):
        pass
    assert _mode(db_path) == 0o600
    assert _mode(db_path.parent) == 0o700


def test_default_path_is_corral_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CORRAL_HOME", str(tmp_path / "data"))
    assert default_store_path() == (tmp_path / "data" / "corral.db").resolve()
    with Repositories.open() as opened:
        assert opened.db.path == (tmp_path / "data" / "corral.db").resolve()
        assert opened.db.path.is_file()


def test_database_is_in_wal_mode_with_foreign_keys(store: Repositories, db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        # The schema enforces references: a request for a generation that does not exist.
        conn.execute("PRAGMA foreign_keys = ON")
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO requests (request_id, run_id, kind, payload, created_at)"
                " VALUES ('00000000-0000-4000-8000-000000000000', 'missing', 'steer', 'x', 0)"
            )
    finally:
        conn.close()


def test_every_mutation_begins_immediate(db_path: Path) -> None:
    seen: list[str] = []
    with Repositories.open(db_path, tracer=lambda sql, _params: seen.append(sql)) as traced:
        new_generation(traced.kernel, session_id="s1")
    begins = [sql for sql in seen if sql.startswith("BEGIN")]
    assert begins and set(begins) <= {"BEGIN IMMEDIATE", "BEGIN"}
    assert "BEGIN IMMEDIATE" in begins


def test_readonly_store_reads_but_refuses_writes(store: Repositories, db_path: Path) -> None:
    generation, _ = new_generation(store.kernel, session_id="s1")
    with Repositories.open(db_path, readonly=True) as reader:
        assert reader.kernel.get_generation(generation.run_id) == store.kernel.get_generation(
            generation.run_id
        )
        with pytest.raises(StoreError, match="read-only"):
            reader.kernel.mark_presence(generation.run_id, "lost")


def test_readonly_store_needs_an_existing_database(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="No corral database"):
        Repositories.open(tmp_path / "nothing.db", readonly=True)


def test_closed_store_raises_a_clear_error(store: Repositories) -> None:
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.kernel.get_generation("x")


def test_foreign_writes_notices_other_processes_commits_only(store: Repositories, db_path: Path) -> None:
    foreign = ForeignWrites(store.db)
    assert not foreign.changed()
    new_generation(store.kernel, session_id="own")  # this connection's commit is not foreign
    assert not foreign.changed()
    script = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
        "c.execute('CREATE TABLE IF NOT EXISTS scratch (x)'); c.commit()"
    )
    subprocess.run([sys.executable, "-c", script, str(db_path)], check=True)
    assert foreign.changed()  # another process committed
    assert not foreign.changed()  # reported once
    store.close()
    with pytest.raises(StoreError, match="closed"):
        foreign.changed()


# --- constraints ---------------------------------------------------------------------------------


def test_duplicate_live_label_is_refused_and_freed_after_finalize(store: Repositories) -> None:
    first, _ = new_generation(store.kernel, session_id="s1", label="alpha")
    with pytest.raises(AgentLabelExistsError, match="alpha"):
        new_generation(store.kernel, session_id="s2", label="alpha")
    store.kernel.finalize_generation(first.run_id, owner_session_id=LEAD)
    second, _ = new_generation(store.kernel, session_id="s2", label="alpha")
    assert second.label == "alpha" and second.run_id != first.run_id


def test_duplicate_live_label_is_a_database_constraint(store: Repositories, db_path: Path) -> None:
    first, _ = new_generation(store.kernel, session_id="s1", label="alpha")
    second, _ = new_generation(store.kernel, session_id="s2", label="beta")
    conn = sqlite3.connect(db_path)
    try:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("UPDATE labels SET label = 'alpha' WHERE run_id = ?", (second.run_id,))
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO labels (label, run_id, claimed_at) VALUES ('gamma', ?, 0)", (first.run_id,)
            )
    finally:
        conn.close()


def test_auto_labels_count_up_from_the_definition_name(store: Repositories) -> None:
    labels = [new_generation(store.kernel, session_id=f"s{i}")[0].label for i in range(3)]
    assert labels == ["worker", "worker-2", "worker-3"]


def test_auto_label_of_an_invalid_definition_name_is_refused(store: Repositories) -> None:
    with pytest.raises(InvalidRequestError, match="not a valid agent label"):
        new_generation(store.kernel, session_id="s1", definition="Reviewer")


@pytest.mark.parametrize("label", ["Alpha", "9lives", "a" * 33, "has space", ""])
def test_explicit_label_must_match_the_pattern(store: Repositories, label: str) -> None:
    with pytest.raises(InvalidRequestError, match="label"):
        new_generation(store.kernel, session_id="s1", label=label)


def test_result_is_unique_per_request_and_per_generation(store: Repositories, db_path: Path) -> None:
    generation, task = new_generation(store.kernel, session_id="s1")
    first = store.kernel.store_result(generation.run_id, task.request_id, status="completed", text="done")
    again = store.kernel.store_result(generation.run_id, task.request_id, status="completed", text="other")
    assert again == first
    conn = sqlite3.connect(db_path)
    try:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO results (request_id, run_id, owner_session_id, status, text, created_at)"
                " VALUES (?, ?, 'lead-session', 'completed', 'again', 0)",
                (task.request_id, generation.run_id),
            )
    finally:
        conn.close()


def test_a_generation_holds_exactly_one_task(store: Repositories, db_path: Path) -> None:
    generation, _ = new_generation(store.kernel, session_id="s1")
    with pytest.raises(InvalidRequestError, match="exactly one task"):
        store.kernel.submit_request(generation.run_id, owner_session_id=LEAD, kind="task", text="second")
    conn = sqlite3.connect(db_path)
    try:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO requests (request_id, run_id, kind, payload, created_at, acknowledged_at, accepted)"
                " VALUES ('11111111-1111-4111-8111-111111111111', ?, 'task', 'again', 0, 0, 1)",
                (generation.run_id,),
            )
    finally:
        conn.close()


def test_one_unacknowledged_request_at_a_time(store: Repositories) -> None:
    generation, _ = new_generation(store.kernel, session_id="s1")
    steer = store.kernel.submit_request(generation.run_id, owner_session_id=LEAD, kind="steer", text="left")
    with pytest.raises(ManagedAgentBusyError, match="not acknowledged"):
        store.kernel.submit_request(generation.run_id, owner_session_id=LEAD, kind="interrupt", text="stop")
    store.kernel.record_ack(generation.run_id, steer.request_id, accepted=True)
    interrupt = store.kernel.submit_request(
        generation.run_id, owner_session_id=LEAD, kind="interrupt", text="stop"
    )
    assert interrupt.kind == "interrupt" and not interrupt.acknowledged


def test_a_session_is_represented_by_at_most_one_live_generation(store: Repositories) -> None:
    first, _ = new_generation(store.kernel, session_id="s1")
    with pytest.raises(ManagedAgentBusyError, match="already represented"):
        new_generation(store.kernel, session_id="s1")
    store.kernel.finalize_generation(first.run_id, owner_session_id=LEAD)
    continued, _ = new_generation(store.kernel, session_id="s1")
    assert continued.session_id == "s1"


# --- ownership chain -----------------------------------------------------------------------------


def test_delegating_agent_may_start_leaves_only(store: Repositories) -> None:
    parent, _ = new_generation(store.kernel, session_id="p1", definition="planner", delegating=True)
    child, _ = new_generation(store.kernel, session_id="c1", owner="p1", parent_run_id=parent.run_id)
    assert child.parent_label == "planner" and child.owner_session_id == "p1"
    with pytest.raises(InvalidRequestError, match="leaves"):
        new_generation(store.kernel, session_id="g1", owner="c1", parent_run_id=child.run_id)
    with pytest.raises(InvalidRequestError, match="leaf"):
        new_generation(
            store.kernel, session_id="c2", owner="p1", parent_run_id=parent.run_id, delegating=True
        )


def test_owner_session_of_a_managed_agent_needs_its_run_id(store: Repositories) -> None:
    new_generation(store.kernel, session_id="p1", definition="planner", delegating=True)
    with pytest.raises(InvalidRequestError, match="parent_run_id"):
        new_generation(store.kernel, session_id="c1", owner="p1")


def test_parent_must_be_the_owner_sessions_generation(store: Repositories) -> None:
    parent, _ = new_generation(store.kernel, session_id="p1", definition="planner", delegating=True)
    with pytest.raises(TargetNotFoundError, match="not the session"):
        new_generation(store.kernel, session_id="c1", owner="elsewhere", parent_run_id=parent.run_id)


def test_finalize_refuses_while_children_are_live(store: Repositories) -> None:
    parent, _ = new_generation(store.kernel, session_id="p1", definition="planner", delegating=True)
    child, _ = new_generation(store.kernel, session_id="c1", owner="p1", parent_run_id=parent.run_id)
    with pytest.raises(TargetAmbiguousError, match="close them first"):
        store.kernel.finalize_generation(parent.run_id, owner_session_id=LEAD)
    store.kernel.finalize_generation(child.run_id, owner_session_id="p1")
    assert store.kernel.finalize_generation(parent.run_id, owner_session_id=LEAD).phase == "finalized"


# --- identity checks fail closed -----------------------------------------------------------------

Mutation = Callable[[Repositories, dict[str, str]], object]

OTHER_ID = "22222222-2222-4222-8222-222222222222"

IDENTITY_CASES: list[tuple[str, Mutation, type[OrchestrationError]]] = [
    ("steer other owner", lambda s, i: s.kernel.submit_request(i["run"], owner_session_id="intruder", kind="steer", text="x"), TargetNotFoundError),
    ("steer unknown run", lambda s, i: s.kernel.submit_request(OTHER_ID, owner_session_id=LEAD, kind="steer", text="x"), TargetNotFoundError),
    ("steer while ask pending", lambda s, i: s.kernel.submit_request(i["asker"], owner_session_id=LEAD, kind="steer", text="x"), ManagedAgentBusyError),
    ("reply without ask", lambda s, i: s.kernel.answer_ask(i["run"], owner_session_id=LEAD, ask_id=OTHER_ID, text="x"), ManagedAgentBusyError),
    ("reply wrong ask id", lambda s, i: s.kernel.answer_ask(i["asker"], owner_session_id=LEAD, ask_id=OTHER_ID, text="x"), TargetNotFoundError),
    ("reply other owner", lambda s, i: s.kernel.answer_ask(i["asker"], owner_session_id="intruder", ask_id=i["ask"], text="x"), TargetNotFoundError),
    ("ack foreign request", lambda s, i: s.kernel.record_ack(i["run"], i["asker_task"], accepted=True), TargetNotFoundError),
    ("ack unknown request", lambda s, i: s.kernel.record_ack(i["run"], OTHER_ID, accepted=True), TargetNotFoundError),
    ("ask wrong request", lambda s, i: s.kernel.create_ask(i["run"], request_id=OTHER_ID, question="?"), TargetNotFoundError),
    ("ask twice", lambda s, i: s.kernel.create_ask(i["asker"], request_id=i["asker_task"], question="?"), ManagedAgentBusyError),
    ("ask before ack", lambda s, i: s.kernel.create_ask(i["starting"], request_id=i["starting_task"], question="?"), ManagedAgentBusyError),
    ("abandon foreign ask", lambda s, i: s.kernel.abandon_ask(i["run"], i["ask"]), TargetNotFoundError),
    ("result wrong request", lambda s, i: s.kernel.store_result(i["run"], i["asker_task"], status="completed", text="x"), TargetNotFoundError),
    ("result while ask pending", lambda s, i: s.kernel.store_result(i["asker"], i["asker_task"], status="completed", text="x"), ManagedAgentBusyError),
    ("result before ack", lambda s, i: s.kernel.store_result(i["starting"], i["starting_task"], status="completed", text="x"), ManagedAgentBusyError),
    ("result error wrong request", lambda s, i: s.kernel.record_result_error(i["run"], OTHER_ID, message="disk"), TargetNotFoundError),
    ("deliver unknown result", lambda s, i: s.kernel.mark_delivered(OTHER_ID, owner_session_id=LEAD, entry_id="e"), TargetNotFoundError),
    ("deliver to other owner", lambda s, i: s.kernel.mark_delivered(i["done_task"], owner_session_id="intruder", entry_id="e"), TargetNotFoundError),
    ("finalize other owner", lambda s, i: s.kernel.finalize_generation(i["run"], owner_session_id="intruder"), TargetNotFoundError),
    ("finalize undelivered", lambda s, i: s.kernel.finalize_generation(i["done"], owner_session_id=LEAD), TargetAmbiguousError),
    ("finalize unknown presence", lambda s, i: s.kernel.finalize_generation(i["unknown"], owner_session_id=LEAD), TargetAmbiguousError),
    ("finalize twice", lambda s, i: s.kernel.finalize_generation(i["closed"], owner_session_id=LEAD), TargetNotFoundError),
    ("activity of closed", lambda s, i: s.kernel.record_activity(i["closed"]), TargetNotFoundError),
    ("presence of closed", lambda s, i: s.kernel.mark_presence(i["closed"], "lost"), TargetNotFoundError),
    ("lost is final", lambda s, i: s.kernel.mark_presence(i["lost"], "live"), InvalidRequestError),
    ("steer lost agent", lambda s, i: s.kernel.submit_request(i["lost"], owner_session_id=LEAD, kind="steer", text="x"), ManagedAgentBusyError),
    ("steer unknown presence", lambda s, i: s.kernel.submit_request(i["unknown"], owner_session_id=LEAD, kind="steer", text="x"), TargetAmbiguousError),
    ("start with other session path", lambda s, i: s.kernel.record_started(i["started"], session_path="/elsewhere.jsonl"), TargetAmbiguousError),
    ("conflicting ack", lambda s, i: s.kernel.record_ack(i["run"], i["run_task"], accepted=False, code="busy"), OrchestrationError),
    ("ask delivered to other owner", lambda s, i: s.kernel.mark_ask_delivered(i["ask"], owner_session_id="intruder", entry_id="e"), TargetNotFoundError),
]  # fmt: skip


@pytest.fixture
def world(store: Repositories) -> dict[str, str]:
    """One store with generations in every interesting state."""
    run, run_task = new_generation(store.kernel, session_id="s-run", label="runner")
    asker, asker_task = new_generation(store.kernel, session_id="s-ask", label="asker")
    ask = store.kernel.create_ask(asker.run_id, request_id=asker_task.request_id, question="Which one?")
    starting, starting_task = new_generation(store.kernel, session_id="s-start", label="starter", ack=False)
    done, done_task = new_generation(store.kernel, session_id="s-done", label="done")
    store.kernel.store_result(done.run_id, done_task.request_id, status="completed", text="finished")
    unknown, _ = new_generation(store.kernel, session_id="s-unknown", label="unsure")
    store.kernel.mark_presence(unknown.run_id, "unknown", diagnostic="two panes claim the session")
    lost, _ = new_generation(store.kernel, session_id="s-lost", label="gone")
    store.kernel.mark_presence(lost.run_id, "lost")
    closed, _ = new_generation(store.kernel, session_id="s-closed", label="closed")
    store.kernel.finalize_generation(closed.run_id, owner_session_id=LEAD)
    started, _ = new_generation(store.kernel, session_id="s-started", label="started")
    store.kernel.record_started(started.run_id, session_path="/sessions/s-started.jsonl", pid=4242)
    return {
        "run": run.run_id,
        "run_task": run_task.request_id,
        "asker": asker.run_id,
        "asker_task": asker_task.request_id,
        "ask": ask.ask_id,
        "starting": starting.run_id,
        "starting_task": starting_task.request_id,
        "done": done.run_id,
        "done_task": done_task.request_id,
        "unknown": unknown.run_id,
        "lost": lost.run_id,
        "closed": closed.run_id,
        "started": started.run_id,
    }


@pytest.mark.parametrize(
    ("case", "mutation", "error"), IDENTITY_CASES, ids=[case[0] for case in IDENTITY_CASES]
)
def test_identity_checks_fail_closed_and_change_nothing(
    store: Repositories,
    db_path: Path,
    world: dict[str, str],
    case: str,
    mutation: Mutation,
    error: type[OrchestrationError],
) -> None:
    before = dump(db_path)
    with pytest.raises(error) as raised:
        mutation(store, world)
    assert raised.value.category == error.category or error is OrchestrationError
    assert dump(db_path) == before, case


def test_identity_check_categories_are_the_public_ones() -> None:
    assert {error.category for _, _, error in IDENTITY_CASES} >= {
        "target_not_found",
        "target_ambiguous",
        "agent_busy",
        "invalid_request",
    }


# --- the assignment's life -----------------------------------------------------------------------


def test_task_ack_activates_and_rejection_does_not(store: Repositories) -> None:
    accepted, _ = new_generation(store.kernel, session_id="s1")
    assert accepted.phase == "active" and accepted.active_request_id is not None
    rejected, task = new_generation(store.kernel, session_id="s2", ack=False)
    request = store.kernel.record_ack(
        rejected.run_id, task.request_id, accepted=False, code="busy", message="busy"
    )
    assert request.accepted is False and request.ack_code == "busy"
    assert store.kernel.get_generation(rejected.run_id).phase == "starting"  # type: ignore[union-attr]
    # The same ack again is a no-op that returns the stored request.
    assert store.kernel.record_ack(rejected.run_id, task.request_id, accepted=False, code="busy") == request


def test_ack_marks_the_request_delivered(store: Repositories) -> None:
    generation, _ = new_generation(store.kernel, session_id="s1")
    steer = store.kernel.submit_request(
        generation.run_id, owner_session_id=LEAD, kind="steer", text="go left"
    )
    delivered = store.kernel.record_request_delivered(generation.run_id, steer.request_id)
    assert delivered.delivered_at is not None and not delivered.acknowledged
    acked = store.kernel.record_ack(generation.run_id, steer.request_id, accepted=True)
    assert acked.acknowledged and acked.delivered_at == delivered.delivered_at


def test_ask_reply_round_trip(store: Repositories) -> None:
    generation, task = new_generation(store.kernel, session_id="s1")
    ask = store.kernel.create_ask(generation.run_id, request_id=task.request_id, question="Which file?")
    assert store.kernel.pending_ask(generation.run_id) == ask
    assert store.kernel.mark_ask_delivered(ask.ask_id, owner_session_id=LEAD, entry_id="e1")
    assert not store.kernel.mark_ask_delivered(ask.ask_id, owner_session_id=LEAD, entry_id="e2")
    reply = store.kernel.answer_ask(
        generation.run_id, owner_session_id=LEAD, ask_id=ask.ask_id, text="main.py"
    )
    assert reply.kind == "reply" and reply.ask_id == ask.ask_id
    assert store.kernel.pending_ask(generation.run_id) is not None  # answered only when the child accepts
    store.kernel.record_ack(generation.run_id, reply.request_id, accepted=True)
    answered = store.kernel.get_ask(ask.ask_id)
    assert answered is not None and answered.state == "answered" and answered.reply == "main.py"
    assert store.kernel.pending_ask(generation.run_id) is None


def test_abandon_ask_and_finalize_abandons_pending_asks(store: Repositories) -> None:
    first, task = new_generation(store.kernel, session_id="s1")
    ask = store.kernel.create_ask(first.run_id, request_id=task.request_id, question="?")
    abandoned = store.kernel.abandon_ask(first.run_id, ask.ask_id)
    assert abandoned.state == "abandoned" and abandoned.resolved_at is not None
    assert store.kernel.abandon_ask(first.run_id, ask.ask_id) == abandoned
    second, task2 = new_generation(store.kernel, session_id="s2")
    ask2 = store.kernel.create_ask(second.run_id, request_id=task2.request_id, question="?")
    store.kernel.finalize_generation(second.run_id, owner_session_id=LEAD)
    assert store.kernel.get_ask(ask2.ask_id).state == "abandoned"  # type: ignore[union-attr]


def test_delegating_agent_cannot_ask_while_children_work(store: Repositories) -> None:
    parent, task = new_generation(store.kernel, session_id="p1", definition="planner", delegating=True)
    child, child_task = new_generation(store.kernel, session_id="c1", owner="p1", parent_run_id=parent.run_id)
    with pytest.raises(ManagedAgentBusyError, match="Direct agent work"):
        store.kernel.create_ask(parent.run_id, request_id=task.request_id, question="?")
    store.kernel.create_ask(child.run_id, request_id=child_task.request_id, question="child asks")
    assert store.kernel.create_ask(parent.run_id, request_id=task.request_id, question="?").state == "pending"


def test_store_result_completes_the_generation(store: Repositories) -> None:
    generation, task = new_generation(store.kernel, session_id="s1")
    store.kernel.record_activity(generation.run_id, tokens=1234)
    result = store.kernel.store_result(
        generation.run_id, task.request_id, status="completed", text="All done."
    )
    assert (result.status, result.text, result.delivery) == ("completed", "All done.", "pending")
    completed = store.kernel.get_generation(generation.run_id)
    assert completed is not None
    assert (completed.phase, completed.active_request_id, completed.completed_request_id) == (
        "completed",
        None,
        task.request_id,
    )
    assert completed.last_activity_at is None and completed.tokens == 1234
    assert store.kernel.undelivered_results(LEAD) == (result,)


def test_failed_result_needs_an_error_code(store: Repositories) -> None:
    generation, task = new_generation(store.kernel, session_id="s1")
    with pytest.raises(InvalidRequestError):
        store.kernel.store_result(generation.run_id, task.request_id, status="failed")
    with pytest.raises(InvalidRequestError):
        store.kernel.store_result(generation.run_id, task.request_id, status="completed", text="   ")
    failed = store.kernel.store_result(
        generation.run_id,
        task.request_id,
        status="failed",
        error_code="empty_result",
        error_message="no text",
    )
    assert failed.status == "failed" and failed.text is None


def test_large_result_text_lives_in_a_private_artifact(store: Repositories) -> None:
    generation, task = new_generation(store.kernel, session_id="s1")
    text = "é" * INLINE_RESULT_LIMIT
    result = store.kernel.store_result(generation.run_id, task.request_id, status="completed", text=text)
    assert result.text is None and result.artifact_path == store.db.results_dir / task.request_id
    assert _mode(store.db.results_dir) == 0o700 and _mode(result.artifact_path) == 0o600
    assert store.kernel.result_text(result) == text
    artifact = store.kernel.get_artifact(task.request_id)
    assert artifact is not None and artifact.size == len(text.encode())
    assert [p.name for p in store.db.results_dir.iterdir()] == [task.request_id]


def test_materialize_artifact_writes_an_inline_result_once(store: Repositories) -> None:
    generation, task = new_generation(store.kernel, session_id="s1")
    store.kernel.store_result(generation.run_id, task.request_id, status="completed", text="short")
    artifact = store.kernel.materialize_artifact(task.request_id)
    assert artifact.path.read_text() == "short" and _mode(artifact.path) == 0o600
    assert store.kernel.materialize_artifact(task.request_id) == artifact
    with pytest.raises(InvalidRequestError, match="opaque"):
        store.kernel.materialize_artifact(OTHER_ID)


def test_result_error_is_cleanup_safe(store: Repositories) -> None:
    generation, task = new_generation(store.kernel, session_id="s1")
    errored = store.kernel.record_result_error(generation.run_id, task.request_id, message="disk full")
    assert (errored.phase, errored.result_error, errored.active_request_id) == (
        "result_error",
        "disk full",
        None,
    )
    assert store.kernel.finalize_generation(generation.run_id, owner_session_id=LEAD).phase == "finalized"


def test_a_result_error_settles_once_as_a_failed_write_failure_result(store: Repositories) -> None:
    generation, task = new_generation(store.kernel, session_id="s1")
    assert store.kernel.settle_result_error(generation.run_id) is None  # active: not in result_error
    store.kernel.record_result_error(generation.run_id, task.request_id, message="No space left on device")

    result = store.kernel.settle_result_error(generation.run_id)

    assert result is not None and result.request_id == task.request_id
    assert (result.status, result.error_code, result.delivery) == ("failed", "write_failure", "pending")
    assert result.error_message is not None and "No space left on device" in result.error_message
    settled = store.kernel.get_generation(generation.run_id)
    assert settled is not None
    assert (settled.phase, settled.completed_request_id, settled.result_error) == (
        "completed",
        task.request_id,
        None,
    )
    assert settled.diagnostic == "its result could not be written: No space left on device"
    assert store.kernel.settle_result_error(generation.run_id) is None  # once
    assert [r.request_id for r in store.kernel.undelivered_results(LEAD)] == [task.request_id]


def test_activity_only_moves_forward_and_only_while_active(store: Repositories) -> None:
    generation, _ = new_generation(store.kernel, session_id="s1")
    store.kernel.record_activity(generation.run_id, at=10**13)
    store.kernel.record_activity(generation.run_id, at=10**12)
    assert store.kernel.get_generation(generation.run_id).last_activity_at == 10**13  # type: ignore[union-attr]


def test_runtime_identity_is_recorded_once(store: Repositories) -> None:
    generation, _ = new_generation(store.kernel, session_id="s1")
    started = store.kernel.record_started(
        generation.run_id, session_path="/s/s1.jsonl", pid=77, host_id="h", pane_id="%3"
    )
    assert (started.session_path, started.pid, started.host_id, started.pane_id) == (
        "/s/s1.jsonl",
        77,
        "h",
        "%3",
    )
    assert started.started_at is not None
    again = store.kernel.record_started(generation.run_id, pid=77)
    assert dataclasses.replace(again, updated_at=started.updated_at) == started


def test_queries_by_label_owner_and_session(store: Repositories) -> None:
    parent, _ = new_generation(store.kernel, session_id="p1", definition="planner", delegating=True)
    child, _ = new_generation(store.kernel, session_id="c1", owner="p1", parent_run_id=parent.run_id)
    assert store.kernel.generation_by_label("planner") == parent
    assert store.kernel.generation_by_label("nobody") is None
    assert store.kernel.generations(owner_session_id=LEAD) == (parent,)
    assert store.kernel.generations(owner_session_id="p1") == (store.kernel.get_generation(child.run_id),)
    assert store.kernel.generations(session_id="c1")[0].run_id == child.run_id
    assert [g.run_id for g in store.kernel.generations(parent_run_id=parent.run_id)] == [child.run_id]
    store.kernel.finalize_generation(child.run_id, owner_session_id="p1")
    assert store.kernel.generations(owner_session_id="p1") == ()
    assert len(store.kernel.generations(owner_session_id="p1", include_finalized=True)) == 1


def test_create_generation_validates_blank_fields(store: Repositories) -> None:
    with pytest.raises(InvalidRequestError, match="task must not be blank"):
        store.kernel.create_generation(
            NewGeneration(definition="w", owner_session_id=LEAD, cwd="/", session_id="s", task=" ")
        )
