"""The teams core's verification API: `Verifier.verify`, receipts, `observe`, `cancel`, `unresolved`, `records`."""

from __future__ import annotations

import asyncio
import copy
import os
from pathlib import Path
from typing import Any

import pytest

from corral.orchestration import InvalidRequestError, Repositories
from corral.orchestration.surfaces.teams._render import receipt_details
from corral.orchestration.teams.checks._checks import (
    CheckSpec,
    LocalShellExecutor,
    assign_checks,
    parse_check_policy,
)
from corral.orchestration.teams.checks.records import CheckStore, check_id
from corral.orchestration.teams.commands import ReportSubmission
from corral.orchestration.teams.repair._repair import repair_controller_id, repair_request_id
from corral.orchestration.teams.repair._verification import VerificationDecision, Verifier
from corral.orchestration.teams.repair.records import RepairResult, ReportVerification
from corral.orchestration.teams.repair.texts import receipt_text
from corral.orchestration.teams.reports.records import ReportResult
from corral.orchestration.teams.results import ReportReceipt
from tests.orchestration._store_helpers import dump
from tests.orchestration.teams._check_helpers import LEAD, Member, add_member, counter_lines, mode
from tests.orchestration.teams._git_helpers import make_repo

WAIT = 10.0


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"a.txt": "alpha\n", ".gitignore": "*.log\n"})


@pytest.fixture
def out(tmp_path: Path) -> Path:
    path = tmp_path / "out"
    path.mkdir()
    return path


@pytest.fixture
def member(store: Repositories) -> Member:
    return add_member(store)


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path / "home" / "teams" / f"session-{LEAD}" / "checks"


@pytest.fixture
def verifier(store: Repositories, logs: Path) -> Verifier:
    def logs_dir(lead: str) -> Path:
        assert lead == LEAD
        return logs

    return Verifier(store.teams, logs_dir=logs_dir)


def _specs(*checks: dict[str, Any]) -> tuple[CheckSpec, ...]:
    return parse_check_policy([{"timeoutSeconds": 10, **check} for check in checks])


async def _verify(
    verifier: Verifier,
    member: Member,
    repo: Path,
    checks: tuple[CheckSpec, ...],
    submission: str,
    *,
    max_attempts: int = 0,
    outcome: str | None = "succeeded",
    cancel: asyncio.Event | None = None,
) -> VerificationDecision:
    return await verifier.verify(
        lead_session_id=LEAD,
        task_id=member.task_id,
        report_id=member.report_id,
        run_id=member.run_id,
        cwd=repo,
        checks=checks,
        max_attempts=max_attempts,
        submission_id=submission,
        submission=ReportSubmission("done", summary="fixed", outcome=outcome),  # type: ignore[arg-type]
        cancel=cancel,
    )


def _result(member: Member, decision: VerificationDecision, *, outcome: str = "succeeded") -> dict[str, Any]:
    """A stored `ReportResult` as the teams core would write it from a decision."""
    result: dict[str, Any] = {
        "version": 1,
        "taskId": member.task_id,
        "runId": member.run_id,
        "reportId": member.report_id,
        "outcome": outcome,
        "verification": decision.verification.to_json(),
        "acceptance": {"state": "pending"},
    }
    if decision.repair is not None:
        result["repair"] = decision.repair.to_json()
    return result


def _stored(member: Member, decision: VerificationDecision) -> ReportResult:
    """`_result` read back as the store reads it."""
    return ReportResult.from_json(
        _result(member, decision), task_id=member.task_id, run_id=member.run_id, report_id=member.report_id
    )


async def _observe(verifier: Verifier, result: dict[str, Any]) -> dict[str, Any]:
    """Observe a stored result as status does: the observed verification and repair, in the stored JSON shape."""
    observed = await verifier.observe(
        report_id=result["reportId"],
        run_id=result["runId"],
        task_id=result["taskId"],
        verification=ReportVerification.from_json(result.get("verification")),
        repair=RepairResult.from_json(result.get("repair")),
    )
    data: dict[str, Any] = {"verification": observed.verification.to_json()}
    if observed.repair is not None:
        data["repair"] = observed.repair.to_json()
    return data


# -- without repair ---------------------------------------------------------------------------------


async def test_no_checks_is_not_requested(verifier: Verifier, member: Member, repo: Path) -> None:
    decision = await _verify(verifier, member, repo, (), "call-1")
    assert decision == VerificationDecision(True, ReportVerification(), None, None)
    assert receipt_text(decision) == "Assigned verification: not-requested."
    with pytest.raises(InvalidRequestError, match="requires explicitly assigned checks"):
        await _verify(verifier, member, repo, (), "call-1", max_attempts=1)


