"""The lead's own tool calls that a permission rule asks about ask the editor's user through
`session/request_permission`; no answer, or a client that cannot ask, denies them, never hangs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from acp import RequestError
from acp.schema import RequestPermissionResponse

from .conftest import WAIT, AcpEnv, Recorder, text_block

ECHO = {
    "steps": [
        {
            "text": "Running it.",
            "tool_calls": [{"name": "bash", "args": {"command": "echo hello-from-bash"}}],
        },
        {"text": "The turn goes on."},
    ],
    "on_exhausted": "repeat_last",
}
"""`scripted/echo`: the lead runs one `echo` command, then answers."""

THREE = {
    "steps": [
        {"tool_calls": [{"name": "bash", "args": {"command": "echo one"}}]},
        {"tool_calls": [{"name": "bash", "args": {"command": "echo two"}}]},
        {"tool_calls": [{"name": "bash", "args": {"command": "printf three"}}]},
        {"text": "All three asked for."},
    ],
    "on_exhausted": "repeat_last",
}
"""`scripted/three`: two `echo` calls (one ask rule), then a `printf` (another)."""


def _rules(acp_env: AcpEnv, *ask: str) -> None:
    rules = ", ".join(f'"{rule}"' for rule in ask)
    (acp_env.root / "config" / "corral" / "settings.toml").write_text(f"[permissions]\nask = [{rules}]\n")


class NoPermissions(Recorder):
    """An editor that does not support `session/request_permission`."""

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        raise RequestError.method_not_found("session/request_permission")


async def _run(acp_env: AcpEnv, recorder: Recorder, model: str, env: dict[str, str] | None = None) -> str:
    async with acp_env.server(model=model, recorder=recorder, env=env) as (conn, _p, _r):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("go")])
        assert answer.stop_reason == "end_turn"
    return sid


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        ("allow", "hello-from-bash"),
        ("reject", "the user rejected it in the editor"),
        (None, "the user dismissed the request"),
        ("hang", "did not answer in the editor within 1 s"),
    ],
    ids=["allowed", "rejected", "dismissed", "unanswered"],
)
async def test_an_ask_rule_on_the_leads_bash_asks_the_editors_user(
    acp_env: AcpEnv, answer: str | None, outcome: str
) -> None:
    acp_env.script("echo", ECHO)
    _rules(acp_env, "Bash(echo:*)")
    recorder = Recorder(answer=answer)
    env = dict(acp_env.vars, CORRAL_ACP_ASK_TIMEOUT="1")
    sid = await _run(acp_env, recorder, "scripted/echo", env)
    (asked,) = recorder.asked
    (call_id, call), *_ = recorder.tool_calls(sid).items()
    assert asked.tool_call_id == call_id  # the call the editor shows
    assert asked.kind == "execute"
    assert asked.title == "bash: echo hello-from-bash"
    assert asked.raw_input == {"command": "echo hello-from-bash"}
    assert "Bash(echo:*)" in asked.content[0].content.text
    assert outcome in call["text"]
    assert call["status"] == ("completed" if answer == "allow" else "failed")
    if answer != "allow":
        assert call["text"].startswith("bash was not run: the permission rule `Bash(echo:*)` asks")
    assert recorder.text(sid).endswith("The turn goes on.")


async def test_always_allow_holds_for_the_same_tool_and_rule_only(acp_env: AcpEnv) -> None:
    acp_env.script("three", THREE)
    _rules(acp_env, "Bash(echo:*)", "Bash(printf:*)")
    recorder = Recorder(answer="allow_always")
    sid = await _run(acp_env, recorder, "scripted/three")
    assert [asked.title for asked in recorder.asked] == ["bash: echo one", "bash: printf three"]
    calls = list(recorder.tool_calls(sid).values())
    assert [call["status"] for call in calls] == ["completed"] * 3
    assert [call["text"].strip() for call in calls] == ["one", "two", "three"]


async def test_a_client_that_cannot_ask_gets_the_call_denied(acp_env: AcpEnv) -> None:
    acp_env.script("echo", ECHO)
    _rules(acp_env, "Bash(echo:*)")
    recorder = NoPermissions()
    sid = await _run(acp_env, recorder, "scripted/echo")
    assert len(recorder.asked) == 1
    (call,) = recorder.tool_calls(sid).values()
    assert call["status"] == "failed"
    assert "the editor could not ask the user" in call["text"]
    assert "hello-from-bash" not in call["text"]
    assert recorder.text(sid).endswith("The turn goes on.")


async def test_cancelling_the_turn_ends_a_pending_ask(acp_env: AcpEnv) -> None:
    acp_env.script("echo", ECHO)
    _rules(acp_env, "Bash(echo:*)")
    recorder = Recorder(answer="hang")  # the ask timeout is the default 600 s
    async with acp_env.server(model="scripted/echo", recorder=recorder) as (conn, _p, _r):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("go")]))
        await recorder.until(lambda: bool(recorder.asked))
        await conn.cancel(session_id=sid)
        async with asyncio.timeout(WAIT):
            answer = await turn
    assert answer.stop_reason == "cancelled"
    assert all("hello-from-bash" not in call.get("text", "") for call in recorder.tool_calls(sid).values())


async def test_a_hooks_ask_on_the_leads_call_asks_the_editors_user(acp_env: AcpEnv) -> None:
    acp_env.script("echo", ECHO)
    hook = acp_env.root / "ask-hook.sh"
    answer = (
        '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", '
        '"permissionDecisionReason": "the ask hook wants a person to look"}}'
    )
    hook.write_text(f"#!/bin/sh\ncat >/dev/null\necho '{answer}'\n")
    hook.chmod(0o755)
    (acp_env.root / "config" / "corral" / "settings.toml").write_text(
        f'[[hooks.PreToolUse]]\nmatcher = "Bash"\nhooks = [{{ type = "command", command = "{hook}" }}]\n'
    )
    recorder = Recorder(answer="reject")
    sid = await _run(acp_env, recorder, "scripted/echo")
    (asked,) = recorder.asked
    assert "the ask hook wants a person to look" in asked.content[0].content.text
    (call,) = recorder.tool_calls(sid).values()
    assert call["status"] == "failed"
    assert "the ask hook wants a person to look, and the user rejected it in the editor" in call["text"]
