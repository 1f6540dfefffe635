"""MCP speaks MCP (issue 28, group 2), checked with the official SDK client.

Texts the client's model reads name the MCP tools and say to call `wait`; every tool carries its
annotations and an `outputSchema` its `structuredContent` matches (the SDK client validates each
successful result against it); a finished agent's transcript stays readable until it is closed;
`wait`'s errors have the shape of every other tool's.
"""

from __future__ import annotations

from .conftest import WAIT_MS, McpEnv
from .conftest import details as _details
from .conftest import text as _text

LEAD_DIALECT = ("the agent tool", "action reply", "wakes you", "refresh with `list`", "Call list ")


def _speaks_mcp(text: str) -> None:
    for words in LEAD_DIALECT:
        assert words not in text, (words, text)


async def test_every_tool_has_annotations_and_an_output_schema(mcp_env: McpEnv) -> None:
    async with mcp_env.client("--surfaces", "agent,teams") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    read_only = {"agent_list", "agent_inspect", "agent_transcript", "wait"}
    destructive = {"agent_close", "merge"}
    for name, tool in tools.items():
        assert tool.annotations is not None, name
        assert tool.annotations.read_only_hint is (
            name in read_only
            or name in {"get_agent_status", "check_teammate", "read_inbox", "list_file_claims"}
        ), name
        assert tool.annotations.destructive_hint is (name in destructive or name == "stop_teammate"), name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", name
        _speaks_mcp(tool.description or "")
    assert "wait" in (tools["agent_delegate"].description or "")


async def test_results_match_their_output_schemas_and_speak_mcp(mcp_env: McpEnv) -> None:
    mcp_env.script(
        {
            "*": [
                {"tool_calls": [{"name": "ask_owner", "args": {"question": "Which file?"}}]},
                {"text": "thanks"},
            ]
        }
    )
    async with mcp_env.client() as client:  # the SDK client validates structuredContent on success
        listed = await client.call_tool("agent_list", {})
        assert not listed.is_error
        started = await client.call_tool(
            "agent_delegate", {"definition": "scout", "task": "q", "label": "asker"}
        )
        assert not started.is_error and "Call `wait`" in _text(started)
        _speaks_mcp(_text(started))
        asked = await client.call_tool("wait", {"timeoutMs": WAIT_MS})
        [item] = _details(asked)["items"]
        assert item["kind"] == "ask" and "agent_reply" in item["text"] and "agent_reply" in _text(asked)
        _speaks_mcp(_text(asked))
        _speaks_mcp(item["text"])
        inspected = await client.call_tool("agent_inspect", {"agent": "asker"})
        assert not inspected.is_error, _text(inspected)
        replied = await client.call_tool("agent_reply", {"agent": "asker", "message": "README.md"})
        assert not replied.is_error, _text(replied)
        result = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert [i["kind"] for i in result] == ["result"]
        missing = await client.call_tool("agent_steer", {"agent": "nobody", "message": "x"})
        assert missing.is_error and "agent_list" in _text(missing)
        _speaks_mcp(_text(missing))


async def test_a_finished_agents_transcript_stays_readable_until_it_is_closed(mcp_env: McpEnv) -> None:
    mcp_env.script({"*": [{"text": "the finished answer"}]})
    async with mcp_env.client() as client:
        await client.call_tool(
            "agent_delegate", {"definition": "scout", "task": "look here", "label": "done1"}
        )
        items = _details(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))["items"]
        assert [i["kind"] for i in items] == ["result"]
        transcript = await client.call_tool("agent_transcript", {"agent": "done1"})
        assert not transcript.is_error, _text(transcript)
        assert "look here" in _text(transcript) and "the finished answer" in _text(transcript)
        assert _text(transcript).startswith("Transcript of finished agent done1 (session "), _text(transcript)
        resource = await client.read_resource("corral://agents/done1/transcript")
        assert "the finished answer" in resource.contents[0].text  # type: ignore[union-attr]
        closed = await client.call_tool("agent_close", {"agent": "done1"})
        assert not closed.is_error, _text(closed)
        gone = await client.call_tool("agent_transcript", {"agent": "done1"})
        assert gone.is_error and _details(gone)["error"]["category"] == "target_not_found"


async def test_waits_errors_have_the_shape_of_every_tools(mcp_env: McpEnv) -> None:
    async with mcp_env.client() as client:
        other = await client.call_tool("agent_close", {"agent": "nobody"})
        for bad in ({"timeoutMs": -1}, {"after": "no-such-entry"}, {"bogus": 1}):
            waited = await client.call_tool("wait", bad)
            assert waited.is_error
            text, error = _text(waited), _details(waited)["error"]
            assert text.startswith("wait failed (invalid_request): ") and "\nNext: " in text, text
            assert set(error) >= {"category", "message", "operation", "nextAction"}, error
            assert set(error) <= set(_details(other)["error"]) | {"nextAction"}, error
        assert _text(other).startswith("agent_close failed (target_not_found): ")
        unknown = await client.call_tool("agent", {"action": "list"})
        assert unknown.is_error and "\nNext: " in _text(unknown)
        assert _details(unknown)["error"]["category"] == "invalid_request"


def test_a_wait_item_words_its_question_itself_and_passes_the_cores_texts_through() -> None:
    from corral._mcp._texts import item_body
    from corral.lead import LeadItem

    ask = LeadItem(
        "ask",
        "e1",
        "Agent scout needs your input:\n\nWhich file?\n\nAnswer with the agent tool: action reply, agent=scout.",
        details={"agent": "scout", "question": "Which file?"},
    )
    assert item_body(ask) == (
        "Agent scout needs your input:\n\nWhich file?\n\n"
        "Answer with agent_reply {agent: scout, message: …}, then call `wait` again."
    )
    # A result's text is the core's words around the agent's own: nothing in it is rewritten.
    own = "Agent result · agent=scout · status=completed\n\nCall list to see them; refresh with `list`."
    assert item_body(LeadItem("result", "e2", own, details={"agent": "scout"})) == own
