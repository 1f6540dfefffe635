"""Schema v3 in the store: spawn assignment columns, check rows, repair ledgers and their invariants."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from corral.orchestration import InvalidRequestError, Repositories, StoreError, TargetNotFoundError
from corral.orchestration.store._migrations import MIGRATIONS, apply_migrations, schema_version
from corral.orchestration.teams.checks._rows import (
    CheckIdentityError,
    CheckRecordError,
    RepairBindingError,
    RepairLedgerError,
)
from corral.orchestration.teams.checks.records import AssignedCheck, check_id
from corral.orchestration.teams.repair._repair import repair_controller_id
from tests.orchestration.teams._check_helpers import LEAD, Member, add_member, raw

SOURCE = {
    "version": 1,
    "cwd": "/r",
    "repositoryRoot": "/r",
    "head": None,
    "fingerprint": "a" * 64,
    "inputs": ["."],
    "fileCount": 1,
}


@pytest.fixture
def member(store: Repositories) -> Member:
    return add_member(store)


def _assignment(member: Member, name: str = "unit", attempt: int = 1, command: str = "true") -> AssignedCheck:
    return AssignedCheck(member.task_id, member.run_id, member.report_id, name, command, "/r", 5, attempt)


def _claim(store: Repositories, check: AssignedCheck, tmp_path: Path) -> tuple[Any, bool]:
    log = tmp_path / "checks" / f"{check.check_id.removeprefix('check:')}.log"
    return store.teams.checks.claim_check(
        check.check_id, assignment=check.to_json(), binding=check.binding(), log_path=str(log)
    )


# -- spawn assignment columns -----------------------------------------------------------------------


def test_member_assignments_round_trip(store: Repositories) -> None:
    checks = [{"name": "unit", "command": "pytest", "timeoutSeconds": 60, "inputs": ["src"]}]
    member = add_member(
        store,
        "assigned",
        assigned_checks=checks,
        repair_policy={"maxAttempts": 2},
        checkpoint_policy={"retentionDays": 30},
        continue_from="checkpoint:" + "b" * 64,
        group_id="group:" + "c" * 64,
        slot_id="slot-1",
    )
    record = store.teams.roster.team_member(member.run_id)
    assert record is not None
    assert record.assigned_checks == checks
    assert record.repair_policy == {"maxAttempts": 2}
    assert record.checkpoint_policy == {"retentionDays": 30}
    assert record.continue_from == "checkpoint:" + "b" * 64
    assert (record.group_id, record.slot_id) == ("group:" + "c" * 64, "slot-1")
    plain = store.teams.roster.team_member(add_member(store, "plain").run_id)
    assert plain is not None
    assert (plain.assigned_checks, plain.repair_policy, plain.checkpoint_policy, plain.group_id) == (
        None,
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"assigned_checks": {"name": "x"}},
        {"repair_policy": [1]},
        {"group_id": "group:x"},
        {"continue_from": " "},
    ],
)
def test_malformed_member_assignments_are_refused(store: Repositories, fields: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequestError):
        add_member(store, "bad", **fields)
    assert store.teams.roster.team_members("lead-checks") == ()


def test_v2_database_migrates_to_v3_keeping_members(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    run_id = "1" * 36
    conn = raw(path)
    try:
        assert apply_migrations(conn, MIGRATIONS[:2]) == 2
        conn.execute(
            "INSERT INTO generations (run_id, label, definition, owner_session_id, cwd, session_id, runtime_kind,"
            " created_at, updated_at) VALUES (?, 'veteran', 'write-feature', ?, '/w', 's-1', 'inprocess', 1, 1)",
            (run_id, LEAD),
        )
        conn.execute(
            "INSERT INTO team_members (run_id, lead_session_id, name, tier, requested_tier, kind, depth, model,"
            " thinking, model_source, sandbox, prompt, created_at) VALUES (?, ?, 'veteran', 'write-feature',"
            " 'write-feature', 'write', 0, 'scripted/echo', 'off', 'lead', 'none', 'Fix it.', 1)",
            (run_id, LEAD),
        )
    finally:
        conn.close()
    with Repositories.open(path) as store:
        record = store.teams.roster.team_member(run_id)
        assert record is not None and record.name == "veteran"
        assert (record.assigned_checks, record.repair_policy, record.group_id, record.slot_id) == (None,) * 4
        _, fresh = _claim(store, _assignment(Member(run_id, "veteran", "task:v", "report:v")), tmp_path)
        assert fresh
    conn = raw(path)
    try:
        assert schema_version(conn) >= 3
        columns = {row[1] for row in conn.execute("PRAGMA table_info(team_members)")}
        assert {
            "assigned_checks",
            "repair_policy",
            "checkpoint_policy",
            "continue_from",
            "group_id",
            "slot_id",
        } <= (columns)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


# -- check rows ----------------------------------------------------------------------------------


def test_claim_then_duplicate_then_another_binding(
    store: Repositories, member: Member, tmp_path: Path
) -> None:
    check = _assignment(member)
    row, fresh = _claim(store, check, tmp_path)
    assert fresh and row.state == "claimed" and row.completed_at is None and len(row.claim_token) == 36
    again, fresh_again = _claim(store, check, tmp_path)
    assert not fresh_again and again == row
    other = _assignment(member, command="false")
    with pytest.raises(
        CheckIdentityError, match=r"^Check identity is already bound to another assignment\.$"
    ):
        _claim(store, other, tmp_path)
    assert store.teams.checks.get_check(check.check_id) == row


def test_claim_needs_a_teams_member(store: Repositories, tmp_path: Path) -> None:
    ghost = Member("0" * 36, "ghost", "task:x", "report:x")
    with pytest.raises(TargetNotFoundError, match="not a teams agent"):
        _claim(store, _assignment(ghost), tmp_path)


def test_finish_needs_the_claim_token_and_settles_once(
    store: Repositories, member: Member, tmp_path: Path
) -> None:
    check = _assignment(member)
    row, _ = _claim(store, check, tmp_path)
    settle = {
        "state": "failed",
        "source_before": SOURCE,
        "source_after": SOURCE,
        "exit_code": 2,
        "log_bytes": 7,
        "error": None,
    }
    with pytest.raises(CheckRecordError, match="another token"):
        store.teams.checks.finish_check(check.check_id, claim_token="f" * 36, **settle)  # type: ignore[arg-type]
    assert store.teams.checks.get_check(check.check_id) == row
    done = store.teams.checks.finish_check(check.check_id, claim_token=row.claim_token, **settle)  # type: ignore[arg-type]
    assert (done.state, done.exit_code, done.log_bytes) == ("failed", 2, 7)
    assert done.completed_at is not None and done.completed_at >= done.started_at
    again = store.teams.checks.finish_check(
        check.check_id,
        claim_token=row.claim_token,
        state="passed",
        source_before=SOURCE,
        source_after=SOURCE,
        exit_code=0,
        log_bytes=0,
        error=None,
    )
    assert again == done  # a settled record never changes
    with pytest.raises(InvalidRequestError):
        store.teams.checks.finish_check(
            check.check_id, claim_token=row.claim_token, **{**settle, "state": "claimed"}
        )  # type: ignore[arg-type]
    with pytest.raises(CheckRecordError, match="disappeared"):
        store.teams.checks.finish_check(
            check_id("report:none", "x", 1), claim_token=row.claim_token, **settle
        )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "fields"),
    [
        ("passed", {"exit_code": 1}),
        ("passed", {"error": "no"}),
        ("passed", {"source_after": {**SOURCE, "fingerprint": "b" * 64}}),
        ("passed", {"source_before": None}),
        ("failed", {"exit_code": 0}),
        ("stale", {"exit_code": 3, "error": "x"}),
        ("timed-out", {"exit_code": 0, "error": "x"}),
        ("error", {"exit_code": None, "error": None}),
    ],
)
def test_settled_rows_keep_the_record_invariants(
    store: Repositories, member: Member, tmp_path: Path, state: str, fields: dict[str, Any]
) -> None:
    check = _assignment(member)
    row, _ = _claim(store, check, tmp_path)
    settle: dict[str, Any] = {
        "source_before": SOURCE,
        "source_after": SOURCE,
        "exit_code": 0,
        "log_bytes": 0,
        "error": None,
        **fields,
    }
    with pytest.raises(StoreError, match="CHECK constraint"):
        store.teams.checks.finish_check(check.check_id, claim_token=row.claim_token, state=state, **settle)  # type: ignore[arg-type]
    assert store.teams.checks.get_check(check.check_id) == row


def test_settled_row_is_immutable_even_to_raw_sql(
    store: Repositories, member: Member, db_path: Path, tmp_path: Path
) -> None:
    check = _assignment(member)
    row, _ = _claim(store, check, tmp_path)
    conn = raw(db_path)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="only a claimed check record settles"):
            conn.execute(
                "UPDATE team_checks SET claim_token = ? WHERE check_id = ?", ("e" * 36, check.check_id)
            )
        store.teams.checks.finish_check(
            check.check_id,
            claim_token=row.claim_token,
            state="failed",
            source_before=None,
            source_after=None,
            exit_code=1,
            log_bytes=0,
            error=None,
        )
        with pytest.raises(sqlite3.IntegrityError, match="only a claimed check record settles"):
            conn.execute(
                "UPDATE team_checks SET state = 'passed', exit_code = 0 WHERE check_id = ?", (check.check_id,)
            )
        with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint"):
            conn.execute(
                "INSERT INTO team_checks (check_id, run_id, report_id, name, attempt, assignment, binding, claim_token,"
                " state, started_at, completed_at, log_path) VALUES (?, ?, ?, 'x', 1, ?, '[]', ?, 'claimed', 1, 2, ?)",
                (
                    check_id(member.report_id, "x", 1),
                    member.run_id,
                    member.report_id,
                    json.dumps({**check.to_json(), "name": "x"}),
                    "d" * 36,
                    "/c/" + check_id(member.report_id, "x", 1).removeprefix("check:") + ".log",
                ),
            )
    finally:
        conn.close()


def test_claimed_checks_lists_only_unsettled_rows(
    store: Repositories, member: Member, tmp_path: Path
) -> None:
    first, _ = _claim(store, _assignment(member, "a"), tmp_path)
    second, _ = _claim(store, _assignment(member, "b"), tmp_path)
    store.teams.checks.finish_check(
        second.check_id,
        claim_token=second.claim_token,
        state="cancelled",
        source_before=None,
        source_after=None,
        exit_code=None,
        log_bytes=0,
        error="Check command was cancelled.",
    )
    assert [row.check_id for row in store.teams.checks.claimed_checks(member.run_id)] == [first.check_id]
    assert set(store.teams.checks.get_checks([first.check_id, second.check_id, "check:" + "0" * 64])) == {
        first.check_id,
        second.check_id,
    }


# -- repair ledgers ------------------------------------------------------------------------------


def _reserve(
    store: Repositories,
    member: Member,
    submission: str,
    *,
    signature: str = "repair:" + "1" * 64,
    max_attempts: int = 1,
    decline: bool = False,
    cancel_first: bool = False,
    names: tuple[str, ...] = ("unit",),
) -> Any:
    return store.teams.repair.reserve_repair_stage(
        repair_controller_id(member.report_id),
        run_id=member.run_id,
        report_id=member.report_id,
        assignments=[_assignment(member, name).to_json() for name in names],
        max_attempts=max_attempts,
        submission_id=submission,
        signature=signature,
        decline=decline,
        cancel_first=cancel_first,
        check_ids=lambda attempt: [check_id(member.report_id, name, attempt) for name in names],
    )


def _finish(store: Repositories, member: Member, stage: Any, state: str) -> Any:
    return store.teams.repair.finish_repair_stage(
        repair_controller_id(member.report_id),
        token=stage.token,
        state=state,  # type: ignore[arg-type]
        check_ids=stage.check_ids,
        cancel=False,
    )


def test_reservation_appends_replays_and_stops(store: Repositories, member: Member) -> None:
    first = _reserve(store, member, "call-1")
    assert first.created and first.stage.attempt == 1 and first.stage.state == "running"
    assert first.stage.check_ids == (check_id(member.report_id, "unit", 1),)
    replay = _reserve(store, member, "call-1")
    assert not replay.created and replay.stage == first.stage
    with pytest.raises(RepairBindingError, match="already recorded with different report details"):
        _reserve(store, member, "call-1", signature="repair:" + "2" * 64)
    blocked = _reserve(store, member, "call-2")  # the last stage is running, not requested
    assert not blocked.created and blocked.stage == first.stage
    _finish(store, member, first.stage, "requested")
    second = _reserve(store, member, "call-2")
    assert second.created and second.stage.attempt == 2
    assert second.stage.check_ids == (check_id(member.report_id, "unit", 2),)
    _finish(store, member, second.stage, "exhausted")
    after = _reserve(store, member, "call-3")
    assert not after.created and after.stage.state == "exhausted"
    assert len(after.ledger.stages) == 2


def test_resubmission_with_a_blocking_outcome_is_declined_at_once(
    store: Repositories, member: Member
) -> None:
    first = _reserve(store, member, "call-1", decline=True)
    assert first.stage.state == "running"  # a first submission is never declined at reservation
    _finish(store, member, first.stage, "requested")
    second = _reserve(store, member, "call-2", decline=True)
    assert second.created and second.stage.state == "declined"
    assert second.stage.check_ids == first.stage.check_ids


def test_changed_policy_or_assignments_are_refused(store: Repositories, member: Member) -> None:
    _reserve(store, member, "call-1")
    with pytest.raises(RepairBindingError, match=r"^Repair policy or assignment binding has changed\.$"):
        _reserve(store, member, "call-2", max_attempts=2)
    with pytest.raises(RepairBindingError, match=r"^Repair policy or assignment binding has changed\.$"):
        _reserve(store, member, "call-2", names=("unit", "lint"))


def test_cancellation_is_final_and_skips_terminal_stages(store: Repositories, member: Member) -> None:
    key = repair_controller_id(member.report_id)
    assert store.teams.repair.cancel_repair(key) is None
    first = _reserve(store, member, "call-1")
    _finish(store, member, first.stage, "not-needed")
    ledger = store.teams.repair.cancel_repair(key)
    assert ledger is not None and not ledger.cancelled  # the last stage is terminal
    other = add_member(store, "other")
    stage = _reserve(store, other, "call-1").stage
    cancelled = store.teams.repair.cancel_repair(repair_controller_id(other.report_id))
    assert cancelled is not None and cancelled.cancelled
    again = _reserve(store, other, "call-2")
    assert not again.created and again.stage == stage


def test_cancel_first_creates_a_cancelled_ledger_without_stages(store: Repositories, member: Member) -> None:
    reservation = _reserve(store, member, "call-1", cancel_first=True)
    assert not reservation.created and reservation.stage is None
    assert reservation.ledger.cancelled and reservation.ledger.stages == ()


def test_finish_needs_the_stage_token(store: Repositories, member: Member) -> None:
    _reserve(store, member, "call-1")
    with pytest.raises(RepairLedgerError, match="no stage reserved with this token"):
        store.teams.repair.finish_repair_stage(
            repair_controller_id(member.report_id),
            token="9" * 36,
            state="requested",
            check_ids=["x"],
            cancel=False,
        )


def _raw_ledger(
    conn: sqlite3.Connection, member: Member, *, max_attempts: int = 1, cancelled: int = 0
) -> str:
    key = repair_controller_id(member.report_id)
    conn.execute(
        "INSERT INTO team_repair_ledgers (controller_id, run_id, report_id, assignments, max_attempts, cancelled,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 1, 1)",
        (key, member.run_id, member.report_id, json.dumps([{"name": "unit"}]), max_attempts, cancelled),
    )
    return key


def _raw_stage(conn: sqlite3.Connection, key: str, attempt: int, state: str, ids: int = 1) -> sqlite3.Cursor:
    return conn.execute(
        "INSERT INTO team_repair_stages (controller_id, attempt, submission_id, signature, token, state, check_ids,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1, 1)",
        (
            key,
            attempt,
            f"call-{attempt}",
            "repair:" + "1" * 64,
            f"{attempt:036d}",
            state,
            json.dumps(["c"] * ids),
        ),
    )


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda c, k: _raw_stage(c, k, 2, "running"), "stage N must have attempt N"),
        (
            lambda c, k: (_raw_stage(c, k, 1, "running"), _raw_stage(c, k, 2, "running")),
            "can follow only a requested stage",
        ),
        (
            lambda c, k: (
                _raw_stage(c, k, 1, "running"),
                c.execute("UPDATE team_repair_stages SET state = 'requested'"),
                _raw_stage(c, k, 2, "running"),
                c.execute("UPDATE team_repair_stages SET state = 'requested' WHERE attempt = 2"),
                _raw_stage(c, k, 3, "running"),
            ),
            "at most maxAttempts",
        ),
        (lambda c, k: _raw_stage(c, k, 1, "running", ids=2), "one check per assignment"),
        (lambda c, k: _raw_stage(c, k, 1, "requested"), "running or declined"),
        (
            lambda c, k: (
                _raw_stage(c, k, 1, "running"),
                c.execute("UPDATE team_repair_ledgers SET cancelled = 1"),
                c.execute("UPDATE team_repair_ledgers SET cancelled = 0"),
            ),
            "cancellation is final",
        ),
        (
            lambda c, k: c.execute("UPDATE team_repair_ledgers SET max_attempts = 3"),
            "keeps its binding and policy",
        ),
        (
            lambda c, k: (
                _raw_stage(c, k, 1, "running"),
                c.execute("UPDATE team_repair_stages SET state = 'blocked'"),
                c.execute("UPDATE team_repair_stages SET state = 'requested'"),
            ),
            "only a running repair stage settles",
        ),
        (
            lambda c, k: (
                c.execute("UPDATE team_repair_ledgers SET cancelled = 1"),
                _raw_stage(c, k, 1, "running"),
            ),
            "cancelled repair ledger takes no new stage",
        ),
    ],
)
def test_ledger_invariants_hold_against_raw_sql(
    store: Repositories, member: Member, db_path: Path, setup: Any, message: str
) -> None:
    conn = raw(db_path)
    try:
        key = _raw_ledger(conn, member)
        with pytest.raises(sqlite3.IntegrityError, match=message):
            setup(conn, key)
    finally:
        conn.close()
