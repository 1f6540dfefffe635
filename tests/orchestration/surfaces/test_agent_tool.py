"""Result shapes, the one error mapping, truncation with a private full-output file, delegation guidance."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from corral.orchestration.agents.results import ListResult
from corral.orchestration.errors import (
    ERROR_CATEGORIES,
    ErrorPart,
    InvalidRequestError,
    RollbackFailureError,
    TargetNotFoundError,
    error_class_for,
)
from corral.orchestration.surfaces import (
    DELEGATION_GUIDANCE_TYPE,
    MultiplexedAgentTool,
    TurnGuide,
    operation_tools,
)

from .helpers import FakeAgent, FakeController, fake_caller
from .test_params import OK_ARGS

EXPECTED_DETAILS: dict[str, dict[str, Any]] = {
    "list": {"ok": True, "action": "list", "agents": [], "agent_definitions": []},
    "delegate": {
        "ok": True,
        "action": "delegate",
        "agent": "scout",
        "definition": "scout",
        "owner_session_id": "owner-1",
        "pane_id": "inproc-1",
        "session_id": "sess-1",
        "session_path": "/tmp/s.jsonl",
        "request_id": "req-1",
    },
    "continue": {
        "ok": True,
        "action": "continue",
        "agent": "scout",
        "definition": "scout",
        "owner_session_id": "owner-1",
        "pane_id": "inproc-2",
        "session_id": "sess-1",
        "session_path": "/tmp/s.jsonl",
        "request_id": "req-2",
    },
    "steer": {
        "ok": True,
        "action": "steer",
        "agent": "scout",
        "presentation_agent_definition": "scout",
        "request_id": "req-3",
        "session_id": "sess-1",
        "assignment_request_id": "req-1",
    },
    "interrupt": {
        "ok": True,
        "action": "interrupt",
        "agent": "scout",
        "presentation_agent_definition": "scout",
        "request_id": "req-4",
        "session_id": "sess-1",
        "assignment_request_id": "req-1",
    },
    "reply": {
        "ok": True,
        "action": "reply",
        "agent": "scout",
        "presentation_agent_definition": "scout",
        "request_id": "req-5",
        "ask_id": "ask-1",
        "assignment_request_id": "req-1",
        "session_id": "sess-1",
    },
    "close": {"ok": True, "action": "close", "agent": "scout", "presentation_agent_definition": "scout"},
    "inspect": {
        "ok": True,
        "action": "inspect",
        "agent": "scout",
        "presentation_agent_definition": "scout",
        "session_id": "sess-1",
        "pane_id": "inproc-1",
        "captured_at": 1700000000000,
        "recent_output_truncated": False,
        "recent_output": "line 1\nline 2",
        "process": [{"pid": 42, "argv0": "sleep", "cmdline": "sleep 30"}],
    },
    "transcript": {
        "ok": True,
        "action": "transcript",
        "agent": "scout",
        "presentation_agent_definition": "scout",
        "session_id": "sess-1",
        "transcript": "user:\nhello\n\nassistant:\nhi",
        "transcript_truncated": False,
    },
}

EXPECTED_METHOD = {a: ("continue_" if a == "continue" else a) for a in OK_ARGS}


@pytest.fixture(autouse=True)
def _data_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_HOME", str(tmp_path / "home"))


@pytest.mark.parametrize("action", list(OK_ARGS))
async def test_each_action_calls_one_controller_method_and_returns_its_details(action: str) -> None:
    controller = FakeController()
    result = await MultiplexedAgentTool(controller, fake_caller(), TurnGuide()).execute(
        "c1", {"action": action, **OK_ARGS[action]}
    )
    assert not result.is_error
    assert [m for m, _ in controller.calls] == [EXPECTED_METHOD[action]]
    assert result.details == EXPECTED_DETAILS[action]


@pytest.mark.parametrize("action", list(OK_ARGS))
async def test_per_operation_tools_give_the_same_results(action: str) -> None:
    controller = FakeController()
    tool = {t.name: t for t in operation_tools(controller, fake_caller())}[f"agent_{action}"]
    result = await tool.execute("c1", dict(OK_ARGS[action]))
    assert [m for m, _ in controller.calls] == [EXPECTED_METHOD[action]]
    assert result.details == EXPECTED_DETAILS[action]


async def test_result_texts_are_short_and_say_what_happened() -> None:
    controller = FakeController()
    tool = MultiplexedAgentTool(controller, fake_caller(), TurnGuide())
    texts = {}
    for action, args in OK_ARGS.items():
        result = await tool.execute("c1", {"action": action, **args})
        texts[action] = result.content[0].text  # type: ignore[union-attr]
    assert "do not poll" in texts["delegate"]
    assert "Started agent scout (definition scout)" in texts["delegate"]
    assert "session=sess-1" in texts["continue"]
    assert texts["close"] == "Closed agent scout."
    assert texts["inspect"].splitlines()[:4] == [
        "agent: scout (scout)",
        "session: sess-1",
        "runtime: inproc-1",
        "foreground commands:",
    ]
    assert "  42 sleep 30" in texts["inspect"]
    assert texts["inspect"].endswith("recent activity:\nline 1\nline 2")
    assert (
        texts["transcript"] == "Transcript of agent scout (session sess-1):\n\nuser:\nhello\n\nassistant:\nhi"
    )


@pytest.mark.parametrize("category", ERROR_CATEGORIES)
async def test_every_error_category_maps_to_an_error_result_with_a_next_action(category: str) -> None:
    controller = FakeController(fail=error_class_for(category)("it went wrong", operation="steer"))  # type: ignore[arg-type]
    result = await MultiplexedAgentTool(controller, fake_caller(), TurnGuide()).execute(
        "c1", {"action": "steer", **OK_ARGS["steer"]}
    )
    assert result.is_error
    error = result.details["error"]
    assert result.details["ok"] is False
    assert error["category"] == category
    assert error["message"] == "it went wrong"
    assert error["operation"] == "steer"
    assert error["rollbackOccurred"] is False
    assert error["retryAttempted"] is False
    assert error["nextAction"]
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith(f"agent steer failed ({category}): it went wrong")
    assert f"Next: {error['nextAction']}" in text


async def test_raiser_next_action_and_ids_are_kept() -> None:
    exc = TargetNotFoundError(
        "Agent scout belongs to another owner session", ids={"label": "scout"}, next_action="Use list."
    )
    result = await MultiplexedAgentTool(FakeController(fail=exc), fake_caller(), TurnGuide()).execute(
        "c1", {"action": "close", "agent": "scout"}
    )
    error = result.details["error"]
    assert error["nextAction"] == "Use list."
    assert error["ids"] == {"label": "scout"}
    assert error["operation"] == "close"


async def test_rollback_failure_keeps_primary_and_cleanup() -> None:
    exc = RollbackFailureError.from_failures(
        InvalidRequestError("too big"), RuntimeError("disk full"), operation="delegate"
    )
    result = await MultiplexedAgentTool(FakeController(fail=exc), fake_caller(), TurnGuide()).execute(
        "c1", {"action": "delegate", **OK_ARGS["delegate"]}
    )
    error = result.details["error"]
    assert error["primary"] == ErrorPart("invalid_request", "too big", "delegate").to_dict()
    assert error["cleanup"]["category"] == "internal_failure"
    assert "primary: invalid_request: too big" in result.content[0].text  # type: ignore[union-attr]


async def test_unexpected_exception_becomes_internal_failure_not_a_crash() -> None:
    controller = FakeController(fail=KeyError("boom"))
    result = await MultiplexedAgentTool(controller, fake_caller(), TurnGuide()).execute(
        "c1", {"action": "list"}
    )
    assert result.is_error
    assert result.details["error"]["category"] == "internal_failure"
    assert "KeyError" in result.details["error"]["message"]


async def test_long_output_is_head_truncated_and_saved_privately(tmp_path: Path) -> None:
    controller = FakeController(transcript_text="\n".join(f"line {i}" for i in range(3000)))
    result = await MultiplexedAgentTool(controller, fake_caller(), TurnGuide()).execute(
        "c1", {"action": "transcript", "agent": "scout"}
    )
    text = result.content[0].text  # type: ignore[union-attr]
    path = Path(result.details["full_output_path"])
    assert path.parent == tmp_path / "home" / "tool-output"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    full = path.read_text()
    assert full.endswith("line 2999")
    assert "line 2999" not in text
    assert len(text.splitlines()) <= 2002
    assert f"Full output: {path}" in text
    assert result.details["transcript"].endswith("line 2999")


async def test_short_output_is_not_saved() -> None:
    result = await MultiplexedAgentTool(FakeController(), fake_caller(), TurnGuide()).execute(
        "c1", {"action": "transcript", "agent": "scout"}
    )
    assert "full_output_path" not in result.details


async def test_first_delegation_of_a_turn_steers_hidden_guidance_once() -> None:
    agent = FakeAgent()
    caller = fake_caller(agent)
    controller = FakeController()
    tool = MultiplexedAgentTool(controller, caller, TurnGuide())
    agent.assistant_with_calls("c1", "c2", "c3")
    await tool.execute("c1", {"action": "list"})
    assert agent.sent == []
    await tool.execute("c2", {"action": "delegate", **OK_ARGS["delegate"]})
    await tool.execute("c3", {"action": "continue", **OK_ARGS["continue"]})
    assert len(agent.sent) == 1
    message, deliver_as = agent.sent[0]
    assert deliver_as == "steer"
    assert message.custom_type == DELEGATION_GUIDANCE_TYPE
    assert message.display is False
    assert "do not poll" in str(message.content).lower()
    assert "one executor" in str(message.content)

    agent.assistant_with_calls("c4")
    await tool.execute("c4", {"action": "delegate", **OK_ARGS["delegate"]})
    assert len(agent.sent) == 2


async def test_failed_delegation_sends_no_guidance() -> None:
    agent = FakeAgent()
    agent.assistant_with_calls("c1")
    tool = MultiplexedAgentTool(
        FakeController(fail=InvalidRequestError("Agent definition nope was not found")),
        fake_caller(agent),
        TurnGuide(),
    )
    await tool.execute("c1", {"action": "delegate", "definition": "nope", "task": "t"})
    assert agent.sent == []


async def test_per_operation_delegate_and_continue_share_one_guidance_per_turn() -> None:
    agent = FakeAgent()
    agent.assistant_with_calls("c1", "c2", name="agent_delegate")
    tools = {t.name: t for t in operation_tools(FakeController(), fake_caller(agent))}
    await tools["agent_delegate"].execute("c1", dict(OK_ARGS["delegate"]))
    await tools["agent_continue"].execute("c2", dict(OK_ARGS["continue"]))
    assert len(agent.sent) == 1


async def test_list_text_renders_the_hierarchy() -> None:
    records = [
        {
            "agent": "impl",
            "state": "blocked",
            "available_actions": ["inspect", "transcript", "steer", "close"],
            "agent_definition": "implementer",
            "pi_session_id": "s-impl",
        },
        {
            "agent": "scout",
            "state": "working",
            "available_actions": [],
            "agent_definition": "scout",
            "pi_session_id": "s-scout",
            "parent_label": "impl",
            "stale": True,
            "inactive_ms": 700000,
        },
        {"state": "unknown", "available_actions": [], "managed": True, "diagnostic": "unreadable row"},
    ]
    definitions = [{"name": "scout"}, {"name": "implementer"}, {"name": "old", "enabled": False}]
    controller = FakeController(list_result=ListResult(agents=records, agent_definitions=definitions))
    result = await MultiplexedAgentTool(controller, fake_caller(), TurnGuide()).execute(
        "c1", {"action": "list"}
    )
    assert result.content[0].text.splitlines() == [  # type: ignore[union-attr]
        "Agents (3):",
        "- impl [blocked] · definition=implementer · actions: inspect, transcript, steer, close · session=s-impl",
        "  - scout [working] · definition=scout · actions: none · session=s-scout",
        "      stale: no activity for 11 min (advisory only; do not close for this alone)",
        "- (unattributed record) [unknown] · actions: none",
        "    diagnostic: unreadable row",
        "Use only the actions listed for an agent; results and questions arrive as messages.",
        "Definitions: scout, implementer",
        "Disabled definitions: old",
    ]
