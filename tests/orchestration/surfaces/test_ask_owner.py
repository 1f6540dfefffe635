"""`ask_owner`: validation, the only-and-final rule, the result shape, and ending the turn."""

from __future__ import annotations

from typing import Any

import pytest

from corral.orchestration.errors import ManagedAgentBusyError
from corral.orchestration.surfaces import ASK_OWNER_SENT_TEXT, AskOwnerTool

from .helpers import FakeAgent, FakeController


def _tool(controller: FakeController, agent: FakeAgent) -> AskOwnerTool:
    return AskOwnerTool(controller, object(), agent)  # type: ignore[arg-type]


async def test_question_alone_is_sent_and_ends_the_turn() -> None:
    controller, agent = FakeController(), FakeAgent()
    agent.assistant_with_calls("q1", name="ask_owner")
    result = await _tool(controller, agent).execute("q1", {"question": "Which DB?", "files": ["a.md"]})
    assert not result.is_error
    assert result.terminate is True
    assert result.content[0].text == ASK_OWNER_SENT_TEXT  # type: ignore[union-attr]
    assert result.content[0].text.startswith("Question sent to your owner")  # type: ignore[union-attr]
    assert result.details == {"askId": "ask-9", "assignmentRequestId": "req-1"}
    [(method, params)] = controller.calls
    assert method == "ask_owner"
    assert params.question == "Which DB?"
    assert params.files == ["a.md"]


async def test_question_with_other_tool_calls_is_rejected_with_an_instruction() -> None:
    controller, agent = FakeController(), FakeAgent()
    agent.assistant_with_calls("r1", "q1")
    result = await _tool(controller, agent).execute("q1", {"question": "Which DB?"})
    assert result.is_error
    assert result.terminate is False
    error = result.details["error"]
    assert error["category"] == "invalid_request"
    assert "only tool call" in error["message"]
    assert "alone" in error["message"]
    assert controller.calls == []


async def test_question_without_a_provable_assistant_message_is_rejected() -> None:
    controller = FakeController()
    result = await _tool(controller, FakeAgent()).execute("q1", {"question": "Which DB?"})
    assert result.details["error"]["category"] == "invalid_request"
    assert controller.calls == []


@pytest.mark.parametrize(
    ("args", "word"),
    [
        ({}, "question"),
        ({"question": None}, "question"),
        ({"question": "  "}, "blank"),
        ({"question": 3}, "string"),
        ({"question": "q", "files": [""]}, "files"),
        ({"question": "q", "files": "a"}, "files"),
        ({"question": "q", "agent": "x"}, "unknown field agent"),
    ],
)
async def test_bad_question_is_invalid_request(args: dict[str, Any], word: str) -> None:
    controller, agent = FakeController(), FakeAgent()
    agent.assistant_with_calls("q1", name="ask_owner")
    result = await _tool(controller, agent).execute("q1", args)
    assert result.details["error"]["category"] == "invalid_request"
    assert word in result.details["error"]["message"]
    assert result.content[0].text.startswith("ask_owner failed (invalid_request)")  # type: ignore[union-attr]
    assert controller.calls == []


@pytest.mark.parametrize("empty", [None, [], ""])
async def test_empty_files_is_absent(empty: Any) -> None:
    controller, agent = FakeController(), FakeAgent()
    agent.assistant_with_calls("q1", name="ask_owner")
    result = await _tool(controller, agent).execute("q1", {"question": "q", "files": empty})
    assert not result.is_error
    assert controller.calls[0][1].files is None


async def test_controller_rejection_is_reported_and_does_not_end_the_turn() -> None:
    controller = FakeController(fail=ManagedAgentBusyError("already waiting for an owner reply"))
    agent = FakeAgent()
    agent.assistant_with_calls("q1", name="ask_owner")
    result = await _tool(controller, agent).execute("q1", {"question": "q"})
    assert result.is_error
    assert result.terminate is False
    assert result.details["error"]["category"] == "agent_busy"
    assert result.details["error"]["operation"] == "ask_owner"
