"""Teams messages in the orchestration store (table `team_messages`).

`Messages` is a repository over the shared database: every public verb is one transaction through
`_write`/`_read`, re-reads what it depends on and checks identity inside it (a member recipient is
read through the roster in the same transaction), and raises an `OrchestrationError` subclass
(changing nothing) on a mismatch. Inbox copies of completion-group indexes are written by the
groups' repository in their own transactions (`teams/groups/_repository.py`); their wake delivers
them, so `undelivered_lead_messages` leaves them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from corral.orchestration.errors import InvalidRequestError, TargetNotFoundError
from corral.orchestration.store import Database, Repository, Row, new_id, require_text
from corral.orchestration.teams.messages.records import TeamMessageRecord
from corral.orchestration.teams.roster import Roster
from corral.orchestration.teams.roster.records import TEAM_LEAD, _check_choice

__all__ = ["Messages"]


def _message_from_row(row: Row) -> TeamMessageRecord:
    return TeamMessageRecord(
        message_id=row["message_id"],
        lead_session_id=row["lead_session_id"],
        recipient=row["recipient"],
        recipient_run_id=row["recipient_run_id"],
        sender=row["sender"],
        sender_run_id=row["sender_run_id"],
        content=row["content"],
        summary=row["summary"],
        delivery=row["delivery"],
        created_at=row["created_at"],
        read_at=row["read_at"],
        delivered_entry_id=row["delivered_entry_id"],
    )


class Messages(Repository):
    """Messages between team members and to the lead; every public verb is one transaction."""

    def __init__(self, db: Database, roster: Roster) -> None:
        """Work over `db`, reading senders and recipients through `roster` (same database)."""
        super().__init__(db)
        self._roster = roster

    # --- messages --------------------------------------------------------------------------------

    def add_team_message(
        self,
        lead_session_id: str,
        *,
        recipient: str,
        sender: str,
        sender_run_id: str | None,
        content: str,
        summary: str,
        delivery: Literal["active-session", "inbox"],
        expected_run_id: str | None = None,
        message_id: str | None = None,
    ) -> TeamMessageRecord:
        """Store a message for `team-lead` (always admitted) or a running member of the team.

        `message_id` chooses the message's id (a Ray member's call id): a message of that id
        already stored is returned as it is, nothing is stored again.

        A member recipient must be live, unfenced and still running (its
        generation `starting` or `active`), and be run `expected_run_id` when
        given, checked in the same transaction. An `active-session` message was
        injected into the recipient's session and is stored already read.

        Raises:
            InvalidRequestError: Blank fields, an unknown delivery, or `active-session` for the lead.
            TargetNotFoundError: The recipient is not running, or `sender_run_id` is not of this team.
        """
        for value, what in (
            (lead_session_id, "lead session id"),
            (recipient, "recipient"),
            (sender, "sender"),
            (content, "message content"),
        ):
            require_text(value, what)
        _check_choice(delivery, ("active-session", "inbox"), "Message delivery")
        if recipient == TEAM_LEAD and delivery != "inbox":
            raise InvalidRequestError(f"Messages to {TEAM_LEAD} go to its inbox; pass delivery='inbox'.")

        def body() -> TeamMessageRecord:
            if message_id is not None and (stored := self._message(message_id)) is not None:
                return stored
            if sender_run_id is not None:
                sending = self._roster.team_member_in(self._tx, sender_run_id)
                if sending is None or sending.lead_session_id != lead_session_id:
                    raise TargetNotFoundError(f"Sender run {sender_run_id} is not a member of this team.")
            recipient_run_id: str | None = None
            if recipient != TEAM_LEAD:
                member = self._roster.running_member_in(self._tx, lead_session_id, recipient)
                if member is None or (expected_run_id is not None and member.run_id != expected_run_id):
                    raise TargetNotFoundError(
                        f"Cannot send message to {recipient}: agent is not running.", ids={"label": recipient}
                    )
                recipient_run_id = member.run_id
            now = self._clock()
            chosen = message_id or new_id()
            self._execute(
                "INSERT INTO team_messages (message_id, lead_session_id, recipient, recipient_run_id, sender,"
                " sender_run_id, content, summary, delivery, created_at, read_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    chosen,
                    lead_session_id,
                    recipient,
                    recipient_run_id,
                    sender,
                    sender_run_id,
                    content,
                    summary,
                    delivery,
                    now,
                    now if delivery == "active-session" else None,
                ),
            )
            return self._require_message(chosen)

        return self._write(body)

    def read_team_inbox(
        self, lead_session_id: str, recipient: str, *, unread_only: bool = True, mark_as_read: bool = True
    ) -> tuple[TeamMessageRecord, ...]:
        """The messages of `recipient` (a member name or `team-lead`), oldest first.

        With `mark_as_read` the unread ones are marked read in the same
        transaction; the returned records show their state before marking.
        """
        sql = "SELECT * FROM team_messages WHERE lead_session_id = ? AND recipient = ?"
        if unread_only:
            sql += " AND read_at IS NULL"
        sql += " ORDER BY created_at, rowid"
        params = (lead_session_id, recipient)

        def body() -> tuple[TeamMessageRecord, ...]:
            messages = tuple(_message_from_row(row) for row in self._all(sql, params))
            if mark_as_read and any(message.read_at is None for message in messages):
                self._execute(
                    "UPDATE team_messages SET read_at = ? WHERE lead_session_id = ? AND recipient = ?"
                    " AND read_at IS NULL",
                    (self._clock(), *params),
                )
            return messages

        return self._write(body) if mark_as_read else self._read(body)

    def mark_messages_read(self, message_ids: Sequence[str]) -> None:
        """Mark these messages read (a member on a Ray worker injected them); read ones stay as they are."""
        if not message_ids:
            return
        marks = ",".join("?" for _ in message_ids)

        def body() -> None:
            self._execute(
                f"UPDATE team_messages SET read_at = ? WHERE message_id IN ({marks}) AND read_at IS NULL",
                (self._clock(), *message_ids),
            )

        self._write(body)

    def undelivered_lead_messages(self, lead_session_id: str) -> tuple[TeamMessageRecord, ...]:
        """Messages to `team-lead` neither read nor delivered into the lead's session, oldest first.

        Inbox copies of completion-group indexes are left out: their group wake delivers them.
        """
        return self._read(
            lambda: tuple(
                _message_from_row(row)
                for row in self._all(
                    "SELECT * FROM team_messages WHERE lead_session_id = ? AND recipient = ?"
                    " AND read_at IS NULL AND message_id NOT IN"
                    " (SELECT message_id FROM completion_group_deliveries WHERE message_id IS NOT NULL)"
                    " ORDER BY created_at, rowid",
                    (lead_session_id, TEAM_LEAD),
                )
            )
        )

    def mark_lead_message_delivered(self, message_id: str, *, entry_id: str) -> TeamMessageRecord:
        """Record the lead-session entry that delivered a `team-lead` message (and that it is read).

        A message already delivered keeps its first entry id; compare the
        returned `delivered_entry_id` with `entry_id` to know whether this call did it.

        Raises:
            TargetNotFoundError: No `team-lead` message `message_id`.
        """
        require_text(entry_id, "entry id")

        def body() -> TeamMessageRecord:
            message = self._message(message_id)
            if message is None or message.recipient != TEAM_LEAD:
                raise TargetNotFoundError(f"No {TEAM_LEAD} message {message_id}.")
            self._execute(
                "UPDATE team_messages SET delivered_entry_id = ?, read_at = COALESCE(read_at, ?)"
                " WHERE message_id = ? AND delivered_entry_id IS NULL",
                (entry_id, self._clock(), message_id),
            )
            return self._require_message(message_id)

        return self._write(body)

    # --- helpers (inside a transaction) -------------------------------------------------------------

    def team_message(self, message_id: str) -> TeamMessageRecord | None:
        """The message `message_id`, if stored."""
        return self._read(lambda: self._message(message_id))

    def _message(self, message_id: str) -> TeamMessageRecord | None:
        row = self._one("SELECT * FROM team_messages WHERE message_id = ?", (message_id,))
        return None if row is None else _message_from_row(row)

    def _require_message(self, message_id: str) -> TeamMessageRecord:
        message = self._message(message_id)
        assert message is not None
        return message
