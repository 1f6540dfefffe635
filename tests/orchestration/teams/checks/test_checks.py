"""Assigned checks: policy, identity, store-backed records, real execution and verification (§6.1–6.5)."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import sqlite3
import stat
import sys
from pathlib import Path

import pytest

from corral.orchestration import InvalidRequestError, Repositories, StoreError
from corral.orchestration.teams.checks._checks import (
    CANCELLED_VERIFICATION_ERROR,
    UNSUPPORTED_CHECKS_ERROR,
    CheckPolicyError,
    CheckRunner,
    CheckSpec,
    LocalShellExecutor,
    assign_checks,
    observe,
    parse_check_policy,
    verify_batch,
)
from corral.orchestration.teams.checks._rows import CheckRow
from corral.orchestration.teams.checks.records import (
    AssignedCheck,
    CheckIdentityError,
    CheckRecord,
    CheckRecordError,
    CheckStore,
    check_id,
)
from tests.orchestration.teams._check_helpers import Member, add_member, failing_tracer, raw
from tests.orchestration.teams._git_helpers import make_repo

WAIT = 10.0
"""Bound on every wait for a subprocess event."""
REPORT = "report:team:agent:run-1"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"a.txt": "alpha\n", ".gitignore": "*.log\n"})


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """A scratch directory outside the repository (so writing there changes no source)."""
    path = tmp_path / "out"
    path.mkdir()
    return path


@pytest.fixture
def member(store: Repositories) -> Member:
    return add_member(store)


@pytest.fixture
def runner(store: Repositories, tmp_path: Path) -> CheckRunner:
    return CheckRunner(CheckStore(store.teams.checks, tmp_path / "checks"), executor=LocalShellExecutor())


def _check(
    member: Member, repo: Path, command: str, *, name: str = "test", timeout: float = 10, attempt: int = 1
) -> AssignedCheck:
    (spec,) = parse_check_policy([{"name": name, "command": command, "timeoutSeconds": timeout}])
    (check,) = assign_checks(
        [spec],
        task_id=member.task_id,
        run_id=member.run_id,
        report_id=member.report_id,
        cwd=repo,
        attempt=attempt,
    )
    return check


async def _wait_readable(path: Path) -> bytes:
    """Open a FIFO without blocking and wait (bounded) until a writer sends something."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    ready = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(fd, ready.set)
    try:
        await asyncio.wait_for(ready.wait(), WAIT)
        return os.read(fd, 100)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def _wait_exited(pid: int) -> None:
    """Wait (bounded) until `pid` has exited (gone or a zombie), via a pidfd."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    ready = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(fd, ready.set)
    try:
        await asyncio.wait_for(ready.wait(), WAIT)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


# -- policy -------------------------------------------------------------------


def test_policy_parses_in_order_and_normalizes_inputs() -> None:
    specs = parse_check_policy(
        [
            {"name": "lint", "command": "ruff check", "timeoutSeconds": 30},
            {"name": "unit", "command": "pytest", "timeoutSeconds": 2.5, "inputs": ["src", "a", "src"]},
        ]
    )
    assert [spec.name for spec in specs] == ["lint", "unit"]
    assert specs[0].inputs is None
    assert specs[1].inputs == ("a", "src")
    assert specs[1].to_json() == {
        "name": "unit",
        "command": "pytest",
        "timeoutSeconds": 2.5,
        "inputs": ["a", "src"],
    }


def test_empty_policy_means_no_checks() -> None:
    assert parse_check_policy([]) == ()


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(CheckPolicyError, match=r"^Assigned check names must be unique\.$"):
        parse_check_policy(
            [
                {"name": "t", "command": "true", "timeoutSeconds": 1},
                {"name": "t", "command": "false", "timeoutSeconds": 1},
            ]
        )


@pytest.mark.parametrize(
    "policy",
    [
        None,
        {"name": "t"},
        ["t"],
        [{"name": "", "command": "true", "timeoutSeconds": 1}],
        [{"name": "  ", "command": "true", "timeoutSeconds": 1}],
        [{"name": "t", "command": " \n", "timeoutSeconds": 1}],
        [{"name": "t", "timeoutSeconds": 1}],
        [{"name": "t", "command": "true", "timeoutSeconds": 0}],
        [{"name": "t", "command": "true", "timeoutSeconds": -1}],
        [{"name": "t", "command": "true", "timeoutSeconds": float("inf")}],
        [{"name": "t", "command": "true", "timeoutSeconds": float("nan")}],
        [{"name": "t", "command": "true", "timeoutSeconds": 2_147_483.648}],
        [{"name": "t", "command": "true", "timeoutSeconds": "5"}],
        [{"name": "t", "command": "true", "timeoutSeconds": True}],
        [{"name": "t", "command": "true", "timeoutSeconds": 1, "inputs": []}],
        [{"name": "t", "command": "true", "timeoutSeconds": 1, "inputs": None}],
        [{"name": "t", "command": "true", "timeoutSeconds": 1, "inputs": "src"}],
        [{"name": "t", "command": "true", "timeoutSeconds": 1, "inputs": [""]}],
        [{"name": "t", "command": "true", "timeoutSeconds": 1, "inputs": ["/abs"]}],
        [{"name": "t", "command": "true", "timeoutSeconds": 1, "extra": 1}],
    ],
)
def test_invalid_policy_is_refused_with_the_contract_message(policy: object) -> None:
    with pytest.raises(CheckPolicyError, match=r"^Invalid assigned check policy\.$") as caught:
        parse_check_policy(policy)
    assert isinstance(caught.value, InvalidRequestError)
    assert caught.value.details["reason"]


def test_largest_timeout_is_accepted() -> None:
    assert CheckSpec("t", "true", 2_147_483.647).timeout_seconds == 2_147_483.647


# -- identity -------------------------------------------------------------------


def test_check_id_is_the_sha256_of_report_name_attempt() -> None:
    payload = json.dumps([REPORT, "lint", 2], separators=(",", ":"))
    assert check_id(REPORT, "lint", 2) == "check:" + hashlib.sha256(payload.encode()).hexdigest()
    assert check_id(REPORT, "lint", 1) != check_id(REPORT, "lint", 2)


def test_assignment_binding_follows_json_stringify(tmp_path: Path) -> None:
    check = AssignedCheck("t", "r", "p", "n", "c", str(tmp_path), 5.0, 1)
    assert check.binding() == json.dumps(
        ["t", "r", "p", "n", "c", str(tmp_path), 5, 1, None], separators=(",", ":")
    )
    scoped = dataclasses.replace(check, timeout_seconds=0.0000005, inputs=("src",))
    assert scoped.binding().endswith(',5e-7,1,["src"]]')


# -- running checks for real -------------------------------------------------------


async def test_passing_check_is_recorded_with_its_log(
    runner: CheckRunner, member: Member, repo: Path, tmp_path: Path
) -> None:
    run = await runner.run(_check(member, repo, "echo hello; echo oops >&2"))
    record = run.record
    assert run.claimed
    assert record.state == "passed"
    assert record.exit_code == 0
    assert record.error is None
    assert record.source_before == record.source_after
    assert record.completed_at is not None and record.completed_at >= record.started_at
    log = Path(record.log_path)
    assert log == tmp_path / "checks" / f"{record.check_id.removeprefix('check:')}.log"
    assert log.read_text() == "hello\noops\n"
    assert record.log_bytes == len("hello\noops\n")
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    assert runner.store.read(record.check_id) == record
    assert record.to_json()["startedAt"].endswith("Z")


async def test_failing_check_keeps_its_exit_code(runner: CheckRunner, member: Member, repo: Path) -> None:
    record = (await runner.run(_check(member, repo, "echo broken; exit 3"))).record
    assert record.state == "failed"
    assert record.exit_code == 3
    assert Path(record.log_path).read_text() == "broken\n"
    assert runner.store.read(record.check_id) == record


async def test_timeout_kills_the_process_group_with_a_grandchild(
    runner: CheckRunner, member: Member, repo: Path, out: Path
) -> None:
    pid_file = out / "grandchild.pid"
    command = f"sleep 60 & echo $! > {pid_file}; echo started; wait"
    record = (await runner.run(_check(member, repo, command, timeout=0.5))).record
    assert record.state == "timed-out"
    assert record.exit_code is None
    assert record.error == "Check command timed out after 0.5 seconds."
    assert Path(record.log_path).read_text() == "started\n"  # partial output is kept
    await _wait_exited(int(pid_file.read_text()))


async def test_cancel_event_kills_the_command_and_settles_cancelled(
    runner: CheckRunner, member: Member, repo: Path, out: Path
) -> None:
    fifo = out / "started"
    os.mkfifo(fifo)
    pid_file = out / "grandchild.pid"
    cancel = asyncio.Event()
    command = f"sleep 60 & echo $! > {pid_file}; echo started > {fifo}; wait; exit 0"
    task = asyncio.create_task(runner.run(_check(member, repo, command), cancel=cancel))
    assert await _wait_readable(fifo) == b"started\n"
    cancel.set()
    record = (await asyncio.wait_for(task, WAIT)).record
    assert record.state == "cancelled"
    assert record.exit_code is None
    assert runner.store.read(record.check_id) == record
    await _wait_exited(int(pid_file.read_text()))


async def test_task_cancellation_settles_the_record_then_propagates(
    runner: CheckRunner, member: Member, repo: Path, out: Path
) -> None:
    fifo = out / "started"
    os.mkfifo(fifo)
    pid_file = out / "grandchild.pid"
    check = _check(member, repo, f"sleep 60 & echo $! > {pid_file}; echo started > {fifo}; wait")
    task = asyncio.create_task(runner.run(check))
    await _wait_readable(fifo)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT)
    stored = runner.store.read(check.check_id)
    assert stored is not None
    assert stored.state == "cancelled"
    await _wait_exited(int(pid_file.read_text()))


async def test_runtime_without_a_local_shell_is_unsupported(
    store: Repositories, member: Member, tmp_path: Path, repo: Path, out: Path
) -> None:
    runner = CheckRunner(CheckStore(store.teams.checks, tmp_path / "checks"), executor=None)
    record = (await runner.run(_check(member, repo, f"touch {out / 'ran'}"))).record
    assert record.state == "unsupported"
    assert record.error == UNSUPPORTED_CHECKS_ERROR
    assert not (out / "ran").exists()


async def test_missing_custom_shell_is_unsupported(
    store: Repositories, member: Member, tmp_path: Path, repo: Path
) -> None:
    executor = LocalShellExecutor(str(tmp_path / "no-such-shell"))
    runner = CheckRunner(CheckStore(store.teams.checks, tmp_path / "checks"), executor=executor)
    assert (await runner.run(_check(member, repo, "true"))).record.state == "unsupported"


async def test_uncapturable_source_is_an_error_and_runs_nothing(
    runner: CheckRunner, member: Member, tmp_path: Path, out: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    record = (await runner.run(_check(member, plain, f"touch {out / 'ran'}"))).record
    assert record.state == "error"
    assert record.error is not None and "not inside a Git repository" in record.error
    assert not (out / "ran").exists()


async def test_command_killed_by_a_signal_is_an_error(
    runner: CheckRunner, member: Member, repo: Path
) -> None:
    record = (await runner.run(_check(member, repo, "kill -9 $$"))).record
    assert record.state == "error"
    assert record.exit_code is None
    assert record.error == "Check command exited without a known exit code (killed by SIGKILL)."


_READ_ROW = (
    "import json, sqlite3, sys; "
    "row = sqlite3.connect(sys.argv[1]).execute("
    "'SELECT state, claim_token, completed_at FROM team_checks WHERE check_id = ?', (sys.argv[2],)).fetchone(); "
    "print(json.dumps(row))"
)


async def test_claim_is_committed_before_the_command_runs(
    runner: CheckRunner, member: Member, repo: Path, out: Path, db_path: Path
) -> None:
    seen = out / "seen.json"
    identity = check_id(member.report_id, "test", 1)
    command = f'{sys.executable} -c "{_READ_ROW}" {db_path} {identity} > {seen}'
    record = (await runner.run(_check(member, repo, command))).record
    assert json.loads(seen.read_text()) == ["claimed", record.claim_token, None]  # seen by another process
    assert record.state == "passed"


async def test_a_claim_and_its_settle_are_signalled_once_stored(
    store: Repositories, member: Member, repo: Path, tmp_path: Path
) -> None:
    """`on_change` (the host's `changed`) fires with the claim committed, then with the settle: a wait
    on check state re-checks then, and a duplicate (nothing stored) signals nothing."""
    seen: list[str | None] = []
    check = _check(member, repo, "true")

    def changed() -> None:
        row = store.teams.checks.get_check(check.check_id)
        seen.append(None if row is None else row.state)

    runner = CheckRunner(
        CheckStore(store.teams.checks, tmp_path / "checks"), executor=LocalShellExecutor(), on_change=changed
    )
    assert (await runner.run(check)).record.state == "passed"
    assert seen == ["claimed", "passed"]
    assert not (await runner.run(check)).claimed
    assert seen == ["claimed", "passed"]


@pytest.mark.parametrize("fragment", ["INSERT INTO team_checks", "COMMIT"])
async def test_a_claim_that_fails_to_commit_runs_nothing(
    member: Member, db_path: Path, repo: Path, out: Path, tmp_path: Path, fragment: str
) -> None:
    ran = out / "ran"
    check = _check(member, repo, f"touch {ran}")
    with Repositories.open(db_path, tracer=failing_tracer(fragment)) as faulty:
        runner = CheckRunner(
            CheckStore(faulty.teams.checks, tmp_path / "checks"), executor=LocalShellExecutor()
        )
        with pytest.raises(StoreError, match="disk I/O error"):
            await runner.run(check)
        batch = await runner.run_all([check])
    assert not ran.exists()
    assert not Path(runner.store.log_path(check.check_id)).exists()
    with Repositories.open(db_path) as clean:
        assert clean.teams.checks.get_check(check.check_id) is None
    assert batch.verification.state == "failed"  # a batch reports the failed claim and stops
    assert batch.records == {check.check_id: None}


async def test_duplicate_is_never_rerun(runner: CheckRunner, member: Member, repo: Path, out: Path) -> None:
    counter = out / "counter"
    check = _check(member, repo, f"echo run >> {counter}; exit 1")
    first = await runner.run(check)
    second = await runner.run(check)
    assert counter.read_text() == "run\n"
    assert first.claimed and not second.claimed
    assert second.record == first.record
    assert second.record.state == "failed"


async def test_same_identity_with_another_assignment_is_refused(
    runner: CheckRunner, member: Member, repo: Path, out: Path
) -> None:
    await runner.run(_check(member, repo, "true"))
    with pytest.raises(
        CheckIdentityError, match=r"^Check identity is already bound to another assignment\.$"
    ):
        await runner.run(_check(member, repo, f"touch {out / 'ran'}"))
    assert not (out / "ran").exists()


async def test_lingering_claim_is_never_replayed(
    runner: CheckRunner, member: Member, repo: Path, out: Path
) -> None:
    counter = out / "counter"
    check = _check(member, repo, f"echo run >> {counter}")
    runner.store.claim(check)  # as if the host died after claiming
    run = await runner.run(check)
    assert not run.claimed
    assert run.record.state == "claimed"
    assert not counter.exists()
    batch = await runner.run_all([check, _check(member, repo, f"echo other >> {counter}", name="other")])
    assert batch.verification.state == "pending"
    assert not counter.exists()  # stopped at the lingering claim


async def test_check_that_changes_its_own_source_is_stale(
    runner: CheckRunner, member: Member, repo: Path
) -> None:
    record = (await runner.run(_check(member, repo, "echo edited >> a.txt"))).record
    assert record.state == "stale"
    assert record.exit_code == 0
    assert record.source_before != record.source_after


async def test_passed_check_is_observed_stale_without_rewriting_history(
    runner: CheckRunner, member: Member, repo: Path
) -> None:
    check = _check(member, repo, "true")
    passed = (await runner.run(check)).record
    assert (await runner.observe_current(passed)).state == "passed"
    (repo / "a.txt").write_text("changed after the check\n")
    observed = await runner.observe_current(passed)
    assert observed.state == "stale"
    assert observed.error
    assert runner.store.read(check.check_id) == passed  # stored record stays passed
    duplicate = await runner.run(check)
    assert duplicate.record.state == "stale"
    assert not duplicate.claimed


def test_observe_with_a_failed_capture_is_stale_with_the_reason(tmp_path: Path) -> None:
    record = _settled(tmp_path, "passed")
    assert observe(record, record.source_after) == record
    observed = observe(record, None, error="git went away")
    assert observed.state == "stale"
    assert observed.error == "git went away"
    failed = _settled(tmp_path, "failed")
    assert observe(failed, None) == failed


async def test_scoped_check_ignores_changes_outside_its_inputs(
    runner: CheckRunner, member: Member, repo: Path
) -> None:
    (repo / "src").mkdir()
    (repo / "src" / "m.py").write_text("x = 1\n")
    (spec,) = parse_check_policy([{"name": "s", "command": "true", "timeoutSeconds": 5, "inputs": ["src"]}])
    (check,) = assign_checks(
        [spec], task_id=member.task_id, run_id=member.run_id, report_id=member.report_id, cwd=repo
    )
    passed = (await runner.run(check)).record
    assert passed.state == "passed"
    assert passed.source_after is not None and passed.source_after.inputs == ("src",)
    (repo / "a.txt").write_text("outside the scope\n")
    assert (await runner.observe_current(passed)).state == "passed"
    (repo / "src" / "m.py").write_text("x = 2\n")
    assert (await runner.observe_current(passed)).state == "stale"


# -- batches ----------------------------------------------------------------------


async def test_batch_of_passing_checks_is_passed(runner: CheckRunner, member: Member, repo: Path) -> None:
    checks = [_check(member, repo, "true", name="a"), _check(member, repo, "exit 0", name="b")]
    batch = await runner.run_all(checks)
    assert batch.verification.state == "passed"
    assert batch.verification.check_ids == tuple(c.check_id for c in checks)
    ids = batch.verification.check_ids
    evidence = await runner.read_evidence(ids, task_id=member.task_id, run_id=member.run_id)
    assert evidence.verification.state == "passed"
    (repo / "a.txt").write_text("moved on\n")
    evidence = await runner.read_evidence(ids, task_id=member.task_id, run_id=member.run_id)
    assert evidence.verification.state == "stale"


async def test_batch_with_a_failure_is_failed_and_runs_every_check(
    runner: CheckRunner, member: Member, repo: Path
) -> None:
    batch = await runner.run_all(
        [_check(member, repo, "exit 1", name="a"), _check(member, repo, "true", name="b")]
    )
    assert batch.verification.state == "failed"
    assert [r.state for r in batch.records.values() if r is not None] == ["failed", "passed"]


async def test_cancelled_batch_is_failed_with_the_contract_message(
    runner: CheckRunner, member: Member, repo: Path
) -> None:
    cancel = asyncio.Event()
    cancel.set()
    checks = [_check(member, repo, "true", name="a"), _check(member, repo, "true", name="b")]
    batch = await runner.run_all(checks, cancel=cancel)
    assert batch.verification.state == "failed"
    assert batch.verification.error == CANCELLED_VERIFICATION_ERROR
    assert all(record is None for record in batch.records.values())


async def test_evidence_from_another_run_or_missing_is_refused(
    runner: CheckRunner, member: Member, repo: Path
) -> None:
    check = _check(member, repo, "true")
    await runner.run(check)
    with pytest.raises(CheckRecordError, match="belongs to another task or run"):
        await runner.read_evidence([check.check_id], task_id=check.task_id, run_id="run-2")
    missing = check_id(member.report_id, "never-ran", 1)
    with pytest.raises(CheckRecordError, match="is unavailable"):
        await runner.read_evidence([missing], task_id=check.task_id, run_id=member.run_id)


def _settled(tmp_path: Path, state: str) -> CheckRecord:
    from corral.orchestration.teams.checks._fingerprint import capture_fingerprint_sync

    repo = tmp_path / "fixture-repo"
    if not repo.exists():
        make_repo(repo, {"f.txt": "f\n"})
    source = capture_fingerprint_sync(repo)
    check = AssignedCheck("t", "r", REPORT, f"c-{state}", "true", str(repo), 1, 1)
    return CheckRecord(
        check.check_id,
        "token",
        check,
        state,  # type: ignore[arg-type]
        1_000,
        str(tmp_path / "checks" / f"{check.check_id.removeprefix('check:')}.log"),
        completed_at=None if state == "claimed" else 2_000,
        source_before=source,
        source_after=source,
        exit_code=0 if state in ("passed", "stale") else 1,
    )


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ([], "failed"),
        (["passed", "passed"], "passed"),
        (["passed", "stale"], "stale"),
        (["passed", "claimed", "failed"], "pending"),
        (["stale", "failed"], "failed"),
        (["passed", "timed-out"], "failed"),
        (["passed", "cancelled"], "failed"),
        (["unsupported"], "failed"),
        (["error", "passed"], "failed"),
        (["passed", None], "failed"),
    ],
)
def test_batch_verification_rules(tmp_path: Path, states: list[str | None], expected: str) -> None:
    records: dict[str, CheckRecord | None] = {}
    for index, state in enumerate(states):
        if state is None:
            records[f"check:missing{index}"] = None
        else:
            record = _settled(tmp_path, state)
            records[f"{record.check_id}-{index}"] = record
    assert verify_batch(records).state == expected


# -- records ----------------------------------------------------------------------


def _row(record: CheckRecord, **changes: object) -> CheckRow:
    row = CheckRow(
        check_id=record.check_id,
        run_id=record.assignment.run_id,
        report_id=record.assignment.report_id,
        name=record.assignment.name,
        attempt=record.assignment.attempt,
        assignment=record.assignment.to_json(),
        binding=record.assignment.binding(),
        claim_token=record.claim_token,
        state=record.state,
        started_at=record.started_at,
        completed_at=record.completed_at,
        source_before=None if record.source_before is None else record.source_before.to_json(),
        source_after=None if record.source_after is None else record.source_after.to_json(),
        exit_code=record.exit_code,
        log_path=record.log_path,
        log_bytes=record.log_bytes,
        error=record.error,
    )
    return dataclasses.replace(row, **changes)  # type: ignore[arg-type]


def test_record_round_trips_through_its_row(tmp_path: Path) -> None:
    record = _settled(tmp_path, "passed")
    assert CheckRecord.from_row(_row(record)) == record
    data = record.to_json()
    assert data["version"] == 1 and data["exitCode"] == 0
    assert data["startedAt"] == "1970-01-01T00:00:01.000Z"
    assert data["completedAt"] == "1970-01-01T00:00:02.000Z"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"check_id": "check:" + "0" * 64}, "does not match its assignment"),
        ({"completed_at": None}, "completedAt exactly when"),
        ({"exit_code": 1}, "a passed check needs"),
        ({"error": "x"}, "a passed check needs"),
        ({"binding": "[]"}, "binding is not its assignment"),
        ({"log_path": "/elsewhere/x.log"}, "named <64 hex>.log"),
        ({"assignment": {"name": "only"}}, "identity field"),
    ],
)
def test_record_invariants_are_enforced_on_read(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    row = _row(_settled(tmp_path, "passed"), **change)
    with pytest.raises(CheckRecordError, match=message):
        CheckRecord.from_row(row)


async def test_corrupt_stored_record_is_reported_not_rerun(
    runner: CheckRunner, member: Member, repo: Path, out: Path, db_path: Path
) -> None:
    check = _check(member, repo, f"touch {out / 'ran'}")
    forged = dataclasses.replace(check, attempt=2).to_json()  # an attempt-2 assignment under the attempt-1 id
    conn = raw(db_path)
    try:
        conn.execute(
            "INSERT INTO team_checks (check_id, run_id, report_id, name, attempt, assignment, binding, claim_token,"
            " state, started_at, log_path) VALUES (?, ?, ?, ?, 2, ?, ?, ?, 'claimed', 1, ?)",
            (
                check.check_id,
                member.run_id,
                member.report_id,
                check.name,
                json.dumps(forged),
                check.binding(),
                "0" * 36,
                str(runner.store.log_path(check.check_id)),
            ),
        )
    finally:
        conn.close()
    with pytest.raises(CheckRecordError, match="Corrupt check record"):
        await runner.run(check)
    assert not (out / "ran").exists()


def test_log_path_must_be_named_after_the_check(member: Member, db_path: Path, tmp_path: Path) -> None:
    check = AssignedCheck(member.task_id, member.run_id, member.report_id, "t", "true", str(tmp_path), 1, 1)
    conn = raw(db_path)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint"):
            conn.execute(
                "INSERT INTO team_checks (check_id, run_id, report_id, name, attempt, assignment, binding,"
                " claim_token, state, started_at, log_path) VALUES (?, ?, ?, 't', 1, ?, ?, ?, 'claimed', 1, ?)",
                (
                    check.check_id,
                    member.run_id,
                    member.report_id,
                    json.dumps(check.to_json()),
                    check.binding(),
                    "0" * 36,
                    str(tmp_path / "elsewhere.log"),
                ),
            )
    finally:
        conn.close()


def test_policy_errors_are_invalid_requests() -> None:
    with pytest.raises(InvalidRequestError):
        CheckSpec("t", "true", 0)
