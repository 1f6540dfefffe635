"""corral's ACP client against an agent written with the protocol's Python SDK (`sdk_acp_agent.py`):
the SDK, the reference implementation, validates corral's messages against ACP's schema, and the
agent's SDK-built updates are recorded as the hand-written fake's are."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from pathlib import Path

from corral.harness.acp import PLAN_ENTRY, AcpAgentSession, AcpCommand, SessionConfig
from corral.llm import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage
from corral.session import CustomEntry, SessionManager
from tests._ci import unavailable
from tests._waits import eventually

AGENT = Path(__file__).with_name("sdk_acp_agent.py")
WAIT = 60.0

if importlib.util.find_spec("acp") is None:
    unavailable("the ACP SDK is missing: install the test extra (agent-client-protocol)", module_level=True)


def _agent(tmp_path: Path) -> AcpAgentSession:
    session = SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions")
    return AcpAgentSession(
        command=AcpCommand((sys.executable, str(AGENT)), "sdk"),
        session=session,
        cwd=tmp_path,
        env={**os.environ, "SDK_ACP_MARK": str(tmp_path / "prompted")},
    )


async def test_the_sdk_agent_takes_corral_s_prompts_and_its_updates_are_recorded(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    try:
        await asyncio.wait_for(agent.prompt("hi"), WAIT)
        assert agent.last_assistant_text() == "Hello from the SDK agent."
        reply = agent.messages[-1]
        assert isinstance(reply, AssistantMessage)
        assert reply.content == [
            ThinkingContent(thinking="Let me think."),
            TextContent(text="Hello from the SDK agent."),
        ]
        plans = [
            e.data
            for e in agent.session.entries
            if isinstance(e, CustomEntry) and e.custom_type == PLAN_ENTRY
        ]
        assert plans == [{"entries": [{"content": "answer", "priority": "high", "status": "pending"}]}]

        await asyncio.wait_for(agent.prompt("TOOL"), WAIT)
        _, call, result, _ = agent.messages[-4:]
        assert isinstance(call, AssistantMessage) and call.content[-1] == ToolCall(
            id="call-1", name="read", arguments={"path": "notes.txt", "title": "Read notes.txt"}
        )
        assert isinstance(result, ToolResultMessage) and result.content == [
            TextContent(text="the notes say 42")
        ]
        assert agent.last_assistant_text() == "The notes say 42."

        await asyncio.wait_for(agent.prompt("PERMISSION"), WAIT)  # nobody to ask: rejected
        assert agent.last_assistant_text() == "outcome: reject-once"

        turn = asyncio.ensure_future(agent.prompt("SLOW"))
        await eventually(lambda: (tmp_path / "prompted").exists())
        await asyncio.wait_for(agent.abort(), WAIT)
        await asyncio.wait_for(turn, WAIT)
        last = agent.messages[-1]  # the agent saw the cancel: its last words came before its answer
        assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
        assert last.text == "working slowly... cancelled by the client"

        await asyncio.wait_for(agent.prompt("hi again"), WAIT)  # the session goes on after the cancel
        assert agent.last_assistant_text() == "Hello from the SDK agent."
    finally:
        await agent.close()


async def test_the_sdk_agent_takes_session_load_config_options_and_file_answers(tmp_path: Path) -> None:
    first = _agent(tmp_path)
    try:
        await asyncio.wait_for(first.prompt("hi"), WAIT)
    finally:
        await first.close()
    first.session.flush()
    assert first.session.path is not None and first.acp_session_id is not None
    first.session.close()
    (tmp_path / "notes.txt").write_text("the notes")
    agent = AcpAgentSession(
        command=AcpCommand((sys.executable, str(AGENT)), "sdk"),
        session=SessionManager.open(first.session.path),
        cwd=tmp_path,
        config=SessionConfig("sdk/sdk-large"),
    )
    try:
        await asyncio.wait_for(agent.prompt("WHO"), WAIT)  # session/load, then session/set_config_option
        assert agent.last_assistant_text() == f"{first.acp_session_id} loaded=True model=sdk-large"
        await asyncio.wait_for(agent.prompt(f"READ {tmp_path / 'notes.txt'}"), WAIT)
        assert agent.last_assistant_text() == "read: the notes"
        await asyncio.wait_for(agent.prompt(f"WRITE {tmp_path / 'made.txt'} made by the agent"), WAIT)
        assert agent.last_assistant_text() == "wrote"
        assert (tmp_path / "made.txt").read_text() == "made by the agent"
    finally:
        await agent.close()


async def test_the_mcp_servers_corral_passes_are_valid_acp_and_reach_the_sdk_agent(tmp_path: Path) -> None:
    from corral.harness.acp import McpServerSpec

    session = SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions")
    agent = AcpAgentSession(
        command=AcpCommand((sys.executable, str(AGENT)), "sdk"),
        session=session,
        cwd=tmp_path,
        mcp_servers=[
            McpServerSpec("tiny", command="tiny-mcp", args=("--x",), env={"K": "v"}),
            McpServerSpec("here", command="other-mcp", cwd="/srv"),
            McpServerSpec("web", url="https://mcp.example.com/mcp", headers={"Authorization": "Bearer t"}),
        ],
    )
    try:
        await asyncio.wait_for(agent.prompt("MCP"), WAIT)
    finally:
        await agent.close()
    assert agent.last_assistant_text() == (
        "McpServerStdio:tiny:tiny-mcp;McpServerStdio:here:/bin/sh;HttpMcpServer:web:https://mcp.example.com/mcp"
    )
