"""`AcpAgentSession` alone, against the scripted fake ACP agent (no host): what a turn records.

These are lower-level than the managed-agent tests (`test_acp_agents.py`) because they pin the
session-file shape of each kind of `session/update`, and the rejection of a permission request when
nobody can be asked, which the host-level tests cannot isolate.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from corral.agent import GuardVerdict, RequestEstimate
from corral.harness.acp import (
    PLAN_ENTRY,
    SESSION_ENTRY,
    AcpAgentSession,
    AcpCommand,
    SessionConfig,
    preset_command,
)
from corral.llm import (
    AssistantMessage,
    CustomMessage,
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


FAKE_COMMAND = AcpCommand((sys.executable, str(FAKE)), "fake")


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


def _logged(log: Path, method: str) -> list[dict[str, object]]:
    if not log.exists():
        return []
    found = [json.loads(line) for line in log.read_text().splitlines()]
    return [m for m in found if m.get("method") == method]


def _ready(agent: AcpAgentSession) -> list[object]:
    return [
        e.data for e in agent.session.entries if isinstance(e, CustomEntry) and e.custom_type == SESSION_ENTRY
    ]


async def _first_then_continued(
    tmp_path: Path, env: dict[str, str], task: str
) -> tuple[str | None, AcpAgentSession]:
    """A first agent's turn on `task`, then a second agent on the same session file prompted `RECALL`."""
    first = AcpAgentSession(
        command=FAKE_COMMAND,
        session=SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions"),
        cwd=tmp_path,
        env=env,
    )
    try:
        await asyncio.wait_for(first.prompt(task), WAIT)
    finally:
        await first.close()
    first.session.flush()
    assert first.session.path is not None
    first.session.close()
    second = AcpAgentSession(
        command=FAKE_COMMAND, session=SessionManager.open(first.session.path), cwd=tmp_path, env=env
    )
    try:
        await asyncio.wait_for(second.prompt("RECALL"), WAIT)
    finally:
        await second.close()
    return first.acp_session_id, second


async def test_a_continued_session_is_loaded_where_the_agent_offers_load(tmp_path: Path) -> None:
    log, saved = tmp_path / "fake.jsonl", tmp_path / "acp-sessions"
    saved.mkdir()
    env = {**os.environ, "FAKE_ACP_LOG": str(log), "FAKE_ACP_SESSIONS": str(saved)}
    first_id, agent = await _first_then_continued(tmp_path, env, "first task ALPHA")
    assert agent.last_assistant_text() == "I remember: first task ALPHA"
    (load,) = _logged(log, "session/load")
    assert load["params"] == {"sessionId": first_id, "cwd": str(tmp_path), "mcpServers": []}
    assert len(_logged(log, "session/new")) == 1
    assert _ready(agent) == [{"sessionId": first_id, "how": "new"}, {"sessionId": first_id, "how": "loaded"}]
    # the history the agent replayed while loading is not recorded a second time
    assert [m.role for m in agent.messages] == ["user", "assistant", "user", "assistant"]


async def test_a_continued_session_is_seeded_with_the_transcript_where_load_is_not_offered(
    tmp_path: Path,
) -> None:
    log = tmp_path / "fake.jsonl"
    env = {**os.environ, "FAKE_ACP_LOG": str(log)}
    _, agent = await _first_then_continued(tmp_path, env, "TOOL first task ALPHA")
    assert _logged(log, "session/load") == []
    prompts = _logged(log, "session/prompt")
    assert len(prompts) == 2
    seeded = prompts[1]["params"]["prompt"][0]["text"]  # type: ignore[index]
    for seen in ("TOOL first task ALPHA", "The notes say 42.", "the notes say 42", "RECALL"):
        assert seen in seeded
    assert agent.last_assistant_text().startswith("I remember: ") and "first task ALPHA" in (
        agent.last_assistant_text() or ""
    )
    assert [d["how"] for d in _ready(agent)] == ["new", "seeded"]  # type: ignore[index]
    # the session file keeps the plain instruction, not the seeded prompt
    assert _text(agent.messages[-2]) == "RECALL"


