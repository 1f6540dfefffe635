"""Completion groups in the store (schema v4, §8.2–§8.3): ids, transitions, planning, inbox copies, wakes.

These test the `Groups` repository directly because the rules they pin (one transaction per
event, a refused event writes nothing, planning in the same transaction) are
properties of the store; `teams/test_groups.py` covers the teams-facing API.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from corral.orchestration import Repositories, TargetNotFoundError
from corral.orchestration.errors import InvalidRequestError, OrchestrationError
from corral.orchestration.store._migrations import SCHEMA_VERSION
from corral.orchestration.teams.groups.records import (
    CompletionGroupBindingError,
    CompletionGroupJournalError,
    CompletionPolicy,
    CompletionSlotSettledError,
    GroupHandle,
    delivery_id,
    group_id,
)
from tests.orchestration.teams._groups_helpers import LEAD, TEAM, add_member, dump, open_store, store_report

ALL_SETTLED = CompletionPolicy(delivery="all-settled")
IMMEDIATE = CompletionPolicy(delivery="immediate")


@pytest.fixture
def store(db_path: Path) -> Iterator[Repositories]:
    with open_store(db_path) as opened:
        yield opened


def _create(
    store: Repositories,
    names: list[str],
    *,
    policy: CompletionPolicy = ALL_SETTLED,
    submission: str = "call-1",
) -> GroupHandle:
    return store.teams.groups.create_completion_group(
        lead_session_id=LEAD, team=TEAM, submission_id=submission, policy=policy, members=names
    )


def _raw(db_path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_schema_v4_creates_the_group_tables(store: Repositories, db_path: Path) -> None:
    assert SCHEMA_VERSION >= 4
    tables = {row[0] for row in _raw(db_path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"completion_groups", "completion_group_slots", "completion_group_deliveries"} <= tables


def test_ids_follow_the_spec_formulas(store: Repositories) -> None:
    handle = _create(store, ["a", "b"])
    expected = (
        "group:"
        + hashlib.sha256(json.dumps([TEAM, LEAD, "call-1"], separators=(",", ":")).encode()).hexdigest()
    )
    assert handle.group_id == expected == group_id(TEAM, LEAD, "call-1")
    assert handle.slot_ids == (f"{expected}:0", f"{expected}:1")
    slots = [f"{expected}:0"]
    digest = hashlib.sha256(
        json.dumps([expected, "urgent", slots], separators=(",", ":")).encode()
    ).hexdigest()
    assert delivery_id(expected, "urgent", slots) == "delivery:" + digest


def test_non_ascii_ids_hash_the_raw_characters_like_json_stringify() -> None:
    digest = hashlib.sha256('["tëam","lead","call-é"]'.encode()).hexdigest()
    assert group_id("tëam", "lead", "call-é") == "group:" + digest


def test_creating_again_with_the_same_binding_returns_the_same_handle(
    store: Repositories, db_path: Path
) -> None:
    first = _create(store, ["a", "b"])
    before = dump(db_path)
    again = _create(store, ["a", "b"])
    assert first.created and not again.created
    assert again.slot_ids == first.slot_ids
    assert dump(db_path) == before


@pytest.mark.parametrize(
    ("names", "policy"),
    [(["a", "c"], ALL_SETTLED), (["b", "a"], ALL_SETTLED), (["a"], ALL_SETTLED), (["a", "b"], IMMEDIATE)],
)
def test_a_changed_binding_is_refused_and_writes_nothing(
    store: Repositories, db_path: Path, names: list[str], policy: CompletionPolicy
) -> None:
    _create(store, ["a", "b"])
    before = dump(db_path)
    with pytest.raises(
        CompletionGroupBindingError, match=r"^Completion group assignment binding has changed\.$"
    ):
        _create(store, names, policy=policy)
    assert dump(db_path) == before


@pytest.mark.parametrize("names", [[], ["a", "a"], ["bad name"], [""]])
def test_invalid_member_lists_are_refused(store: Repositories, db_path: Path, names: list[str]) -> None:
    with pytest.raises(InvalidRequestError):
        _create(store, names)
    assert dump(db_path) == []


def test_concurrent_creators_get_exactly_one_created(db_path: Path) -> None:
    stores = [open_store(db_path) for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    results: list[GroupHandle] = []
    lock = threading.Lock()

    def create(opened: Repositories) -> None:
        barrier.wait()
        handle = _create(opened, ["a", "b", "c"])
        with lock:
            results.append(handle)

    threads = [threading.Thread(target=create, args=(opened,)) for opened in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for opened in stores:
        opened.close()
    assert sorted(handle.created for handle in results) == [False, False, False, True]
    assert len({handle.slot_ids for handle in results}) == 1


def test_transitions_record_queue_run_and_receipt(store: Repositories) -> None:
    handle = _create(store, ["alpha"], policy=IMMEDIATE)
    slot = handle.slot_ids[0]
    assert store.teams.groups.group_slot_queued(slot, "queue-1").status == "queued"
    run_id = add_member(store, "alpha")
    running = store.teams.groups.group_slot_running(slot, run_id)
    assert (running.status, running.queue_id, running.run_id) == ("running", "queue-1", run_id)
    report = store_report(
        store, "alpha", run_id, outcome="blocked", verification="failed", repair_outcome="blocked"
    )
    reported = store.teams.groups.group_slot_reported(slot, report.report_id)
    assert reported.status == "reported"
    assert reported.receipt is not None
    assert reported.receipt.to_json() == {
        "runId": run_id,
        "reportId": report.report_id,
        "runtimeStatus": "completed",
        "outcome": "blocked",
        "effectiveOutcome": "blocked",
        "verification": "failed",
    }


def test_identical_repeats_are_no_ops(store: Repositories, db_path: Path) -> None:
    handle = _create(store, ["alpha", "beta"], policy=IMMEDIATE)
    slot, other = handle.slot_ids
    store.teams.groups.group_slot_queued(slot, "queue-1")
    run_id = add_member(store, "alpha")
    store.teams.groups.group_slot_running(slot, run_id)
    report = store_report(store, "alpha", run_id)
    store.teams.groups.group_slot_reported(slot, report.report_id)
    store.teams.groups.group_slot_settled(other, "rejected", "No capacity.")
    before = dump(db_path)
    store.teams.groups.group_slot_queued(slot, "queue-1")
    store.teams.groups.group_slot_reported(slot, report.report_id)
    store.teams.groups.group_slot_settled(other, "rejected", "No capacity.")
    store.teams.groups.seal_completion_group(handle.group_id)
    store.teams.groups.seal_completion_group(handle.group_id)
    after = dump(db_path)
    # Sealing changed only the group row; no event replanned a delivery.
    assert [line for line in after if "completion_groups" not in line] == [
        line for line in before if "completion_groups" not in line
    ]


def _refused_events(
    store: Repositories,
) -> list[tuple[str, Callable[[], object], type[OrchestrationError], str]]:
    """A group with one slot in each state, and events each of them must refuse."""
    handle = _create(store, ["pend", "queue", "run", "done", "gone"], policy=IMMEDIATE)
    pend, queue, run, done, gone = handle.slot_ids
    store.teams.groups.group_slot_queued(queue, "q-1")
    run_id = add_member(store, "run")
    store.teams.groups.group_slot_running(run, run_id)
    done_run = add_member(store, "done")
    store.teams.groups.group_slot_running(done, done_run)
    done_report = store_report(store, "done", done_run)
    store.teams.groups.group_slot_reported(done, done_report.report_id)
    store.teams.groups.group_slot_settled(gone, "cancelled", "Stopped by the lead.")
    other_run = add_member(store, "other")
    other_report = store_report(store, "other", other_run)
    binding, settled = CompletionGroupBindingError, CompletionSlotSettledError
    return [
        (
            "queued from running",
            lambda: store.teams.groups.group_slot_queued(run, "q-2"),
            binding,
            "only while pending",
        ),
        (
            "queued under another id",
            lambda: store.teams.groups.group_slot_queued(queue, "q-2"),
            binding,
            "queue binding",
        ),
        (
            "queued when terminal",
            lambda: store.teams.groups.group_slot_queued(gone, "q-9"),
            settled,
            "already settled",
        ),
        (
            "another run",
            lambda: store.teams.groups.group_slot_running(run, "run-x"),
            binding,
            "run binding has changed",
        ),
        (
            "running when terminal",
            lambda: store.teams.groups.group_slot_running(gone, "run-y"),
            settled,
            "already settled",
        ),
        (
            "reported without run",
            lambda: store.teams.groups.group_slot_reported(pend, other_report.report_id),
            binding,
            "no bound",
        ),
        (
            "report of another run",
            lambda: store.teams.groups.group_slot_reported(run, other_report.report_id),
            binding,
            "Conflicting completion report binding",
        ),
        (
            "second report",
            lambda: store.teams.groups.group_slot_reported(done, other_report.report_id),
            binding,
            "Conflicting completion report binding",
        ),
        (
            "unknown report",
            lambda: store.teams.groups.group_slot_reported(run, "report:x"),
            TargetNotFoundError,
            "unavailable",
        ),
        (
            "settle another run",
            lambda: store.teams.groups.group_slot_settled(run, "cancelled", "stop", run_id="run-x"),
            binding,
            "different run",
        ),
        (
            "settle by wrong queue",
            lambda: store.teams.groups.group_slot_settled(queue, "cancelled", "stop", queue_id="q-2"),
            binding,
            "queue binding",
        ),
        (
            "settle a bound run anonymously",
            lambda: store.teams.groups.group_slot_settled(run, "cancelled", "stop"),
            binding,
            "pass its run_id",
        ),
        (
            "revive a reported slot",
            lambda: store.teams.groups.group_slot_settled(done, "cancelled", "stop", run_id=done_run),
            settled,
            "already settled",
        ),
        (
            "re-settle differently",
            lambda: store.teams.groups.group_slot_settled(gone, "interrupted", "other"),
            settled,
            "already settled",
        ),
        (
            "interrupted by queue",
            lambda: store.teams.groups.group_slot_settled(queue, "interrupted", "x", queue_id="q-1"),
            InvalidRequestError,
            "by queue_id",
        ),
        (
            "blank reason",
            lambda: store.teams.groups.group_slot_settled(pend, "rejected", " "),
            InvalidRequestError,
            "blank",
        ),
        (
            "unknown slot",
            lambda: store.teams.groups.group_slot_running("group:nope:0", "r"),
            TargetNotFoundError,
            "No completion",
        ),
    ]


def test_refused_transitions_change_nothing(store: Repositories, db_path: Path) -> None:
    events = _refused_events(store)
    for name, event, error, fragment in events:
        before = dump(db_path)
        with pytest.raises(error, match=fragment):
            event()
        assert dump(db_path) == before, name


def test_settlement_by_queue_keeps_a_run_bound_meanwhile(store: Repositories) -> None:
    handle = _create(store, ["alpha"])
    slot = handle.slot_ids[0]
    store.teams.groups.group_slot_queued(slot, "q-1")
    store.teams.groups.group_slot_running(slot, "run-1")
    settled = store.teams.groups.group_slot_settled(
        slot, "cancelled", "Stopped while starting.", queue_id="q-1"
    )
    assert (settled.status, settled.run_id, settled.queue_id) == ("cancelled", "run-1", "q-1")


def test_settlement_by_run_binds_an_unbound_slot(store: Repositories) -> None:
    handle = _create(store, ["alpha"])
    settled = store.teams.groups.group_slot_settled(
        handle.slot_ids[0], "interrupted", "Launch failed.", run_id="run-1"
    )
    assert (settled.status, settled.run_id, settled.reason) == ("interrupted", "run-1", "Launch failed.")


def test_planning_stores_each_index_as_an_unread_lead_inbox_message(store: Repositories) -> None:
    handle = _create(store, ["alpha"], policy=IMMEDIATE)
    store.teams.groups.group_slot_settled(handle.slot_ids[0], "rejected", "Capacity queue is disabled.")
    group = store.teams.groups.completion_group(handle.group_id)
    assert group is not None
    (delivery,) = group.deliveries
    assert (delivery.kind, delivery.status, delivery.wake) == ("member", "enqueued", None)
    inbox = store.teams.messages.read_team_inbox(LEAD, "team-lead", mark_as_read=False)
    assert [(m.sender, m.summary, m.content, m.message_id) for m in inbox] == [
        ("corral", "Completion group member: 1 result(s)", delivery.text, delivery.message_id)
    ]
    # The ordinary lead-message path leaves it to the group wake.
    assert store.teams.messages.undelivered_lead_messages(LEAD) == ()


def test_wakes_are_reserved_once_and_observed_once(store: Repositories, db_path: Path) -> None:
    handle = _create(store, ["alpha", "beta"], policy=IMMEDIATE)
    store.teams.groups.group_slot_settled(handle.slot_ids[0], "rejected", "No.")
    (first,) = store.teams.groups.reserve_group_wakes(LEAD)
    assert first.wake is not None and first.wake.state == "pending"
    assert store.teams.groups.reserve_group_wakes(LEAD) == ()
    store.teams.groups.group_slot_settled(handle.slot_ids[1], "cancelled", "Stopped.")
    (second,) = store.teams.groups.reserve_group_wakes(LEAD)
    assert second.slot_ids == (handle.slot_ids[1],)

    observed = store.teams.groups.observe_group_wake(first.delivery_id, "entry-1")
    assert observed.wake is not None and (observed.wake.state, observed.wake.entry_id) == (
        "observed",
        "entry-1",
    )
    store.teams.groups.observe_group_wake(first.delivery_id, "entry-1")
    before = dump(db_path)
    with pytest.raises(CompletionGroupBindingError, match="already entry entry-1"):
        store.teams.groups.observe_group_wake(first.delivery_id, "entry-2")
    assert dump(db_path) == before
    unread = store.teams.messages.read_team_inbox(LEAD, "team-lead", mark_as_read=False)
    assert [m.message_id for m in unread] == [second.message_id]


def test_a_failed_wake_keeps_its_error_and_is_not_reserved_again(store: Repositories) -> None:
    handle = _create(store, ["alpha"], policy=IMMEDIATE)
    store.teams.groups.group_slot_settled(handle.slot_ids[0], "rejected", "No.")
    (delivery,) = store.teams.groups.reserve_group_wakes(LEAD)
    failed = store.teams.groups.fail_group_wake(delivery.delivery_id, "lead session closed")
    assert failed.wake is not None and (failed.wake.state, failed.wake.error) == (
        "pending",
        "lead session closed",
    )
    assert store.teams.groups.reserve_group_wakes(LEAD) == ()


def test_a_report_that_no_longer_matches_its_receipt_fails_closed(store: Repositories, db_path: Path) -> None:
    handle = _create(store, ["alpha", "beta"])
    store.teams.groups.seal_completion_group(handle.group_id)
    run_id = add_member(store, "alpha")
    store.teams.groups.group_slot_running(handle.slot_ids[0], run_id)
    report = store_report(store, "alpha", run_id)
    store.teams.groups.group_slot_reported(handle.slot_ids[0], report.report_id)
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("UPDATE team_reports SET outcome = 'failed' WHERE report_id = ?", (report.report_id,))
    conn.close()
    before = dump(db_path)
    with pytest.raises(CompletionGroupJournalError, match="no longer matches"):
        store.teams.groups.group_slot_settled(handle.slot_ids[1], "rejected", "No capacity.")
    assert dump(db_path) == before


def test_the_schema_refuses_inconsistent_rows(store: Repositories, db_path: Path) -> None:
    handle = _create(store, ["alpha"])
    conn = sqlite3.connect(db_path)
    try:
        for sql in (
            "UPDATE completion_group_slots SET status = 'running'",  # running without a run
            "UPDATE completion_group_slots SET status = 'cancelled'",  # settled without a reason
            "UPDATE completion_group_slots SET status = 'reported', run_id = 'r'",  # reported without receipt
            "UPDATE completion_groups SET sealed = 1",  # sealed without sealed_at
        ):
            with pytest.raises(sqlite3.IntegrityError):
                conn.execute(sql)
    finally:
        conn.close()
    slot = store.teams.groups.completion_slot(handle.slot_ids[0])
    assert slot is not None and slot.status == "pending"
