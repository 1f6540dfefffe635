"""The bundled `scripted/tour`, request by request: however its scouts' results arrive (one at a
time, together, or already beside the delegations' tool results), it closes once, and every prompt after that gets "the tour is over", never the
closing message again (docs/scripted-model.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.llm import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    DoneEvent,
    LlmContext,
    ModelRegistry,
    ScriptedModel,
    StreamOptions,
    TextContent,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

CLOSING = "Both scouts delivered their results"
OVER = "The tour is over"


class Lead:
    """A lead session on the bundled tour: its messages, each request answered by the model."""

    def __init__(self, tmp_path: Path, script: str = "scripted/tour") -> None:
        registry = ModelRegistry(None, environ={}, cwd=tmp_path)  # no CORRAL_SCRIPTS: the bundled scripts
        model = registry.create_model(registry.resolve(script), cwd=tmp_path)
        assert isinstance(model, ScriptedModel)
        self.model = model
        self.messages: list[AgentMessage] = []

    async def ask(self) -> AssistantMessage:
        context = LlmContext(
            system_prompt="lead",
            messages=list(self.messages),
            tools=[ToolDefinition(n, n, {"type": "object"}) for n in ("ls", "bash", "agent")],
        )
        events = [event async for event in self.model.stream(context, StreamOptions())]
        done = events[-1]
        assert isinstance(done, DoneEvent), done
        self.messages.append(done.message)
        return done.message

    def tools_ran(self, reply: AssistantMessage, *, failed: str | None = None) -> None:
        """Answer each tool call of `reply`: "ok", or the error `failed`."""
        for call in reply.tool_calls:
            self.messages.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=[TextContent(text=failed or "ok")],
                    is_error=failed is not None,
                )
            )

    def result(self, agent: str) -> None:
        self.messages.append(
            CustomMessage(
                custom_type="corral-agent-result",
                content=f"Agent result · agent={agent} · definition=scout · status=completed\nfound it",
                details={"agent": agent, "status": "completed"},
            )
        )


def text(reply: AssistantMessage) -> str:
    return "".join(block.text for block in reply.content if isinstance(block, TextContent))


async def _until_scouts_work(lead: Lead) -> None:
    lead.messages.append(UserMessage(content="show me around"))
    lead.tools_ran(await lead.ask())  # ls, git status
    lead.tools_ran(await lead.ask())  # the two delegations
    assert text(await lead.ask()).startswith("Both scouts are working")


@pytest.mark.parametrize("together", [False, True], ids=["one at a time", "together"])
async def test_the_tour_closes_once_and_then_says_it_is_over(tmp_path: Path, together: bool) -> None:
    lead = Lead(tmp_path)
    await _until_scouts_work(lead)
    lead.result("tour-docs")
    if together:
        lead.result("tour-todos")
    else:
        assert (
            text(await lead.ask())
            == "tour-docs delivered its result (completed); waiting for the other scout."
        )
        lead.result("tour-todos")
    assert text(await lead.ask()).startswith(CLOSING)
    for prompt in ("Fix it.", "And now?", "Hello?"):
        lead.messages.append(UserMessage(content=prompt))
        answer = text(await lead.ask())
        assert answer.startswith(OVER) and "corral run --continue --model" in answer


async def test_a_tour_whose_scouts_could_not_start_says_it_is_over_when_continued(tmp_path: Path) -> None:
    lead = Lead(tmp_path)
    lead.messages.append(UserMessage(content="show me around"))
    lead.tools_ran(await lead.ask())
    lead.tools_ran(await lead.ask(), failed="Tool agent not found")  # the delegations
    assert text(await lead.ask()).startswith("I could not start the scouts")
    for prompt in ("Fix it.", "And now?"):
        lead.messages.append(UserMessage(content=prompt))
        assert text(await lead.ask()).startswith(OVER)


async def test_results_that_arrive_with_the_delegations_tool_results_are_answered_at_once(
    tmp_path: Path,
) -> None:
    """A busy machine or quick scouts: the lead's request after the delegations already holds the
    results (steered in at the turn boundary); it closes then, not with "working", and only once."""
    lead = Lead(tmp_path)
    lead.messages.append(UserMessage(content="show me around"))
    lead.tools_ran(await lead.ask())
    lead.tools_ran(await lead.ask())  # the two delegations
    lead.result("tour-docs")
    lead.result("tour-todos")
    assert text(await lead.ask()).startswith(CLOSING)
    lead.messages.append(UserMessage(content="Fix it."))
    assert text(await lead.ask()).startswith(OVER)


async def test_one_result_with_the_delegations_tool_results_then_the_other_closes(tmp_path: Path) -> None:
    lead = Lead(tmp_path)
    lead.messages.append(UserMessage(content="show me around"))
    lead.tools_ran(await lead.ask())
    lead.tools_ran(await lead.ask())
    lead.result("tour-todos")
    assert text(await lead.ask()) == (
        "Both scouts are working, and tour-todos already delivered its result (completed); "
        "waiting for the other scout."
    )
    lead.result("tour-docs")
    assert text(await lead.ask()).startswith(CLOSING)
    lead.messages.append(UserMessage(content="And now?"))
    assert text(await lead.ask()).startswith(OVER)
