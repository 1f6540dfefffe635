"""Teams messaging (`TeamMessages`, a service `Teams` composes): `send_message`, `read_inbox`, corral's
own notices to the lead, and bringing the lead's messages into its session.

A live recipient gets a message as steering (`delivery: active-session`, stored already read);
`team-lead` messages (and corral's notices, sender `corral`) are stored and brought to the lead
once each as hidden `corral-team-message` entries that wake it (`deliver_lead_messages`, keyed by
message id). The rows are `Messages`' (`_repository.py`); the words `teams/texts.py`'s.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from corral.llm import CustomMessage
from corral.orchestration.errors import InvalidRequestError, OrchestrationError, TargetNotFoundError
from corral.orchestration.kernel import Caller, deliver_message
from corral.orchestration.teams import texts
from corral.orchestration.teams.messages.records import TEAM_MESSAGE_TYPE
from corral.orchestration.teams.notices import MessageArrived
from corral.orchestration.teams.results import InboxResult, MessageSent
from corral.orchestration.teams.roster.records import TEAM_LEAD, team_name

if TYPE_CHECKING:
    from corral.orchestration.teams._member import MemberRun
    from corral.orchestration.teams._plans import TeamContext, _Prepared
    from corral.orchestration.teams.commands import ReadInboxRequest, SendMessageRequest
    from corral.orchestration.teams.messages.records import TeamMessageRecord

__all__ = ["TeamMessages"]


class TeamMessages:
    """Messages between the lead and its agents, and corral's notices to the lead (one per `Teams`).

    Args:
        context: What the teams services share.
    """

    def __init__(self, context: TeamContext) -> None:
        self.context = context
        self.host = context.host
        self.repos = context.repos

    def notify_lead(self, lead_session_id: str, text: str) -> None:
        """Send the lead a message from corral itself (stored, then delivered once)."""
        with contextlib.suppress(OrchestrationError):
            self.repos.messages.add_team_message(
                lead_session_id,
                recipient=TEAM_LEAD,
                sender="corral",
                sender_run_id=None,
                content=text,
                summary="Notice",
                delivery="inbox",
            )
            self.host.spawn_background(self.deliver_lead_messages(lead_session_id))

    def notify_requester(self, prepared: _Prepared, text: str) -> None:
        """Tell whoever asked for a spawn that it failed (the writer for a helper, else the lead)."""
        parent = prepared.parent
        if parent is not None and parent.inject(texts.parent_notice(text)):
            return
        self.notify_lead(prepared.lead_session_id, text)

    async def deliver_lead_messages(self, lead_session_id: str) -> None:
        """Bring every undelivered `team-lead` message into the lead's session, once each."""
        lead = self.host.runs.owner(lead_session_id)
        if lead is None:
            return
        for message in self.repos.messages.undelivered_lead_messages(lead_session_id):
            entry_id = await deliver_message(
                lead, _lead_message(message), key="message_id", value=message.message_id
            )
            self.repos.messages.mark_lead_message_delivered(message.message_id, entry_id=entry_id)
        self.host.changed()

    # --- messaging -------------------------------------------------------------------------------

    async def send_message(
        self, sender: Caller | MemberRun, request: SendMessageRequest, *, message_id: str | None = None
    ) -> MessageSent:
        """`send_message`: steer a live recipient, or store the message for the lead.

        `message_id` makes it idempotent (a Ray member's call, applied again by a host that
        restarted): a message of that id already stored is answered as sent, nothing is repeated.
        """
        repos = self.repos
        if message_id is not None and (stored := repos.messages.team_message(message_id)) is not None:
            return MessageSent(stored.recipient, team_name(stored.lead_session_id), stored.delivery)
        if isinstance(sender, Caller):
            lead = self.context.lead_id(sender)
            sender_name, sender_run = TEAM_LEAD, None
            if request.recipient is None:
                raise InvalidRequestError("recipient is required when the lead sends a message.")
            recipient = request.recipient
        else:
            lead = sender.member.lead_session_id
            sender_name, sender_run = sender.label, sender.run_id
            recipient = request.recipient or TEAM_LEAD
        team = team_name(lead)
        if recipient == TEAM_LEAD:
            if sender_name == TEAM_LEAD:
                raise InvalidRequestError("The lead cannot message itself; name an agent as recipient.")
            repos.messages.add_team_message(
                lead,
                recipient=TEAM_LEAD,
                sender=sender_name,
                sender_run_id=sender_run,
                content=request.content,
                summary=request.summary,
                delivery="inbox",
                message_id=message_id,
            )
            self.host.spawn_background(self.deliver_lead_messages(lead))
            return MessageSent(TEAM_LEAD, team, "inbox")
        member = repos.roster.live_team_member(lead, recipient)
        if member is None or member.fence != "none":
            raise TargetNotFoundError(f"Cannot send message to {recipient}: agent is not running.")
        child = self.context.child(member.run_id)
        direct = child is not None and child.messages_open and not child.ended
        text = texts.member_message(MessageArrived(sender_name, request.summary, request.content))
        repos.messages.add_team_message(
            lead,
            recipient=recipient,
            sender=sender_name,
            sender_run_id=sender_run,
            content=request.content,
            summary=request.summary,
            delivery="active-session" if direct else "inbox",
            expected_run_id=member.run_id,
            message_id=message_id,
        )
        if direct and child is not None and not child.inject(text):
            direct = False
        return MessageSent(recipient, team, "active-session" if direct else "inbox")

    async def read_inbox(self, reader: Caller | MemberRun, request: ReadInboxRequest) -> InboxResult:
        """`read_inbox`: the reader's messages (the lead may name an agent's inbox)."""
        if isinstance(reader, Caller):
            lead = self.context.lead_id(reader)
            target = request.agent_name or TEAM_LEAD
        else:
            lead = reader.member.lead_session_id
            target = reader.label
        messages = self.repos.messages.read_team_inbox(
            lead, target, unread_only=request.unread_only, mark_as_read=request.mark_as_read
        )
        return InboxResult(
            target, request.unread_only, tuple(messages), team_name(lead), request.mark_as_read
        )


def _lead_message(message: TeamMessageRecord) -> CustomMessage:
    text = texts.lead_message(MessageArrived(message.sender, message.summary, message.content))
    return CustomMessage(
        custom_type=TEAM_MESSAGE_TYPE,
        content=text,
        display=False,
        details={"message_id": message.message_id, "from": message.sender, "summary": message.summary},
    )
