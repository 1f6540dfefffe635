"""The database, its repositories and the `Repositories` bundle: one transaction per verb, finalize hooks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from corral.orchestration import NewGeneration, Repositories
from corral.orchestration.errors import TargetNotFoundError
from corral.orchestration.kernel._generations import Generations
from corral.orchestration.store._database import Database, Tx
from corral.orchestration.teams._repositories import TeamsRepositories
from tests.orchestration._store_helpers import LEAD, dump, new_generation
from tests.orchestration.teams.roster.test_store_teams import report, spawn

_V = TypeVar("_V")


class _Statements:
    """A tracer that keeps every statement the database runs."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def __call__(self, sql: str, params: tuple[object, ...]) -> None:
        self.sql.append(sql)

    def begins(self) -> list[str]:
        return [sql for sql in self.sql if sql.startswith("BEGIN")]


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[Repositories, _Statements]]:
    statements = _Statements()
    with Repositories.open(tmp_path / "corral.db", tracer=statements) as store:
        yield store, statements


def test_repositories_is_a_plain_bundle_of_repositories_over_one_database(tmp_path: Path) -> None:
    assert Repositories.__bases__ == (object,)
    assert TeamsRepositories.__bases__ == (object,)
    with Repositories.open(tmp_path / "corral.db") as store:
        teams = store.teams
        repositories = (
            store.kernel,
            teams.roster,
            teams.reports,
            teams.checks,
            teams.repair,
            teams.groups,
            teams.checkpoints,
            store.worktrees,
        )
        assert all(repository.db is store.db for repository in repositories)
        assert teams.kernel is store.kernel
        # No verbs of its own: callers take the repository they need.
        own = sorted(
            name for name, value in vars(Repositories).items() if not name.startswith("_") and callable(value)
        )
        assert own == ["close"]
        # The teams core builds the same wiring over the host's kernel.
        again = TeamsRepositories.over(store.kernel)
        assert again.roster.db is store.db and again.kernel is store.kernel


def test_every_public_write_verb_is_one_begin_immediate(traced: tuple[Repositories, _Statements]) -> None:
    store, statements = traced

    def one_write(call: Callable[[], _V]) -> _V:
        statements.sql.clear()
        value = call()
        assert statements.begins() == ["BEGIN IMMEDIATE"], statements.sql
        return value

    generation, task = one_write(lambda: store.kernel.create_generation(_new("worker", "s1")))
    one_write(lambda: store.kernel.record_ack(generation.run_id, task.request_id, accepted=True))
    one_write(
        lambda: store.kernel.store_result(generation.run_id, task.request_id, status="completed", text="done")
    )
    assert one_write(
        lambda: store.kernel.mark_delivered(task.request_id, owner_session_id=LEAD, entry_id="e1")
    )
    one_write(lambda: store.kernel.finalize_generation(generation.run_id, owner_session_id=LEAD))

    # Cross-aggregate verbs: a member is a generation plus its member row; a report completes the
    # generation and writes the report; finalize retires the member through the teams hook.
    member_generation, member_task, _ = spawn(store, "alice", kind="write")
    run_id = member_generation.run_id
    statements.sql.clear()
    spawn(store, "bob", ack=False)
    assert statements.begins() == ["BEGIN", "BEGIN IMMEDIATE"]  # the helper's read, then the one write
    one_write(lambda: store.teams.roster.claim_files(LEAD, run_id=run_id, agent="alice", paths=("src/a.py",)))
    one_write(
        lambda: store.teams.reports.store_team_report(run_id, member_task.request_id, report("alice", run_id))
    )
    store.kernel.mark_delivered(member_task.request_id, owner_session_id=LEAD, entry_id="e2")
    one_write(lambda: store.kernel.finalize_generation(run_id, owner_session_id=LEAD))
    assert any(sql.startswith("DELETE FROM file_claims") for sql in statements.sql)
    assert store.teams.roster.file_claims(LEAD) == ()
    member = store.teams.roster.team_member(run_id)
    assert member is not None and not member.live


