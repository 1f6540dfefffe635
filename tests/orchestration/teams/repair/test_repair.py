"""Bounded repair (§7): policy, ids, reservation, run plan, stage states, cancellation and fencing."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from corral.orchestration import InvalidRequestError, Repositories
from corral.orchestration.teams.checks._checks import (
    CheckRunner,
    LocalShellExecutor,
    assign_checks,
    parse_check_policy,
)
from corral.orchestration.teams.checks._rows import RepairBindingError
from corral.orchestration.teams.checks.records import AssignedCheck, CheckStore, check_id
from corral.orchestration.teams.repair._repair import (
    RepairController,
    RepairOutcome,
    RepairPolicyError,
    RepairUnresolvedError,
    repair_controller_id,
    repair_request_id,
    submission_signature,
)
from corral.orchestration.teams.repair._verification import parse_repair_policy
from tests.orchestration.teams._check_helpers import Member, add_member, counter_lines, failing_tracer, raw
from tests.orchestration.teams._git_helpers import make_repo

WAIT = 10.0
SIGNATURE = submission_signature({"summary": "done"})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"a.txt": "alpha\n", "b.txt": "beta\n", ".gitignore": "*.log\n"})


@pytest.fixture
def out(tmp_path: Path) -> Path:
    path = tmp_path / "out"
    path.mkdir()
    return path


@pytest.fixture
def member(store: Repositories) -> Member:
    return add_member(store)


@pytest.fixture
def controller(store: Repositories, tmp_path: Path) -> RepairController:
    return RepairController(
        store.teams,
        CheckRunner(CheckStore(store.teams.checks, tmp_path / "checks"), executor=LocalShellExecutor()),
    )


def _assign(member: Member, repo: Path, *checks: dict[str, Any]) -> tuple[AssignedCheck, ...]:
    specs = parse_check_policy([{"timeoutSeconds": 10, **check} for check in checks])
    return assign_checks(
        specs, task_id=member.task_id, run_id=member.run_id, report_id=member.report_id, cwd=repo
    )


async def _submit(
    controller: RepairController,
    checks: tuple[AssignedCheck, ...],
    submission: str,
    *,
    max_attempts: int = 1,
    outcome: str | None = None,
    cancel: asyncio.Event | None = None,
    signature: str = SIGNATURE,
) -> RepairOutcome:
    return await controller.submit(
        checks,
        max_attempts=max_attempts,
        submission_id=submission,
        signature=signature,
        outcome=outcome,
        cancel=cancel or asyncio.Event(),
    )


# -- policy and ids --------------------------------------------------------------------------------

CHECKS = parse_check_policy([{"name": "unit", "command": "true", "timeoutSeconds": 5}])


@pytest.mark.parametrize(
    ("value", "checks", "expected"),
    [
        (None, (), 0),
        ({"maxAttempts": 0}, (), 0),
        ({"maxAttempts": 3}, CHECKS, 3),
        ({"maxAttempts": 5.0}, CHECKS, 5),
    ],
)
def test_repair_policy_parses(value: object, checks: Any, expected: int) -> None:
    assert parse_repair_policy(value, checks=checks) == expected


@pytest.mark.parametrize(
    "value",
    [{}, [], "1", {"maxAttempts": 6}, {"maxAttempts": -1}, {"maxAttempts": 1.5}, {"maxAttempts": True},
     {"maxAttempts": "2"}, {"maxAttempts": None}, {"maxAttempts": 1, "extra": 0}],
)  # fmt: skip
def test_invalid_repair_policy_is_refused(value: object) -> None:
    with pytest.raises(RepairPolicyError, match=r"^Invalid repair policy\.$") as caught:
        parse_repair_policy(value, checks=CHECKS)
    assert isinstance(caught.value, InvalidRequestError)


def test_repair_needs_explicit_checks() -> None:
    with pytest.raises(RepairPolicyError, match=r"^Repair policy requires explicitly assigned checks\.$"):
        parse_repair_policy({"maxAttempts": 1}, checks=())


def test_ids_follow_the_contract() -> None:
    report = "report:session-l:agént:run"

    def sha(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    assert repair_controller_id(report) == "repair:" + sha(json.dumps(report, ensure_ascii=False))
    assert repair_request_id(report, 2) == "repair:" + sha(
        json.dumps([report, 2], ensure_ascii=False, separators=(",", ":"))
    )
    details = {"changedPaths": ["a"], "findings": []}
    assert submission_signature(details) == "repair:" + sha('{"changedPaths":["a"],"findings":[]}')
    assert submission_signature({"findings": [], "changedPaths": ["a"]}) != submission_signature(details)


# -- the run plan ----------------------------------------------------------------------------------


async def test_unchanged_passing_checks_are_reused_and_failed_ones_rerun(
    controller: RepairController, member: Member, repo: Path, out: Path
) -> None:
    counter = out / "counter"
    checks = _assign(
        member,
        repo,
        {"name": "lint", "command": f"echo lint >> {counter}", "inputs": ["a.txt"]},
        {"name": "unit", "command": f"echo unit >> {counter}; test -f fixed"},
    )
    first = await _submit(controller, checks, "call-1", max_attempts=2)
    assert first.result.state == "requested"
    assert [r.state for r in first.records.values() if r] == ["passed", "failed"]
    (repo / "fixed").write_text("yes\n")  # the fix: outside lint's scope
    second = await _submit(controller, checks, "call-2", max_attempts=2)
    assert second.result.state == "repaired"
    assert counter_lines(counter) == ["lint", "unit", "unit"]  # lint reused, unit rerun
    assert list(second.records) == [
        check_id(member.report_id, "lint", 1),
        check_id(member.report_id, "unit", 2),
    ]
    assert second.verification.state == "passed"


async def test_checks_whose_inputs_changed_are_rerun(
    controller: RepairController, member: Member, repo: Path, out: Path
) -> None:
    counter = out / "counter"
    checks = _assign(
        member,
        repo,
        {"name": "lint", "command": f"echo lint >> {counter}", "inputs": ["a.txt"]},
        {"name": "unit", "command": f"echo unit >> {counter}; test -f fixed"},
    )
    await _submit(controller, checks, "call-1")
    (repo / "a.txt").write_text("alpha, edited while fixing\n")
    (repo / "fixed").write_text("yes\n")
    second = await _submit(controller, checks, "call-2")
    assert second.result.state == "repaired"
    assert counter_lines(counter) == ["lint", "unit", "lint", "unit"]
    assert list(second.records) == [check_id(member.report_id, name, 2) for name in ("lint", "unit")]


async def test_replayed_submission_runs_nothing_and_consumes_no_attempt(
    controller: RepairController, member: Member, repo: Path, out: Path
) -> None:
    counter = out / "counter"
    checks = _assign(member, repo, {"name": "unit", "command": f"echo run >> {counter}; exit 1"})
    first = await _submit(controller, checks, "call-1", max_attempts=3)
    replay = await _submit(controller, checks, "call-1", max_attempts=3)
    assert counter_lines(counter) == ["run"]
    assert replay.result == first.result and replay.result.attempts_used == 1
    with pytest.raises(RepairBindingError, match="already recorded with different report details"):
        await _submit(controller, checks, "call-1", max_attempts=3, signature=submission_signature({"x": 1}))
    assert counter_lines(counter) == ["run"]


async def test_changed_policy_is_refused(controller: RepairController, member: Member, repo: Path) -> None:
    checks = _assign(member, repo, {"name": "unit", "command": "exit 1"})
    await _submit(controller, checks, "call-1", max_attempts=1)
    with pytest.raises(RepairBindingError, match=r"^Repair policy or assignment binding has changed\.$"):
        await _submit(controller, checks, "call-2", max_attempts=2)


# -- stage states ------------------------------------------------------------------------------------


async def test_passing_first_attempt_is_not_needed(
    controller: RepairController, member: Member, repo: Path
) -> None:
    outcome = await _submit(controller, _assign(member, repo, {"name": "unit", "command": "true"}), "call-1")
    assert outcome.result.to_json() == {
        "controllerId": repair_controller_id(member.report_id),
        "state": "not-needed",
        "attemptsUsed": 0,
        "maxAttempts": 1,
        "requestIds": [],
    }
    assert outcome.request is None


async def test_error_check_blocks_repair(controller: RepairController, member: Member, repo: Path) -> None:
    checks = _assign(
        member, repo, {"name": "unit", "command": "exit 1"}, {"name": "crash", "command": "kill -9 $$"}
    )
    outcome = await _submit(controller, checks, "call-1", max_attempts=3)
    assert outcome.result.state == "blocked"
    assert outcome.result.outcome == "blocked"
    assert outcome.request is None


async def test_unsupported_runtime_blocks_repair(
    store: Repositories, member: Member, repo: Path, tmp_path: Path
) -> None:
    runner = CheckRunner(
        CheckStore(store.teams.checks, tmp_path / "checks"),
        executor=LocalShellExecutor(str(tmp_path / "none")),
    )
    outcome = await _submit(
        RepairController(store.teams, runner),
        _assign(member, repo, {"name": "unit", "command": "true"}),
        "call-1",
    )
    assert outcome.result.state == "blocked"


async def test_timed_out_check_is_settled_enough_to_request_repair(
    controller: RepairController, member: Member, repo: Path
) -> None:
    checks = _assign(member, repo, {"name": "slow", "command": "sleep 30", "timeoutSeconds": 0.3})
    outcome = await _submit(controller, checks, "call-1")
    assert outcome.result.state == "requested"
    assert outcome.request is not None
    assert [c.state for c in outcome.request.checks] == ["timed-out"]


@pytest.mark.parametrize("reported", ["blocked", "failed", "cancelled"])
async def test_blocking_outcome_declines(
    controller: RepairController, store: Repositories, member: Member, repo: Path, out: Path, reported: str
) -> None:
    counter = out / "counter"
    checks = _assign(member, repo, {"name": "unit", "command": f"echo run >> {counter}; exit 1"})
    first = await _submit(controller, checks, "call-1", max_attempts=2, outcome=reported)
    assert first.result.state == "declined"  # a failed first attempt with a blocking outcome
    other = add_member(store, f"other-{reported}")
    others = _assign(other, repo, {"name": "unit", "command": f"echo again >> {counter}; exit 1"})
    assert (await _submit(controller, others, "call-1", max_attempts=2)).result.state == "requested"
    declined = await _submit(controller, others, "call-2", max_attempts=2, outcome=reported)
    assert declined.result.state == "declined" and declined.result.outcome == "blocked"
    assert declined.result.attempts_used == 1
    assert list(declined.records) == [
        check_id(other.report_id, "unit", 1)
    ]  # previous check ids, nothing rerun
    assert counter_lines(counter) == ["run", "again"]


async def test_blocking_outcome_with_passing_checks_is_not_needed(
    controller: RepairController, member: Member, repo: Path
) -> None:
    checks = _assign(member, repo, {"name": "unit", "command": "true"})
    assert (await _submit(controller, checks, "call-1", outcome="blocked")).result.state == "not-needed"


# -- cancellation, claims and fencing -----------------------------------------------------------------


async def test_cancel_during_a_check_cancels_the_ledger(
    controller: RepairController, store: Repositories, member: Member, repo: Path, out: Path
) -> None:
    fifo = out / "started"
    os.mkfifo(fifo)
    checks = _assign(member, repo, {"name": "unit", "command": f"echo started > {fifo}; sleep 30"})
    cancel = asyncio.Event()
    task = asyncio.create_task(_submit(controller, checks, "call-1", max_attempts=2, cancel=cancel))
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    ready = asyncio.Event()
    asyncio.get_running_loop().add_reader(fd, ready.set)
    try:
        await asyncio.wait_for(ready.wait(), WAIT)
    finally:
        asyncio.get_running_loop().remove_reader(fd)
        os.close(fd)
    cancel.set()
    outcome = await asyncio.wait_for(task, WAIT)
    assert outcome.result.state == "cancelled" and outcome.result.outcome == "blocked"
    assert [r.state for r in outcome.records.values() if r] == ["cancelled"]
    ledger = store.teams.repair.repair_ledger(repair_controller_id(member.report_id))
    assert ledger is not None and ledger.cancelled and ledger.stages[0].state == "cancelled"
    again = await _submit(controller, checks, "call-2", max_attempts=2)
    assert again.result.state == "cancelled"
    assert (
        store.teams.checks.get_check(check_id(member.report_id, "unit", 2)) is None
    )  # no further attempt ran
    assert controller.unresolved(member.run_id) is None


async def test_cancel_after_a_request_prevents_further_attempts(
    controller: RepairController, member: Member, repo: Path, out: Path
) -> None:
    counter = out / "counter"
    checks = _assign(member, repo, {"name": "unit", "command": f"echo run >> {counter}; exit 1"})
    assert (await _submit(controller, checks, "call-1", max_attempts=2)).result.state == "requested"
    controller.cancel_and_require_settled(member.report_id)  # settled: nothing raised
    again = await _submit(controller, checks, "call-2", max_attempts=2)
    assert again.result.state == "cancelled" and again.result.attempts_used == 1
    assert counter_lines(counter) == ["run"]


async def test_signal_already_aborted_cancels_before_anything_runs(
    controller: RepairController, member: Member, repo: Path, out: Path
) -> None:
    cancel = asyncio.Event()
    cancel.set()
    checks = _assign(member, repo, {"name": "unit", "command": f"touch {out / 'ran'}"})
    outcome = await _submit(controller, checks, "call-1", cancel=cancel)
    assert outcome.result.state == "cancelled"
    assert outcome.verification.state == "failed"
    assert not (out / "ran").exists()


async def test_lingering_claim_keeps_repair_pending_and_cleanup_fenced(
    controller: RepairController, store: Repositories, member: Member, repo: Path, out: Path, tmp_path: Path
) -> None:
    counter = out / "counter"
    checks = _assign(member, repo, {"name": "unit", "command": f"echo run >> {counter}"})
    CheckStore(store.teams.checks, tmp_path / "checks").claim(checks[0])  # the host died after claiming
    outcome = await _submit(controller, checks, "call-1")
    assert outcome.result.state == "pending" and outcome.result.outcome == "blocked"
    assert outcome.verification.state == "pending"
    assert not counter.exists()
    problem = controller.unresolved(member.run_id)
    assert problem is not None and problem.startswith("Repair check ownership remains unresolved")
    assert "still claimed" in problem and "still running" in problem
    with pytest.raises(RepairUnresolvedError, match=r"^Repair check ownership remains unresolved"):
        controller.cancel_and_require_settled(member.report_id)
    replay = await _submit(controller, checks, "call-1")
    assert replay.result.state == "pending"
    assert not counter.exists()


async def test_a_claim_the_store_refuses_blocks_and_runs_nothing(
    member: Member, db_path: Path, repo: Path, out: Path, tmp_path: Path
) -> None:
    checks = _assign(member, repo, {"name": "unit", "command": f"touch {out / 'ran'}"})
    with Repositories.open(db_path, tracer=failing_tracer("INSERT INTO team_checks")) as faulty:
        runner = CheckRunner(
            CheckStore(faulty.teams.checks, tmp_path / "checks"), executor=LocalShellExecutor()
        )
        outcome = await _submit(RepairController(faulty.teams, runner), checks, "call-1")
    assert outcome.result.state == "blocked"
    assert outcome.verification.error is not None and "disk I/O error" in outcome.verification.error
    assert not (out / "ran").exists()


async def test_corrupt_ledger_is_observed_as_pending_with_the_error(
    controller: RepairController, member: Member, repo: Path, db_path: Path
) -> None:
    checks = _assign(member, repo, {"name": "unit", "command": "exit 1"})
    await _submit(controller, checks, "call-1")
    conn = raw(db_path)
    try:  # a stage naming a check of another assignment (SQLite cannot see the hashes)
        conn.execute("DROP TRIGGER team_repair_stages_settle")
        conn.execute(
            "UPDATE team_repair_stages SET check_ids = ?", (json.dumps([check_id("report:x", "unit", 1)]),)
        )
    finally:
        conn.close()
    observed = await controller.observe(
        report_id=member.report_id, run_id=member.run_id, task_id=member.task_id, referenced=False
    )
    assert observed is not None
    assert observed.result.state == "pending" and observed.result.outcome == "blocked"
    assert observed.result.error is not None and "is corrupt" in observed.result.error
    assert observed.result.attempts_used is None
    assert observed.verification.state == "pending"
