"""What the `agent` core puts in a message, in corral's words (`AgentNoticeText`, the default
`AgentNotices`).

The core names the kind of message (`orchestration/agents/notices.py`); only this module words it.
Small on purpose: the composition root and the workers load it with every host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.orchestration.kernel._files import MessageHeading

__all__ = ["AgentNoticeText"]


class AgentNoticeText:
    """The `agent` core's headings in corral's words."""

    def heading(self, kind: MessageHeading) -> str:
        """The kind's own name: `Task`, `Steer`, `Interrupt`, `Reply`, `Question` or `Message`."""
        return kind
