"""Agents get the user's MCP servers — the npm `server-everything` and `server-filesystem`, pinned —
lead to leaf: the lead lists and calls their tools, a delegated agent inherits them, `mcp: none`
gets none, a read agent only the read-only ones, a nested agent no more than its parent."""

from __future__ import annotations

import asyncio
from typing import Any

from corral import _tracing
from corral._tracing._builtin import MemorySink
from corral.lead import Launched
from corral.llm import TextContent

from ._install import RealServer
from .conftest import WAIT, McpEnv, tiny


def _texts(launched: Launched) -> str:
    """Every message text of the lead's session (tool results and delivered results included)."""
    parts: list[str] = []
    for message in launched.agent.messages:
        content = getattr(message, "content", None)
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(block.text for block in content if isinstance(block, TextContent))
    return "\n".join(parts)


def _tool_result(launched: Launched, name: str) -> Any:
    for message in launched.agent.messages:
        if getattr(message, "role", None) == "toolResult" and getattr(message, "tool_name", None) == name:
            return message
    raise AssertionError(f"no result of {name} in the lead's session")


async def _run(launched: Launched, prompt: str = "go") -> None:
    await asyncio.wait_for(launched.agent.prompt(prompt), WAIT)
    await asyncio.wait_for(launched.wait_until_quiet(), WAIT)


async def test_the_lead_lists_and_calls_a_real_servers_tools(
    mcp_env: McpEnv, everything: RealServer, lead_of: list[Launched]
) -> None:
    mcp_env.settings({"everything": everything.settings()})
    mcp_env.script(
        [
            {
                "expect": {"tools_include": ["mcp__everything__echo", "mcp__everything__get-sum", "read"]},
                "tool_calls": [
                    {"name": "mcp__everything__echo", "args": {"message": "hello from corral"}},
                    {"name": "mcp__everything__get-sum", "args": {"a": 2, "b": 40}},
                    {"name": "mcp__everything__get-tiny-image", "args": {}},
                ],
            },
            {
                "expect": {"tools_ok": True, "context_contains": ["Echo: hello from corral", "42"]},
                "text": "ok",
            },
        ]
    )
    sink = MemorySink()
    _tracing.setup(sinks=(sink,), environ={})
    try:
        launched = await mcp_env.lead()
        lead_of.append(launched)
        await _run(launched)
    finally:
        _tracing.shutdown()
    assert launched.agent.last_assistant_text() == "ok"
    image = _tool_result(launched, "mcp__everything__get-tiny-image")
    assert any(block.type == "image" and block.mime_type == "image/png" for block in image.content)
    report = launched.mcp_report
    assert report is not None and report.servers[0].state == "ready"
    assert "mcp__everything__echo" in report.tool_names
    # The servers' description and schema are what the model is offered.
    echo = next(tool for tool in launched.agent.tools if tool.name == "mcp__everything__echo")
    assert echo.description.startswith("Echoes back") and "message" in echo.parameters["properties"]
    # Every tool call, MCP ones included, is an `execute_tool` span.
    names = [span.name for span in sink.spans]
    assert "execute_tool mcp__everything__echo" in names and "execute_tool mcp__everything__get-sum" in names


