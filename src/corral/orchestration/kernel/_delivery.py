"""Exactly-once delivery of results and questions into an owner's session.

The routine is the same for live completion and for restart recovery:

1. If the owner's session already holds a `corral-agent-result` entry whose
   `details.request_id` is this request, nothing is appended (a previous
   host got that far before it died).
2. Otherwise the result message is sent to the owner (`deliver_as="steer"`,
   `trigger_turn=True`: it wakes an idle owner and is queued as steering for a
   busy one) and the routine waits until the loop persisted it (`message_end`
   of that exact message); the owner's file is flushed if it was not written
   yet.
3. Only then is the result marked delivered in the store, with the entry id.

A result message reaches the owner's model in full once: its `details.context_reference` (the
`texts.result_reference`, when shorter than the text) stands in for it in every
request after the one the model replied to (`corral.agent._loop`); the session keeps the full text.

Cleanup (finalizing the generation) is the host's, and only after step 3.
Questions (`corral-agent-ask`) use the same steps keyed by `ask_id`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from corral.agent import SEEN_REFERENCE_KEY, AgentSession, MessageEndEvent
from corral.llm import CustomMessage
from corral.orchestration.kernel import texts
from corral.orchestration.kernel._faults import fault_point
from corral.orchestration.kernel._generations import Generations
from corral.orchestration.kernel.notices import AskPending, ResultReady
from corral.orchestration.kernel.records import AskRecord, GenerationRecord, ResultRecord
from corral.session import CustomMessageEntry, SessionManager

__all__ = [
    "ASK_TYPE",
    "RESULT_HEAD_BYTES",
    "RESULT_HEAD_LINES",
    "RESULT_TYPE",
    "ask_message",
    "deliver_message",
    "find_delivered",
    "result_message",
]

RESULT_TYPE = "corral-agent-result"
ASK_TYPE = "corral-agent-ask"
RESULT_HEAD_LINES = 2000
RESULT_HEAD_BYTES = 50 * 1024


def find_delivered(session: SessionManager, custom_type: str, key: str, value: str) -> str | None:
    """The id of the owner's entry of `custom_type` whose `details[key] == value`, if any."""
    for entry in session.entries:
        if (
            isinstance(entry, CustomMessageEntry)
            and entry.custom_type == custom_type
            and isinstance(entry.details, dict)
            and entry.details.get(key) == value
        ):
            return entry.id
    return None


def _head(text: str) -> tuple[str, bool]:
    lines = text.split("\n")
    truncated = len(lines) > RESULT_HEAD_LINES
    text = "\n".join(lines[:RESULT_HEAD_LINES])
    data = text.encode("utf-8")
    if len(data) > RESULT_HEAD_BYTES:
        text = data[:RESULT_HEAD_BYTES].decode("utf-8", errors="ignore")
        truncated = True
    return text, truncated


def result_message(
    generation: GenerationRecord,
    result: ResultRecord,
    text: str | None,
    *,
    retired: bool = False,
    extra: Mapping[str, object] | None = None,
) -> CustomMessage:
    """The `corral-agent-result` message for a durable result (its content: `texts.result_text`)."""
    ref = f"result:{result.request_id}"
    body = text if result.status == "completed" and text else (result.error_message or None)
    shown, truncated = _head(body) if body is not None else (None, False)
    fact = ResultReady(generation, result, shown, truncated, retired)
    content = texts.result_text(fact)
    details: dict[str, Any] = {
        "run_id": generation.run_id,
        "request_id": result.request_id,
        "owner_session_id": result.owner_session_id,
        "agent": generation.label,
        "definition": generation.definition,
        "session_id": generation.session_id,
        "session_path": generation.session_path,
        "cwd": generation.cwd,
        "status": result.status,
        "elapsed_ms": max(0, result.created_at - generation.created_at),
        "context_usage": None if result.context_tokens is None else {"tokens": result.context_tokens},
        "truncated": truncated,
        "result_ref": ref,
    }
    if extra:
        details.update({k: v for k, v in extra.items() if k not in details})
    reference = texts.result_reference(fact)
    if len(reference) < len(content):
        # sent in full until the owner's model replied after it once, then this stands in its place
        details[SEEN_REFERENCE_KEY] = reference
    return CustomMessage(custom_type=RESULT_TYPE, content=content, display=True, details=details)


def ask_message(generation: GenerationRecord, ask: AskRecord) -> CustomMessage:
    """The `corral-agent-ask` message for a pending question (its content: `texts.ask_text`)."""
    text = texts.ask_text(AskPending(generation, ask))
    details = {
        "ask_id": ask.ask_id,
        "question": ask.question,
        "request_id": ask.request_id,
        "run_id": generation.run_id,
        "agent": generation.label,
        "session_id": generation.session_id,
        "pane_id": generation.pane_id,
    }
    return CustomMessage(custom_type=ASK_TYPE, content=text, display=True, details=details)


async def deliver_message(
    owner: AgentSession, message: CustomMessage, *, key: str, value: str, wake: bool = True
) -> str:
    """Append `message` to the owner's session once and return its entry id (steps 1–2 above).

    `wake=False` delivers it without a model request of its own (`deliver_as="context"`): an idle
    owner gets it in its context at once, a busy one at its next turn boundary or when its run ends.
    """
    session = owner.session
    existing = find_delivered(session, message.custom_type, key, value)
    if existing is not None:
        return existing
    persisted: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def listener(event: object) -> None:
        if isinstance(event, MessageEndEvent) and event.message is message and not persisted.done():
            persisted.set_result(None)

    unsubscribe = owner.subscribe(listener)
    try:
        if wake:
            owner.send_custom_message(message, deliver_as="steer", trigger_turn=True)
        else:
            owner.send_custom_message(message, deliver_as="context")
        await persisted
    finally:
        unsubscribe()
    if not session.is_persisted:
        session.flush()
    entry_id = find_delivered(session, message.custom_type, key, value)
    if entry_id is None:  # pragma: no cover - the loop appends before message_end
        raise RuntimeError(f"the {message.custom_type} entry for {value} is missing after delivery")
    return entry_id


async def deliver_result(
    kernel: Generations,
    owner: AgentSession,
    generation: GenerationRecord,
    result: ResultRecord,
    *,
    retired: bool,
    extra: Mapping[str, object] | None = None,
    finalize: bool = False,
) -> str:
    """Deliver a durable result exactly once and mark it delivered; returns the entry id.

    `extra` adds a feature's fields to the message's details (an isolated writer's branch);
    `finalize` (the run has ended) finalizes the generation in the same commit as the mark.
    """
    text = kernel.result_text(result)
    message = result_message(generation, result, text, retired=retired, extra=extra)
    entry_id = await deliver_message(owner, message, key="request_id", value=result.request_id)
    fault_point("after_owner_append")
    kernel.mark_delivered(
        result.request_id, owner_session_id=result.owner_session_id, entry_id=entry_id, finalize=finalize
    )
    return entry_id


async def deliver_ask(
    kernel: Generations,
    owner: AgentSession,
    generation: GenerationRecord,
    ask: AskRecord,
) -> str:
    """Deliver a pending question exactly once and record the entry; returns the entry id."""
    message = ask_message(generation, ask)
    entry_id = await deliver_message(owner, message, key="ask_id", value=ask.ask_id)
    kernel.mark_ask_delivered(ask.ask_id, owner_session_id=generation.owner_session_id, entry_id=entry_id)
    return entry_id
