"""The loop's event order, tool execution, queues and persistence, through `AgentSession`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from corral.agent import AgentBusyError, ToolError
from corral.llm import AssistantMessage, CustomMessage, ToolResultMessage, UserMessage, to_json_dict
from corral.session import SessionManager

from .helpers import EchoTool, FailingTool, GateTool, Hang, Harness, PlannedModel, Reply, wait


async def test_text_only_run_emits_pi_event_order(harness: Harness) -> None:
    agent, rec = harness.agent(PlannedModel([Reply("hello")]))
    await wait(agent.prompt("hi"))
    assert rec.types() == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_update",
        "message_update",
        "message_update",
        "message_end",
        "turn_end",
        "agent_end",
        "agent_settled",
    ]
    assert agent.last_assistant_text() == "hello"
    end = rec.of("agent_end")[0]
    assert [m.role for m in end.messages] == ["user", "assistant"]
    assert to_json_dict(end)["willRetry"] is False


async def test_tool_run_emits_tool_events_then_results_then_next_turn(harness: Harness) -> None:
    model = PlannedModel([Reply(calls=[("echo", {"text": "x"})]), Reply("done")])
    agent, rec = harness.agent(model, tools=[EchoTool()])
    await wait(agent.prompt("go"))
    assert [t for t in rec.types() if t != "message_update"] == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
        "agent_settled",
    ]
    turn_end = rec.of("turn_end")[0]
    assert [r.text for r in turn_end.tool_results] == ["x"]
    second = model.requests[1]
    assert second.texts() == ["go", "", "x"]
    assert isinstance(second.messages[2], ToolResultMessage)


async def test_event_json_uses_pi_names(harness: Harness) -> None:
    model = PlannedModel([Reply(calls=[("echo", {"text": "x"})]), Reply("done")])
    agent, rec = harness.agent(model, tools=[EchoTool()])
    await wait(agent.prompt("go"))
    start = to_json_dict(rec.of("tool_execution_start")[0])
    assert start == {
        "type": "tool_execution_start",
        "toolCallId": "call-1",
        "toolName": "echo",
        "args": {"text": "x"},
    }
    end = to_json_dict(rec.of("tool_execution_end")[0])
    assert end["isError"] is False and end["result"]["details"] == {"echoed": "x"}
    update = to_json_dict(rec.of("message_update")[0])
    assert (
        update["assistantMessageEvent"]["type"] == "text_start"
        or "toolcall" in update["assistantMessageEvent"]["type"]
    )
    assert to_json_dict(rec.of("agent_settled")[0]) == {"type": "agent_settled"}


async def test_unknown_tool_and_invalid_arguments_become_error_results(harness: Harness) -> None:
    model = PlannedModel(
        [
            Reply(calls=[("nope", {}), ("echo", {"times": "x"}), ("echo", {"text": "a", "times": "2"})]),
            Reply("ok"),
        ]
    )
    agent, rec = harness.agent(model, tools=[EchoTool()])
    await wait(agent.prompt("go"))
    results = rec.of("turn_end")[0].tool_results
    assert results[0].is_error and results[0].text == "Tool nope not found"
    assert results[1].is_error
    assert 'Validation failed for tool "echo"' in results[1].text
    assert "must have required property 'text'" in results[1].text
    assert "/times: must be integer" in results[1].text
    assert not results[2].is_error and results[2].text == "aa"


async def test_tool_exceptions_become_error_results_and_tool_error_keeps_details(harness: Harness) -> None:
    model = PlannedModel([Reply(calls=[("fail", {}), ("crash", {})]), Reply("ok")])
    tools = [
        FailingTool(ToolError("bad thing", details={"k": 1})),
        FailingTool(RuntimeError("boom"), "crash"),
    ]
    agent, rec = harness.agent(model, tools=tools)
    await wait(agent.prompt("go"))
    first, second = rec.of("turn_end")[0].tool_results
    assert first.is_error and first.text == "bad thing" and first.details == {"k": 1}
    assert second.is_error and second.text == "boom"
    assert [e.is_error for e in rec.of("tool_execution_end")] == [True, True]
    assert agent.last_assistant_text() == "ok"


async def test_parallel_tools_overlap_and_results_keep_call_order(harness: Harness) -> None:
    a, b = GateTool("a"), GateTool("b")
    model = PlannedModel([Reply(calls=[("a", {}), ("b", {})]), Reply("done")])
    agent, rec = harness.agent(model, tools=[a, b])
    task = asyncio.create_task(agent.prompt("go"))
    await wait(a.started.wait())
    await wait(b.started.wait())
    # Both run at once: release b first, so b ends before a.
    b.release.set()
    await wait(asyncio.sleep(0))
    while not rec.of("tool_execution_end"):
        await wait(asyncio.sleep(0))
    a.release.set()
    await wait(task)
    ends = [e.tool_name for e in rec.of("tool_execution_end")]
    assert ends == ["b", "a"]
    starts = [i for i, t in enumerate(rec.types()) if t == "tool_execution_start"]
    first_end = rec.types().index("tool_execution_end")
    assert all(i < first_end for i in starts)
    results = rec.of("turn_end")[0].tool_results
    assert [r.tool_name for r in results] == ["a", "b"]


async def test_steering_is_delivered_after_the_tool_batch_before_the_next_request(harness: Harness) -> None:
    gate = GateTool()
    model = PlannedModel([Reply(calls=[("gate", {}), ("echo", {"text": "e"})]), Reply("after steer")])
    agent, rec = harness.agent(model, tools=[gate, EchoTool()])
    task = asyncio.create_task(agent.prompt("go"))
    await wait(gate.started.wait())
    await agent.prompt("change course", streaming_behavior="steer")
    assert agent.pending_message_count == 1
    gate.release.set()
    await wait(task)
    second = model.requests[1]
    assert second.texts() == ["go", "", "gate done", "e", "change course"]
    results = rec.of("turn_end")[0].tool_results
    assert [r.is_error for r in results] == [False, False]
    updates = rec.of("queue_update")
    assert updates[0].steering == ["change course"] and updates[-1].steering == []


async def test_deliveries_queued_while_busy_reach_the_next_turn_together_user_messages_one_at_a_time(
    harness: Harness,
) -> None:
    gate = GateTool()
    replies = [Reply(calls=[("gate", {})]), Reply("took r1-r3 and u1"), Reply("took u2 and r4")]
    model = PlannedModel(replies)
    agent, _ = harness.agent(model, tools=[gate])
    assert agent.steering_mode == "one-at-a-time"
    task = asyncio.create_task(agent.prompt("go"))
    await wait(gate.started.wait())

    def report(name: str) -> CustomMessage:
        return CustomMessage(custom_type="report", content=f"full report {name}", display=False)

    for name in ("r1", "r2"):
        agent.send_custom_message(report(name), deliver_as="steer", trigger_turn=True)
    agent.steer("u1")
    agent.send_custom_message(report("r3"), deliver_as="steer", trigger_turn=True)
    agent.steer("u2")
    agent.send_custom_message(report("r4"), deliver_as="steer", trigger_turn=True)
    gate.release.set()
    await wait(task)
    # Three model requests, not six: the deliveries ride along in order, each in full, with
    # at most one typed message per boundary.
    assert len(model.requests) == 3
    assert model.requests[1].texts()[-4:] == ["full report r1", "full report r2", "u1", "full report r3"]
    assert model.requests[2].texts()[-3:] == ["took r1-r3 and u1", "u2", "full report r4"]
    texts = [m.content for m in agent.messages if isinstance(m, CustomMessage)]
    assert texts == ["full report r1", "full report r2", "full report r3", "full report r4"]


async def test_context_deliveries_cost_no_request_of_their_own(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = GateTool()
    model = PlannedModel([Reply(calls=[("gate", {})]), Reply("took r1"), Reply("done")])
    agent, _ = harness.agent(model, tools=[gate])

    def report(name: str) -> CustomMessage:
        return CustomMessage(custom_type="report", content=f"full report {name}", display=False)

    task = asyncio.create_task(agent.prompt("go"))
    await wait(gate.started.wait())
    agent.send_custom_message(report("r1"), deliver_as="context")
    gate.release.set()
    await wait(task)
    # at a boundary where the run goes on anyway, it rides along
    assert len(model.requests) == 2 and model.requests[1].texts()[-1] == "full report r1"
    # idle: appended at once, no request (even when asked to trigger one)
    agent.send_custom_message(report("r2"), deliver_as="context", trigger_turn=True)
    assert agent.is_idle and len(model.requests) == 2
    # arriving during the run's last request: appended when the run ends, no further request
    stream = model.stream

    async def delivering(context: Any, options: Any) -> AsyncIterator[Any]:
        agent.send_custom_message(report("r3"), deliver_as="context")
        async for event in stream(context, options):
            yield event

    monkeypatch.setattr(model, "stream", delivering)
    await wait(agent.prompt("again"))
    assert len(model.requests) == 3 and agent.is_idle
    texts = [m.content for m in agent.messages if isinstance(m, CustomMessage)]
    assert texts == ["full report r1", "full report r2", "full report r3"]
    assert agent.pending_message_count == 0


async def test_follow_up_runs_when_the_agent_would_stop(harness: Harness) -> None:
    gate = GateTool()
    model = PlannedModel([Reply(calls=[("gate", {})]), Reply("would stop here"), Reply("final")])
    agent, rec = harness.agent(model, tools=[gate])
    task = asyncio.create_task(agent.prompt("go"))
    await wait(gate.started.wait())
    agent.follow_up("and then this")
    gate.release.set()
    await wait(task)
    # not delivered after the tool batch (that is steering), only once the agent would stop
    assert model.requests[1].texts()[-1] == "gate done"
    assert model.requests[2].texts()[-2:] == ["would stop here", "and then this"]
    assert agent.last_assistant_text() == "final"
    # one run: the follow-up continues inside it
    assert rec.types().count("agent_start") == 1
    assert rec.types().count("agent_settled") == 1


async def test_prompt_while_busy_needs_streaming_behavior(harness: Harness) -> None:
    model = PlannedModel([Hang()])
    agent, _ = harness.agent(model)
    task = asyncio.create_task(agent.prompt("go"))
    await wait(model.request_started.wait())
    with pytest.raises(AgentBusyError, match="streaming_behavior"):
        await agent.prompt("again")
    await wait(agent.abort())
    await wait(task)


async def test_clear_queue_returns_texts(harness: Harness) -> None:
    model = PlannedModel([Hang()])
    agent, rec = harness.agent(model)
    task = asyncio.create_task(agent.prompt("go"))
    await wait(model.request_started.wait())
    agent.steer("s1")
    agent.follow_up("f1")
    assert agent.clear_queue() == (["s1"], ["f1"])
    assert agent.pending_message_count == 0
    assert rec.of("queue_update")[-1].steering == []
    await wait(agent.abort())
    await wait(task)


async def test_messages_are_persisted_and_reopen_to_the_same_context(harness: Harness) -> None:
    model = PlannedModel([Reply(calls=[("echo", {"text": "x"})]), Reply("done")])
    agent, _ = harness.agent(model, tools=[EchoTool()])
    await wait(agent.prompt("go"))
    path = agent.session.path
    assert path is not None and path.exists()
    expected = [to_json_dict(m) for m in agent.messages]
    agent.session.close()
    reopened = SessionManager.open(path)
    types = [e.type for e in reopened.entries]
    assert types == ["model_change", "thinking_level_change", "message", "message", "message", "message"]
    assert [to_json_dict(m) for m in reopened.build_context().messages] == expected
    again, _ = harness.agent(PlannedModel([Reply("more")]), session=reopened)
    # same model and level: nothing appended on reopen
    assert len(reopened.entries) == 6
    await wait(again.prompt("next"))
    assert [m.role for m in again.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "user",
        "assistant",
    ]
    reopened.close()


async def test_listener_errors_do_not_break_the_loop(harness: Harness) -> None:
    agent, rec = harness.agent(PlannedModel([Reply("fine")]))

    def broken(event: object) -> None:
        raise RuntimeError("listener bug")

    agent.subscribe(broken)
    await wait(agent.prompt("hi"))
    assert rec.types()[-1] == "agent_settled"
    assert agent.last_assistant_text() == "fine"


async def test_unsubscribe_stops_events(harness: Harness) -> None:
    agent, rec = harness.agent(PlannedModel([Reply("a"), Reply("b")]))
    seen: list[str] = []
    unsubscribe = agent.subscribe(lambda e: seen.append(e.type))
    await wait(agent.prompt("one"))
    count = len(seen)
    unsubscribe()
    await wait(agent.prompt("two"))
    assert len(seen) == count and len(rec.events) > count


async def test_register_and_unregister_tool_take_effect_at_next_request(harness: Harness) -> None:
    model = PlannedModel([Reply("a"), Reply("b")])
    agent, _ = harness.agent(model)
    await wait(agent.prompt("one"))
    agent.register_tool(EchoTool())
    await wait(agent.prompt("two"))
    agent.unregister_tool("echo")
    assert [t.name for t in model.requests[0].context.tools] == []
    assert [t.name for t in model.requests[1].context.tools] == ["echo"]


async def test_stream_options_carry_session_and_previous_response(harness: Harness) -> None:
    model = PlannedModel([Reply("a"), Reply("b")])
    agent, _ = harness.agent(model)
    await wait(agent.prompt("one"))
    await wait(agent.prompt("two"))
    first, second = model.requests
    assert first.options.session_id == agent.session.session_id
    assert first.options.cwd == harness.cwd
    assert first.options.previous_response is None
    assert isinstance(second.options.previous_response, AssistantMessage)
    assert second.options.previous_response.text == "a"


async def test_new_session_records_model_and_thinking_level(harness: Harness) -> None:
    model = PlannedModel([Reply("a")], reasoning=True)
    agent, _ = harness.agent(model)
    entries = agent.session.entries
    assert [e.type for e in entries] == ["model_change", "thinking_level_change"]
    agent.set_thinking_level("off")
    assert len(agent.session.entries) == 2
    agent.set_thinking_level("high")
    assert agent.thinking_level == "high" and len(agent.session.entries) == 3
    plain = PlannedModel([], model_id="plain")
    agent.set_model(plain)
    assert agent.thinking_level == "off"
    assert [e.type for e in agent.session.entries][-2:] == ["model_change", "thinking_level_change"]


async def test_custom_messages_in_every_delivery_mode(harness: Harness) -> None:
    model = PlannedModel([Reply("first"), Hang(), Reply("after steer"), Reply("next")])
    agent, rec = harness.agent(model)

    def custom(text: str) -> CustomMessage:
        return CustomMessage(custom_type="test-note", content=text, details={"t": text})

    # idle, no trigger: appended, no turn
    agent.send_custom_message(custom("quiet"))
    assert not model.requests and agent.messages[-1].role == "custom"
    assert agent.session.entries[-1].type == "custom_message"
    # idle with trigger: a run starts
    agent.send_custom_message(custom("wake"), trigger_turn=True)
    assert agent.is_streaming
    await wait(agent.wait_for_idle())
    assert model.requests[0].texts() == ["quiet", "wake"]
    # while streaming: queued as steering
    task = asyncio.create_task(agent.prompt("long"))
    await wait(model.request_started.wait())
    while len(model.requests) < 2:
        await wait(asyncio.sleep(0))
    agent.send_custom_message(custom("steered"), deliver_as="steer")
    assert rec.of("queue_update")[-1].steering == ["steered"]
    await wait(agent.abort())
    await wait(task)
    # the queue survived the abort; nextTurn is held for the next prompt
    agent.send_custom_message(custom("held"), deliver_as="nextTurn")
    agent.clear_queue()
    await wait(agent.prompt("go on"))
    last = model.requests[-1].texts()
    assert last[-2:] == ["held", "go on"]
    assert rec.types().count("agent_settled") == 3


async def test_user_message_object_prompt(harness: Harness) -> None:
    model = PlannedModel([Reply("ok")])
    agent, _ = harness.agent(model)
    await wait(agent.prompt(UserMessage(content="as object")))
    assert model.requests[0].texts() == ["as object"]


async def test_a_final_turn_caps_its_reply_and_the_guard_sees_every_reply(harness: Harness) -> None:
    """A request guard's `final` verdict with `max_output_tokens` caps that request's reply
    (`StreamOptions.max_tokens`); requests before it keep the model's own cap (issue 27, budgets)."""
    from corral.agent import GuardVerdict, RequestEstimate

    class Guard:
        def __init__(self) -> None:
            self.calls = 0
            self.replies: list[str] = []

        def before_request(self, estimate: RequestEstimate) -> GuardVerdict:
            self.calls += 1
            if self.calls == 1:
                return GuardVerdict("go")
            return GuardVerdict("final", "Budget exhausted: stop.", max_output_tokens=77)

        def after_reply(self, reply: AssistantMessage, estimate: RequestEstimate) -> None:
            self.replies.append(reply.text)

    model = PlannedModel([Reply("one", calls=[("echo", {"text": "x"})]), Reply("final words")])
    agent, _ = harness.agent(model, tools=[EchoTool()])
    guard = Guard()
    agent.set_request_guard(guard)
    await wait(agent.prompt("go"))
    first, final = model.requests
    assert first.options.max_tokens is None
    assert final.options.max_tokens == 77
    assert guard.replies == ["one", "final words"]