async def test_a_delegated_agent_inherits_the_servers_and_says_which_tools_it_got(
    mcp_env: McpEnv, everything: RealServer, filesystem: RealServer, lead_of: list[Launched]
) -> None:
    (mcp_env.work / "hello.txt").write_text("hello from a file\n")
    mcp_env.settings(
        {"everything": everything.settings(), "fs": filesystem.settings(str(mcp_env.work.resolve()))}
    )
    mcp_env.definition("helper", "description: Any task.\ntools: [read, edit, write, bash]")
    mcp_env.definition("quiet", "description: No MCP.\ntools: [read, bash]\nmcp: none")
    mcp_env.definition("only-fs", "description: One server.\ntools: [read, bash]\nmcp: [fs, github]")
    mcp_env.script(
        [
            {
                "tool_calls": [
                    {
                        "name": "agent",
                        "args": {"action": "delegate", "definition": "helper", "task": "t", "label": "h"},
                    },
                    {
                        "name": "agent",
                        "args": {"action": "delegate", "definition": "quiet", "task": "t", "label": "q"},
                    },
                    {
                        "name": "agent",
                        "args": {"action": "delegate", "definition": "only-fs", "task": "t", "label": "f"},
                    },
                ]
            },
            {"text": "waiting"},
        ],
        agents={
            "h": [
                {
                    "expect": {"tools_include": ["mcp__everything__echo", "mcp__fs__write_file"]},
                    "tool_calls": [
                        {
                            "name": "mcp__fs__read_text_file",
                            "args": {"path": str(mcp_env.work.resolve() / "hello.txt")},
                        }
                    ],
                },
                {"expect": {"tools_ok": True}, "text": "read: {{ last_tool_output }}"},
            ],
            "q": [
                {
                    "expect": {"tools_exclude": ["mcp__everything__echo", "mcp__fs__read_text_file"]},
                    "text": "none",
                }
            ],
            "f": [
                {
                    "expect": {
                        "tools_include": ["mcp__fs__read_text_file", "mcp__fs__write_file", "bash"],
                        "tools_exclude": ["mcp__everything__echo"],
                    },
                    "text": "fs only",
                }
            ],
        },
    )
    launched = await mcp_env.lead()
    lead_of.append(launched)
    await _run(launched)
    assert launched.host is not None
    await asyncio.wait_for(launched.host.wait_until_quiet(launched.session.session_id), WAIT)
    started = {
        result.details["agent"]: result
        for result in (m for m in launched.agent.messages if getattr(m, "tool_name", None) == "agent")
    }
    helper = started["h"].details["mcp"]
    assert helper["servers"]["everything"]["state"] == "ready"
    assert "mcp__fs__write_file" in helper["servers"]["fs"]["tools"] and not helper["readOnly"]
    assert "MCP servers: everything:" in started["h"].content[0].text
    assert "mcp" not in started["q"].details  # `mcp: none`: no server, nothing to say
    only = started["f"].details["mcp"]["servers"]
    assert list(only) == ["fs", "github"] and only["github"]["state"] == "missing"
    assert "github: not given (not configured in [mcp_servers])" in started["f"].content[0].text
    text = _texts(launched)
    assert "read: hello from a file" in text and "none" in text and "fs only" in text


async def test_a_read_agent_gets_only_read_only_tools_and_a_nested_agent_no_more_than_its_parent(
    mcp_env: McpEnv, everything: RealServer, lead_of: list[Launched]
) -> None:
    mcp_env.settings(
        {"everything": everything.settings(), "tiny": tiny(env={"TINY_NOTES": str(mcp_env.notes)})}
    )
    mcp_env.definition(
        "boss",
        "description: Delegates.\ntools: [read, edit, write, bash]\nagents: [worker, scout]\nmcp: [tiny]",
    )
    mcp_env.definition("worker", "description: Writes.\ntools: [read, edit, write, bash]")
    mcp_env.script(
        [
            {
                "tool_calls": [
                    {
                        "name": "agent",
                        "args": {"action": "delegate", "definition": "scout", "task": "t", "label": "s"},
                    },
                    {
                        "name": "agent",
                        "args": {"action": "delegate", "definition": "boss", "task": "t", "label": "b"},
                    },
                ]
            },
            {"text": "waiting"},
        ],
        agents={
            "s": [
                {
                    "expect": {
                        "tools_include": ["mcp__everything__echo", "mcp__tiny__add"],
                        "tools_exclude": ["mcp__everything__toggle-simulated-logging", "mcp__tiny__note"],
                    },
                    "text": "scout saw read-only tools",
                }
            ],
            "b": [
                {
                    "tool_calls": [
                        {
                            "name": "agent",
                            "args": {"action": "delegate", "definition": "worker", "task": "t", "label": "w"},
                        },
                        {
                            "name": "agent",
                            "args": {"action": "delegate", "definition": "scout", "task": "t", "label": "bs"},
                        },
                    ]
                },
                {"text": "boss waiting"},
            ],
            "w": [
                {
                    "expect": {
                        "tools_include": ["mcp__tiny__note"],
                        "tools_exclude": ["mcp__everything__echo"],
                    },
                    "tool_calls": [{"name": "mcp__tiny__note", "args": {"text": "from w"}}],
                },
                {"expect": {"tools_ok": True}, "text": "worker noted"},
            ],
            "bs": [
                {
                    "expect": {
                        "tools_include": ["mcp__tiny__add"],
                        "tools_exclude": ["mcp__tiny__note", "mcp__everything__echo"],
                    },
                    "text": "nested scout",
                }
            ],
        },
    )
    launched = await mcp_env.lead()
    lead_of.append(launched)
    await _run(launched)
    assert launched.host is not None
    await asyncio.wait_for(launched.host.wait_until_quiet(launched.session.session_id), WAIT)
    scout = next(
        m.details["mcp"]
        for m in launched.agent.messages
        if getattr(m, "tool_name", None) == "agent" and m.details["agent"] == "s"
    )
    assert (
        scout["readOnly"]
        and "mcp__everything__toggle-simulated-logging" in scout["servers"]["everything"]["withheld"]
    )
    assert mcp_env.notes.read_text() == "from w\n"
    text = _texts(launched)
    assert "scout saw read-only tools" in text