async def test_a_session_the_agent_cannot_load_is_seeded_and_says_why(tmp_path: Path) -> None:
    log, saved = tmp_path / "fake.jsonl", tmp_path / "acp-sessions"
    saved.mkdir()
    env = {**os.environ, "FAKE_ACP_LOG": str(log), "FAKE_ACP_SESSIONS": str(saved)}
    first = AcpAgentSession(
        command=FAKE_COMMAND,
        session=SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions"),
        cwd=tmp_path,
        env=env,
    )
    try:
        await asyncio.wait_for(first.prompt("first task ALPHA"), WAIT)
    finally:
        await first.close()
    for stale in saved.iterdir():  # the agent forgot the session
        stale.unlink()
    first.session.flush()
    assert first.session.path is not None
    first.session.close()
    second = AcpAgentSession(
        command=FAKE_COMMAND, session=SessionManager.open(first.session.path), cwd=tmp_path, env=env
    )
    try:
        await asyncio.wait_for(second.prompt("RECALL"), WAIT)
    finally:
        await second.close()
    assert len(_logged(log, "session/load")) == 1 and len(_logged(log, "session/new")) == 2
    last = _ready(second)[-1]
    assert isinstance(last, dict) and last["how"] == "seeded" and "no session" in str(last["loadRefused"])
    assert "first task ALPHA" in (second.last_assistant_text() or "")


def _text(message: object) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") for block in content)


class _Guard:
    """A request guard that answers with the verdicts given, in order (then `go`), and keeps what it saw."""

    def __init__(self, *verdicts: GuardVerdict) -> None:
        self.verdicts = list(verdicts)
        self.asked = 0
        self.replies: list[AssistantMessage] = []

    def before_request(self, estimate: RequestEstimate) -> GuardVerdict:
        self.asked += 1
        assert estimate.tokens == 0  # the agent's own requests are not corral's to estimate
        return self.verdicts.pop(0) if self.verdicts else GuardVerdict("go")

    def after_reply(self, reply: AssistantMessage, estimate: RequestEstimate) -> None:
        self.replies.append(reply)


def _logged_agent(tmp_path: Path) -> tuple[AcpAgentSession, Path]:
    log = tmp_path / "fake.jsonl"
    session = SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions")
    env = {**os.environ, "FAKE_ACP_LOG": str(log)}
    return AcpAgentSession(command=FAKE_COMMAND, session=session, cwd=tmp_path, env=env), log


async def _guarded_prompt(
    tmp_path: Path, verdict: GuardVerdict, text: str
) -> tuple[AcpAgentSession, Path, _Guard]:
    """One prompt of a logged agent under a guard answering `verdict`; the agent is closed after it."""
    agent, log = _logged_agent(tmp_path)
    guard = _Guard(verdict)
    agent.set_request_guard(guard)
    try:
        await asyncio.wait_for(agent.prompt(text), WAIT)
    finally:
        await agent.close()
    return agent, log, guard


async def test_each_turn_tells_the_guard_its_tokens_and_the_growth_of_the_sessions_cost(
    tmp_path: Path,
) -> None:
    agent, _ = _logged_agent(tmp_path)
    guard = _Guard()
    agent.set_request_guard(guard)
    try:
        await asyncio.wait_for(agent.prompt("TOOL"), WAIT)
        assert agent.metered is False  # no usage so far: unmetered
        await asyncio.wait_for(agent.prompt("hi"), WAIT)
        await asyncio.wait_for(agent.prompt("hi again"), WAIT)
    finally:
        await agent.close()
    assert guard.asked == 3
    assert [(r.usage.total_tokens, r.usage.cost.total) for r in guard.replies] == [
        (0, 0.0),
        (1234, 0.25),
        (1234, 0.25),
    ]
    assert agent.metered is True


