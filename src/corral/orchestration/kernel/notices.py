"""What a managed child tells its own agent on the kernel's initiative, as typed facts, and the port
that words them.

The kernel decides *that* an agent whose context is compacted at its threshold is told its session
is retired (`ManagedChild`, with `contextRetirement`) and records the fact below; the child asks its
host for the words (`ChildHooks.context_retired`), and the host answers from its `ChildNotices`. The
default wording is the surfaces' (`corral.orchestration.surfaces._host_notices.HostNoticeText`); the
composition root hands it to the lead's host (`corral.lead._host.ComposedHost`) and to the tmux and Ray
workers' hooks. The kernel holds no model-facing prose for these notices and never imports a surface.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from corral.orchestration.kernel.records import AskRecord, GenerationRecord, ResultRecord

__all__ = ["AgentMessages", "AskPending", "ChildNotices", "ContextRetired", "ResultReady"]


@dataclass(frozen=True, slots=True)
class ContextRetired:
    """An agent's context was compacted at its threshold: its session is retired and it must hand off."""

    run_id: str
    """The generation whose session is retired."""
    session_id: str
    """The retired session."""


class ChildNotices(Protocol):
    """Words for a managed child's notices: one method per fact, each returning the model's text."""

    def context_retired(self, fact: ContextRetired) -> str:
        """The steer that tells the agent to finish its step and end with a self-contained handoff."""
        ...


@dataclass(frozen=True, slots=True)
class ResultReady:
    """A durable result is delivered to its owner (the `corral-agent-result` message's text)."""

    generation: GenerationRecord
    """The generation that produced it."""
    result: ResultRecord
    """The stored result (its status, request id and error message)."""
    shown: str | None
    """The head of the body the owner reads: the result's text when it completed with text, else its
    error message (`None` when it has none); cut at `RESULT_HEAD_LINES` / `RESULT_HEAD_BYTES`."""
    truncated: bool
    """Whether `shown` was cut (the full text is `result:<request id>` in `files`)."""
    retired: bool
    """Whether the agent's session was retired after context pressure (it must not be continued)."""


@dataclass(frozen=True, slots=True)
class AskPending:
    """A managed agent's question is delivered to its owner (the `corral-agent-ask` message's text)."""

    generation: GenerationRecord
    """The asking generation."""
    ask: AskRecord
    """The pending question."""


class AgentMessages(Protocol):
    """Words for the messages the host delivers to an owner: one method per fact.

    The first line of a result's text is a seed contract (`Agent result · agent=… · status=…`); a
    renderer that changes it breaks tools that read it.
    """

    def result_text(self, fact: ResultReady) -> str:
        """The `corral-agent-result` message's content."""
        ...

    def result_reference(self, fact: ResultReady) -> str:
        """What stands for a result in the owner's requests after its model replied to it once (short:
        the session keeps the full message; used only when shorter than `result_text`)."""
        ...

    def ask_text(self, fact: AskPending) -> str:
        """The `corral-agent-ask` message's content."""
        ...
