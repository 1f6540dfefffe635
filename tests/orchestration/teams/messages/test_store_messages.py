"""The teams messages table of the store (`Messages`): sending, inboxes, delivery to the lead (real SQLite in tmp_path)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.orchestration import TEAM_LEAD, InvalidRequestError, Repositories, TargetNotFoundError
from tests.orchestration._store_helpers import LEAD, dump
from tests.orchestration.teams._roster_helpers import OTHER_LEAD, counting_clock, report, send, spawn


@pytest.fixture
def store(db_path: Path) -> Iterator[Repositories]:
    with Repositories.open(db_path, clock=counting_clock()) as opened:
        yield opened


def test_messages_to_the_lead_and_to_running_members(store: Repositories) -> None:
    alpha, _t, _m = spawn(store, "alpha")
    to_lead = send(store, TEAM_LEAD, "status?", sender="alpha", sender_run_id=alpha.run_id)
    assert (to_lead.recipient, to_lead.recipient_run_id, to_lead.read_at) == (TEAM_LEAD, None, None)
    inbox = send(store, "alpha", "look at b.py")
    assert (inbox.recipient_run_id, inbox.delivery, inbox.read) == (alpha.run_id, "inbox", False)
    steered = send(store, "alpha", "now", delivery="active-session", expected_run_id=alpha.run_id)
    assert steered.delivery == "active-session" and steered.read_at == steered.created_at
    notice = send(store, TEAM_LEAD, "corral notice", sender="corral")
    assert notice.sender == "corral"


def test_a_message_with_a_chosen_id_is_stored_once_and_marked_read_by_id(store: Repositories) -> None:
    spawn(store, "alpha")
    call = "6f1d3c2a-0b4e-4f5a-9c8d-7e6f5a4b3c2d"  # a Ray member's call id
    first = send(store, "alpha", "look", message_id=call)
    again = send(store, "alpha", "look", message_id=call)
    assert first == again and first.message_id == call
    other = send(store, "alpha", "and this")
    inbox = store.teams.messages.read_team_inbox(LEAD, "alpha", unread_only=True, mark_as_read=False)
    assert [m.message_id for m in inbox] == [call, other.message_id]
    store.teams.messages.mark_messages_read([call])
    unread = store.teams.messages.read_team_inbox(LEAD, "alpha", unread_only=True, mark_as_read=False)
    assert [m.message_id for m in unread] == [other.message_id]
    marked = store.teams.messages.team_message(call)
    assert marked is not None and marked.read_at is not None and marked.content == first.content


@pytest.mark.parametrize("state", ["missing", "fenced", "reported", "finalized", "other run"])
def test_a_message_to_a_member_that_is_not_running_is_refused(
    store: Repositories, db_path: Path, state: str
) -> None:
    generation, task, _m = spawn(store, "alpha")
    expected = None
    if state == "fenced":
        store.teams.roster.set_team_fence(generation.run_id, fence="quarantined", reason="stuck")
    elif state == "reported":
        store.teams.reports.store_team_report(
            generation.run_id, task.request_id, report("alpha", generation.run_id)
        )
    elif state == "finalized":
        store.kernel.finalize_generation(generation.run_id, owner_session_id=LEAD)
    elif state == "other run":
        expected = "00000000-0000-4000-8000-000000000000"
    before = dump(db_path)
    with pytest.raises(TargetNotFoundError) as raised:
        send(store, "ghost" if state == "missing" else "alpha", expected_run_id=expected)
    assert (
        str(raised.value)
        == f"Cannot send message to {'ghost' if state == 'missing' else 'alpha'}: agent is not running."
    )
    assert dump(db_path) == before


def test_message_fields_are_validated(store: Repositories) -> None:
    spawn(store, "alpha")
    other, _t, _m = spawn(store, "beta", lead=OTHER_LEAD)
    with pytest.raises(InvalidRequestError, match="message content must not be blank"):
        send(store, "alpha", "   ")
    with pytest.raises(InvalidRequestError, match="inbox"):
        send(store, TEAM_LEAD, delivery="active-session")
    with pytest.raises(InvalidRequestError, match="Message delivery"):
        send(store, "alpha", delivery="carrier-pigeon")
    with pytest.raises(TargetNotFoundError, match="not a member of this team"):
        send(store, "alpha", sender="beta", sender_run_id=other.run_id)


def test_read_team_inbox_marks_and_peeks(store: Repositories) -> None:
    spawn(store, "alpha")
    first = send(store, "alpha", "one")
    second = send(store, "alpha", "two")
    send(store, TEAM_LEAD, "for the lead", sender="alpha")
    peeked = store.teams.messages.read_team_inbox(LEAD, "alpha", mark_as_read=False)
    assert [m.content for m in peeked] == ["one", "two"] and not any(m.read for m in peeked)
    read = store.teams.messages.read_team_inbox(LEAD, "alpha")
    assert [m.message_id for m in read] == [first.message_id, second.message_id]
    assert not any(m.read for m in read)  # the state before marking
    assert store.teams.messages.read_team_inbox(LEAD, "alpha") == ()
    everything = store.teams.messages.read_team_inbox(LEAD, "alpha", unread_only=False, mark_as_read=False)
    assert [m.content for m in everything] == ["one", "two"] and all(m.read for m in everything)
    third = send(store, "alpha", "three")
    again = store.teams.messages.read_team_inbox(LEAD, "alpha", unread_only=False)
    assert [m.read for m in again] == [True, True, False]
    assert (
        store.teams.messages.read_team_inbox(LEAD, "alpha", unread_only=False)[-1].message_id
        == third.message_id
    )
    assert all(m.read for m in store.teams.messages.read_team_inbox(LEAD, "alpha", unread_only=False))


def test_lead_messages_are_delivered_once(store: Repositories) -> None:
    alpha, _t, _m = spawn(store, "alpha")
    first = send(store, TEAM_LEAD, "one", sender="alpha", sender_run_id=alpha.run_id)
    second = send(store, TEAM_LEAD, "two", sender="alpha", sender_run_id=alpha.run_id)
    send(store, "alpha", "not for the lead")
    assert [m.message_id for m in store.teams.messages.undelivered_lead_messages(LEAD)] == [
        first.message_id,
        second.message_id,
    ]
    delivered = store.teams.messages.mark_lead_message_delivered(first.message_id, entry_id="entry-1")
    assert delivered.delivered_entry_id == "entry-1" and delivered.read_at is not None
    again = store.teams.messages.mark_lead_message_delivered(first.message_id, entry_id="entry-2")
    assert again == delivered
    assert [m.message_id for m in store.teams.messages.undelivered_lead_messages(LEAD)] == [second.message_id]
    store.teams.messages.read_team_inbox(LEAD, TEAM_LEAD)  # the lead read it through read_inbox
    assert store.teams.messages.undelivered_lead_messages(LEAD) == ()
    inbox = send(store, "alpha", "x")
    with pytest.raises(TargetNotFoundError):
        store.teams.messages.mark_lead_message_delivered(inbox.message_id, entry_id="e")
    with pytest.raises(TargetNotFoundError):
        store.teams.messages.mark_lead_message_delivered("00000000-0000-4000-8000-000000000000", entry_id="e")
