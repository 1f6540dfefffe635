"""The TUI's widgets."""

from ._chat import (
    AgentAskCard,
    AgentResultCard,
    AssistantCard,
    BashCard,
    ChatLog,
    NoticeCard,
    TeamMessageCard,
    TeamReportCard,
    ThinkingBlock,
    ToolCard,
    UserCard,
)
from ._editor import Editor
from ._status import ActivityCard, StatusFooter

__all__ = [
    "ActivityCard",
    "AgentAskCard",
    "AgentResultCard",
    "AssistantCard",
    "BashCard",
    "ChatLog",
    "Editor",
    "NoticeCard",
    "StatusFooter",
    "TeamMessageCard",
    "TeamReportCard",
    "ThinkingBlock",
    "ToolCard",
    "UserCard",
]
