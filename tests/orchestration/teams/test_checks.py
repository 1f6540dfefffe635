"""Assigned checks: policy, identity, durable records, real execution and verification (§6.1–6.5)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

import pytest

from corral.orchestration import InvalidRequestError
from corral.orchestration.teams import (
    CANCELLED_VERIFICATION_ERROR,
    UNSUPPORTED_CHECKS_ERROR,
    AssignedCheck,
    CheckIdentityError,
    CheckPolicyError,
    CheckRecord,
    CheckRecordError,
    CheckRunner,
    CheckSpec,
    CheckStore,
    LocalShellExecutor,
    assign_checks,
    check_id,
    observe,
    parse_check_policy,
    verify_batch,
)

from ._git_helpers import make_repo

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
def runner(tmp_path: Path) -> CheckRunner:
    return CheckRunner(CheckStore(tmp_path / "checks"), executor=LocalShellExecutor())


def _check(
    repo: Path, command: str, *, name: str = "test", timeout: float = 10, attempt: int = 1
) -> AssignedCheck:
    (spec,) = parse_check_policy([{"name": name, "command": command, "timeoutSeconds": timeout}])
    (check,) = assign_checks(
        [spec], task_id="task:team:agent:run-1", run_id="run-1", report_id=REPORT, cwd=repo, attempt=attempt
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


async def test_passing_check_is_recorded_with_its_log(runner: CheckRunner, repo: Path) -> None:
    run = await runner.run(_check(repo, "echo hello; echo oops >&2"))
    record = run.record
    assert run.claimed
    assert record.state == "passed"
    assert record.exit_code == 0
    assert record.error is None
    assert record.source_before == record.source_after
    assert record.completed_at is not None
    log = Path(record.log_path)
    assert log.read_text() == "hello\noops\n"
    assert record.log_bytes == len("hello\noops\n")
    path = runner.store.record_path(record.check_id)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert runner.store.read(record.check_id) == record


async def test_failing_check_keeps_its_exit_code(runner: CheckRunner, repo: Path) -> None:
    record = (await runner.run(_check(repo, "echo broken; exit 3"))).record
    assert record.state == "failed"
    assert record.exit_code == 3
    assert Path(record.log_path).read_text() == "broken\n"


async def test_timeout_kills_the_process_group_with_a_grandchild(
    runner: CheckRunner, repo: Path, out: Path
) -> None:
    pid_file = out / "grandchild.pid"
    command = f"sleep 60 & echo $! > {pid_file}; echo started; wait"
    record = (await runner.run(_check(repo, command, timeout=0.5))).record
    assert record.state == "timed-out"
    assert record.exit_code is None
    assert record.error == "Check command timed out after 0.5 seconds."
    assert Path(record.log_path).read_text() == "started\n"  # partial output is kept
    await _wait_exited(int(pid_file.read_text()))


async def test_cancel_event_kills_the_command_and_settles_cancelled(
    runner: CheckRunner, repo: Path, out: Path
) -> None:
    fifo = out / "started"
    os.mkfifo(fifo)
    pid_file = out / "grandchild.pid"
    cancel = asyncio.Event()
    command = f"sleep 60 & echo $! > {pid_file}; echo started > {fifo}; wait; exit 0"
    task = asyncio.create_task(runner.run(_check(repo, command), cancel=cancel))
    assert await _wait_readable(fifo) == b"started\n"
    cancel.set()
    record = (await asyncio.wait_for(task, WAIT)).record
    assert record.state == "cancelled"
    assert record.exit_code is None
    assert runner.store.read(record.check_id) == record
    await _wait_exited(int(pid_file.read_text()))


async def test_task_cancellation_settles_the_record_then_propagates(
    runner: CheckRunner, repo: Path, out: Path
) -> None:
    fifo = out / "started"
    os.mkfifo(fifo)
    pid_file = out / "grandchild.pid"
    check = _check(repo, f"sleep 60 & echo $! > {pid_file}; echo started > {fifo}; wait")
    task = asyncio.create_task(runner.run(check))
    await _wait_readable(fifo)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT)
    stored = runner.store.read(check.check_id)
    assert stored is not None
    assert stored.state == "cancelled"
    await _wait_exited(int(pid_file.read_text()))


async def test_runtime_without_a_local_shell_is_unsupported(tmp_path: Path, repo: Path, out: Path) -> None:
    runner = CheckRunner(CheckStore(tmp_path / "checks"), executor=None)
    record = (await runner.run(_check(repo, f"touch {out / 'ran'}"))).record
    assert record.state == "unsupported"
    assert record.error == UNSUPPORTED_CHECKS_ERROR
    assert not (out / "ran").exists()


async def test_missing_custom_shell_is_unsupported(tmp_path: Path, repo: Path) -> None:
    executor = LocalShellExecutor(str(tmp_path / "no-such-shell"))
    runner = CheckRunner(CheckStore(tmp_path / "checks"), executor=executor)
    assert (await runner.run(_check(repo, "true"))).record.state == "unsupported"


async def test_uncapturable_source_is_an_error_and_runs_nothing(
    runner: CheckRunner, tmp_path: Path, out: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    record = (await runner.run(_check(plain, f"touch {out / 'ran'}"))).record
    assert record.state == "error"
    assert record.error is not None and "not inside a Git repository" in record.error
    assert not (out / "ran").exists()


async def test_command_killed_by_a_signal_is_an_error(runner: CheckRunner, repo: Path) -> None:
    record = (await runner.run(_check(repo, "kill -9 $$"))).record
    assert record.state == "error"
    assert record.exit_code is None
    assert record.error == "Check command exited without a known exit code (killed by SIGKILL)."


async def test_claim_is_durable_before_the_command_runs(runner: CheckRunner, repo: Path, out: Path) -> None:
    check = _check(repo, "true")
    seen = out / "seen.json"
    path = runner.store.record_path(check.check_id)
    check = dataclasses.replace(check, command=f"cat {path} > {seen}")
    record = (await runner.run(check)).record
    observed = json.loads(seen.read_text())
    assert observed["state"] == "claimed"
    assert "completedAt" not in observed
    assert observed["claimToken"] == record.claim_token
    assert record.state == "passed"


async def test_duplicate_is_never_rerun(runner: CheckRunner, repo: Path, out: Path) -> None:
    counter = out / "counter"
    check = _check(repo, f"echo run >> {counter}; exit 1")
    first = await runner.run(check)
    second = await runner.run(check)
    assert counter.read_text() == "run\n"
    assert first.claimed and not second.claimed
    assert second.record == first.record
    assert second.record.state == "failed"


async def test_same_identity_with_another_assignment_is_refused(runner: CheckRunner, repo: Path) -> None:
    await runner.run(_check(repo, "true"))
    with pytest.raises(
        CheckIdentityError, match=r"^Check identity is already bound to another assignment\.$"
    ):
        await runner.run(_check(repo, "false"))


async def test_lingering_claim_is_never_replayed(runner: CheckRunner, repo: Path, out: Path) -> None:
    counter = out / "counter"
    check = _check(repo, f"echo run >> {counter}")
    runner.store.claim(check)  # as if the host died after claiming
    run = await runner.run(check)
    assert not run.claimed
    assert run.record.state == "claimed"
    assert not counter.exists()
    batch = await runner.run_all([check, _check(repo, f"echo other >> {counter}", name="other")])
    assert batch.verification.state == "pending"
    assert not counter.exists()  # stopped at the lingering claim


async def test_check_that_changes_its_own_source_is_stale(runner: CheckRunner, repo: Path) -> None:
    record = (await runner.run(_check(repo, "echo edited >> a.txt"))).record
    assert record.state == "stale"
    assert record.exit_code == 0
    assert record.source_before != record.source_after


async def test_passed_check_is_observed_stale_without_rewriting_history(
    runner: CheckRunner, repo: Path
) -> None:
    check = _check(repo, "true")
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


async def test_scoped_check_ignores_changes_outside_its_inputs(runner: CheckRunner, repo: Path) -> None:
    (repo / "src").mkdir()
    (repo / "src" / "m.py").write_text("x = 1\n")
    (spec,) = parse_check_policy([{"name": "s", "command": "true", "timeoutSeconds": 5, "inputs": ["src"]}])
    (check,) = assign_checks([spec], task_id="t", run_id="r", report_id=REPORT, cwd=repo)
    passed = (await runner.run(check)).record
    assert passed.state == "passed"
    assert passed.source_after is not None and passed.source_after.inputs == ("src",)
    (repo / "a.txt").write_text("outside the scope\n")
    assert (await runner.observe_current(passed)).state == "passed"
    (repo / "src" / "m.py").write_text("x = 2\n")
    assert (await runner.observe_current(passed)).state == "stale"


# -- batches ----------------------------------------------------------------------


async def test_batch_of_passing_checks_is_passed(runner: CheckRunner, repo: Path) -> None:
    checks = [_check(repo, "true", name="a"), _check(repo, "exit 0", name="b")]
    batch = await runner.run_all(checks)
    assert batch.verification.state == "passed"
    assert batch.verification.check_ids == tuple(c.check_id for c in checks)
    evidence = await runner.read_evidence(
        batch.verification.check_ids, task_id=checks[0].task_id, run_id="run-1"
    )
    assert evidence.verification.state == "passed"
    (repo / "a.txt").write_text("moved on\n")
    evidence = await runner.read_evidence(
        batch.verification.check_ids, task_id=checks[0].task_id, run_id="run-1"
    )
    assert evidence.verification.state == "stale"


async def test_batch_with_a_failure_is_failed_and_runs_every_check(runner: CheckRunner, repo: Path) -> None:
    batch = await runner.run_all([_check(repo, "exit 1", name="a"), _check(repo, "true", name="b")])
    assert batch.verification.state == "failed"
    assert [r.state for r in batch.records.values() if r is not None] == ["failed", "passed"]


async def test_cancelled_batch_is_failed_with_the_contract_message(runner: CheckRunner, repo: Path) -> None:
    cancel = asyncio.Event()
    cancel.set()
    checks = [_check(repo, "true", name="a"), _check(repo, "true", name="b")]
    batch = await runner.run_all(checks, cancel=cancel)
    assert batch.verification.state == "failed"
    assert batch.verification.error == CANCELLED_VERIFICATION_ERROR
    assert all(record is None for record in batch.records.values())


async def test_evidence_from_another_run_or_missing_is_refused(runner: CheckRunner, repo: Path) -> None:
    check = _check(repo, "true")
    await runner.run(check)
    with pytest.raises(CheckRecordError, match="belongs to another task or run"):
        await runner.read_evidence([check.check_id], task_id=check.task_id, run_id="run-2")
    missing = check_id(REPORT, "never-ran", 1)
    with pytest.raises(CheckRecordError, match="is unavailable"):
        await runner.read_evidence([missing], task_id=check.task_id, run_id="run-1")


def _settled(tmp_path: Path, state: str) -> CheckRecord:
    from corral.orchestration.teams import capture_fingerprint_sync

    repo = tmp_path / "fixture-repo"
    if not repo.exists():
        make_repo(repo, {"f.txt": "f\n"})
    source = capture_fingerprint_sync(repo)
    check = AssignedCheck("t", "r", REPORT, f"c-{state}", "true", str(repo), 1, 1)
    store = CheckStore(tmp_path / "fixture-checks")
    return CheckRecord(
        check.check_id,
        "token",
        check,
        state,  # type: ignore[arg-type]
        "2026-01-01T00:00:00.000Z",
        str(store.log_path(check.check_id)),
        completed_at=None if state == "claimed" else "2026-01-01T00:00:01.000Z",
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


def test_record_json_round_trips(tmp_path: Path) -> None:
    record = _settled(tmp_path, "passed")
    data = json.loads(json.dumps(record.to_json()))
    assert data["version"] == 1 and data["exitCode"] == 0
    assert CheckRecord.from_json(data) == record


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"checkId": "check:" + "0" * 64}, "does not match its assignment"),
        ({"completedAt": None}, "completedAt exactly when"),
        ({"exitCode": 1}, "a passed check needs"),
        ({"error": "x"}, "a passed check needs"),
        ({"state": "bogus"}, "unknown check state"),
        ({"version": 2}, "unsupported check record version"),
    ],
)
def test_record_invariants_are_enforced_on_parse(
    tmp_path: Path, change: Mapping[str, object], message: str
) -> None:
    data = {**_settled(tmp_path, "passed").to_json(), **change}
    data = {key: value for key, value in data.items() if value is not None}
    with pytest.raises(ValueError, match=message):
        CheckRecord.from_json(data)


async def test_corrupt_record_file_is_reported_not_rerun(runner: CheckRunner, repo: Path, out: Path) -> None:
    check = _check(repo, f"touch {out / 'ran'}")
    path = runner.store.record_path(check.check_id)
    path.parent.mkdir(mode=0o700, parents=True)
    path.write_text("{not json")
    with pytest.raises(CheckRecordError, match="Corrupt check record"):
        await runner.run(check)
    assert not (out / "ran").exists()


def test_log_path_must_sit_beside_the_record(tmp_path: Path) -> None:
    store = CheckStore(tmp_path / "checks")
    record = _settled(tmp_path, "failed")
    with contextlib.suppress(FileExistsError):
        store.directory.mkdir(mode=0o700)
    path = store.record_path(record.check_id)
    moved = dataclasses.replace(record, log_path=str(tmp_path / "elsewhere.log"))
    path.write_text(json.dumps(moved.to_json()))
    with pytest.raises(CheckRecordError, match=r"\.log"):
        store.read(record.check_id)
