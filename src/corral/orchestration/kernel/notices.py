"""What the kernel tells a model, as typed facts (their words are `texts.py`'s).

The kernel decides *that* an agent whose context is compacted at its threshold is told its session
is retired (`ManagedChild`, with `contextRetirement`: a `ContextRetired`), and the host delivers a
durable result (`ResultReady`) and a pending question (`AskPending`) to the owner (`_delivery.py`,
which keeps their details and the exactly-once delivery).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.orchestration.kernel.records import AskRecord, GenerationRecord, ResultRecord

__all__ = ["AskPending", "ContextRetired", "ResultReady"]


@dataclass(frozen=True, slots=True)
class ContextRetired:
    """An agent's context was compacted at its threshold: its session is retired and it must hand off."""

    run_id: str
    """The generation whose session is retired."""
    session_id: str
    """The retired session."""


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
