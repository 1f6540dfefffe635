"""Tool search: MCP tools that would take too much of an agent's context window are offered through
`mcp_tool_search`, which loads them on demand; below the threshold, or with `off`, they are sent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from corral.agent import AgentSession
from corral.lead import Launched
from corral.llm import ModelRegistry
from corral.mcp_servers import SEARCH_TOOL, McpGrant, McpServers, McpToolSearch, ToolSearchMode
from corral.mcp_servers._search import tool_tokens
from corral.session import SessionManager
from corral.settings import McpServerSettings, Settings

from .conftest import WAIT, McpEnv, tiny

EXTRA = 80
"""A large server's extra tools: 80 `lookup_<topic>_<n>` tools with a schema each (~9k tokens)."""


def _large(**extra: object) -> dict[str, object]:
    return tiny(env={"TINY_EXTRA_TOOLS": str(EXTRA)}, **extra)


def _agent(tmp_path: Path) -> AgentSession:
    registry = ModelRegistry(Settings(), cwd=tmp_path)
    model = registry.create_model(registry.resolve("scripted/hello"), cwd=tmp_path)
    session = SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions")
    return AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=tmp_path)


THRESHOLD = 0.02
"""2% of the scripted model's 200k window, 4k tokens: the large server's tools are above it, tiny's
eight below (the default is 10%: 20k tokens of this window)."""


def _servers(tmp_path: Path, mode: ToolSearchMode, table: dict[str, object]) -> McpServers:
    return McpServers(
        {"tiny": McpServerSettings.model_validate(table)},
        cwd=tmp_path,
        log_dir=tmp_path / "logs",
        tool_search=mode,
        tool_search_threshold=THRESHOLD,
    )


def _names(agent: AgentSession) -> set[str]:
    return {tool.name for tool in agent.tools}


async def test_above_the_threshold_the_tools_are_searched_for_and_loaded_on_demand(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    servers = _servers(tmp_path, "auto", _large())
    try:
        assert tool_tokens(servers_tools := (await servers.toolset(McpGrant(("tiny",)))).tools) > 4000
        assert tool_tokens(servers_tools) > THRESHOLD * agent.model.info.context_window
        report = await servers.give(agent, McpGrant(("tiny",)))
        assert _names(agent) == {SEARCH_TOOL}
        assert report.searched and report.to_details()["toolSearch"] is True
        assert len(report.tool_names) == EXTRA + 8  # every tool is still the agent's, by search
        search = next(tool for tool in agent.tools if isinstance(tool, McpToolSearch))
        assert "tiny" in search.description and "mcp__tiny__lookup_weather_0" in search.description

        found = await search.execute("1", {"query": "weather records", "max_results": 3})
        loaded = found.details["loaded"]
        assert len(loaded) == 3 and all(name.startswith("mcp__tiny__lookup_weather_") for name in loaded)
        assert set(loaded) <= _names(agent)
        assert found.content[0].text.startswith("Loaded 3 tools; call them directly:")  # type: ignore[union-attr]

        picked = await search.execute("2", {"query": "select:mcp__tiny__add,mcp__tiny__nope"})
        assert picked.details["loaded"] == ["mcp__tiny__add"] and picked.details["unknown"] == [
            "mcp__tiny__nope"
        ]
        add = next(tool for tool in agent.tools if tool.name == "mcp__tiny__add")
        assert (await add.execute("3", {"a": 2, "b": 3})).content[0].text == "5"  # type: ignore[union-attr]
        assert search.loaded == tuple(sorted([*loaded, "mcp__tiny__add"]))

        nothing = await search.execute("4", {"query": "zebra"})
        assert nothing.details["loaded"] == [] and "No MCP tool matches 'zebra'" in nothing.content[0].text  # type: ignore[union-attr]
    finally:
        await servers.aclose()
        agent.session.close()


async def test_below_the_threshold_or_off_the_tools_are_sent(tmp_path: Path) -> None:
    small, large_off = _agent(tmp_path / "a"), _agent(tmp_path / "b")
    below = _servers(tmp_path, "auto", tiny())
    off = _servers(tmp_path, "off", _large())
    try:
        report = await below.give(small, McpGrant(("tiny",)))
        assert not report.searched and "mcp__tiny__add" in _names(small) and SEARCH_TOOL not in _names(small)
        report = await off.give(large_off, McpGrant(("tiny",)))
        assert not report.searched and len(_names(large_off)) == EXTRA + 8
    finally:
        await asyncio.gather(below.aclose(), off.aclose())
        small.session.close()
        large_off.session.close()


async def test_bad_search_input_is_a_tool_error_that_says_what_to_send(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    servers = _servers(tmp_path, "on", tiny())
    try:
        await servers.give(agent, McpGrant(("tiny",)))
        [search] = agent.tools
        assert isinstance(search, McpToolSearch)
        for params, message in (
            ({"query": " "}, "query must be a non-empty string"),
            ({"query": "add", "max_results": 0}, "max_results must be a whole number from 1 to 20"),
        ):
            try:
                await search.execute("1", params)
            except Exception as exc:  # a ToolError: the model reads it as an error result
                assert str(exc).startswith(message)
            else:
                raise AssertionError(f"{params} was accepted")
        assert _names(agent) == {SEARCH_TOOL}  # and nothing was loaded
    finally:
        await servers.aclose()
        agent.session.close()


def _tool_results(launched: Launched, name: str) -> list[dict[str, Any]]:
    assert launched.session.path is not None
    found = []
    for line in Path(launched.session.path).read_text().splitlines():
        message = json.loads(line).get("message") or {}
        if message.get("role") == "toolResult" and message.get("toolName") == name:
            found.append(message)
    return found


async def test_the_lead_searches_then_calls_the_tool_it_loaded(
    mcp_env: McpEnv, lead_of: list[Launched]
) -> None:
    mcp_env.settings({"tiny": _large()}, extra='mcp_tool_search = "on"')
    mcp_env.script(
        [
            {
                "expect": {"tools_include": [SEARCH_TOOL], "tools_exclude": ["mcp__tiny__add"]},
                "tool_calls": [{"name": SEARCH_TOOL, "args": {"query": "select:mcp__tiny__add"}}],
            },
            {
                "expect": {"tools_include": ["mcp__tiny__add"], "tools_ok": True},
                "tool_calls": [{"name": "mcp__tiny__add", "args": {"a": 20, "b": 22}}],
            },
            {"expect": {"tools_ok": True}, "text": "sum {{ last_tool_output }}"},
        ]
    )
    launched = await mcp_env.lead()
    lead_of.append(launched)
    await asyncio.wait_for(launched.agent.prompt("go"), WAIT)
    assert launched.agent.last_assistant_text() == "sum 42"
    assert launched.mcp_report is not None and launched.mcp_report.searched
    [search] = _tool_results(launched, SEARCH_TOOL)
    assert search["details"]["loaded"] == ["mcp__tiny__add"]


def test_the_settings_say_when_to_search(tmp_path: Path) -> None:
    settings = Settings.model_validate({"mcp_tool_search": "on", "mcp_tool_search_threshold": 0.25})
    servers = McpServers.from_settings(settings, cwd=tmp_path)
    assert (servers.tool_search, servers.tool_search_threshold) == ("on", 0.25)
    assert McpServers.from_settings(Settings(), cwd=tmp_path).tool_search == "auto"
    for bad in ({"mcp_tool_search": "sometimes"}, {"mcp_tool_search_threshold": 0}):
        try:
            Settings.model_validate(bad)
        except ValueError as exc:
            assert next(iter(bad)) in str(exc)
        else:
            raise AssertionError(f"{bad} was accepted")
