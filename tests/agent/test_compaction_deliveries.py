"""Messages delivered while the session compacts: held, then applied once the compaction ends.

A managed agent's result reaches its owner through `send_custom_message` (`steer` with
`trigger_turn`, or `context`) and the delivery waits for that message's `message_end`. A
delivery that lands during a compaction must neither wait forever nor be lost: once the
compaction ends (done, failed or aborted) it is appended exactly once and, when it asked for a
turn, the owner answers it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from corral.agent import AgentSession, CompactionError, MessageEndEvent
from corral.llm import CustomMessage, Usage
from corral.session import CustomMessageEntry
from corral.settings import Settings

from .helpers import Fail, Gated, Harness, PlannedModel, Recorder, Reply, wait

KEEP_TURN = Settings.model_validate({"compaction": {"reserve_tokens": 1000, "keep_recent_tokens": 300}})
"""Keeps the last question and answer whole: one summary request per compaction."""
LONG = "word " * 200
OVERFLOW = "prompt is too long: 250000 tokens > 200000 maximum"


def _usage(total: int) -> Usage:
    return Usage(input=total - 10, output=10, total_tokens=total)


async def _history(agent: AgentSession, model: PlannedModel, prompts: int) -> None:
    for i in range(prompts):
        model.plan.insert(0, Reply(f"answer {i} {LONG}", usage=_usage(300 + i)))
        await wait(agent.prompt(f"question {i} {LONG}"))


def _result(name: str = "scout") -> CustomMessage:
    return CustomMessage(
        custom_type="corral-agent-result",
        content=f"Agent result · agent={name} · status=completed\n\nfound it",
        display=True,
        details={"request_id": f"req-{name}"},
    )


def _persisted(agent: AgentSession, message: CustomMessage) -> asyncio.Future[None]:
    """Resolves at the `message_end` of exactly this message (what the delivery routine awaits)."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def listener(event: Any) -> None:
        if isinstance(event, MessageEndEvent) and event.message is message and not done.done():
            done.set_result(None)

    agent.subscribe(listener)
    return done


def _entries(agent: AgentSession, message: CustomMessage) -> list[CustomMessageEntry]:
    return [
        e
        for e in agent.session.entries
        if isinstance(e, CustomMessageEntry)
        and e.custom_type == message.custom_type
        and e.details == message.details
    ]


def _sent_last(model: PlannedModel, message: CustomMessage) -> bool:
    """Whether the model's newest request carried the message."""
    assert isinstance(message.content, str)
    return any(message.content in text for text in model.requests[-1].texts())


def _settled(rec: Recorder) -> int:
    return rec.types().count("agent_settled")


async def _until_settled(rec: Recorder, count: int) -> None:
    while _settled(rec) < count:
        await asyncio.sleep(0)


async def _assert_answered(
    agent: AgentSession, model: PlannedModel, rec: Recorder, message: CustomMessage, settled: int
) -> None:
    """The message is persisted once, after the compaction, and the owner's next request answers it."""
    await wait(_until_settled(rec, settled + 1))
    assert agent.is_idle and agent.pending_message_count == 0
    entries = _entries(agent, message)
    assert len(entries) == 1
    types = [e.type for e in agent.session.entries]
    assert types.index("custom_message") > max(
        (i for i, t in enumerate(types) if t == "compaction"), default=-1
    )
    assert _sent_last(model, message)
    assert agent.last_assistant_text() == "answered the result"
    assert message in agent.messages


async def _held_compaction(
    harness: Harness, summary: Reply | Fail
) -> tuple[AgentSession, PlannedModel, Recorder, Gated]:
    model = PlannedModel(context_window=10_000)
    agent, rec = harness.agent(model, settings=KEEP_TURN)
    await _history(agent, model, 3)
    gate = Gated(summary)
    model.plan = [gate, Reply("answered the result")]
    return agent, model, rec, gate


