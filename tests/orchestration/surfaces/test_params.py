"""Bad input for every field of every action gets `invalid_request` and reaches no controller method."""

from __future__ import annotations

from typing import Any

import pytest

from corral.orchestration.surfaces import MultiplexedAgentTool, TurnGuide, operation_tools

from .helpers import FakeController, fake_caller

OK_ARGS: dict[str, dict[str, Any]] = {
    "list": {},
    "delegate": {"definition": "scout", "task": "Map the repo."},
    "continue": {"session": "0190a0a0-0000-7000-8000-000000000000", "task": "Go on."},
    "steer": {"agent": "scout", "message": "Focus on tests."},
    "interrupt": {"agent": "scout", "message": "Stop that."},
    "reply": {"agent": "scout", "message": "Yes."},
    "close": {"agent": "scout"},
    "inspect": {"agent": "scout"},
    "transcript": {"agent": "scout"},
}

# (action, override fields, words the message must contain)
BAD: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("delegate", {"definition": None}, ("definition", "required")),
    ("delegate", {"definition": "  "}, ("definition", "blank")),
    ("delegate", {"definition": 3}, ("definition", "string")),
    ("delegate", {"task": ""}, ("task", "blank")),
    ("delegate", {"task": None}, ("task", "required")),
    ("delegate", {"task": ["a"]}, ("task", "string")),
    ("delegate", {"label": "Scout"}, ("label", "^[a-z][a-z0-9_-]{0,31}$")),
    ("delegate", {"label": "a" * 33}, ("label", "32")),
    ("delegate", {"label": "1abc"}, ("label",)),
    ("delegate", {"label": "has space"}, ("label",)),
    ("delegate", {"label": 7}, ("label", "string")),
    ("delegate", {"cwd": "   "}, ("cwd", "blank")),
    ("delegate", {"cwd": 1}, ("cwd", "string")),
    ("delegate", {"fork": " "}, ("fork", "blank")),
    ("delegate", {"fork": True}, ("fork", "string")),
    ("delegate", {"files": "a.txt"}, ("files", "list")),
    ("delegate", {"files": ["a.txt", ""]}, ("files", "blank")),
    ("delegate", {"files": ["a.txt", 3]}, ("files", "string")),
    ("delegate", {"timeoutMs": 5000}, ("timeoutMs", "5001", "300000")),
    ("delegate", {"timeoutMs": 300001}, ("timeoutMs", "5001", "300000")),
    ("delegate", {"timeoutMs": 6000.5}, ("timeoutMs", "integer")),
    ("delegate", {"timeoutMs": True}, ("timeoutMs", "integer")),
    ("delegate", {"timeoutMs": "soon"}, ("timeoutMs", "integer")),
    ("delegate", {"timeoutMs": "9" * 5000}, ("timeoutMs", "must be an integer from 5001 to 300000")),
    ("delegate", {"timeoutMs": " -" + "9" * 5000}, ("timeoutMs", "must be an integer from 5001 to 300000")),
    ("delegate", {"timeoutMs": 10**5000}, ("timeoutMs", "5001", "300000")),
    ("delegate", {"timeoutMs": "0000000060000" + "0" * 5000}, ("timeoutMs", "5001", "300000")),
    ("delegate", {"session": "abc"}, ("session", "not accepted by delegate", "definition, task")),
    ("delegate", {"agent": "scout"}, ("agent", "not accepted by delegate")),
    ("delegate", {"message": "hi"}, ("message", "not accepted by delegate")),
    ("delegate", {"model": "x"}, ("unknown field model", "allowed fields")),
    ("delegate", {"model": None}, ("unknown field model",)),
    ("continue", {"session": None}, ("session", "required")),
    ("continue", {"session": " "}, ("session", "blank")),
    ("continue", {"task": "\n"}, ("task", "blank")),
    ("continue", {"cwd": "/tmp"}, ("cwd", "not accepted by continue")),
    ("continue", {"fork": "abc"}, ("fork", "not accepted by continue")),
    ("continue", {"label": "scout"}, ("label", "not accepted by continue")),
    ("continue", {"timeoutMs": 1}, ("timeoutMs",)),
    ("continue", {"files": [None]}, ("files",)),
    ("steer", {"agent": ""}, ("agent", "blank")),
    ("steer", {"agent": None}, ("agent", "required")),
    ("steer", {"message": " "}, ("message", "blank")),
    ("steer", {"message": 5}, ("message", "string")),
    ("steer", {"files": [""]}, ("files", "blank")),
    ("steer", {"task": "x"}, ("task", "not accepted by steer")),
    ("interrupt", {"message": None}, ("message", "required")),
    ("interrupt", {"timeoutMs": 6000}, ("timeoutMs", "not accepted by interrupt")),
    ("reply", {"message": ""}, ("message", "blank")),
    ("reply", {"files": {"a": 1}}, ("files",)),
    ("close", {"agent": " "}, ("agent", "blank")),
    ("close", {"files": ["a"]}, ("files", "not accepted by close", "allowed fields: agent")),
    ("close", {"message": "bye"}, ("message", "not accepted by close")),
    ("inspect", {"agent": 1}, ("agent", "string")),
    ("inspect", {"files": ["a"]}, ("files", "not accepted by inspect")),
    ("transcript", {"agent": None}, ("agent", "required")),
    ("transcript", {"files": ["a"]}, ("files", "not accepted by transcript")),
    ("list", {"agent": "scout"}, ("agent", "not accepted by list")),
    ("list", {"verbose": True}, ("unknown field verbose",)),
]


