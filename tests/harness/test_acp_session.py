"""`AcpAgentSession` alone, against the scripted fake ACP agent (no host): what a turn records.

These are lower-level than the managed-agent tests (`test_acp_agents.py`) because they pin the
session-file shape of each kind of `session/update`, and the rejection of a permission request when
nobody can be asked, which the host-level tests cannot isolate.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from corral.harness.acp import PLAN_ENTRY, AcpAgentSession, AcpCommand, preset_command
from corral.llm import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from corral.session import CustomEntry, SessionManager
from corral.settings import SettingsError, read_settings_file
from tests._waits import eventually

FAKE = Path(__file__).with_name("fake_acp_agent.py")
WAIT = 60.0


def _agent(tmp_path: Path) -> AcpAgentSession:
    session = SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions")
    return AcpAgentSession(
        command=AcpCommand((sys.executable, str(FAKE)), "fake"), session=session, cwd=tmp_path
    )


async def test_a_turn_records_thought_plan_text_and_usage(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    try:
        await asyncio.wait_for(agent.prompt("hi"), WAIT)
    finally:
        await agent.close()
    assert agent.last_assistant_text() == "Hello from the fake agent."
    user, reply = agent.messages
    assert isinstance(user, UserMessage) and isinstance(reply, AssistantMessage)
    assert reply.content == [
        ThinkingContent(thinking="Let me think."),
        TextContent(text="Hello from the fake agent."),
    ]
    assert (reply.provider, reply.model, reply.stop_reason, reply.usage.total_tokens) == (
        "acp",
        "fake",
        "stop",
        1234,
    )
    plans = [e for e in agent.session.entries if isinstance(e, CustomEntry) and e.custom_type == PLAN_ENTRY]
    assert [p.data for p in plans] == [
        {"entries": [{"content": "answer", "priority": "high", "status": "in_progress"}]}
    ]
    agent.session.flush()
    assert agent.session.path is not None
    with SessionManager.open(agent.session.path, read_only=True) as saved:  # the file reads back
        assert saved.build_context().messages == agent.messages


async def test_a_tool_call_and_its_result_are_recorded_in_order(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    try:
        await asyncio.wait_for(agent.prompt("TOOL"), WAIT)
    finally:
        await agent.close()
    _, call, result, answer = agent.messages
    assert isinstance(call, AssistantMessage) and call.stop_reason == "toolUse"
    assert call.content == [
        TextContent(text="Reading the file."),
        ToolCall(id="call-1", name="read", arguments={"path": "notes.txt", "title": "Read notes.txt"}),
    ]
    assert isinstance(result, ToolResultMessage)
    assert (result.tool_call_id, result.content, result.is_error) == (
        "call-1",
        [TextContent(text="the notes say 42")],
        False,
    )
    assert agent.last_assistant_text() == "The notes say 42."
    assert isinstance(answer, AssistantMessage) and answer.stop_reason == "stop"


async def test_with_nobody_to_ask_a_permission_request_is_rejected(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    try:
        await asyncio.wait_for(agent.prompt("PERMISSION"), WAIT)
    finally:
        await agent.close()
    assert agent.last_assistant_text() == "denied: reject-once"
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.is_error) for r in results] == [("call-perm", True)]


async def test_abort_cancels_the_turn_and_the_session_goes_on(tmp_path: Path) -> None:
    log = tmp_path / "fake.jsonl"
    session = SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions")
    agent = AcpAgentSession(
        command=AcpCommand((sys.executable, str(FAKE)), "fake"),
        session=session,
        cwd=tmp_path,
        env={**os.environ, "FAKE_ACP_LOG": str(log)},
    )
    try:
        turn = asyncio.ensure_future(agent.prompt("SLOW"))
        await eventually(lambda: log.exists() and '"session/prompt"' in log.read_text())
        await asyncio.wait_for(agent.abort(), WAIT)
        await asyncio.wait_for(turn, WAIT)
        aborted = agent.messages[-1]
        assert isinstance(aborted, AssistantMessage) and aborted.stop_reason == "aborted"
        assert '"session/cancel"' in log.read_text()
        await asyncio.wait_for(agent.prompt("hi"), WAIT)  # the same ACP session takes the next prompt
        assert agent.last_assistant_text() == "Hello from the fake agent."
    finally:
        await agent.close()


async def test_a_command_that_cannot_start_ends_the_run_with_its_error(tmp_path: Path) -> None:
    session = SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions")
    agent = AcpAgentSession(
        command=AcpCommand((str(tmp_path / "no-such-agent"),), "missing"), session=session, cwd=tmp_path
    )
    await asyncio.wait_for(agent.prompt("hi"), WAIT)
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "error"
    assert "could not start" in (last.error_message or "") and "no-such-agent" in (last.error_message or "")


def test_presets_name_their_commands_and_a_command_replaces_the_preset() -> None:
    assert preset_command("goose", ()).argv == ("goose", "acp")
    assert preset_command("gemini", ("/opt/gemini", "--acp")).argv == ("/opt/gemini", "--acp")
    assert preset_command("acp", ("/usr/bin/my-agent", "--stdio")).name == "my-agent"


def test_harness_settings_replace_the_preset_command_and_set_the_environment_over_corrals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings_file = tmp_path / "settings.toml"
    settings_file.write_text(
        '[harnesses.claude-code]\ncommand = ["/opt/acp/claude-agent-acp"]\n'
        'env = { ANTHROPIC_BASE_URL = "http://127.0.0.1:9", ENABLE_TOOL_SEARCH = "true" }\n'
    )
    settings = read_settings_file(settings_file)
    monkeypatch.setattr(os, "geteuid", lambda: 0)  # as root, Claude Code needs IS_SANDBOX=1
    launch = preset_command("claude-code", (), settings.harnesses["claude-code"])
    assert launch.argv == ("/opt/acp/claude-agent-acp",) and launch.name == "claude-code"
    env = launch.environment(
        {"IS_SANDBOX": "yes", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "0", "HOME": "/h"}
    )
    assert env["IS_SANDBOX"] == "1"  # only `1` counts for Claude Code: the preset's wins
    assert env["ENABLE_TOOL_SEARCH"] == "true"  # the settings' env wins over the preset's
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "0"  # corral's environment over the preset's
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9" and env["HOME"] == "/h"
    # A definition's own command wins over the settings'.
    assert preset_command("claude-code", ("/x/agent",), settings.harnesses["claude-code"]).argv == (
        "/x/agent",
    )
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "IS_SANDBOX" not in preset_command("claude-code", ()).environment({})
    assert preset_command("goose", ()).environment({})["GOOSE_MODE"] == "approve"


def test_an_unknown_harness_settings_key_is_refused(tmp_path: Path) -> None:
    settings_file = tmp_path / "settings.toml"
    settings_file.write_text('[harnesses.goose]\nargs = ["acp"]\n')
    with pytest.raises(SettingsError, match="args"):
        read_settings_file(settings_file)
