"""Completion groups as the teams core uses them (§8): policies, delivery planning, index, wakes, recovery.

Real SQLite store in tmp_path, real members and stored reports, real session
files for the wake round trip.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral.orchestration import Repositories
from corral.orchestration.teams.groups._groups import (
    GROUP_MESSAGE_TYPE,
    CompletionGroups,
    parse_completion_group,
)
from corral.orchestration.teams.groups.records import (
    INTERRUPTED_ON_RECOVERY,
    CompletionGroupPolicyError,
    CompletionPolicy,
    GroupDelivery,
    GroupHandle,
)
from corral.session import SessionManager
from tests.orchestration.teams._groups_helpers import LEAD, TEAM, add_member, open_store, store_report


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Repositories]:
    with open_store(tmp_path / "home" / "corral.db") as opened:
        yield opened


@pytest.fixture
def groups(store: Repositories) -> CompletionGroups:
    return CompletionGroups(store.teams.groups)


def _create(
    groups: CompletionGroups, names: list[str], delivery: str, submission: str = "call-1"
) -> GroupHandle:
    return groups.create(
        lead_session_id=LEAD,
        team=TEAM,
        submission_id=submission,
        policy=parse_completion_group({"delivery": delivery}),
        members=names,
    )


def _report(groups: CompletionGroups, store: Repositories, slot: str, name: str, **facts: Any) -> str:
    """Run the member of `slot` and store its report; returns the run id."""
    run_id = add_member(store, name)
    groups.running(slot, run_id)
    groups.reported(slot, store_report(store, name, run_id, **facts))
    return run_id


def _index(delivery: GroupDelivery) -> dict[str, Any]:
    index: dict[str, Any] = json.loads(delivery.index)
    return index


def _deliveries(store: Repositories, handle: GroupHandle) -> list[tuple[str, tuple[str, ...]]]:
    group = store.teams.groups.completion_group(handle.group_id)
    assert group is not None
    return [(delivery.kind, delivery.slot_ids) for delivery in group.deliveries]


# --- policy -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None,
        {},
        {"delivery": "later"},
        {"delivery": None},
        {"delivery": "immediate", "extra": True},
        {"mode": "immediate"},
        "immediate",
        ["immediate"],
    ],
)
def test_invalid_policies_are_refused(value: object) -> None:
    with pytest.raises(CompletionGroupPolicyError, match=r"^Invalid completion group policy\.$"):
        parse_completion_group(value)


@pytest.mark.parametrize("delivery", ["immediate", "all-settled"])
def test_valid_policies_parse(delivery: str) -> None:
    policy = parse_completion_group({"delivery": delivery})
    assert policy == CompletionPolicy(delivery=delivery)  # type: ignore[arg-type]
    assert policy.to_json() == {"delivery": delivery}


# --- all-settled --------------------------------------------------------------------------------


def test_ten_members_all_settled_get_one_settled_delivery(
    groups: CompletionGroups, store: Repositories
) -> None:
    names = [f"reviewer-{i}" for i in range(10)]
    handle = _create(groups, names, "all-settled")
    groups.seal(handle.group_id)
    runs = []
    for slot, name in zip(handle.slot_ids, names, strict=True):
        assert groups.reserve_wakes(LEAD) == []
        runs.append(_report(groups, store, slot, name))
    assert _deliveries(store, handle) == [("settled", handle.slot_ids)]

    (delivery,) = groups.reserve_wakes(LEAD)
    assert groups.reserve_wakes(LEAD) == []
    index = _index(delivery)
    assert (index["version"], index["groupId"], index["deliveryId"], index["kind"]) == (
        1,
        handle.group_id,
        delivery.delivery_id,
        "settled",
    )
    assert [m["name"] for m in index["members"]] == names
    first = index["members"][0]
    assert first == {
        "name": "reviewer-0",
        "slotId": handle.slot_ids[0],
        "status": "reported",
        "runId": runs[0],
        "taskId": f"task:{TEAM}:reviewer-0:{runs[0]}",
        "runtimeStatus": "completed",
        "role": "read-review",
        "summary": "done",
        "outcome": "succeeded",
        "effectiveOutcome": "succeeded",
        "verification": {"state": "not-requested"},
        "acceptance": {"state": "pending"},
        "report": {"id": f"report:{TEAM}:reviewer-0:{runs[0]}", "path": "/reports/reviewer-0.md"},
    }
    inbox = store.teams.messages.read_team_inbox(LEAD, "team-lead")
    assert [(m.summary, m.content) for m in inbox] == [
        ("Completion group settled: 10 result(s)", delivery.text)
    ]


def test_all_settled_waits_for_the_seal(groups: CompletionGroups, store: Repositories) -> None:
    handle = _create(groups, ["a", "b"], "all-settled")
    _report(groups, store, handle.slot_ids[0], "a")
    groups.settled(handle.slot_ids[1], "cancelled", "Stopped by the lead.")
    assert _deliveries(store, handle) == []
    groups.seal(handle.group_id)
    assert _deliveries(store, handle) == [("settled", handle.slot_ids)]
    cancelled = _index(groups.reserve_wakes(LEAD)[0])["members"][1]
    assert cancelled == {
        "name": "b",
        "slotId": handle.slot_ids[1],
        "status": "cancelled",
        "reason": "Stopped by the lead.",
    }


URGENT_CASES: dict[str, dict[str, Any]] = {
    "blocked outcome": {"outcome": "blocked"},
    "failed outcome": {"outcome": "failed"},
    "failed verification": {"verification": "failed"},
    "stale verification": {"verification": "stale"},
    "failed run": {"status": "failed", "outcome": None},
    "repair blocker": {"verification": "failed", "repair_outcome": "blocked"},
    "rejected": {},
}


@pytest.mark.parametrize("case", list(URGENT_CASES))
def test_an_urgent_member_is_delivered_early_then_the_group_settles(
    groups: CompletionGroups, store: Repositories, case: str
) -> None:
    handle = _create(groups, ["urgent", "ok-1", "ok-2"], "all-settled")
    groups.seal(handle.group_id)
    urgent_slot = handle.slot_ids[0]
    if case == "rejected":
        groups.settled(urgent_slot, "rejected", "Capacity queue is disabled.")
    else:
        _report(groups, store, urgent_slot, "urgent", **URGENT_CASES[case])
    assert _deliveries(store, handle) == [("urgent", (urgent_slot,))]
    (early,) = groups.reserve_wakes(LEAD)
    assert [m["name"] for m in _index(early)["members"]] == ["urgent"]

    _report(groups, store, handle.slot_ids[1], "ok-1")
    assert groups.reserve_wakes(LEAD) == []
    _report(groups, store, handle.slot_ids[2], "ok-2")
    assert _deliveries(store, handle) == [("urgent", (urgent_slot,)), ("settled", handle.slot_ids)]


def test_a_passing_member_is_not_urgent(groups: CompletionGroups, store: Repositories) -> None:
    handle = _create(groups, ["a", "b"], "all-settled")
    groups.seal(handle.group_id)
    _report(groups, store, handle.slot_ids[0], "a", verification="passed")
    groups.settled(handle.slot_ids[1], "interrupted", "Launch failed.")
    assert _deliveries(store, handle) == [("settled", handle.slot_ids)]


def test_no_redundant_final_wake_when_every_member_was_urgent(
    groups: CompletionGroups, store: Repositories
) -> None:
    handle = _create(groups, ["a", "b"], "all-settled")
    _report(groups, store, handle.slot_ids[0], "a", outcome="blocked")
    groups.settled(handle.slot_ids[1], "rejected", "No capacity.")
    assert _deliveries(store, handle) == [
        ("urgent", (handle.slot_ids[0],)),
        ("urgent", (handle.slot_ids[1],)),
    ]
    assert len(groups.reserve_wakes(LEAD)) == 2
    groups.seal(handle.group_id)
    assert _deliveries(store, handle) == [
        ("urgent", (handle.slot_ids[0],)),
        ("urgent", (handle.slot_ids[1],)),
    ]
    assert groups.reserve_wakes(LEAD) == []


def test_the_last_member_settling_urgently_gets_the_settled_index(
    groups: CompletionGroups, store: Repositories
) -> None:
    handle = _create(groups, ["a", "b"], "all-settled")
    groups.seal(handle.group_id)
    _report(groups, store, handle.slot_ids[0], "a", outcome="blocked")
    groups.settled(handle.slot_ids[1], "rejected", "No capacity.")
    assert _deliveries(store, handle) == [("urgent", (handle.slot_ids[0],)), ("settled", handle.slot_ids)]


# --- immediate ----------------------------------------------------------------------------------


def test_immediate_mode_delivers_one_member_index_each(groups: CompletionGroups, store: Repositories) -> None:
    handle = _create(groups, ["a", "b", "c"], "immediate")
    _report(groups, store, handle.slot_ids[0], "a")
    assert _deliveries(store, handle) == [("member", (handle.slot_ids[0],))]
    groups.settled(handle.slot_ids[1], "cancelled", "Stopped.")
    _report(groups, store, handle.slot_ids[2], "c", outcome="failed")
    groups.seal(handle.group_id)
    assert _deliveries(store, handle) == [("member", (slot,)) for slot in handle.slot_ids]
    wakes = groups.reserve_wakes(LEAD)
    assert [d.kind for d in wakes] == ["member"] * 3
    assert [m.summary for m in store.teams.messages.read_team_inbox(LEAD, "team-lead")] == [
        "Completion group member: 1 result(s)"
    ] * 3


def test_the_index_clips_long_texts_and_keeps_findings(groups: CompletionGroups, store: Repositories) -> None:
    handle = _create(groups, ["a", "b"], "immediate")
    findings = [{"id": "f1", "text": "x" * 1000, "evidence": ["src/a.py:3"]}]
    _report(groups, store, handle.slot_ids[0], "a", summary=None, content="y" * 900, findings=findings)
    groups.settled(handle.slot_ids[1], "rejected", "z" * 500)
    first, second = (_index(d)["members"][0] for d in groups.reserve_wakes(LEAD))
    assert first["summary"] == "y" * 399 + "…"
    assert first["findings"] == [{"id": "f1", "text": "x" * 399 + "…", "evidence": ["src/a.py:3"]}]
    assert second["reason"] == "z" * 399 + "…"
    assert "runId" not in second and "report" not in second


# --- messages and wakes -------------------------------------------------------------------------


def test_the_wake_message_is_hidden_and_carries_the_index(
    groups: CompletionGroups, store: Repositories
) -> None:
    handle = _create(groups, ["a"], "immediate")
    groups.settled(handle.slot_ids[0], "rejected", "No capacity.")
    (delivery,) = groups.reserve_wakes(LEAD)
    message = groups.message(delivery)
    assert (message.custom_type, message.display) == (GROUP_MESSAGE_TYPE, False)
    assert message.details == {
        "group_id": handle.group_id,
        "delivery_id": delivery.delivery_id,
        "kind": "member",
        "slot_ids": [handle.slot_ids[0]],
    }
    assert isinstance(message.content, str)
    assert message.content.startswith(delivery.index + "\n\n")
    assert "not task success or lead acceptance" in message.content
    assert "do not stop them" in message.content


def _persist_wake(tmp_path: Path, groups: CompletionGroups, delivery: GroupDelivery) -> list[object]:
    """Append the wake to a real lead session file and read the entries back."""
    session = SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions")
    session.append_message(groups.message(delivery))
    session.flush()
    path = session.path
    session.close()
    assert path is not None
    return list(SessionManager.open(path, read_only=True).entries)


def test_observed_wake_marks_the_inbox_copy_read(
    tmp_path: Path, groups: CompletionGroups, store: Repositories
) -> None:
    handle = _create(groups, ["a"], "immediate")
    groups.settled(handle.slot_ids[0], "rejected", "No capacity.")
    (delivery,) = groups.reserve_wakes(LEAD)
    found = groups.find_wakes(LEAD, _persist_wake(tmp_path, groups, delivery))
    assert list(found) == [delivery.delivery_id]
    groups.observed(delivery.delivery_id, found[delivery.delivery_id])
    assert store.teams.messages.read_team_inbox(LEAD, "team-lead") == ()
    journal = groups.index(handle.group_id)
    assert journal["deliveries"][0]["wake"] == {"state": "observed", "entryId": found[delivery.delivery_id]}


# --- recovery -----------------------------------------------------------------------------------


def _interrupted_team(
    groups: CompletionGroups, store: Repositories
) -> tuple[GroupHandle, GroupDelivery, str]:
    """A group a host left behind: one reported + reserved wake, one unbound, one created but not bound."""
    handle = _create(groups, ["done", "waiting", "started"], "immediate")
    done, waiting, started = handle.slot_ids
    _report(groups, store, done, "done")
    (reserved,) = groups.reserve_wakes(LEAD)
    groups.queued(waiting, "q-1")
    groups.queued(started, "q-2")
    run_id = add_member(store, "started", group_id=handle.group_id, slot_id=started)
    store_report(store, "started", run_id, outcome="blocked")
    return handle, reserved, run_id


def test_recovery_warns_once_per_unconfirmed_wake_and_never_re_reserves(
    groups: CompletionGroups, store: Repositories
) -> None:
    handle, reserved, run_id = _interrupted_team(groups, store)
    warnings = groups.recover(LEAD, delivered={})
    assert len(warnings) == 1
    assert (
        reserved.delivery_id in warnings[0] and "not retried" in warnings[0] and "read_inbox" in warnings[0]
    )
    assert reserved.index in warnings[0]

    journal = groups.index(handle.group_id)
    assert journal["sealed"] is True
    assert [(m["name"], m["status"]) for m in journal["members"]] == [
        ("done", "reported"),
        ("waiting", "interrupted"),
        ("started", "reported"),
    ]
    assert journal["members"][1]["reason"] == INTERRUPTED_ON_RECOVERY
    assert journal["members"][2]["runId"] == run_id
    fresh = groups.reserve_wakes(LEAD)
    assert [d.slot_ids for d in fresh] == [(handle.slot_ids[1],), (handle.slot_ids[2],)]
    assert reserved.delivery_id not in {d.delivery_id for d in fresh}
    # A second restart still warns about the unconfirmed wake and changes nothing else.
    again = groups.recover(LEAD, delivered={})
    assert [w for w in again if reserved.delivery_id in w] and groups.reserve_wakes(LEAD) == []


def test_recovery_marks_wakes_found_in_the_session_observed(
    tmp_path: Path, groups: CompletionGroups, store: Repositories
) -> None:
    handle, reserved, _run_id = _interrupted_team(groups, store)
    delivered = groups.find_wakes(LEAD, _persist_wake(tmp_path, groups, reserved))
    warnings = groups.recover(LEAD, delivered=delivered)
    assert warnings == []
    journal = groups.index(handle.group_id)
    assert journal["deliveries"][0]["wake"]["state"] == "observed"
    unread = store.teams.messages.read_team_inbox(LEAD, "team-lead", mark_as_read=False)
    assert reserved.message_id not in {m.message_id for m in unread}


def test_recovery_reports_unknown_and_conflicting_entries(
    groups: CompletionGroups, store: Repositories
) -> None:
    handle, reserved, _run_id = _interrupted_team(groups, store)
    groups.observed(reserved.delivery_id, "entry-1")
    warnings = groups.recover(
        LEAD, delivered={reserved.delivery_id: "entry-2", "delivery:unknown": "entry-3"}
    )
    assert any("delivery:unknown" in w and "ignored" in w for w in warnings)
    assert any("already entry entry-1" in w for w in warnings)
    assert groups.index(handle.group_id)["deliveries"][0]["wake"]["entryId"] == "entry-1"


def test_recovery_leaves_a_run_that_ended_without_a_report_unresolved(
    groups: CompletionGroups, store: Repositories
) -> None:
    handle = _create(groups, ["lost"], "all-settled")
    groups.running(handle.slot_ids[0], "run-that-never-existed")
    warnings = groups.recover(LEAD, delivered={})
    assert len(warnings) == 1 and "stays unresolved" in warnings[0]
    journal = groups.index(handle.group_id)
    assert journal["members"][0]["status"] == "running" and journal["deliveries"] == []
