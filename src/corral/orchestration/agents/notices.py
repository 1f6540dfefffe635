"""What the `agent` core words in a message it builds, and the port that words it.

A message that comes with files (a task, a steer or an interrupt, a reply, a question) is the file
blocks followed by its text under a heading (`<heading>:` on a line of its own; the layout and the
payload limit are `kernel/_files.py`'s). The core names the kind of message (`MessageHeading`);
`AgentNotices` words its heading. The default words are the surfaces'
(`corral.orchestration.surfaces._agent_notices.AgentNoticeText`); the composition root hands them to
the `Controller` (`corral.lead._host.ComposedHost`) and to `OwnerQuestions` in the tmux and Ray workers.
The core holds no model-facing prose for these headings and never imports a surface.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from corral.orchestration.kernel._files import MessageHeading

__all__ = ["AgentNotices"]


class AgentNotices(Protocol):
    """Words for what the `agent` core puts in a message: one method per fact."""

    def heading(self, kind: MessageHeading) -> str:
        """The heading a message's text goes under when files come with it."""
        ...