async def test_failed_checks_never_block_a_report_without_repair(
    verifier: Verifier, member: Member, repo: Path, out: Path, logs: Path
) -> None:
    counter = out / "counter"
    checks = _specs(
        {"name": "lint", "command": f"echo lint >> {counter}"},
        {"name": "unit", "command": f"echo unit >> {counter}; echo boom; exit 4"},
    )
    decision = await _verify(verifier, member, repo, checks, "call-1")
    ids = [check_id(member.report_id, name, 1) for name in ("lint", "unit")]
    assert decision.accepted
    assert decision.verification.to_json() == {"state": "failed", "checkIds": ids}
    assert decision.repair is None and decision.repair_request is None
    unit_log = logs / f"{ids[1].removeprefix('check:')}.log"
    assert unit_log.read_text() == "boom\n"
    assert mode(unit_log) == 0o600 and mode(logs) == 0o700
    text = receipt_text(decision)
    assert text.splitlines() == [
        "Assigned verification: failed.",
        f"- check unit: failed, exit code 4, log {unit_log}",
    ]
    again = await _verify(verifier, member, repo, checks, "call-2")  # a duplicate runs nothing
    assert again.verification == decision.verification
    assert counter_lines(counter) == ["lint", "unit"]


async def test_passing_checks_without_repair(verifier: Verifier, member: Member, repo: Path) -> None:
    decision = await _verify(verifier, member, repo, _specs({"name": "unit", "command": "true"}), "call-1")
    assert decision.accepted and decision.verification.state == "passed"
    assert receipt_text(decision) == "Assigned verification: passed."


# -- the contract's maxAttempts: 1 example ---------------------------------------------------------------


async def test_max_attempts_one_first_failure_requests_then_a_fix_is_repaired(
    verifier: Verifier, member: Member, repo: Path, out: Path, logs: Path
) -> None:
    counter = out / "counter"
    checks = _specs({"name": "unit", "command": f"echo run >> {counter}; test -f fixed"})
    first = await _verify(verifier, member, repo, checks, "call-1", max_attempts=1)
    attempt_one = check_id(member.report_id, "unit", 1)
    request_one = repair_request_id(member.report_id, 1)
    assert not first.accepted
    assert first.repair is not None and first.repair.to_json() == {
        "controllerId": repair_controller_id(member.report_id),
        "state": "requested",
        "attemptsUsed": 1,
        "maxAttempts": 1,
        "requestIds": [request_one],
    }
    log = str(logs / f"{attempt_one.removeprefix('check:')}.log")
    assert receipt_details(ReportReceipt("repair", decision=first))["repairRequest"] == {
        "id": request_one,
        "attempt": 1,
        "checks": [
            {"checkId": attempt_one, "name": "unit", "state": "failed", "exitCode": 1, "logPath": log}
        ],
    }
    text = receipt_text(first)
    assert f"- check unit: failed, exit code 1, log {log}" in text
    assert f"Repair requested ({request_one}, attempt 1 of 1)" in text

    replay = await _verify(verifier, member, repo, checks, "call-1", max_attempts=1)
    assert replay.repair == first.repair and not replay.accepted
    assert counter_lines(counter) == ["run"]

    (repo / "fixed").write_text("yes\n")
    second = await _verify(verifier, member, repo, checks, "call-2", max_attempts=1)
    assert second.accepted
    assert second.verification.to_json() == {
        "state": "passed",
        "checkIds": [check_id(member.report_id, "unit", 2)],
    }
    assert second.repair is not None and second.repair.state == "repaired"
    assert second.repair.attempts_used == 1 and second.repair.outcome is None
    assert second.repair_request is None
    assert _stored(member, second).effective_outcome == "succeeded"

    later = await _verify(verifier, member, repo, checks, "call-3", max_attempts=1)
    assert later.repair == second.repair
    assert counter_lines(counter) == ["run", "run"]


async def test_max_attempts_one_second_failure_is_exhausted_and_blocks(
    verifier: Verifier, member: Member, repo: Path, out: Path
) -> None:
    counter = out / "counter"
    checks = _specs({"name": "unit", "command": f"echo run >> {counter}; exit 1"})
    assert not (await _verify(verifier, member, repo, checks, "call-1", max_attempts=1)).accepted
    second = await _verify(verifier, member, repo, checks, "call-2", max_attempts=1)
    assert second.accepted  # the agent is done; the lead sees the blocker
    assert second.repair is not None
    assert second.repair.state == "exhausted" and second.repair.outcome == "blocked"
    assert second.repair.attempts_used == 1
    result = _result(member, second)
    assert result["outcome"] == "succeeded"  # the agent's own claim is kept
    assert _stored(member, second).effective_outcome == "blocked"
    assert "Repair: exhausted — effective outcome blocked." in receipt_text(second)
    later = await _verify(verifier, member, repo, checks, "call-3", max_attempts=1)
    old = await _verify(verifier, member, repo, checks, "call-1", max_attempts=1)
    assert later.repair == second.repair
    assert old.repair is not None and old.repair.state == "requested"  # its own stage's decision, replayed
    assert counter_lines(counter) == ["run", "run"]


