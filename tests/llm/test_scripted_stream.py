"""Scripted model: what each request streams, per the contract.

Events like a real provider, tool calls and their ids, the cursor carried in
`scriptCursor`/`scriptList` through `previous_response`, agents' lists,
`on_exhausted`, expectations, templates, cancellable delays, usage and cost.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

from corral.llm import (
    AgentMessage,
    AgentMessageAdapter,
    AssistantMessage,
    AssistantMessageEvent,
    CustomMessage,
    DoneEvent,
    ErrorEvent,
    LlmContext,
    ModelRegistry,
    ScriptedModel,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
    is_retryable_error,
    to_json_dict,
)
from corral.settings import Settings

WAIT = 10.0


def make_model(
    tmp_path: Path, text: str, *, name: str = "s", settings: Settings | None = None
) -> ScriptedModel:
    directory = tmp_path / ".corral" / "scripts"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.yaml").write_text(text, encoding="utf-8")
    # $CORRAL_SCRIPTS: a project's own .corral/scripts/ count only once the project is trusted
    environ = {"GREETING": "hello there", "CORRAL_SCRIPTS": str(directory)}
    registry = ModelRegistry(settings, environ=environ, cwd=tmp_path)
    model = registry.create_model(registry.resolve(f"scripted/{name}"), cwd=tmp_path)
    assert isinstance(model, ScriptedModel)
    return model


def ctx(*messages: AgentMessage, tools: tuple[str, ...] = (), system: str = "You are a test.") -> LlmContext:
    return LlmContext(
        system_prompt=system,
        messages=list(messages) or [UserMessage(content="hi")],
        tools=[ToolDefinition(name, f"the {name} tool", {"type": "object"}) for name in tools],
    )


async def collect(
    model: ScriptedModel, context: LlmContext | None = None, **options: Any
) -> list[AssistantMessageEvent]:
    return [event async for event in model.stream(context or ctx(), StreamOptions(**options))]


def final(events: list[AssistantMessageEvent]) -> AssistantMessage:
    last = events[-1]
    assert isinstance(last, DoneEvent | ErrorEvent)
    return last.message if isinstance(last, DoneEvent) else last.error


async def run_many(model: ScriptedModel, count: int, **options: Any) -> list[AssistantMessage]:
    previous: AssistantMessage | None = None
    replies = []
    for _ in range(count):
        previous = final(await collect(model, previous_response=previous, **options))
        replies.append(previous)
    return replies


# --- events -------------------------------------------------------------------


async def test_events_stream_like_a_provider(tmp_path: Path) -> None:
    model = make_model(
        tmp_path,
        """
steps:
  - thinking: "First I should look at the files in the project."
    text: "Looking at the README and the code under test now."
    tool_calls:
      - {name: read, args: {path: README.md}}
      - {name: bash, args: {command: "ls -la && cat setup.cfg"}}