def _new(definition: str, session_id: str) -> NewGeneration:
    return NewGeneration(
        definition=definition, owner_session_id=LEAD, cwd="/work/project", session_id=session_id, task="Go."
    )


def test_finalize_hooks_run_inside_the_finalize_transaction(tmp_path: Path) -> None:
    db = Database.open(tmp_path / "corral.db")
    seen: list[tuple[str, bool]] = []

    def hook(tx: Tx, run_id: str) -> None:
        # The kernel's own writes of this finalize are visible, the row is not yet finalized.
        row = tx.one(
            "SELECT phase, (SELECT count(*) FROM labels WHERE run_id = ?) AS labels"
            " FROM generations WHERE run_id = ?",
            (run_id, run_id),
        )
        assert row is not None and row["labels"] == 0 and row["phase"] != "finalized"
        seen.append((run_id, tx is db.current))

    kernel = Generations(db, on_finalize=(hook,))
    try:
        generation, _ = new_generation(kernel, session_id="s1")
        kernel.finalize_generation(generation.run_id, owner_session_id=LEAD)
        assert seen == [(generation.run_id, True)]
    finally:
        db.close()


def test_a_failing_finalize_hook_undoes_the_whole_finalize(tmp_path: Path) -> None:
    db = Database.open(tmp_path / "corral.db")

    def hook(tx: Tx, run_id: str) -> None:
        tx.execute("UPDATE generations SET diagnostic = 'hooked' WHERE run_id = ?", (run_id,))
        raise TargetNotFoundError("the feature refused")

    kernel = Generations(db)
    kernel.add_finalize_hook(hook)
    try:
        generation, _ = new_generation(kernel, session_id="s1")
        before = dump(db.path)
        with pytest.raises(TargetNotFoundError, match="the feature refused"):
            kernel.finalize_generation(generation.run_id, owner_session_id=LEAD)
        assert dump(db.path) == before
        live = kernel.get_generation(generation.run_id)
        assert live is not None and live.live and live.diagnostic is None
    finally:
        db.close()


def test_in_pieces_refuse_a_transaction_of_another_database(tmp_path: Path) -> None:
    with Repositories.open(tmp_path / "a.db") as first, Repositories.open(tmp_path / "b.db") as second:
        generation, _ = new_generation(first.kernel, session_id="s1")
        with first.db.read() as tx:
            assert first.kernel.generation_in(tx, generation.run_id) == generation
            with pytest.raises(RuntimeError, match="transaction"):
                second.kernel.generation_in(tx, generation.run_id)
        with pytest.raises(RuntimeError, match="No corral database transaction"):
            _ = first.db.current


def test_watch_reads_every_watched_run_in_one_transaction(traced: tuple[Repositories, _Statements]) -> None:
    """The host's watch loop: each run's generation, pending ask and acknowledged requests at once."""
    store, statements = traced
    asking, task = new_generation(store.kernel, session_id="s-asking")
    ask = store.kernel.create_ask(asking.run_id, request_id=task.request_id, question="Which one?")
    steered, _ = new_generation(store.kernel, session_id="s-steered")
    store.kernel.submit_request(steered.run_id, kind="steer", text="faster", owner_session_id=LEAD)
    waiting, _ = new_generation(store.kernel, session_id="s-waiting", ack=False)
    runs = [asking.run_id, steered.run_id, waiting.run_id]
    statements.sql.clear()

    watched = store.kernel.watch([*runs, "no-such-run", asking.run_id])

    assert statements.begins() == ["BEGIN"]
    assert sorted(watched) == sorted(runs)
    for run_id in runs:
        assert watched[run_id].generation == store.kernel.get_generation(run_id)
    assert watched[asking.run_id].pending_ask == ask and watched[asking.run_id].acknowledged == 1
    assert watched[steered.run_id].pending_ask is None
    assert watched[steered.run_id].acknowledged == 1  # the task; the steer waits for its ack
    assert watched[waiting.run_id].acknowledged == 0
    assert watched[waiting.run_id].generation.phase == "starting"
