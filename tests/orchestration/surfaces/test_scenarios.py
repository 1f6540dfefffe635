"""The surfaces inside a real agent loop, driven by the scripted model.

The controller is still a recording fake here (the surfaces are adapters);
these scenarios pin what the loop and the model see: the tool offered, the
hidden guidance in the next request, ask_owner ending the turn, and a bad
call answered with `invalid_request` instead of a crash.
"""

from __future__ import annotations

import asyncio
import os
import textwrap
from pathlib import Path

import pytest

from corral.agent import AgentSession
from corral.llm import CustomMessage, ModelInfo, ScriptedModel, ToolResultMessage
from corral.orchestration.kernel._caller import Caller
from corral.orchestration.surfaces import (
    DELEGATION_GUIDANCE_TYPE,
    AskOwnerTool,
    MultiplexedAgentTool,
    TurnGuide,
)
from corral.session import SessionManager

from .helpers import TIMEOUT, FakeController


def _model(cwd: Path, body: str) -> ScriptedModel:
    scripts = cwd / ".corral" / "scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    (scripts / "s.yaml").write_text(textwrap.dedent(body))
    # $CORRAL_SCRIPTS: a project's own .corral/scripts/ count only once the project is trusted
    return ScriptedModel(
        ModelInfo("scripted", "s", "scripted"),
        cwd=cwd,
        environ={**os.environ, "CORRAL_SCRIPTS": str(scripts)},
    )


def _agent(tmp_path: Path, model: ScriptedModel) -> AgentSession:
    cwd = tmp_path / "proj"
    session = SessionManager.create(cwd, sessions_root=tmp_path / "sessions")
    return AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=cwd)


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CORRAL_HOME", str(tmp_path / "home"))
    path = tmp_path / "proj"
    path.mkdir()
    return path


async def test_lead_delegates_twice_and_the_next_request_carries_one_guidance(
    tmp_path: Path, cwd: Path
) -> None:
    model = _model(
        cwd,
        """
        steps:
          - tool_calls:
              - {name: agent, id: d1, args: {action: delegate, definition: scout, task: "Map it", label: null, cwd: "", files: [], fork: null, timeoutMs: null, session: "", agent: "", message: ""}}
              - {name: agent, id: d2, args: {action: delegate, definition: reviewer, task: "Review it"}}
            expect:
              tools_include: [agent]
          - text: "Waiting for results."
            expect:
              context_contains: ["Delegation guidance", "Started agent scout"]
        """,
    )
    agent = _agent(tmp_path, model)
    controller = FakeController()
    agent.register_tool(MultiplexedAgentTool(controller, Caller.lead(agent), TurnGuide()))
    await asyncio.wait_for(agent.prompt("Split the work."), TIMEOUT)
    await asyncio.wait_for(agent.wait_for_idle(), TIMEOUT)
    assert [m for m, _ in controller.calls] == ["delegate", "delegate"]
    guidance = [
        m
        for m in agent.messages
        if isinstance(m, CustomMessage) and m.custom_type == DELEGATION_GUIDANCE_TYPE
    ]
    assert len(guidance) == 1
    assert guidance[0].display is False
    assert agent.last_assistant_text() == "Waiting for results."


async def test_bad_call_gets_invalid_request_and_the_loop_goes_on(tmp_path: Path, cwd: Path) -> None:
    model = _model(
        cwd,
        """
        steps:
          - tool_calls:
              - {name: agent, id: b1, args: {action: steer, agent: scout, message: "x", definition: scout}}
          - text: "I will fix the call."
            expect:
              context_contains: ["invalid_request", "not accepted by steer"]
        """,
    )
    agent = _agent(tmp_path, model)
    controller = FakeController()
    agent.register_tool(MultiplexedAgentTool(controller, Caller.lead(agent), TurnGuide()))
    await asyncio.wait_for(agent.prompt("Steer scout."), TIMEOUT)
    await asyncio.wait_for(agent.wait_for_idle(), TIMEOUT)
    assert controller.calls == []
    [result] = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error
    assert result.details["error"]["category"] == "invalid_request"
    assert agent.last_assistant_text() == "I will fix the call."


async def test_ask_owner_alone_ends_the_turn(tmp_path: Path, cwd: Path) -> None:
    model = _model(
        cwd,
        """
        steps:
          - tool_calls:
              - {name: ask_owner, id: q1, args: {question: "Postgres or SQLite?"}}
        on_exhausted: error
        """,
    )
    agent = _agent(tmp_path, model)
    controller = FakeController()
    agent.register_tool(AskOwnerTool(controller, object(), agent))  # type: ignore[arg-type]
    await asyncio.wait_for(agent.prompt("Build the store."), TIMEOUT)
    await asyncio.wait_for(agent.wait_for_idle(), TIMEOUT)
    [result] = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert not result.is_error
    assert result.details == {"askId": "ask-9", "assignmentRequestId": "req-1"}
    # No second model request: the last message is the tool result, not an error reply.
    assert agent.messages[-1] is result
    assert [m for m, _ in controller.calls] == ["ask_owner"]


async def test_ask_owner_next_to_another_call_is_rejected_and_the_turn_continues(
    tmp_path: Path, cwd: Path
) -> None:
    model = _model(
        cwd,
        """
        steps:
          - tool_calls:
              - {name: ask_owner, id: q1, args: {question: "Postgres or SQLite?"}}
              - {name: ask_owner, id: q2, args: {question: "And the port?"}}
          - text: "I will ask one question alone."
            expect:
              context_contains: ["only tool call"]
        """,
    )
    agent = _agent(tmp_path, model)
    controller = FakeController()
    agent.register_tool(AskOwnerTool(controller, object(), agent))  # type: ignore[arg-type]
    await asyncio.wait_for(agent.prompt("Build the store."), TIMEOUT)
    await asyncio.wait_for(agent.wait_for_idle(), TIMEOUT)
    assert controller.calls == []
    assert agent.last_assistant_text() == "I will ask one question alone."