async def test_a_guard_that_stops_or_ends_the_budget_sends_no_prompt(tmp_path: Path) -> None:
    for verdict in (GuardVerdict("stop"), GuardVerdict("final", "The budget is exhausted.")):
        agent, log, _ = await _guarded_prompt(tmp_path, verdict, "hi")
        assert _logged(log, "session/prompt") == []
        notices = [m for m in agent.messages if isinstance(m, CustomMessage)]
        assert [n.content for n in notices] == ([verdict.text] if verdict.text else [])


async def test_a_notice_goes_with_the_prompt(tmp_path: Path) -> None:
    verdict = GuardVerdict("notice", "Wrap up: 80% of the budget is spent.")
    agent, log, _ = await _guarded_prompt(tmp_path, verdict, "hi")
    (prompt,) = _logged(log, "session/prompt")
    assert prompt["params"]["prompt"][0]["text"] == "hi\n\nWrap up: 80% of the budget is spent."  # type: ignore[index]
    assert agent.last_assistant_text() == "Hello from the fake agent."


async def test_a_time_limit_already_reached_sends_no_prompt(tmp_path: Path) -> None:
    agent, log, guard = await _guarded_prompt(tmp_path, GuardVerdict("go", time_left_ms=0), "SLOW")
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    assert "time limit" in (last.error_message or "")
    assert _logged(log, "session/prompt") == []
    assert guard.asked == 2  # asked again when the time ran out (the budget guard marks it there)


async def test_a_time_limit_reached_during_a_turn_cancels_it(tmp_path: Path) -> None:
    # the SLOW turn never ends on its own: the time limit ends it, whenever it falls
    agent, log, guard = await _guarded_prompt(tmp_path, GuardVerdict("go", time_left_ms=300), "SLOW")
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    assert "time limit" in (last.error_message or "")
    if _logged(log, "session/prompt"):  # the limit fell during the turn (not while the agent started)
        assert _logged(log, "session/cancel")
    assert guard.asked == 2


async def _configured(tmp_path: Path, config: SessionConfig) -> tuple[AcpAgentSession, Path]:
    log = tmp_path / "fake.jsonl"
    session = SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions")
    env = {**os.environ, "FAKE_ACP_LOG": str(log)}
    agent = AcpAgentSession(command=FAKE_COMMAND, session=session, cwd=tmp_path, env=env, config=config)
    try:
        await asyncio.wait_for(agent.prompt("CONFIG"), WAIT)
    finally:
        await agent.close()
    return agent, log


async def test_the_definitions_model_and_thinking_set_the_agents_config_options(tmp_path: Path) -> None:
    agent, log = await _configured(tmp_path, SessionConfig("fake/fake-large", "low"))
    assert agent.last_assistant_text() == "model=fake/fake-large thought=low"
    assert [m["params"] for m in _logged(log, "session/set_config_option")] == [
        {"sessionId": agent.acp_session_id, "configId": "model", "value": "fake/fake-large"},
        {"sessionId": agent.acp_session_id, "configId": "thought_level", "value": "low"},
    ]
    (entry,) = _ready(agent)
    assert isinstance(entry, dict) and entry["config"] == {"model": "fake/fake-large", "thought_level": "low"}


async def test_a_model_matches_by_id_or_name_and_the_current_value_is_not_set_again(tmp_path: Path) -> None:
    agent, log = await _configured(
        tmp_path, SessionConfig("other/LARGE:medium")
    )  # name `Large`; medium is current
    assert agent.last_assistant_text() == "model=fake/fake-large thought=medium"
    assert [m["params"]["value"] for m in _logged(log, "session/set_config_option")] == ["fake/fake-large"]  # type: ignore[index]


async def test_what_the_agent_does_not_offer_or_refuses_stays_its_default_and_is_noted(
    tmp_path: Path,
) -> None:
    agent, _ = await _configured(tmp_path, SessionConfig("fake/fake-huge", "high"))
    assert agent.last_assistant_text() == "model=fake-small thought=medium"
    (entry,) = _ready(agent)
    assert isinstance(entry, dict) and "config" not in entry
    unmatched = entry["configUnmatched"]
    assert (
        unmatched["model"]
        == "fake/fake-huge is not one of the agent's model values (fake-small, fake/fake-large)"
    )
    assert unmatched["thought_level"] == "the agent refused high: high is not available"