""",
    )
    events = await collect(model, session_id="sess-1")
    kinds = [event.type for event in events]
    assert kinds[0] == "start" and kinds[-1] == "done"
    compact = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
    assert compact == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    text_deltas = [e.delta for e in events if e.type == "text_delta"]
    assert len(text_deltas) > 1
    assert "".join(text_deltas) == "Looking at the README and the code under test now."
    assert [
        e.content_index for e in events if e.type in ("thinking_start", "text_start", "toolcall_start")
    ] == [0, 1, 2, 3]
    args_json = "".join(e.delta for e in events if e.type == "toolcall_delta" and e.content_index == 3)
    assert json.loads(args_json) == {"command": "ls -la && cat setup.cfg"}
    ends = [e for e in events if e.type == "toolcall_end"]
    assert [e.tool_call.name for e in ends] == ["read", "bash"]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.reason == "toolUse"
    message = done.message
    assert (message.api, message.provider, message.model, message.stop_reason) == (
        "scripted",
        "scripted",
        "s",
        "toolUse",
    )
    assert [block.type for block in message.content] == ["thinking", "text", "toolCall", "toolCall"]
    # partials grow as the reply streams
    assert events[0].partial.content == []  # type: ignore[union-attr]
    assert events[-2].partial.content[-1] == message.content[-1]  # type: ignore[union-attr]


async def test_step_without_tool_calls_ends_the_turn(tmp_path: Path) -> None:
    model = make_model(tmp_path, "steps:\n  - text: Done.\n")
    events = await collect(model)
    assert isinstance(events[-1], DoneEvent) and events[-1].reason == "stop"
    assert final(events).text == "Done."


async def test_explicit_tool_call_id_is_kept(tmp_path: Path) -> None:
    model = make_model(tmp_path, "steps:\n  - tool_calls: [{name: read, args: {path: a}, id: call-1}]\n")
    assert final(await collect(model)).tool_calls[0].id == "call-1"


async def test_generated_tool_call_ids_are_unique_within_and_across_sessions(tmp_path: Path) -> None:
    model = make_model(
        tmp_path,
        "steps:\n  - tool_calls: [{name: read, args: {path: a}}, {name: read, args: {path: b}}]\n"
        "on_exhausted: repeat_last\n",
    )
    one = [call.id for reply in await run_many(model, 4, session_id="one") for call in reply.tool_calls]
    two = [call.id for reply in await run_many(model, 4, session_id="two") for call in reply.tool_calls]
    assert len(set(one)) == 8
    assert not set(one) & set(two)


# --- cursor ---------------------------------------------------------------------------

THREE = "steps:\n  - text: one\n  - text: two\n  - text: three\n"


async def test_each_request_consumes_the_next_step_via_previous_response(tmp_path: Path) -> None:
    model = make_model(tmp_path, THREE)
    replies = await run_many(model, 3)
    assert [r.text for r in replies] == ["one", "two", "three"]
    assert [(r.model_extra or {})["scriptCursor"] for r in replies] == [1, 2, 3]
    assert {(r.model_extra or {})["scriptList"] for r in replies} == {"steps"}


async def test_new_session_starts_at_the_first_step(tmp_path: Path) -> None:
    model = make_model(tmp_path, THREE)
    await run_many(model, 2)
    assert final(await collect(model)).text == "one"


async def test_cursor_survives_persistence_and_forks_continue_from_their_point(tmp_path: Path) -> None:
    model = make_model(tmp_path, THREE)
    first, second = await run_many(model, 2)
    stored = to_json_dict(first)
    assert stored["scriptCursor"] == 1 and stored["scriptList"] == "steps"
    reloaded = AgentMessageAdapter.validate_python(json.loads(json.dumps(stored)))
    assert isinstance(reloaded, AssistantMessage)
    # A fork made after the first reply continues with the second step, not the third.
    assert final(await collect(model, previous_response=reloaded)).text == "two"
    assert final(await collect(model, previous_response=second)).text == "three"


async def test_cursor_is_read_from_context_when_no_previous_response(tmp_path: Path) -> None:
    model = make_model(tmp_path, THREE)
    (first,) = await run_many(model, 1)
    context = ctx(UserMessage(content="a"), first, UserMessage(content="b"))
    assert final(await collect(model, context)).text == "two"


async def test_cursor_for_another_list_or_model_restarts(tmp_path: Path) -> None:
    model = make_model(tmp_path, THREE + "agents:\n  worker:\n    - text: w1\n    - text: w2\n")
    (lead_reply,) = await run_many(model, 1)
    assert final(await collect(model, previous_response=lead_reply, agent_name="worker")).text == "w1"
    other = lead_reply.model_copy(update={"model": "other"})
    assert final(await collect(model, previous_response=other)).text == "one"


# --- agents and exhaustion --------------------------------------------------------------


async def test_agents_lists_are_chosen_by_name_then_star_then_steps(tmp_path: Path) -> None:
    with_star = make_model(
        tmp_path,
        "steps: [{text: lead}]\nagents:\n  reviewer-1: [{text: reviewed}]\n  '*': [{text: done}]\n",
        name="star",
    )
    assert final(await collect(with_star, agent_name="reviewer-1")).text == "reviewed"
    assert final(await collect(with_star, agent_name="someone")).text == "done"
    reply = final(await collect(with_star))
    assert reply.text == "lead" and (reply.model_extra or {})["scriptList"] == "steps"
    no_star = make_model(
        tmp_path, "steps: [{text: lead}]\nagents:\n  reviewer-1: [{text: r}]\n", name="nostar"
    )
    assert final(await collect(no_star, agent_name="someone")).text == "lead"
    starred = final(await collect(with_star, agent_name="x"))
    assert (starred.model_extra or {})["scriptList"] == "agents.*"


async def test_exhausted_error_by_default(tmp_path: Path) -> None:
    model = make_model(tmp_path, "steps: [{text: only}]\n")
    replies = await run_many(model, 3)
    assert replies[0].text == "only"
    for reply in replies[1:]:
        assert reply.stop_reason == "error"
        assert reply.error_message is not None and "all 1 steps have been used" in reply.error_message
        assert (reply.model_extra or {})["scriptCursor"] == 1


async def test_exhausted_repeat_last_applies_to_agent_lists_too(tmp_path: Path) -> None:
    model = make_model(
        tmp_path, "steps: [{text: a}, {text: b}]\nagents:\n  w: [{text: x}]\non_exhausted: repeat_last\n"
    )
    assert [r.text for r in await run_many(model, 4)] == ["a", "b", "b", "b"]
    assert [r.text for r in await run_many(model, 3, agent_name="w")] == ["x", "x", "x"]


# --- errors ---------------------------------------------------------------------------------


async def test_stop_error_answers_with_a_provider_error_and_consumes_the_step(tmp_path: Path) -> None:
    model = make_model(
        tmp_path,
        "steps:\n  - {text: 'invalid request: bad schema', stop: error}\n"
        "  - {text: overloaded again, stop: error, error_retryable: true}\n  - text: recovered\n",
    )
    first, second, third = await run_many(model, 3)
    assert (first.stop_reason, first.error_message) == ("error", "invalid request: bad schema")
    assert not is_retryable_error(first.error_message)
    assert second.stop_reason == "error" and second.error_message is not None
    assert second.error_message.endswith("overloaded again") and is_retryable_error(second.error_message)
    assert is_retryable_error(
        final(
            await collect(
                make_model(tmp_path, "steps: [{text: x, stop: error, error_retryable: true}]\n", name="r")
            )
        ).error_message
    )
    assert third.text == "recovered"
    events = await collect(model)
    assert isinstance(events[-1], ErrorEvent) and events[-1].reason == "error"


async def test_script_broken_after_creation_gives_an_error_event(tmp_path: Path) -> None:
    model = make_model(tmp_path, THREE)
    (tmp_path / ".corral" / "scripts" / "s.yaml").write_text("steps: [{}]\n", encoding="utf-8")
    events = await collect(model, cwd=tmp_path)
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    assert "a step needs text, thinking or tool_calls" in (events[0].error.error_message or "")


# --- expectations -------------------------------------------------------------------------------


def conversation() -> list[AgentMessage]:
    return [
        UserMessage(content="Please check the README."),
        AssistantMessage(
            content=[
                TextContent(text="Reading."),
                ToolCall(id="c1", name="read", arguments={"path": "README.md"}),
            ]
        ),
        ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="# Project alpha")]),
        CustomMessage(custom_type="corral-agent-result", content="Agent result agent=reviewer: fine"),
    ]


@pytest.mark.parametrize(
    "expect",
    [
        "{last_user_contains: 'agent=reviewer'}",
        "{context_contains: ['Please check', 'README.md', 'Project alpha', 'Reading.']}",
        "{context_contains: 'Project alpha'}",
        "{context_excludes: ['SYSTEM-ONLY', 'the agent tool', 'secret']}",
        "{tools_include: [agent, read], tools_exclude: [write]}",
    ],
)
async def test_expectations_that_hold_let_the_step_answer(tmp_path: Path, expect: str) -> None:
    model = make_model(tmp_path, f"steps:\n  - text: ok\n    expect: {expect}\n")
    context = ctx(*conversation(), tools=("agent", "read"), system="SYSTEM-ONLY secret")
    assert final(await collect(model, context)).text == "ok"


@pytest.mark.parametrize(
    ("expect", "fragments"),
    [
        ("{last_user_contains: 'README'}", ["last_user_contains", '"Agent result agent=reviewer: fine"']),
        (
            "{context_contains: ['Project beta']}",
            ["context_contains", '"Project beta"', "none of the request's"],
        ),
        ("{context_excludes: ['alpha']}", ["context_excludes", '"alpha"', "toolResult", '"# Project alpha"']),
        ("{tools_include: [write]}", ["tools_include", '"write"', '"agent, read"']),
        ("{tools_exclude: [read]}", ["tools_exclude", '"read"', "offered"]),
    ],
)
async def test_failed_expectation_is_a_provider_error_naming_it(
    tmp_path: Path, expect: str, fragments: list[str]
) -> None:
    model = make_model(tmp_path, f"steps:\n  - text: ok\n    expect: {expect}\n  - text: next\n")
    context = ctx(*conversation(), tools=("agent", "read"))
    events = await collect(model, context)
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    error = events[0].error
    assert error.stop_reason == "error" and error.error_message is not None
    assert error.error_message.startswith("scripted/s steps[0]: expectation ")
    for fragment in fragments:
        assert fragment in error.error_message
    assert "\n" not in error.error_message
    # The step was not consumed: a retry meets the same check.
    again = final(await collect(model, context, previous_response=error))
    assert again.stop_reason == "error" and (again.model_extra or {})["scriptCursor"] == 0


async def test_offending_value_is_truncated_to_500_characters(tmp_path: Path) -> None:
    model = make_model(tmp_path, "steps:\n  - text: ok\n    expect: {last_user_contains: needle}\n")
    events = await collect(model, ctx(UserMessage(content="x" * 2000)))
    message = final(events).error_message or ""
    shown = message.split("the newest user message is ", 1)[1]
    assert json.loads(shown) == "x" * 500 + "…"


# --- templates -------------------------------------------------------------------------------------

TEMPLATES = """
steps:
  - text: "Run {{ last_tool_result.runId }} by {{ last_custom.agent.name }}; {{ env.GREETING }}"
    tool_calls:
      - name: agent
        args:
          id: "{{ last_tool_result.runId }}"
          count: "{{ last_tool_result.items.1.n }}"
          label: "item-{{ last_tool_result.items.0.n }}"
          nested: ["{{ last_custom.agent }}"]
