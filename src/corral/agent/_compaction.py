"""The summarisation request of a compaction.

`corral.session` decides what to summarise (`prepare_compaction`: the cut
point, the messages before it, a split turn's prefix, the previous summary and
the file operations). This module asks the session's current model for the
summary, the way Pi does:

* system prompt `SUMMARIZATION_SYSTEM_PROMPT`; one user message holding
  `<conversation>…</conversation>` (from `serialize_conversation`), then the
  `<previous-summary>` when there is one, then `SUMMARIZATION_PROMPT` (or
  `UPDATE_SUMMARIZATION_PROMPT` when updating) and `Additional focus: …`;
* `max_tokens` 0.8 × `reserve_tokens`, thinking `high` on reasoning models;
* a split turn's prefix is summarised in parallel with
  `TURN_PREFIX_SUMMARIZATION_PROMPT` and 0.5 × `reserve_tokens`, and appended
  under `**Turn Context (split turn):**`;
* finally the `<read-files>`/`<modified-files>` blocks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from corral.llm import (
    AgentMessage,
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    LlmContext,
    Model,
    StreamOptions,
    ThinkingLevel,
    Usage,
    UserMessage,
    clamp_thinking_level,
)
from corral.session import (
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    CompactionPreparation,
    build_summarization_request,
    convert_to_llm,
    format_file_operations,
    merge_split_turn_summary,
    serialize_conversation,
)

from ._errors import CompactionError

__all__ = ["CompactionSummary", "summarize_compaction"]


@dataclass
class CompactionSummary:
    """The outcome of the summarisation request(s)."""

    summary: str
    """The full summary text (history, split-turn context, file blocks)."""
    details: dict[str, Any]
    """`{readFiles, modifiedFiles}` for the compaction entry."""
    usage: Usage
    """The summed usage of the summary requests."""
    responses: list[AssistantMessage]
    """The summariser's replies (the session tracks them as the model's latest responses)."""


async def _request(model: Model, prompt: str, *, options: StreamOptions) -> AssistantMessage:
    context = LlmContext(
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT, messages=[UserMessage(content=prompt)], tools=()
    )
    final: AssistantMessage | None = None
    async for event in model.stream(context, options):
        if isinstance(event, DoneEvent):
            final = event.message
        elif isinstance(event, ErrorEvent):
            final = event.error
    if final is None:
        raise CompactionError("Summarization failed: the model's stream ended without a reply")
    if final.stop_reason in ("error", "aborted"):
        raise CompactionError(f"Summarization failed: {final.error_message or final.stop_reason}")
    return final


def _conversation(messages: Sequence[AgentMessage]) -> str:
    return f"<conversation>\n{serialize_conversation(convert_to_llm(list(messages)))}\n</conversation>\n\n"


async def summarize_compaction(
    model: Model,
    preparation: CompactionPreparation,
    *,
    reserve_tokens: int,
    custom_instructions: str | None,
    options: StreamOptions,
) -> CompactionSummary:
    """Ask `model` for the summary of `preparation`.

    Args:
        model: The session's current model.
        preparation: What `prepare_compaction` chose to summarise.
        reserve_tokens: The compaction reserve; the summary caps derive from it.
        custom_instructions: Extra focus for the summary (`Additional focus: …`).
        options: Base request options (session id, agent name, cwd, previous response).

    Raises:
        CompactionError: a summary request failed.
    """
    thinking: ThinkingLevel = clamp_thinking_level(model.info, "high") if model.info.reasoning else "off"
    history_options = replace(options, thinking=thinking, max_tokens=max(1, int(0.8 * reserve_tokens)))
    prefix_options = replace(options, thinking="off", max_tokens=max(1, int(0.5 * reserve_tokens)))

    previous = preparation.previous_summary

    async def history() -> AssistantMessage | None:
        if not preparation.messages_to_summarize:
            return None
        text = build_summarization_request(
            convert_to_llm(list(preparation.messages_to_summarize)),
            previous_summary=previous,
            custom_instructions=custom_instructions,
        )
        return await _request(model, text, options=history_options)

    async def prefix() -> AssistantMessage | None:
        if not (preparation.is_split_turn and preparation.turn_prefix_messages):
            return None
        text = _conversation(preparation.turn_prefix_messages) + TURN_PREFIX_SUMMARIZATION_PROMPT
        return await _request(model, text, options=prefix_options)

    history_reply, prefix_reply = await asyncio.gather(history(), prefix())
    responses = [r for r in (history_reply, prefix_reply) if r is not None]

    if history_reply is not None:
        summary = history_reply.text.strip()
    else:
        summary = previous.strip() if previous else "No prior history."
    if prefix_reply is not None:
        summary = merge_split_turn_summary(summary, prefix_reply.text.strip())
    file_ops = preparation.file_ops
    summary += format_file_operations(file_ops.read, file_ops.modified)
    details: dict[str, Any] = dict(file_ops.details())

    usage = Usage()
    for reply in responses:
        usage = usage + reply.usage
    return CompactionSummary(summary=summary, details=details, usage=usage, responses=responses)