async def test_no_model_or_thinking_sets_nothing(tmp_path: Path) -> None:
    agent, log = await _configured(tmp_path, SessionConfig())
    assert agent.last_assistant_text() == "model=fake-small thought=medium"
    assert _logged(log, "session/set_config_option") == []


async def _asked(tmp_path: Path, prompt: str, *, writable: bool = True) -> str:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    session = SessionManager.create(work, sessions_root=tmp_path / "sessions")
    agent = AcpAgentSession(command=FAKE_COMMAND, session=session, cwd=work, writable=writable)
    try:
        await asyncio.wait_for(agent.prompt(prompt), WAIT)
    finally:
        await agent.close()
    return agent.last_assistant_text() or ""


async def test_the_agent_reads_files_inside_its_cwd(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("one\ntwo\nthree\n")
    assert await _asked(tmp_path, "READ notes.txt") == "read: one\ntwo\nthree\n"
    assert await _asked(tmp_path, "READ notes.txt LINE2") == "read: two\n"
    assert (await _asked(tmp_path, "READ missing.txt")).startswith("refused: Resource not found")
    assert "cannot be read" in await _asked(tmp_path, "READ .")  # a directory


async def test_a_path_outside_the_cwd_is_refused_even_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "secret.txt").write_text("secret")
    (tmp_path / "work" / "inside.txt").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "work" / "out").symlink_to(tmp_path)
    for prompt in ("READ ../secret.txt", "READ inside.txt", "READ out/secret.txt", "WRITE out/new.txt hi"):
        answer = await _asked(tmp_path, prompt)
        assert answer.startswith("refused: ") and "outside the agent's working directory" in answer, prompt
    assert not (tmp_path / "new.txt").exists() and (tmp_path / "secret.txt").read_text() == "secret"


async def test_the_agent_writes_inside_its_cwd_unless_it_is_read_only(tmp_path: Path) -> None:
    assert await _asked(tmp_path, "WRITE sub/made.txt hello there") == "wrote"
    assert (tmp_path / "work" / "sub" / "made.txt").read_text() == "hello there"
    answer = await _asked(tmp_path, "WRITE other.txt nope", writable=False)
    assert answer.startswith("refused: this agent is read-only")
    assert not (tmp_path / "work" / "other.txt").exists()
    caps = json.loads(await _asked(tmp_path, "CAPS", writable=False))
    assert caps == {"fs": {"readTextFile": True, "writeTextFile": False}, "terminal": False}


async def test_a_terminal_request_is_refused(tmp_path: Path) -> None:
    answer = await _asked(tmp_path, "TERMINAL please")
    assert answer.startswith("refused: Method not found: terminal/create") and "offers no terminal" in answer


async def test_a_loaded_sessions_cost_grows_from_what_its_earlier_turns_recorded(tmp_path: Path) -> None:
    saved = tmp_path / "acp-sessions"
    saved.mkdir()
    env = {**os.environ, "FAKE_ACP_SESSIONS": str(saved)}
    first = AcpAgentSession(
        command=FAKE_COMMAND,
        session=SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions"),
        cwd=tmp_path,
        env=env,
    )
    try:
        await asyncio.wait_for(first.prompt("hi"), WAIT)
        await asyncio.wait_for(first.prompt("hi again"), WAIT)
    finally:
        await first.close()
    first.session.flush()
    assert first.session.path is not None
    first.session.close()
    second = AcpAgentSession(
        command=FAKE_COMMAND, session=SessionManager.open(first.session.path), cwd=tmp_path, env=env
    )
    try:
        await asyncio.wait_for(second.prompt("hi once more"), WAIT)  # the agent's cost: $0.75 in all
    finally:
        await second.close()
    assert [d["how"] for d in _ready(second)] == ["new", "loaded"]  # type: ignore[index]
    costs = [m.usage.cost.total for m in second.messages if isinstance(m, AssistantMessage)]
    assert costs == [0.25, 0.25, 0.25]