"""


def with_details() -> LlmContext:
    return ctx(
        UserMessage(content="go"),
        ToolResultMessage(
            tool_call_id="c0",
            tool_name="agent",
            content=[TextContent(text="started")],
            details={"runId": "run-7", "items": [{"n": 1}, {"n": 2}]},
        ),
        CustomMessage(custom_type="corral-agent-result", content="done", details={"agent": {"name": "rev"}}),
    )


async def test_templates_fill_text_and_args(tmp_path: Path) -> None:
    model = make_model(tmp_path, TEMPLATES)
    reply = final(await collect(model, with_details()))
    assert reply.text == "Run run-7 by rev; hello there"
    assert reply.tool_calls[0].arguments == {
        "id": "run-7",
        "count": 2,  # a whole-string template keeps the value's type
        "label": "item-1",
        "nested": [{"name": "rev"}],
    }


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        ("{{ last_tool_result.missing }}", "last_tool_result has no 'missing'"),
        ("{{ last_tool_result.items.5 }}", "last_tool_result.items has no '5'"),
        ("{{ last_custom.agent.age }}", "last_custom.agent has no 'age'"),
        ("{{ env.NOT_SET_ANYWHERE }}", "the environment variable NOT_SET_ANYWHERE is not set"),
    ],
)
async def test_missing_template_values_fail_the_request(tmp_path: Path, template: str, fragment: str) -> None:
    model = make_model(tmp_path, f"steps:\n  - text: 'x {template}'\n")
    error = final(await collect(model, with_details()))
    assert error.stop_reason == "error" and fragment in (error.error_message or "")
    assert (error.model_extra or {})["scriptCursor"] == 0


async def test_template_without_a_tool_result_fails(tmp_path: Path) -> None:
    model = make_model(
        tmp_path, "steps:\n  - tool_calls: [{name: a, args: {x: '{{ last_tool_result.id }}'}}]\n"
    )
    error = final(await collect(model))
    assert "the request has no tool result" in (error.error_message or "")


# --- delay ---------------------------------------------------------------------------------------------


async def test_delay_is_cancellable(tmp_path: Path) -> None:
    model = make_model(tmp_path, "steps:\n  - text: late\n    delay_ms: 600000\n")
    started = asyncio.Event()
    seen: list[str] = []

    async def consume() -> None:
        async for event in model.stream(ctx(), StreamOptions()):
            seen.append(event.type)
            started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), WAIT)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT)
    assert seen == ["start"]


# --- usage ----------------------------------------------------------------------------------------------


async def test_given_usage_is_reported_and_priced_from_settings(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {
            "providers": {
                "scripted": {"models": [{"id": "s", "prices": {"input": 2, "output": 10, "cache_read": 1}}]}
            }
        }
    )
    model = make_model(
        tmp_path,
        "steps:\n  - text: hi\n    usage: {input: 1000000, output: 100000, cache_read: 500000, cache_write: 0}\n",
        settings=settings,
    )
    usage = final(await collect(model)).usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (
        1_000_000,
        100_000,
        500_000,
        0,
    )
    assert usage.total_tokens == 1_600_000
    assert usage.cost.input == pytest.approx(2.0)
    assert usage.cost.output == pytest.approx(1.0)
    assert usage.cost.cache_read == pytest.approx(0.5)
    assert usage.cost.total == pytest.approx(3.5)


async def test_usage_is_estimated_from_request_and_reply_and_free_by_default(tmp_path: Path) -> None:
    model = make_model(
        tmp_path, "steps:\n  - text: 'abcdefgh'\n    tool_calls: [{name: read, args: {p: x}}]\n"
    )
    system = "s" * 40
    user = "u" * 100
    usage = final(await collect(model, ctx(UserMessage(content=user), system=system))).usage
    assert usage.input == math.ceil((len(system) + len(user)) / 4)
    reply_chars = len("abcdefgh") + len("read") + len(json.dumps({"p": "x"}))
    assert usage.output == math.ceil(reply_chars / 4)
    assert usage.total_tokens == usage.input + usage.output
    assert usage.cost.total == 0.0


async def test_last_custom_reads_a_custom_message_converted_for_the_model(tmp_path: Path) -> None:
    from corral.session import convert_to_llm

    model = make_model(tmp_path, "steps:\n  - text: 'result of {{ last_custom.run.id }}'\n")
    custom = CustomMessage(
        custom_type="corral-agent-result", content="Agent result", details={"run": {"id": "r-9"}}
    )
    messages = convert_to_llm([UserMessage(content="go"), custom])
    assert [m.role for m in messages] == ["user", "user"]
    assert final(await collect(model, ctx(*messages))).text == "result of r-9"


async def test_last_custom_passes_over_a_later_note_without_details(tmp_path: Path) -> None:
    """The delegation guidance can be steered after a quick result; `last_custom` still reads the result."""
    from corral.session import convert_to_llm

    model = make_model(tmp_path, "steps:\n  - text: 'status {{ last_custom.status }}'\n")
    result = CustomMessage(
        custom_type="corral-agent-result", content="Agent result", details={"status": "done"}
    )
    guidance = CustomMessage(custom_type="corral-delegation-guidance", content="wait for it", display=False)
    messages = convert_to_llm([UserMessage(content="go"), result, guidance])
    assert final(await collect(model, ctx(*messages))).text == "status done"
    assert final(await collect(model, ctx(UserMessage(content="go"), result, guidance))).text == "status done"
