"""Messages delivered while the session compacts: held, then applied once the compaction ends.

A managed agent's result reaches its owner through `send_custom_message` (`steer` with
`trigger_turn`, or `context`) and the delivery waits for that message's `message_end`. A
delivery that lands during a compaction must neither wait forever nor be lost: once the
compaction ends (done, failed or aborted) it is appended exactly once and, when it asked for a
turn, the owner answers it.
"""

from __future__ import annotations

import asyncio

import pytest

from corral.agent import AgentSession, CompactionError
from corral.llm import CustomMessage
from tests._waits import eventually

from ._deliveries import (
    KEEP_TURN,
    OVERFLOW,
    agent_result,
    entries_of,
    held_compaction,
    history,
    on_persisted,
    sent_last,
    usage_of,
)
from .helpers import Fail, Gated, Harness, PlannedModel, Recorder, Reply, wait


def _settled(rec: Recorder) -> int:
    return rec.types().count("agent_settled")


async def _assert_answered(
    agent: AgentSession, model: PlannedModel, rec: Recorder, message: CustomMessage, settled: int
) -> None:
    """The message is persisted once, after the compaction, and the owner's next request answers it."""
    await eventually(lambda: _settled(rec) > settled)
    assert agent.is_idle and agent.pending_message_count == 0
    entries = entries_of(agent, message)
    assert len(entries) == 1
    types = [e.type for e in agent.session.entries]
    assert types.index("custom_message") > max(
        (i for i, t in enumerate(types) if t == "compaction"), default=-1
    )
    assert sent_last(model, message)
    assert agent.last_assistant_text() == "answered the result"
    assert message in agent.messages


@pytest.mark.parametrize("ends", ["done", "failed", "aborted"])
async def test_a_result_delivered_during_a_manual_compaction_wakes_the_owner_once_it_ends(
    harness: Harness, ends: str
) -> None:
    """Whether the compaction succeeds, fails or is aborted, the result held meanwhile is delivered
    once it ends, and the owner answers it."""
    summary = {"done": Reply("## Goal\nthe summary"), "failed": Fail("summary request failed")}
    agent, model, rec, gate = await held_compaction(harness, summary.get(ends, Reply("never sent")))
    compaction = asyncio.create_task(agent.compact())
    await wait(gate.started.wait())
    assert agent.is_compacting
    message = agent_result()
    persisted = on_persisted(agent, message)
    settled = _settled(rec)
    agent.send_custom_message(message, deliver_as="steer", trigger_turn=True)
    assert entries_of(agent, message) == []  # not appended into the context being summarised
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
    agent, model, _, gate = await held_compaction(harness, Reply("## Goal\nthe summary"))
    model.plan = [gate]
    compaction = asyncio.create_task(agent.compact())
    await wait(gate.started.wait())
    early, later = agent_result("early"), agent_result("later")
    persisted = [on_persisted(agent, early), on_persisted(agent, later)]
    agent.send_custom_message(early, deliver_as="context")
    agent.send_custom_message(later, deliver_as="steer")
    requests = len(model.requests)
    gate.release.set()
    await wait(compaction)
    await wait(asyncio.gather(*persisted))
    assert agent.is_idle and agent.pending_message_count == 0
    assert len(model.requests) == requests  # no model request of their own
    assert len(entries_of(agent, early)) == 1 and len(entries_of(agent, later)) == 1
    assert agent.messages[-2:] == [early, later]


async def _result_during_compaction_in_a_run(
    harness: Harness, first: Reply | Fail, summary: Reply | Fail
) -> tuple[AgentSession, PlannedModel, Recorder, CustomMessage]:
    """A run whose reply `first` makes it compact (summary `summary`); a result delivered while the
    summary request is held. Returns once the run ended and the result was persisted."""
    model = PlannedModel(context_window=10_000)
    agent, rec = harness.agent(model, settings=KEEP_TURN)
    await history(agent, model, 2)
    gate = Gated(summary)
    model.plan = [first, gate, Reply("answered the result")]
    run = asyncio.create_task(agent.prompt("one more"))
    await wait(gate.started.wait())
    message = agent_result()
    persisted = on_persisted(agent, message)
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
    assert len(entries_of(agent, message)) == 1
    assert sent_last(model, message)
    assert agent.last_assistant_text() == "answered the result"


async def test_a_result_delivered_during_a_threshold_compaction_gets_its_turn(harness: Harness) -> None:
    agent, model, rec, message = await _result_during_compaction_in_a_run(
        harness, Reply("big", usage=usage_of(9_500)), Reply("the summary")
    )
    assert [e.reason for e in rec.of("compaction_end")] == ["threshold"]
    assert rec.of("compaction_end")[0].result is not None
    assert len(entries_of(agent, message)) == 1
    assert sent_last(model, message)
    assert agent.last_assistant_text() == "answered the result"
