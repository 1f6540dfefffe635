"""The MCP servers the editor passes in `session/new` reach the session's lead (and the agents it
starts in-process); bad entries are refused whole, before anything is opened."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

from tests._ci import unavailable
from tests.mcp_servers._install import RealServer, install

from .conftest import WAIT, AcpEnv, Recorder, text_block


@pytest.fixture(scope="module")
def everything() -> RealServer:
    """`@modelcontextprotocol/server-everything`, installed pinned (a skip without Node, a failure under CI)."""
    if importlib.util.find_spec("mcp") is None:
        unavailable("the MCP SDK is not installed (the mcp extra: `make test` installs it)")
    return install("everything")


def _stdio(name: str, server: RealServer, **env: str) -> McpServerStdio:
    settings = server.settings()
    args = settings["args"]
    assert isinstance(args, list)
    return McpServerStdio(
        name=name,
        command=str(settings["command"]),
        args=[str(arg) for arg in args],
        env=[EnvVariable(name=key, value=value) for key, value in env.items()],
    )


ECHO = {
    "steps": [
        {
            "expect": {"tools_include": ["mcp__ed__echo"]},
            "tool_calls": [{"name": "mcp__ed__echo", "args": {"message": "hello from the editor"}}],
            "otherwise": {"text": "no editor server"},
        },
        {
            "expect": {"context_contains": ["Echo: hello from the editor"]},
            "text": "The editor's server answered.",
            "otherwise": {"text": "no echo"},
        },
    ],
    "on_exhausted": "repeat_last",
}
"""`scripted/echo`: the lead calls the editor's server `ed`'s `echo` tool."""

DELEGATING = {
    "steps": [
        {
            "tool_calls": [
                {
                    "name": "agent",
                    "args": {
                        "action": "delegate",
                        "definition": "generalist",
                        "label": "caller",
                        "task": "Echo through the editor's server.",
                    },
                }
            ]
        },
        {"text": "Waiting on caller."},
    ],
    "on_exhausted": "repeat_last",
    "agents": {
        "caller": [
            {
                "expect": {"tools_include": ["mcp__ed__echo"]},
                "tool_calls": [{"name": "mcp__ed__echo", "args": {"message": "from the agent"}}],
                "otherwise": {"text": "the agent has no editor server"},
            },
            {
                "expect": {"context_contains": ["Echo: from the agent"]},
                "text": "the agent echoed",
                "otherwise": {"text": "no echo"},
            },
        ]
    },
}
"""`scripted/delegating`: the lead delegates `caller`, which calls the editor's server's `echo`."""


@pytest.fixture
async def everything_http(everything: RealServer) -> AsyncIterator[str]:
    """The same server on streamable HTTP (its `streamableHttp` mode), on a free port: its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = everything.settings("streamableHttp")
    args = settings["args"]
    assert isinstance(args, list)
    process = await asyncio.create_subprocess_exec(
        str(settings["command"]),
        *(str(arg) for arg in args),
        env=dict(os.environ, PORT=str(port)),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        async with asyncio.timeout(WAIT):
            while b"listening on port" not in (line := await process.stderr.readline()):
                assert line, "the HTTP server exited before it listened"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        await process.wait()


async def _echo_session(acp_env: AcpEnv, server: Any) -> tuple[Recorder, str]:
    recorder = Recorder()
    async with acp_env.server(model="scripted/echo", recorder=recorder) as (conn, _p, _r):
        hello = await conn.initialize(protocol_version=1)
        assert hello.agent_capabilities.mcp_capabilities.http is True
        assert hello.agent_capabilities.mcp_capabilities.sse is False
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[server])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("echo")])
        assert answer.stop_reason == "end_turn"
    return recorder, sid


async def test_the_lead_calls_a_tool_of_the_server_the_editor_passed(
    acp_env: AcpEnv, everything: RealServer
) -> None:
    acp_env.script("echo", ECHO)
    recorder, sid = await _echo_session(acp_env, _stdio("ed", everything))
    (call,) = recorder.tool_calls(sid).values()
    assert call["title"] == "mcp__ed__echo" and call["status"] == "completed"
    assert "Echo: hello from the editor" in call["text"]
    assert recorder.text(sid).endswith("The editor's server answered.")


async def test_the_lead_calls_a_tool_of_an_http_server_the_editor_passed(
    acp_env: AcpEnv, everything_http: str
) -> None:
    acp_env.script("echo", ECHO)
    server = HttpMcpServer(
        type="http", name="ed", url=everything_http, headers=[HttpHeader(name="X-From", value="editor")]
    )
    recorder, sid = await _echo_session(acp_env, server)
    (call,) = recorder.tool_calls(sid).values()
    assert call["status"] == "completed" and "Echo: hello from the editor" in call["text"]


