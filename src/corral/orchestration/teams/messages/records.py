"""Typed rows of the teams messages (table `team_messages`).

A message goes from the lead or a member to a member or to the lead (`team-lead`); corral's own
notices to the lead are messages from `corral`. Timestamps are Unix milliseconds (UTC).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["TEAM_MESSAGE_TYPE", "MessageDelivery", "TeamMessageRecord"]

TEAM_MESSAGE_TYPE = "corral-team-message"
"""`customType` of a message from a teams agent to the lead."""

MessageDelivery = Literal["active-session", "inbox"]
"""Whether a message was injected into the recipient's live session or waits in its inbox."""


@dataclass(frozen=True, slots=True)
class TeamMessageRecord:
    """A message between team members or to the lead (table `team_messages`)."""

    message_id: str
    """UUID of the message."""
    lead_session_id: str
    """The team's lead session id."""
    recipient: str
    """A member's name, or `team-lead`."""
    recipient_run_id: str | None
    """The recipient run the message was admitted for (`None` for the lead)."""
    sender: str
    """Sender name (`team-lead`, a member's name, or `corral` for notices)."""
    sender_run_id: str | None
    """The sending run, when the sender is a member."""
    content: str
    """Message text (non-blank)."""
    summary: str
    """Short label."""
    delivery: MessageDelivery
    """`active-session` (injected; stored read) or `inbox`."""
    created_at: int
    """When it was sent (ms)."""
    read_at: int | None
    """When it was read (or delivered into the lead's session), if it was."""
    delivered_entry_id: str | None
    """Entry id of the lead-session entry that delivered it (lead messages only)."""

    @property
    def read(self) -> bool:
        """Whether the message was read."""
        return self.read_at is not None