@pytest.mark.parametrize("ends", ["done", "failed", "aborted"])
async def test_a_result_delivered_during_a_manual_compaction_wakes_the_owner_once_it_ends(
    harness: Harness, ends: str
) -> None:
    """Whether the compaction succeeds, fails or is aborted, the result held meanwhile is delivered
    once it ends, and the owner answers it."""
    summary = {"done": Reply("## Goal\nthe summary"), "failed": Fail("summary request failed")}
    agent, model, rec, gate = await _held_compaction(harness, summary.get(ends, Reply("never sent")))
    compaction = asyncio.create_task(agent.compact())
    await wait(gate.started.wait())
    assert agent.is_compacting
    message = _result()
    persisted = _persisted(agent, message)
    settled = _settled(rec)
    agent.send_custom_message(message, deliver_as="steer", trigger_turn=True)
    assert _entries(agent, message) == []  # not appended into the context being summarised
    if ends == "aborted":
        await wait(agent.abort())
    else:
        gate.release.set()
    if ends == "done":
        entry = await wait(compaction)
        assert entry.summary.startswith("## Goal\nthe summary")
    else:
        with pytest.raises(CompactionError, match="aborted" if ends == "aborted" else None):
            await wait(compaction)
    await wait(persisted)
    await _assert_answered(agent, model, rec, message, settled)
    if ends == "done":
        assert agent.messages[0].role == "compactionSummary"


async def test_deliveries_without_a_turn_during_a_manual_compaction_are_appended_after_it(
    harness: Harness,
) -> None:
    """`context` deliveries (a swarm's early reports) and a program lead's deliveries (no turn)."""
    agent, model, _, gate = await _held_compaction(harness, Reply("## Goal\nthe summary"))
    model.plan = [gate]
    compaction = asyncio.create_task(agent.compact())
    await wait(gate.started.wait())
    early, later = _result("early"), _result("later")
    persisted = [_persisted(agent, early), _persisted(agent, later)]
    agent.send_custom_message(early, deliver_as="context")
    agent.send_custom_message(later, deliver_as="steer")
    requests = len(model.requests)
    gate.release.set()
    await wait(compaction)
    await wait(asyncio.gather(*persisted))
    assert agent.is_idle and agent.pending_message_count == 0
    assert len(model.requests) == requests  # no model request of their own
    assert len(_entries(agent, early)) == 1 and len(_entries(agent, later)) == 1
    assert agent.messages[-2:] == [early, later]


async def _result_during_compaction_in_a_run(
    harness: Harness, first: Reply | Fail, summary: Reply | Fail
) -> tuple[AgentSession, PlannedModel, Recorder, CustomMessage]:
    """A run whose reply `first` makes it compact (summary `summary`); a result delivered while the
    summary request is held. Returns once the run ended and the result was persisted."""
    model = PlannedModel(context_window=10_000)
    agent, rec = harness.agent(model, settings=KEEP_TURN)
    await _history(agent, model, 2)
    gate = Gated(summary)
    model.plan = [first, gate, Reply("answered the result")]
    run = asyncio.create_task(agent.prompt("one more"))
    await wait(gate.started.wait())
    message = _result()
    persisted = _persisted(agent, message)
    agent.send_custom_message(message, deliver_as="steer", trigger_turn=True)
    gate.release.set()
    await wait(run)
    await wait(persisted)
    return agent, model, rec, message


async def test_a_result_delivered_during_a_failed_overflow_compaction_still_gets_its_turn(
    harness: Harness,
) -> None:
    agent, model, rec, message = await _result_during_compaction_in_a_run(
        harness, Fail(OVERFLOW), Fail("summary request failed")
    )
    assert rec.of("compaction_end")[-1].error_message is not None
    assert agent.is_idle and agent.pending_message_count == 0
    assert len(_entries(agent, message)) == 1
    assert _sent_last(model, message)
    assert agent.last_assistant_text() == "answered the result"


async def test_a_result_delivered_during_a_threshold_compaction_gets_its_turn(harness: Harness) -> None:
    agent, model, rec, message = await _result_during_compaction_in_a_run(
        harness, Reply("big", usage=_usage(9_500)), Reply("the summary")
    )
    assert [e.reason for e in rec.of("compaction_end")] == ["threshold"]
    assert rec.of("compaction_end")[0].result is not None
    assert len(_entries(agent, message)) == 1
    assert _sent_last(model, message)
    assert agent.last_assistant_text() == "answered the result"