async def test_declined_resubmission_is_a_blocked_outcome(
    verifier: Verifier, member: Member, repo: Path, out: Path
) -> None:
    counter = out / "counter"
    checks = _specs({"name": "unit", "command": f"echo run >> {counter}; exit 1"})
    await _verify(verifier, member, repo, checks, "call-1", max_attempts=2)
    declined = await _verify(verifier, member, repo, checks, "call-2", max_attempts=2, outcome="blocked")
    assert declined.accepted
    assert declined.repair is not None and declined.repair.state == "declined"
    assert declined.repair.outcome == "blocked"
    assert declined.verification.state == "failed"
    assert counter_lines(counter) == ["run"]


async def test_error_check_blocks(verifier: Verifier, member: Member, repo: Path) -> None:
    decision = await _verify(
        verifier, member, repo, _specs({"name": "crash", "command": "kill -9 $$"}), "call-1", max_attempts=2
    )
    assert decision.accepted
    assert decision.repair is not None and decision.repair.state == "blocked"
    assert decision.repair.outcome == "blocked"
    assert "- check crash: error, exit code none, log" in receipt_text(decision)


async def test_unsupported_runtime_blocks(
    store: Repositories, member: Member, repo: Path, tmp_path: Path
) -> None:
    verifier = Verifier(
        store.teams, logs_dir=lambda _: tmp_path / "checks", executor=LocalShellExecutor("/no/such/shell")
    )
    decision = await _verify(
        verifier, member, repo, _specs({"name": "unit", "command": "true"}), "c", max_attempts=1
    )
    assert decision.repair is not None and decision.repair.state == "blocked"
    assert [record.state for record in decision.records] == ["unsupported"]


# -- cancellation and fencing -------------------------------------------------------------------------


