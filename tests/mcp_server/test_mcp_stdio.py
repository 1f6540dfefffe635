"""`corral mcp` over stdio, driven by the official MCP SDK client (a client nobody here wrote)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from .conftest import WAIT_MS, McpEnv, run_mcp_answering_initialize
from .conftest import details as _details
from .conftest import text as _text

AGENT_TOOLS = [
    "agent_list",
    "agent_delegate",
    "agent_continue",
    "agent_steer",
    "agent_interrupt",
    "agent_reply",
    "agent_close",
    "agent_inspect",
    "agent_transcript",
]


@pytest.mark.parametrize(
    "mode", ["auto", "legacy"]
)  # 2026-07-28 `server/discover`; the `initialize` handshake
async def test_tools_delegate_and_wait_for_the_result(mcp_env: McpEnv, mode: str) -> None:
    async with mcp_env.client(mode=mode) as client:
        assert client.server_info is not None and client.server_info.name == "corral"
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == [*AGENT_TOOLS, "merge", "wait"]
        delegate = next(tool for tool in listed.tools if tool.name == "agent_delegate")
        assert set(delegate.input_schema["required"]) == {"definition", "task"}
        started = await client.call_tool(
            "agent_delegate", {"definition": "scout", "task": "look", "label": "s1"}
        )
        assert not started.is_error and _details(started)["agent"] == "s1"
        assert _text(started).startswith("Started agent s1")
        waited = await client.call_tool("wait", {"timeoutMs": WAIT_MS})
        items = _details(waited)["items"]
        assert [(item["kind"], item["details"]["request_id"]) for item in items] == [
            ("result", _details(started)["request_id"])
        ]
        assert "agent result" in _text(waited) and items[0]["entry_id"] in _text(waited)
        again = await client.call_tool("wait", {"timeoutMs": 0})
        assert _details(again)["items"] == [] and _details(again)["timedOut"] is True
        replay = await client.call_tool("wait", {"timeoutMs": 0, "after": None})
        assert [item["entry_id"] for item in _details(replay)["items"]] == [items[0]["entry_id"]]


async def test_bad_arguments_are_errors_naming_the_category(mcp_env: McpEnv) -> None:
    async with mcp_env.client() as client:
        missing = await client.call_tool("agent_delegate", {"definition": "scout"})
        assert missing.is_error and "invalid_request" in _text(missing)
        assert _details(missing)["error"]["category"] == "invalid_request"
        nobody = await client.call_tool("agent_steer", {"agent": "nobody", "message": "x"})
        assert nobody.is_error and "target_not_found" in _text(nobody)
        for bad in ({"timeoutMs": -1}, {"timeoutMs": 300_001}, {"after": "no-such-entry"}, {"bogus": 1}):
            waited = await client.call_tool("wait", bad)
            assert waited.is_error and "invalid_request" in _text(waited), bad
        unknown = await client.call_tool("agent", {"action": "list"})
        assert unknown.is_error and "invalid_request" in _text(unknown)
        listed = await client.call_tool("agent_list", {})
        assert _details(listed)["agents"] == []  # nothing durable changed


async def test_an_ask_arrives_as_a_wait_item_and_is_answered_with_reply(mcp_env: McpEnv) -> None:
    mcp_env.script(
        {
            "*": [
                {"tool_calls": [{"name": "ask_owner", "args": {"question": "Which file?"}}]},
                {"text": "thanks"},
            ]
        }
    )
    async with mcp_env.client() as client:
        await client.call_tool("agent_delegate", {"definition": "scout", "task": "q", "label": "asker"})
        asked = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert [item["kind"] for item in asked] == ["ask"] and "Which file?" in asked[0]["text"]
        transcript = await client.read_resource("corral://agents/asker/transcript")
        assert "Which file?" in transcript.contents[0].text  # type: ignore[union-attr]
        agents = await client.read_resource("corral://agents")
        assert '"agent": "asker"' in agents.contents[0].text  # type: ignore[union-attr]
        replied = await client.call_tool("agent_reply", {"agent": "asker", "message": "README.md"})
        assert not replied.is_error, _text(replied)
        result = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert [item["kind"] for item in result] == ["result"] and result[0]["text"].endswith("thanks")


async def test_steer_then_close_a_working_agent(mcp_env: McpEnv) -> None:
    started, gate = mcp_env.work / "started", mcp_env.work / "go"
    command = f"touch {started}; while [ ! -f {gate} ]; do sleep 0.01; done; echo ok"
    mcp_env.script(
        {
            "w1": [
                {"tool_calls": [{"name": "bash", "args": {"command": command}}]},
                {"text": "steered", "expect": {"last_user_contains": "check docs"}},
            ],
            "w2": [{"text": "slow", "delay_ms": 60000}],
        }
    )
    async with mcp_env.client() as client:
        await client.call_tool("agent_delegate", {"definition": "implementer", "task": "x", "label": "w1"})
        while not started.exists():
            await asyncio.sleep(0.01)
        steered = await client.call_tool("agent_steer", {"agent": "w1", "message": "check docs"})
        assert not steered.is_error, _text(steered)
        gate.write_text("")
        result = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert result[0]["text"].endswith("steered")
        await client.call_tool("agent_delegate", {"definition": "scout", "task": "x", "label": "w2"})
        closed = await client.call_tool("agent_close", {"agent": "w2"})
        assert not closed.is_error and _details(closed)["action"] == "close"
        assert _details(await client.call_tool("agent_list", {}))["agents"] == []


async def test_wait_sends_progress_while_it_blocks(mcp_env: McpEnv) -> None:
    seen: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    async with mcp_env.client() as client:
        waited = await client.call_tool("wait", {"timeoutMs": 2000}, progress_callback=progress)
        assert _details(waited)["timedOut"] is True
    assert seen and seen == sorted(seen)


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_inbox_subscribers_hear_of_new_items(mcp_env: McpEnv) -> None:
    """Handshake-era clients (most editors today) subscribe with `resources/subscribe`."""
    updated: list[str] = []

    async def on_message(message: Any) -> None:
        params = getattr(getattr(message, "root", message), "params", None)
        uri = getattr(params, "uri", None)
        if uri is not None:
            updated.append(str(uri))

    async with mcp_env.client(mode="legacy", message_handler=on_message) as client:
        await client.subscribe_resource("corral://inbox")
        await client.call_tool("agent_delegate", {"definition": "scout", "task": "x"})
        inbox: list[Any] = []
        while not inbox:
            read = await client.read_resource("corral://inbox")
            inbox = json.loads(read.contents[0].text)["items"]  # type: ignore[union-attr]
            await asyncio.sleep(0.01)
        while not updated:
            await asyncio.sleep(0.01)
        assert updated[0] == "corral://inbox"
        waited = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert [item["entry_id"] for item in waited] == [item["entry_id"] for item in inbox]


async def test_listeners_hear_of_new_items(mcp_env: McpEnv) -> None:
    """2026-07-28 clients listen with `subscriptions/listen`."""
    async with mcp_env.client() as client, client.listen(resource_subscriptions=["corral://inbox"]) as events:
        await client.call_tool("agent_delegate", {"definition": "scout", "task": "x"})
        event = await asyncio.wait_for(anext(aiter(events)), WAIT_MS / 1000)
        assert getattr(event, "uri", None) == "corral://inbox"
        waited = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert [item["kind"] for item in waited] == ["result"]


async def test_the_lead_prompt(mcp_env: McpEnv) -> None:
    async with mcp_env.client() as client:
        prompts = await client.list_prompts()
        assert [prompt.name for prompt in prompts.prompts] == ["lead"]
        lead = await client.get_prompt("lead")
        text = lead.messages[0].content.text  # type: ignore[union-attr]
        assert "wait" in text and "agent_reply" in text and "agent_close" in text


async def test_teams_tools_when_the_teams_surface_is_on(mcp_env: McpEnv) -> None:
    mcp_env.script(
        {
            "*": [
                {
                    "tool_calls": [
                        {"name": "report_and_exit", "args": {"content": "done", "outcome": "succeeded"}}
                    ]
                }
            ]
        }
    )
    async with mcp_env.client("--surfaces", "agent,teams") as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert {"spawn_agent", "spawn_swarm_agents", "get_agent_status", "send_message", "read_inbox"} <= set(
            names
        )
        assert "report_and_exit" not in names and names[-1] == "wait"
        spawned = await client.call_tool(
            "spawn_agent", {"name": "a", "prompt": "p", "model_slot": "write-patch"}
        )
        assert not spawned.is_error, _text(spawned)
        items = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert [item["kind"] for item in items] == ["report"]


async def test_elicit_asks_the_user_and_replies_for_them(mcp_env: McpEnv) -> None:
    from mcp.types import ElicitResult

    mcp_env.script(
        {
            "*": [
                {"tool_calls": [{"name": "ask_owner", "args": {"question": "Which file?"}}]},
                {"text": "thanks", "expect": {"last_user_contains": "README.md"}},
            ]
        }
    )
    asked: list[str] = []

    async def answer(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"answer": "README.md"})

    async with mcp_env.client("--elicit", mode="legacy", elicitation_callback=answer) as client:
        await client.call_tool("agent_delegate", {"definition": "scout", "task": "q", "label": "asker"})
        first = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert [item["kind"] for item in first] == ["ask"]
        assert first[0]["details"]["elicited_answer"] == "README.md"
        assert asked == ["Agent asker asks: Which file?"]
        result = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert [item["kind"] for item in result] == ["result"] and result[0]["text"].endswith("thanks")


async def test_without_elicit_support_the_ask_stays_for_the_model(mcp_env: McpEnv) -> None:
    mcp_env.script({"*": [{"tool_calls": [{"name": "ask_owner", "args": {"question": "Which file?"}}]}]})
    async with mcp_env.client("--elicit", mode="legacy") as client:  # no elicitation callback: not capable
        await client.call_tool("agent_delegate", {"definition": "scout", "task": "q", "label": "asker"})
        first = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert [item["kind"] for item in first] == ["ask"] and "elicited_answer" not in first[0]["details"]


async def test_agents_inherit_the_model_given_with_model(mcp_env: McpEnv) -> None:
    other = {
        "steps": [{"text": "lead"}],
        "on_exhausted": "repeat_last",
        "agents": {"*": [{"text": "from --model"}]},
    }
    (mcp_env.root / "scripts" / "other.yaml").write_text(json.dumps(other))
    async with mcp_env.client("--model", "scripted/other", mode="legacy") as client:
        await client.call_tool("agent_delegate", {"definition": "scout", "task": "t", "label": "m1"})
        items = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert [item["kind"] for item in items] == ["result"] and items[0]["text"].endswith("from --model")
    async with mcp_env.client(mode="legacy") as client:  # without it: default_model (scripted/team)
        await client.call_tool("agent_delegate", {"definition": "scout", "task": "t", "label": "m2"})
        items = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert items[0]["text"].endswith("agent result")


def test_an_unknown_model_ends_the_server_with_a_one_line_error(mcp_env: McpEnv) -> None:
    done = run_mcp_answering_initialize(mcp_env, "--model", "scripted/no-such-script")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("corral: error:") and "no-such-script" in lines[0], lines
    assert not (mcp_env.home / "sessions").exists() or not any((mcp_env.home / "sessions").rglob("*.jsonl"))