def _args(action: str, override: dict[str, Any]) -> dict[str, Any]:
    return {**OK_ARGS[action], **override}


@pytest.mark.parametrize(("action", "override", "words"), BAD)
async def test_bad_field_is_invalid_request_and_calls_nothing(
    action: str, override: dict[str, Any], words: tuple[str, ...]
) -> None:
    controller = FakeController()
    tool = MultiplexedAgentTool(controller, fake_caller(), TurnGuide())
    result = await tool.execute("c1", {"action": action, **_args(action, override)})
    assert result.is_error
    error = result.details["error"]
    assert result.details["ok"] is False
    assert error["category"] == "invalid_request"
    assert error["operation"] == action
    for word in words:
        assert word in error["message"]
    assert "nextAction" in error
    assert "\n" not in error["message"]
    assert "int_max_str_digits" not in error["message"] and "digits" not in error["message"]
    assert controller.calls == []


@pytest.mark.parametrize(("action", "override", "words"), BAD)
async def test_bad_field_per_operation_tool_is_invalid_request(
    action: str, override: dict[str, Any], words: tuple[str, ...]
) -> None:
    controller = FakeController()
    tool = {t.name: t for t in operation_tools(controller, fake_caller())}[f"agent_{action}"]
    result = await tool.execute("c1", _args(action, override))
    assert result.is_error
    assert result.details["error"]["category"] == "invalid_request"
    assert words[0] in result.details["error"]["message"]
    assert controller.calls == []


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"action": None},
        {"action": "spawn"},
        {"action": 3},
        {"action": ""},
    ],
)
async def test_missing_or_unknown_action_names_the_actions(args: dict[str, Any]) -> None:
    controller = FakeController()
    result = await MultiplexedAgentTool(controller, fake_caller(), TurnGuide()).execute("c1", args)
    assert result.details["error"]["category"] == "invalid_request"
    assert (
        "list, delegate, continue, steer, interrupt, reply, close, inspect, transcript"
        in result.details["error"]["message"]
    )
    assert controller.calls == []


async def test_non_object_arguments_are_invalid_request() -> None:
    controller = FakeController()
    result = await MultiplexedAgentTool(controller, fake_caller(), TurnGuide()).execute(
        "c1",
        ["list"],  # type: ignore[arg-type]
    )
    assert result.details["error"]["category"] == "invalid_request"
    assert controller.calls == []


EMPTY_VALUES: list[Any] = [None, "", [], {}]


@pytest.mark.parametrize("empty", EMPTY_VALUES)
@pytest.mark.parametrize("action", list(OK_ARGS))
async def test_empty_values_of_every_other_field_are_treated_as_absent(action: str, empty: Any) -> None:
    """What providers send for a flattened schema: every field, the unused ones null or empty."""
    every = [
        "definition",
        "task",
        "label",
        "cwd",
        "files",
        "fork",
        "timeoutMs",
        "session",
        "agent",
        "message",
    ]
    args: dict[str, Any] = {name: empty for name in every}
    args.update(OK_ARGS[action])
    controller = FakeController()
    result = await MultiplexedAgentTool(controller, fake_caller(), TurnGuide()).execute(
        "c1", {"action": action, **args}
    )
    assert not result.is_error, result.content
    method, params = controller.calls[0]
    assert method == ("continue_" if action == "continue" else action)
    assert len(controller.calls) == 1
    dumped = params.model_dump(by_alias=True, exclude_none=True)
    assert dumped == {"action": action, **OK_ARGS[action]}


async def test_delegate_fields_reach_the_controller_typed() -> None:
    controller = FakeController()
    await MultiplexedAgentTool(controller, fake_caller(), TurnGuide()).execute(
        "c1",
        {
            "action": "delegate",
            "definition": "scout",
            "task": "Map it.",
            "label": "scout-2",
            "cwd": "sub",
            "files": ["a.txt", "result:req-1"],
            "fork": "0190a0a0-0000-7000-8000-000000000000",
            "timeoutMs": "60000",
        },
    )
    params = controller.calls[0][1]
    assert params.label == "scout-2"
    assert params.cwd == "sub"
    assert params.files == ["a.txt", "result:req-1"]
    assert params.fork == "0190a0a0-0000-7000-8000-000000000000"
    assert params.timeout_ms == 60000


@pytest.mark.parametrize("timeout", [5001, 300000])
async def test_timeout_bounds_are_inclusive(timeout: int) -> None:
    controller = FakeController()
    result = await MultiplexedAgentTool(controller, fake_caller(), TurnGuide()).execute(
        "c1", {"action": "delegate", "definition": "scout", "task": "t", "timeoutMs": timeout}
    )
    assert not result.is_error
    assert controller.calls[0][1].timeout_ms == timeout
