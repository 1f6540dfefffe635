"""Deliveries queued during a run are never taken back as text nor left behind.

A managed agent's result (a custom message) reaches its owner through `send_custom_message`, and
the delivery waits for that message's `message_end`. Escape (`clear_queue`) takes back only what the
user typed; a run that ends early — aborted, told to end after its tools — appends the deliveries
still queued, without a request of their own, so no sender waits forever and none is lost.
"""

from __future__ import annotations

import asyncio
from typing import Any

from corral.agent import AgentSession

from ._deliveries import agent_result, entries_of, on_persisted, sent_last
from .helpers import Gated, Harness, PlannedModel, Reply, wait


async def _mid_request(
    harness: Harness, first: str, *later: Reply
) -> tuple[AgentSession, PlannedModel, Gated, asyncio.Task[Any]]:
    """An agent whose first request (answered `first` once released) is in flight; `later` answers after."""
    model = PlannedModel()
    agent, _rec = harness.agent(model)
    gate = Gated(Reply(first))
    model.plan = [gate, *later]
    run = asyncio.create_task(agent.prompt("work on it"))
    await wait(gate.started.wait())
    return agent, model, gate, run


async def test_escape_takes_back_what_was_typed_and_the_result_still_reaches_the_owner(
    harness: Harness,
) -> None:
    agent, model, gate, run = await _mid_request(harness, "first answer", Reply("answered the result"))
    result = agent_result()
    persisted = on_persisted(agent, result)
    agent.steer("also check the tests")
    agent.send_custom_message(result, deliver_as="steer", trigger_turn=True)
    steering, follow_up = agent.clear_queue()
    assert (steering, follow_up) == (["also check the tests"], [])  # the result is not text to retype
    gate.release.set()
    await wait(persisted)
    await wait(run)
    await wait(agent.wait_for_idle())
    assert len(entries_of(agent, result)) == 1
    assert sent_last(model, result)  # the owner's next request carried it
    assert agent.last_assistant_text() == "answered the result"


async def test_a_result_queued_when_the_run_is_aborted_is_appended_once_without_a_request(
    harness: Harness,
) -> None:
    agent, model, _gate, run = await _mid_request(harness, "never sent")
    result = agent_result()
    persisted = on_persisted(agent, result)
    agent.send_custom_message(result, deliver_as="steer", trigger_turn=True)
    agent.follow_up("and then this")
    await wait(agent.abort())
    await wait(persisted)  # before this fix the delivery waited for a turn that never came
    await wait(run)
    assert len(entries_of(agent, result)) == 1 and result in agent.messages
    assert len(model.requests) == 1  # no request for it: the user stopped the agent
    assert agent.is_idle and agent.clear_queue() == ([], ["and then this"])  # typed messages are kept


async def test_a_result_queued_when_the_run_ends_after_its_tools_is_appended_once(harness: Harness) -> None:
    agent, model, gate, run = await _mid_request(harness, "my final answer", Reply("never sent"))
    result = agent_result("helper")
    persisted = on_persisted(agent, result)
    agent.send_custom_message(result, deliver_as="steer", trigger_turn=True)
    agent.steer("typed meanwhile")
    agent.end_after_tools()
    gate.release.set()
    await wait(persisted)
    await wait(run)
    assert len(entries_of(agent, result)) == 1
    assert len(model.requests) == 1 and agent.pending_message_count == 0
