"""`corral checkpoints list|delete` as real subprocesses over a store seeded in this process."""

from __future__ import annotations

import sqlite3
import time

from corral.orchestration import Repositories
from corral.orchestration.teams.checkpoints.records import CheckpointPolicy
from tests.orchestration.teams._checkpoint_helpers import CREATED, make_record, save

from .conftest import Env, RunCorral


def _seed(env: Env, *records: object) -> None:
    store = Repositories.open(env.home / "corral.db")
    try:
        for record in records:
            save(store, record)  # type: ignore[arg-type]
    finally:
        store.close()


def test_list_without_a_store_says_so_and_creates_nothing(cli_env: Env, corral: RunCorral) -> None:
    done = corral("checkpoints", "list")
    assert (done.returncode, done.stdout, done.stderr) == (0, "No specialist checkpoints saved.\n", "")
    assert not (cli_env.home / "corral.db").exists()


def test_list_then_delete(cli_env: Env, corral: RunCorral) -> None:
    now = time.time_ns() // 1_000_000
    fresh = make_record(agent="auth-review", run_id="run-1", created_at=now)
    old = make_record(
        agent="docs-review", run_id="run-2", policy=CheckpointPolicy(("src",), retention_days=2)
    )
    _seed(cli_env, fresh, old)
    done = corral("checkpoints", "list")
    assert done.returncode == 0 and done.stderr == ""
    expected = {
        fresh.id: f"{fresh.id} | auth-review | read-review | ready | expires "
        + time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(fresh.expires_at // 1000))
        + f".{fresh.expires_at % 1000:03d}Z",
        old.id: f"{old.id} | docs-review | read-review | expired | expires 2023-11-16T22:13:20.000Z",
    }
    assert done.stdout.splitlines() == [expected[key] for key in sorted(expected)]
    assert old.created_at == CREATED

    deleted = corral("checkpoints", "delete", fresh.id)
    confirmation = (
        f"{fresh.id} is deleted. Future continuations cannot load it. Independent reports and previously "
        "delivered context are unchanged.\n"
    )
    assert (deleted.returncode, deleted.stdout, deleted.stderr) == (0, confirmation, "")
    again = corral("checkpoints", "delete", fresh.id)
    assert (again.returncode, again.stdout) == (0, confirmation)
    listed = corral("checkpoints", "list").stdout.splitlines()
    assert f"{fresh.id} | deleted" in listed
    assert expected[old.id] in listed


def test_bad_and_unknown_ids_are_one_line_errors(cli_env: Env, corral: RunCorral) -> None:
    _seed(cli_env, make_record())
    bad = corral("checkpoints", "delete", "checkpoint:abc")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("corral: error: Invalid checkpoint ID;") and bad.stderr.count("\n") == 1
    unknown_id = "checkpoint:" + "f" * 64
    unknown = corral("checkpoints", "delete", unknown_id)
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert (
        unknown.stderr == f"corral: error: Checkpoint unavailable: {unknown_id}. Request a new checkpoint.\n"
    )
    usage = corral("checkpoints")
    assert usage.returncode == 2 and "list" in usage.stderr + usage.stdout


def test_a_corrupt_row_is_a_warning_beside_healthy_lines(cli_env: Env, corral: RunCorral) -> None:
    healthy = make_record(run_id="run-1")
    broken = make_record(run_id="run-2")
    _seed(cli_env, healthy, broken)
    with sqlite3.connect(cli_env.home / "corral.db") as conn:
        conn.execute("UPDATE checkpoints SET record = '[]' WHERE checkpoint_id = ?", (broken.id,))
    conn.close()
    done = corral("checkpoints", "list")
    assert done.returncode == 0
    assert [line.split(" | ")[0] for line in done.stdout.splitlines()] == [healthy.id]
    assert done.stderr.startswith(f"corral: warning: Checkpoint {broken.id} is corrupt or incompatible (")
    assert done.stderr.count("\n") == 1
    deleted = corral("checkpoints", "delete", broken.id)
    assert deleted.returncode == 0 and deleted.stdout.startswith(f"{broken.id} is deleted.")
    after = corral("checkpoints", "list")
    assert after.stderr == "" and f"{broken.id} | deleted" in after.stdout.splitlines()
