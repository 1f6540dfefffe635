"""The teams tables of the store: members, reports and file claims (real SQLite in tmp_path); messages are
`tests/orchestration/teams/messages/test_store_messages.py`'s."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from corral.orchestration import (
    AgentLabelExistsError,
    InternalFailureError,
    InvalidRequestError,
    NewGeneration,
    NewTeamMember,
    NewTeamReport,
    OrchestrationError,
    Repositories,
    TargetAmbiguousError,
    TargetNotFoundError,
    normalize_claim_path,
)
from corral.orchestration.store._database import INLINE_RESULT_LIMIT
from corral.orchestration.teams.repair.records import ReportVerification
from corral.orchestration.teams.reports.records import ReportResult
from tests.orchestration._store_helpers import LEAD, dump, new_generation
from tests.orchestration.teams._roster_helpers import OTHER_LEAD, counting_clock, report, send, spawn


@pytest.fixture
def store(db_path: Path) -> Iterator[Repositories]:
    with Repositories.open(db_path, clock=counting_clock()) as opened:
        yield opened


def _raw(db_path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


# --- members -------------------------------------------------------------------------------------


def test_create_team_generation_records_generation_task_and_member(
    store: Repositories, db_path: Path
) -> None:
    generation, task, member = spawn(store, "Review_2", metadata={"operationId": "op-1"}, ack=False)
    assert (generation.label, generation.definition, generation.owner_session_id) == (
        "Review_2",
        "read-review",
        LEAD,
    )
    assert generation.phase == "starting" and task.kind == "task" and task.run_id == generation.run_id
    assert member.run_id == generation.run_id and member.name == "Review_2"
    assert (member.tier, member.requested_tier, member.kind, member.depth) == (
        "read-review",
        "review",
        "read",
        0,
    )
    assert member.metadata == {"operationId": "op-1"}
    assert member.live is True and member.allow_nested is False and member.fence == "none"
    assert store.teams.roster.team_member(generation.run_id) == member
    assert store.teams.roster.live_team_member(LEAD, "Review_2") == member
    # Teams names live in their own namespace: no `labels` row, and the agent surface can still use one.
    assert _raw(db_path, "SELECT * FROM labels") == []
    assert store.kernel.generation_by_label("Review_2") is None


def test_a_long_name_up_to_128_characters_is_accepted(store: Repositories) -> None:
    name = "a" * 128
    _generation, _task, member = spawn(store, name)
    assert member.name == name


@pytest.mark.parametrize("name", ["has space", "dot.ted", "slash/x", "", "tab\t", "new\nline"])
def test_invalid_names_are_refused_with_the_seed_message(
    store: Repositories, db_path: Path, name: str
) -> None:
    before = dump(db_path)
    with pytest.raises(InvalidRequestError) as raised:
        spawn(store, name)
    assert "Only alphanumeric characters, hyphens, and underscores are allowed." in str(raised.value)
    assert str(raised.value).startswith("Invalid name ")
    assert dump(db_path) == before


def test_a_name_over_128_characters_is_refused(store: Repositories) -> None:
    with pytest.raises(InvalidRequestError, match="at most 128 characters"):
        spawn(store, "b" * 129)


def test_label_and_definition_must_match_the_member(store: Repositories) -> None:
    def attempt(**changes: str) -> None:
        fields: dict[str, Any] = {
            "definition": "read-review",
            "owner_session_id": LEAD,
            "cwd": "/w",
            "session_id": "s",
            "task": "t",
            "label": "alpha",
        }
        fields.update(changes)
        store.teams.roster.create_team_generation(
            NewGeneration(**fields),
            NewTeamMember(
                lead_session_id=LEAD,
                name="alpha",
                tier="read-review",
                requested_tier="read-review",
                kind="read",
                model="m/x",
                thinking="off",
                model_source="lead",
                sandbox="enforced",
                prompt="p",
            ),
        )

    with pytest.raises(InvalidRequestError, match="must be the member's name"):
        attempt(label="beta")
    with pytest.raises(InvalidRequestError, match="must be the member's tier"):
        attempt(definition="read-critical")
    with pytest.raises(InvalidRequestError, match="owned by its lead session"):
        attempt(owner_session_id="someone-else")


def test_a_live_name_is_unique_per_team_only(store: Repositories, db_path: Path) -> None:
    spawn(store, "reviewer")
    before = dump(db_path)
    with pytest.raises(AgentLabelExistsError, match="Agent reviewer is still live"):
        spawn(store, "reviewer")
    assert dump(db_path) == before
    _g, _t, elsewhere = spawn(store, "reviewer", lead=OTHER_LEAD)
    assert elsewhere.lead_session_id == OTHER_LEAD
    # The agent surface's label namespace is separate.
    agent, _ = new_generation(store.kernel, session_id="agent-s", label="reviewer")
    assert agent.label == "reviewer"


def test_live_name_uniqueness_is_a_database_constraint(store: Repositories, db_path: Path) -> None:
    first, _t, _m = spawn(store, "alpha")
    second, _t2, _m2 = spawn(store, "beta")
    conn = sqlite3.connect(db_path)
    try:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("UPDATE team_members SET name = 'alpha' WHERE run_id = ?", (second.run_id,))
        conn.execute("UPDATE team_members SET live = 0 WHERE run_id = ?", (first.run_id,))
        conn.execute("UPDATE team_members SET name = 'alpha' WHERE run_id = ?", (second.run_id,))
    finally:
        conn.close()


def test_finalize_releases_claims_and_frees_the_name(store: Repositories) -> None:
    writer, _task, _member = spawn(store, "writer", kind="write")
    store.teams.roster.claim_files(LEAD, run_id=writer.run_id, agent="writer", paths=["src/a.py", "src/b.py"])
    finalized = store.kernel.finalize_generation(writer.run_id, owner_session_id=LEAD)
    assert finalized.phase == "finalized"
    old = store.teams.roster.team_member(writer.run_id)
    assert old is not None and old.live is False
    assert store.teams.roster.file_claims(LEAD) == ()
    assert store.teams.roster.live_team_member(LEAD, "writer") is None
    again, _t, member = spawn(store, "writer", kind="write")
    assert member.live and again.run_id != writer.run_id
    assert store.teams.roster.live_team_member(LEAD, "writer") == member
    assert [m.run_id for m in store.teams.roster.team_members(LEAD, live_only=False)] == [
        writer.run_id,
        again.run_id,
    ]
    assert [m.run_id for m in store.teams.roster.team_members(LEAD)] == [again.run_id]


def test_a_refused_finalize_keeps_claims_and_membership(store: Repositories, db_path: Path) -> None:
    writer, task, _member = spawn(store, "writer", kind="write")
    store.teams.roster.claim_files(LEAD, run_id=writer.run_id, agent="writer", paths=["a.py"])
    store.teams.reports.store_team_report(writer.run_id, task.request_id, report("writer", writer.run_id))
    before = dump(db_path)
    with pytest.raises(TargetAmbiguousError, match="durable result"):
        store.kernel.finalize_generation(writer.run_id, owner_session_id=LEAD)
    assert dump(db_path) == before
    assert [c.path for c in store.teams.roster.file_claims(LEAD)] == ["a.py"]


def test_nested_helpers_belong_to_an_eligible_writer(store: Repositories) -> None:
    writer, _task, _m = spawn(store, "writer", kind="write", allow_nested=True)
    helper, _t, member = spawn(store, "helper", parent=writer)
    assert helper.owner_session_id == writer.session_id and helper.parent_run_id == writer.run_id
    assert (member.depth, member.parent_run_id, member.lead_session_id) == (1, writer.run_id, LEAD)
    assert store.teams.roster.team_members(LEAD, parent_run_id=writer.run_id) == (member,)
    with pytest.raises(InvalidRequestError, match="nested helper is a read agent"):
        spawn(store, "helper-w", kind="write", parent=writer)
    with pytest.raises(TargetAmbiguousError, match="live agents"):
        store.kernel.finalize_generation(writer.run_id, owner_session_id=LEAD)


@pytest.mark.parametrize("why", ["not allowed", "quarantined", "read parent"])
def test_nested_spawning_needs_an_active_unfenced_writer(
    store: Repositories, db_path: Path, why: str
) -> None:
    if why == "read parent":
        parent, _t, _m = spawn(store, "parent", kind="read", allow_nested=True)
    else:
        parent, _t, _m = spawn(store, "parent", kind="write", allow_nested=why != "not allowed")
    if why == "quarantined":
        store.teams.roster.set_team_fence(parent.run_id, fence="quarantined", reason="teardown timed out")
    before = dump(db_path)
    with pytest.raises(InvalidRequestError, match="Nested read spawning is no longer authorized for parent"):
        spawn(store, "helper", parent=parent)
    assert dump(db_path) == before


def test_set_team_fence_quarantines_and_lifts(store: Repositories) -> None:
    generation, _t, _m = spawn(store, "alpha")
    fenced = store.teams.roster.set_team_fence(
        generation.run_id, fence="quarantined", reason="teardown timed out"
    )
    assert (fenced.fence, fenced.fence_reason) == ("quarantined", "teardown timed out")
    store.kernel.finalize_generation(generation.run_id, owner_session_id=LEAD)
    lifted = store.teams.roster.set_team_fence(generation.run_id, fence="none", reason="ignored")
    assert (lifted.fence, lifted.fence_reason, lifted.live) == ("none", None, False)
    with pytest.raises(TargetNotFoundError, match="not a teams agent"):
        store.teams.roster.set_team_fence("00000000-0000-4000-8000-000000000000", fence="none", reason=None)
    with pytest.raises(InvalidRequestError, match="Fence"):
        store.teams.roster.set_team_fence(generation.run_id, fence="closed", reason=None)  # type: ignore[arg-type]


def test_set_session_context_path_only_for_lazy_members(store: Repositories) -> None:
    lazy, _t, _m = spawn(store, "lazy", session_context="lazy")
    plain, _t2, _m2 = spawn(store, "plain")
    store.teams.roster.set_session_context_path(lazy.run_id, "/ctx/lazy--run.md")
    assert store.teams.roster.team_member(lazy.run_id).session_context_path == "/ctx/lazy--run.md"  # type: ignore[union-attr]
    store.teams.roster.set_session_context_path(lazy.run_id, None)
    assert store.teams.roster.team_member(lazy.run_id).session_context_path is None  # type: ignore[union-attr]
    with pytest.raises(InvalidRequestError, match="without lazy session context"):
        store.teams.roster.set_session_context_path(plain.run_id, "/ctx/plain.md")
    with pytest.raises(TargetNotFoundError):
        store.teams.roster.set_session_context_path("00000000-0000-4000-8000-000000000000", None)


# --- reports -------------------------------------------------------------------------------------


def test_store_team_report_completes_the_generation_with_a_result(store: Repositories) -> None:
    generation, task, _m = spawn(store, "alpha")
    stored = store.teams.reports.store_team_report(
        generation.run_id, task.request_id, report("alpha", generation.run_id)
    )
    assert (stored.status, stored.content, stored.outcome, stored.acceptance) == (
        "completed",
        "Found two bugs.",
        "succeeded",
        "pending",
    )
    assert (stored.name, stored.tier, stored.kind, stored.lead_session_id) == (
        "alpha",
        "read-review",
        "read",
        LEAD,
    )
    assert stored.result.verification == ReportVerification()
    assert (stored.elapsed_ms, stored.tokens, stored.cost_usd) == (1200, 345, 0.25)
    assert (stored.delivery, stored.delivered_entry_id) == ("pending", None)
    result = store.kernel.get_result(task.request_id)
    assert result is not None and (result.status, result.text) == ("completed", "Found two bugs.")
    assert store.kernel.get_generation(generation.run_id).phase == "completed"  # type: ignore[union-attr]
    assert store.kernel.undelivered_results(LEAD) == (result,)
    assert store.kernel.mark_delivered(task.request_id, owner_session_id=LEAD, entry_id="entry-1")
    delivered = store.teams.reports.team_report_for_run(generation.run_id)
    assert delivered is not None and (delivered.delivery, delivered.delivered_entry_id) == (
        "delivered",
        "entry-1",
    )
    assert store.teams.reports.team_report(stored.report_id) == delivered


def test_a_failed_report_is_a_failed_result(store: Repositories) -> None:
    generation, task, _m = spawn(store, "alpha")
    stored = store.teams.reports.store_team_report(
        generation.run_id,
        task.request_id,
        report("alpha", generation.run_id, content="No report could be recovered.", status="failed"),
    )
    assert stored.status == "failed"
    result = store.kernel.get_result(task.request_id)
    assert result is not None
    assert (result.status, result.text, result.error_code, result.error_message) == (
        "failed",
        None,
        "empty_result",
        "No report could be recovered.",
    )


def test_the_first_report_of_a_run_wins(store: Repositories, db_path: Path) -> None:
    generation, task, _m = spawn(store, "alpha")
    first = store.teams.reports.store_team_report(
        generation.run_id, task.request_id, report("alpha", generation.run_id)
    )
    before = dump(db_path)
    again = store.teams.reports.store_team_report(
        generation.run_id, task.request_id, report("alpha", generation.run_id, content="Different text.")
    )
    assert again == first
    assert dump(db_path) == before


class _Crash(Exception):
    """Raised by the tracer to make one statement fail."""


def test_a_failing_report_insert_leaves_no_result_and_an_active_generation(db_path: Path) -> None:
    armed = {"on": False}

    def tracer(sql: str, _params: tuple[object, ...]) -> None:
        if armed["on"] and sql.startswith("INSERT INTO team_reports"):
            raise _Crash

    with Repositories.open(db_path, tracer=tracer) as traced:
        generation, task, _m = spawn(traced, "alpha")
        big = "x" * (INLINE_RESULT_LIMIT + 10)
        before = dump(db_path)
        armed["on"] = True
        with pytest.raises(_Crash):
            traced.teams.reports.store_team_report(
                generation.run_id, task.request_id, report("alpha", generation.run_id, content=big)
            )
        assert dump(db_path) == before
        assert traced.kernel.get_result(task.request_id) is None
        assert traced.kernel.get_generation(generation.run_id).phase == "active"  # type: ignore[union-attr]
        assert not traced.db.results_dir.exists() or list(traced.db.results_dir.iterdir()) == []
        armed["on"] = False
        stored = traced.teams.reports.store_team_report(
            generation.run_id, task.request_id, report("alpha", generation.run_id, content=big)
        )
        assert stored.content == big
        result = traced.kernel.get_result(task.request_id)
        assert result is not None and result.text is None and result.artifact_path is not None
        assert traced.kernel.result_text(result) == big


def test_report_identity_is_checked(store: Repositories, db_path: Path) -> None:
    agent, agent_task = new_generation(store.kernel, session_id="agent-s")
    member_gen, member_task, _m = spawn(store, "alpha")
    before = dump(db_path)
    with pytest.raises(TargetNotFoundError, match="not a teams agent"):
        store.teams.reports.store_team_report(
            agent.run_id, agent_task.request_id, report("alpha", agent.run_id)
        )
    with pytest.raises(TargetNotFoundError, match="not the active assignment"):
        store.teams.reports.store_team_report(
            member_gen.run_id, agent_task.request_id, report("alpha", member_gen.run_id)
        )
    with pytest.raises(InvalidRequestError, match="runId"):
        store.teams.reports.store_team_report(
            member_gen.run_id, member_task.request_id, report("alpha", agent.run_id)
        )
    with pytest.raises(InvalidRequestError, match="report content must not be blank"):
        store.teams.reports.store_team_report(
            member_gen.run_id, member_task.request_id, report("alpha", member_gen.run_id, content=" ")
        )
    assert dump(db_path) == before
    other, other_task, _m2 = spawn(store, "beta")
    store.teams.reports.store_team_report(
        member_gen.run_id, member_task.request_id, report("alpha", member_gen.run_id)
    )
    with pytest.raises(InternalFailureError, match="already belongs to another run"):
        taken = report("alpha", member_gen.run_id)
        store.teams.reports.store_team_report(
            other.run_id,
            other_task.request_id,
            NewTeamReport(
                report_id=taken.report_id,
                task_id="task:x",
                status="completed",
                content="text",
                result=ReportResult("task:x", other.run_id, taken.report_id),
                report_source="report_and_exit",
            ),
        )
    assert store.kernel.get_result(other_task.request_id) is None


def test_team_reports_filter_then_take_the_latest(store: Repositories) -> None:
    stored = []
    for name in ("alpha", "beta", "alpha", "gamma", "alpha"):
        live = store.teams.roster.live_team_member(LEAD, name)
        if live is not None:
            store.kernel.mark_delivered(
                store.teams.reports.team_report_for_run(live.run_id).request_id,  # type: ignore[union-attr]
                owner_session_id=LEAD,
                entry_id=f"e-{live.run_id}",
            )
            store.kernel.finalize_generation(live.run_id, owner_session_id=LEAD)
        generation, task, _m = spawn(store, name)
        stored.append(
            store.teams.reports.store_team_report(
                generation.run_id, task.request_id, report(name, generation.run_id)
            )
        )
    ids = [r.report_id for r in stored]
    assert [r.report_id for r in store.teams.reports.team_reports(LEAD)] == ids
    assert [r.report_id for r in store.teams.reports.team_reports(LEAD, name="alpha")] == [
        ids[0],
        ids[2],
        ids[4],
    ]
    assert [r.report_id for r in store.teams.reports.team_reports(LEAD, name="alpha", limit=2)] == [
        ids[2],
        ids[4],
    ]
    assert [r.report_id for r in store.teams.reports.team_reports(LEAD, limit=1)] == [ids[4]]
    assert store.teams.reports.team_reports(LEAD, limit=0) == ()
    assert store.teams.reports.team_reports(OTHER_LEAD) == ()
    with pytest.raises(InvalidRequestError, match="limit"):
        store.teams.reports.team_reports(LEAD, limit=-1)


def test_record_report_acceptance(store: Repositories) -> None:
    generation, task, _m = spawn(store, "alpha")
    stored = store.teams.reports.store_team_report(
        generation.run_id, task.request_id, report("alpha", generation.run_id)
    )
    accepted = store.teams.reports.record_report_acceptance(stored.report_id, "accepted", "tests pass")
    assert (accepted.acceptance, accepted.acceptance_reason) == ("accepted", "tests pass")
    assert accepted.decided_at is not None
    assert accepted.result.acceptance.to_json() == {
        "state": "accepted",
        "decidedAt": accepted.decided_at,
        "reason": "tests pass",
    }
    assert accepted.content == stored.content and accepted.outcome == stored.outcome
    rejected = store.teams.reports.record_report_acceptance(stored.report_id, "rejected")
    assert (rejected.acceptance, rejected.acceptance_reason) == ("rejected", None)
    assert rejected.result.acceptance.to_json() == {"state": "rejected", "decidedAt": rejected.decided_at}
    with pytest.raises(InvalidRequestError) as bad:
        store.teams.reports.record_report_acceptance(stored.report_id, "pending")
    assert str(bad.value) == "Report acceptance must be accepted or rejected."
    with pytest.raises(TargetNotFoundError) as missing:
        store.teams.reports.record_report_acceptance("report:nope", "accepted")
    assert str(missing.value) == "Structured report report:nope is unavailable."


# --- file claims ---------------------------------------------------------------------------------


def test_claims_are_all_or_nothing_and_keep_since(store: Repositories, db_path: Path) -> None:
    one, _t, _m = spawn(store, "one", kind="write")
    two, _t2, _m2 = spawn(store, "two", kind="write")
    granted = store.teams.roster.claim_files(
        LEAD, run_id=one.run_id, agent="one", paths=["./src/a.py", "src/b.py/"]
    )
    assert [c.path for c in granted.granted] == ["src/a.py", "src/b.py"] and granted.conflicts == ()
    since = granted.granted[0].since
    again = store.teams.roster.claim_files(
        LEAD, run_id=one.run_id, agent="one", paths=["src/a.py", "src/c.py"]
    )
    assert [c.path for c in again.granted] == ["src/a.py", "src/c.py"]
    assert again.granted[0].since == since and again.granted[1].since > since
    before = dump(db_path)
    conflict = store.teams.roster.claim_files(
        LEAD, run_id=two.run_id, agent="two", paths=["src/d.py", "src\\a.py"]
    )
    assert conflict.granted == () and conflict.conflicts == (("src/a.py", "one"),)
    assert dump(db_path) == before
    elsewhere, _t3, _m3 = spawn(store, "one", kind="write", lead=OTHER_LEAD)
    other_team = store.teams.roster.claim_files(
        OTHER_LEAD, run_id=elsewhere.run_id, agent="one", paths=["src/a.py"]
    )
    assert other_team.conflicts == ()
    assert [(c.path, c.agent) for c in store.teams.roster.file_claims(LEAD)] == [
        ("src/a.py", "one"),
        ("src/b.py", "one"),
        ("src/c.py", "one"),
    ]


def test_release_only_touches_the_callers_claims(store: Repositories) -> None:
    one, _t, _m = spawn(store, "one", kind="write")
    two, _t2, _m2 = spawn(store, "two", kind="write")
    store.teams.roster.claim_files(LEAD, run_id=one.run_id, agent="one", paths=["a.py", "b.py", "c.py"])
    store.teams.roster.claim_files(LEAD, run_id=two.run_id, agent="two", paths=["z.py"])
    assert store.teams.roster.release_files(LEAD, run_id=one.run_id, paths=["a.py", "z.py", "nope.py"]) == (
        "a.py",
    )
    assert store.teams.roster.release_all_claims(one.run_id) == ("b.py", "c.py")
    assert store.teams.roster.release_all_claims(one.run_id) == ()
    assert [(c.path, c.agent) for c in store.teams.roster.file_claims(LEAD)] == [("z.py", "two")]


def test_claims_need_a_live_edit_member_of_the_team(store: Repositories, db_path: Path) -> None:
    writer, _t, _m = spawn(store, "writer", kind="write")
    reader, _t2, _m2 = spawn(store, "reader")
    agent, _ = new_generation(store.kernel, session_id="agent-s")
    before = dump(db_path)
    with pytest.raises(InvalidRequestError, match="only edit agents claim files"):
        store.teams.roster.claim_files(LEAD, run_id=reader.run_id, agent="reader", paths=["a.py"])
    with pytest.raises(TargetNotFoundError, match="not a live member"):
        store.teams.roster.claim_files(LEAD, run_id=agent.run_id, agent="worker", paths=["a.py"])
    with pytest.raises(TargetNotFoundError, match="not a live member"):
        store.teams.roster.claim_files(OTHER_LEAD, run_id=writer.run_id, agent="writer", paths=["a.py"])
    with pytest.raises(TargetNotFoundError, match="is agent writer, not impostor"):
        store.teams.roster.claim_files(LEAD, run_id=writer.run_id, agent="impostor", paths=["a.py"])
    with pytest.raises(InvalidRequestError, match="at least one"):
        store.teams.roster.claim_files(LEAD, run_id=writer.run_id, agent="writer", paths=[])
    with pytest.raises(InvalidRequestError, match="absolute"):
        store.teams.roster.claim_files(
            LEAD, run_id=writer.run_id, agent="writer", paths=["ok.py", "/etc/passwd"]
        )
    with pytest.raises(TargetNotFoundError, match="not a live member"):
        store.teams.roster.release_files(LEAD, run_id=agent.run_id, paths=["a.py"])
    assert dump(db_path) == before


def test_claims_are_never_double_granted_across_connections(db_path: Path) -> None:
    writers = 6
    rounds = 25
    with Repositories.open(db_path) as setup:
        runs = [spawn(setup, f"w{i}", kind="write")[0].run_id for i in range(writers)]
    stores = [Repositories.open(db_path), Repositories.open(db_path)]
    holders = {"now": 0, "max": 0, "grants": 0}
    lock = threading.Lock()
    start = threading.Barrier(writers)

    def hammer(index: int) -> None:
        store = stores[index % 2]
        start.wait()
        for _ in range(rounds):
            outcome = store.teams.roster.claim_files(
                LEAD, run_id=runs[index], agent=f"w{index}", paths=["shared.py", f"own-{index}.py"]
            )
            if outcome.conflicts:
                assert outcome.granted == ()
                assert [
                    c.path for c in store.teams.roster.file_claims(LEAD) if c.path == f"own-{index}.py"
                ] == []
                continue
            with lock:
                holders["now"] += 1
                holders["grants"] += 1
                holders["max"] = max(holders["max"], holders["now"])
            # While this run holds the path, the database says so (no one else was granted it).
            held = {c.path: c.run_id for c in store.teams.roster.file_claims(LEAD)}
            assert held["shared.py"] == runs[index] and held[f"own-{index}.py"] == runs[index]
            with lock:
                holders["now"] -= 1
            assert store.teams.roster.release_files(
                LEAD, run_id=runs[index], paths=["shared.py", f"own-{index}.py"]
            ) == (
                "shared.py",
                f"own-{index}.py",
            )

    try:
        with ThreadPoolExecutor(max_workers=writers) as pool:
            for future in [pool.submit(hammer, i) for i in range(writers)]:
                future.result()
    finally:
        for opened in stores:
            opened.close()
    assert holders["max"] == 1 and holders["grants"] >= 1
    with Repositories.open(db_path) as check:
        assert check.teams.roster.file_claims(LEAD) == ()


@pytest.mark.parametrize(
    ("raw", "key"),
    [("a", "a"), ("./a", "a"), ("a/", "a"), (" src\\pkg\\m.py ", "src/pkg/m.py"), ("a//b/./c", "a/b/c")],
)
def test_normalize_claim_path(raw: str, key: str) -> None:
    assert normalize_claim_path(raw) == key


@pytest.mark.parametrize(
    "raw", ["", "   ", "/etc/passwd", "C:/x", "c:\\x", ".", "./", "a/../b", "..", "a\x00b"]
)
def test_normalize_claim_path_refuses(raw: str) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        normalize_claim_path(raw)
    assert "\n" not in str(raised.value) and raised.value.category == "invalid_request"


def test_every_team_mutation_begins_immediate(db_path: Path) -> None:
    seen: list[str] = []
    with Repositories.open(db_path, tracer=lambda sql, _params: seen.append(sql)) as traced:
        generation, _t, _m = spawn(traced, "writer", kind="write")
        seen.clear()
        traced.teams.roster.claim_files(LEAD, run_id=generation.run_id, agent="writer", paths=["a.py"])
        send(traced, "writer")
    begins = [sql for sql in seen if sql.startswith("BEGIN")]
    assert begins and all(sql == "BEGIN IMMEDIATE" for sql in begins)


def test_errors_are_orchestration_errors_with_one_line_messages(store: Repositories) -> None:
    with pytest.raises(OrchestrationError) as raised:
        spawn(store, "bad name")
    assert "\n" not in str(raised.value)
