"""Deliveries to an agent in the middle of its work: a result message, the future of its
`message_end` (what the delivery routine awaits), its entries, and a manual compaction held at its
summary request (for the compaction-delivery tests here and in `tests/orchestration/kernel`)."""

from __future__ import annotations

import asyncio
from typing import Any

from corral.agent import AgentSession, MessageEndEvent
from corral.llm import CustomMessage, Usage
from corral.session import CustomMessageEntry
from corral.settings import Settings

from .helpers import Fail, Gated, Harness, PlannedModel, Recorder, Reply, wait

KEEP_TURN = Settings.model_validate({"compaction": {"reserve_tokens": 1000, "keep_recent_tokens": 300}})
"""Keeps the last question and answer whole: one summary request per compaction."""
LONG = "word " * 200
OVERFLOW = "prompt is too long: 250000 tokens > 200000 maximum"


def usage_of(total: int) -> Usage:
    return Usage(input=total - 10, output=10, total_tokens=total)


async def history(agent: AgentSession, model: PlannedModel, prompts: int) -> None:
    """`prompts` long question-and-answer turns (enough to compact under `KEEP_TURN`)."""
    for i in range(prompts):
        model.plan.insert(0, Reply(f"answer {i} {LONG}", usage=usage_of(300 + i)))
        await wait(agent.prompt(f"question {i} {LONG}"))


def agent_result(name: str = "scout") -> CustomMessage:
    return CustomMessage(
        custom_type="corral-agent-result",
        content=f"Agent result · agent={name} · status=completed\n\nfound it",
        display=True,
        details={"request_id": f"req-{name}"},
    )


def on_persisted(agent: AgentSession, message: CustomMessage) -> asyncio.Future[None]:
    """Resolves at the `message_end` of exactly this message (what the delivery routine awaits)."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def listener(event: Any) -> None:
        if isinstance(event, MessageEndEvent) and event.message is message and not done.done():
            done.set_result(None)

    agent.subscribe(listener)
    return done


def entries_of(agent: AgentSession, message: CustomMessage) -> list[CustomMessageEntry]:
    """The session's entries of `message` (its type and details)."""
    return [
        e
        for e in agent.session.entries
        if isinstance(e, CustomMessageEntry)
        and e.custom_type == message.custom_type
        and e.details == message.details
    ]


def sent_last(model: PlannedModel, message: CustomMessage) -> bool:
    """Whether the model's newest request carried the message."""
    assert isinstance(message.content, str)
    return any(message.content in text for text in model.requests[-1].texts())


async def held_compaction(
    harness: Harness, summary: Reply | Fail
) -> tuple[AgentSession, PlannedModel, Recorder, Gated]:
    """An agent with three long turns behind it whose next summary request (answered `summary`)
    waits for its gate; the request after it answers "answered the result"."""
    model = PlannedModel(context_window=10_000)
    agent, rec = harness.agent(model, settings=KEEP_TURN)
    await history(agent, model, 3)
    gate = Gated(summary)
    model.plan = [gate, Reply("answered the result")]
    return agent, model, rec, gate