async def _wait_fifo(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    ready = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(fd, ready.set)
    try:
        await asyncio.wait_for(ready.wait(), WAIT)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def test_cancel_kills_the_running_check_and_cancels_repair(
    verifier: Verifier, store: Repositories, member: Member, repo: Path, out: Path
) -> None:
    fifo = out / "started"
    os.mkfifo(fifo)
    checks = _specs({"name": "unit", "command": f"echo go > {fifo}; sleep 30"})
    task = asyncio.create_task(_verify(verifier, member, repo, checks, "call-1", max_attempts=2))
    await _wait_fifo(fifo)
    assert verifier.unresolved(member.run_id) is not None  # a claimed check while it runs
    verifier.cancel(member.report_id)
    decision = await asyncio.wait_for(task, WAIT)
    assert decision.accepted
    assert decision.repair is not None and decision.repair.state == "cancelled"
    assert decision.repair.outcome == "blocked"
    assert [record.state for record in decision.records] == ["cancelled"]
    assert verifier.unresolved(member.run_id) is None
    verifier.cancel_and_require_settled(member.report_id)
    again = await _verify(verifier, member, repo, checks, "call-2", max_attempts=2)
    assert again.repair is not None and again.repair.state == "cancelled"
    assert store.teams.checks.get_check(check_id(member.report_id, "unit", 2)) is None


async def test_cancel_without_repair_stops_the_checks(
    verifier: Verifier, member: Member, repo: Path, out: Path
) -> None:
    verifier.cancel(member.report_id)  # e.g. stop before the report's checks ran
    decision = await _verify(
        verifier, member, repo, _specs({"name": "unit", "command": f"touch {out / 'r'}"}), "c"
    )
    assert decision.verification.state == "failed"
    assert decision.verification.error == "Assigned verification was cancelled before all checks settled."
    assert not (out / "r").exists()


async def test_unresolved_claim_fences_cleanup(
    verifier: Verifier, store: Repositories, member: Member, repo: Path, out: Path, logs: Path
) -> None:
    checks = _specs({"name": "unit", "command": f"touch {out / 'ran'}"})
    (assigned,) = assign_checks(
        checks, task_id=member.task_id, run_id=member.run_id, report_id=member.report_id, cwd=repo
    )
    CheckStore(store.teams.checks, logs).claim(assigned)  # the host died after the claim
    assert verifier.unresolved(member.run_id) == (
        f"Repair check ownership remains unresolved: check unit ({assigned.check_id}) is still claimed;"
        " its execution never settled."
    )
    decision = await _verify(verifier, member, repo, checks, "call-1", max_attempts=1)
    assert decision.verification.state == "pending"
    assert decision.repair is not None and decision.repair.state == "pending"
    assert not (out / "ran").exists()
    assert [record.state for record in verifier.records([assigned.check_id, "check:" + "0" * 64])] == [
        "claimed"
    ]
    other = add_member(store, "clean")
    assert verifier.unresolved(other.run_id) is None


# -- observation -------------------------------------------------------------------------------------


async def test_observe_reports_stale_without_rewriting(
    verifier: Verifier, store: Repositories, member: Member, repo: Path, db_path: Path
) -> None:
    decision = await _verify(verifier, member, repo, _specs({"name": "unit", "command": "true"}), "call-1")
    stored = _result(member, decision)
    pristine = copy.deepcopy(stored)
    assert (await _observe(verifier, stored))["verification"]["state"] == "passed"
    (repo / "a.txt").write_text("changed after the report\n")
    before = dump(db_path)
    observed = await _observe(verifier, stored)
    assert observed["verification"]["state"] == "stale"
    assert observed["verification"]["checkIds"] == list(decision.verification.check_ids)
    assert stored == pristine  # the argument is not touched
    assert dump(db_path) == before  # nothing written
    (record,) = verifier.records(decision.verification.check_ids)
    assert record.state == "passed"


async def test_observe_rebuilds_repair_from_the_ledger_ignoring_forged_counts(
    verifier: Verifier, member: Member, repo: Path, db_path: Path
) -> None:
    checks = _specs({"name": "unit", "command": "exit 1"})
    decision = await _verify(verifier, member, repo, checks, "call-1", max_attempts=2)
    forged = _result(member, decision)
    forged["repair"] = {**forged["repair"], "state": "repaired", "attemptsUsed": 0, "requestIds": []}
    forged["verification"] = {"state": "passed", "checkIds": []}
    before = dump(db_path)
    observed = await _observe(verifier, forged)
    assert decision.repair is not None and observed["repair"] == decision.repair.to_json()
    assert observed["verification"] == decision.verification.to_json()
    assert dump(db_path) == before


async def test_observe_a_referenced_ledger_that_is_missing(verifier: Verifier, member: Member) -> None:
    result = {
        "version": 1,
        "taskId": member.task_id,
        "runId": member.run_id,
        "reportId": member.report_id,
        "verification": {"state": "passed", "checkIds": []},
        "repair": {
            "controllerId": repair_controller_id(member.report_id),
            "state": "repaired",
            "attemptsUsed": 1,
        },
    }
    observed = await _observe(verifier, result)
    error = observed["repair"]["error"]
    assert error.startswith("Referenced repair ledger is unavailable; inspect")
    assert observed["repair"] == {
        "controllerId": repair_controller_id(member.report_id),
        "state": "pending",
        "outcome": "blocked",
        "error": error,
    }
    assert observed["verification"] == {"state": "pending", "error": error}


async def test_observe_a_ledger_of_another_run(
    verifier: Verifier, store: Repositories, member: Member, repo: Path
) -> None:
    decision = await _verify(
        verifier, member, repo, _specs({"name": "unit", "command": "exit 1"}), "c", max_attempts=1
    )
    other = add_member(store, "other")
    moved = {**_result(member, decision), "runId": other.run_id}
    observed = await _observe(verifier, moved)
    assert observed["repair"]["state"] == "pending"
    assert "belongs to another run" in observed["repair"]["error"]
    assert "attemptsUsed" not in observed["repair"]


async def test_observe_plain_evidence_errors_and_legacy_results(
    verifier: Verifier, member: Member, repo: Path
) -> None:
    missing = check_id(member.report_id, "gone", 1)
    result = {
        "version": 1,
        "taskId": member.task_id,
        "runId": member.run_id,
        "reportId": member.report_id,
        "verification": {"state": "passed", "checkIds": [missing]},
    }
    observed = await _observe(verifier, result)
    assert observed["verification"]["state"] == "failed"
    assert f"Check record {missing} is unavailable" in observed["verification"]["error"]
    plain = {"version": 1, "taskId": member.task_id, "runId": member.run_id, "reportId": member.report_id,
             "verification": {"state": "not-requested"}}  # fmt: skip
    assert await _observe(verifier, plain) == {"verification": {"state": "not-requested"}}