async def test_the_editors_server_wins_over_a_settings_server_of_the_same_name(
    acp_env: AcpEnv, everything: RealServer
) -> None:
    acp_env.script("echo", ECHO)
    (acp_env.root / "config" / "corral" / "settings.toml").write_text(
        f'[mcp_servers.ed]\ncommand = "{acp_env.root / "no-such-server"}"\n'
    )
    recorder, sid = await _echo_session(acp_env, _stdio("ed", everything))
    (call,) = recorder.tool_calls(sid).values()
    assert "Echo: hello from the editor" in call["text"]
    assert "no-such-server" not in acp_env.stderr()  # the settings' server was never started


async def test_an_agent_the_lead_delegates_inherits_the_editors_server(
    acp_env: AcpEnv, everything: RealServer
) -> None:
    acp_env.script("delegating", DELEGATING)
    recorder = Recorder()
    async with acp_env.server(model="scripted/delegating", recorder=recorder) as (conn, _p, _r):
        await conn.initialize(protocol_version=1)
        sid = (
            await conn.new_session(cwd=str(acp_env.work), mcp_servers=[_stdio("ed", everything)])
        ).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("delegate")])
        await recorder.until(lambda: recorder.agent_statuses(sid) == ["completed"])
    (caller,) = [c for c in recorder.tool_calls(sid).values() if c.get("kind") == "think"]
    assert "the agent echoed" in caller["text"]


BAD: list[tuple[Any, str]] = [
    (McpServerStdio(name="bad name", command="/bin/true", args=[], env=[]), "mcpServers[1]: name 'bad name'"),
    (McpServerStdio(name="a__b", command="/bin/true", args=[], env=[]), "mcpServers[1]: name 'a__b'"),
    (McpServerStdio(name="empty", command="", args=[], env=[]), "mcpServers[1] (empty): 'command' must be"),
    (
        McpServerStdio(name="marker", command="/bin/true", args=[], env=[]),
        "mcpServers[1] (marker): another entry has that name",
    ),
    (
        HttpMcpServer(type="http", name="web", url="ftp://example.com/mcp", headers=[]),
        "mcpServers[1] (web): url 'ftp://example.com/mcp' must start with http:// or https://",
    ),
    (
        SseMcpServer(type="sse", name="old", url="http://127.0.0.1:1/sse", headers=[]),
        "type 'sse' is not supported",
    ),
]


@pytest.mark.parametrize(("bad", "message"), BAD, ids=["name", "double-underscore", "command", "twice", "url", "sse"])
async def test_a_bad_entry_is_invalid_params_and_opens_nothing(
    acp_env: AcpEnv, bad: Any, message: str
) -> None:
    started = acp_env.root / "started"
    good = McpServerStdio(name="marker", command="/bin/sh", args=["-c", f"touch {started}"], env=[])
    acp_env.script("hello", {"steps": [{"text": "Hello."}], "on_exhausted": "repeat_last"})
    async with acp_env.server(model="scripted/hello") as (conn, _p, _r):
        await conn.initialize(protocol_version=1)
        with pytest.raises(RequestError) as raised:
            await conn.new_session(cwd=str(acp_env.work), mcp_servers=[good, bad])
        assert raised.value.code == -32602
        assert message in str(raised.value.data or raised.value)
        # the server keeps serving; the refused session left nothing
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("hi")])
    assert not started.exists()
    assert [path.stem.rsplit("_", 1)[-1] for path in _session_files(acp_env.root)] == [sid]


def _session_files(root: Path) -> list[Path]:
    return [
        path for path in root.rglob("*.jsonl") if "sessions" in path.parts and "scripts" not in path.parts
    ]


async def test_session_load_gives_the_reopened_lead_the_editors_server(
    acp_env: AcpEnv, everything: RealServer
) -> None:
    acp_env.script("hello", {"steps": [{"text": "Hello."}], "on_exhausted": "repeat_last"})
    acp_env.script("echo", ECHO)
    async with acp_env.server(model="scripted/hello") as (conn, _p, _r):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("hi")])
    recorder = Recorder()
    async with acp_env.server(model="scripted/echo", recorder=recorder) as (conn, _p, _r):
        await conn.initialize(protocol_version=1)
        await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[_stdio("ed", everything)])
        await conn.prompt(session_id=sid, prompt=[text_block("echo")])
    calls = [c for c in recorder.tool_calls(sid).values() if c.get("title") == "mcp__ed__echo"]
    assert [call["status"] for call in calls] == ["completed"]
    assert "Echo: hello from the editor" in calls[0]["text"]
