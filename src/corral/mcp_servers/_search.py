"""Tool search: an agent whose MCP tools would take too much of its context window gets them on demand.

Every tool's name, description and schema go into every model request. Above a threshold — by default
when an agent's MCP tools would take more than 10% of its model's context window (`mcp_tool_search =
"auto"`, `mcp_tool_search_threshold = 0.1`) — the agent gets one tool instead, `mcp_tool_search`: its
description names the servers (and, while short enough, the tools); a call with keywords, or with
`select:<name>,<name>`, loads the matching tools into the agent, which calls them from its next
request on, as Claude Code's tool search does. What a search loaded stays loaded for the session.
`"on"` always defers, `"off"` never does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from corral.agent import AgentTool, ToolError, ToolResult, ToolUpdate, estimate_overhead_tokens

from . import texts
from ._tool import McpTool

__all__ = ["SEARCH_TOOL", "McpToolSearch", "ToolSearchMode", "deferred", "tool_tokens"]

ToolSearchMode = Literal["auto", "on", "off"]
SEARCH_TOOL = "mcp_tool_search"
_MAX_RESULTS = 5
_LISTED_NAMES_MAX_CHARS = 3000
"""The tools' names are in the search tool's description while they fit in this many characters."""
_WORD = re.compile(r"[a-z0-9]+")


def tool_tokens(tools: Sequence[AgentTool]) -> int:
    """About how many tokens `tools`' definitions take in every request (corral's estimate)."""
    return estimate_overhead_tokens("", [tool.definition() for tool in tools])


def deferred(tools: Sequence[McpTool], *, mode: ToolSearchMode, threshold: float, window: int) -> bool:
    """Whether an agent with a context window of `window` tokens gets `tools` through the search."""
    if not tools or mode == "off":
        return False
    return mode == "on" or tool_tokens(tools) > threshold * window


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


class McpToolSearch(AgentTool):
    """`mcp_tool_search`: finds an agent's deferred MCP tools by keywords or by name and loads them
    into the agent (`load` registers them)."""

    def __init__(self, tools: Sequence[McpTool], load: Callable[[AgentTool], None]) -> None:
        self.name = SEARCH_TOOL
        self.label = "MCP tool search"
        self._tools = {tool.name: tool for tool in tools}
        self._load = load
        self._loaded: set[str] = set()
        servers = sorted({tool.server for tool in tools})
        names = sorted(self._tools)
        listed = names if sum(len(name) + 2 for name in names) <= _LISTED_NAMES_MAX_CHARS else None
        self.description = texts.search_description(servers, len(names), listed)
        self.parameters = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": texts.search_query_description()},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 20, "default": _MAX_RESULTS},
            },
            "required": ["query"],
        }

    @property
    def loaded(self) -> tuple[str, ...]:
        """The tools searches have loaded so far, by name."""
        return tuple(sorted(self._loaded))

    def _select(self, names: str) -> tuple[list[McpTool], list[str]]:
        wanted = [name.strip() for name in names.split(",") if name.strip()]
        found = [self._tools[name] for name in wanted if name in self._tools]
        return found, [name for name in wanted if name not in self._tools]

    def _match(self, query: str, limit: int) -> list[McpTool]:
        words = _words(query)
        scored: list[tuple[int, str]] = []
        for name, tool in self._tools.items():
            in_name = _words(name.replace("__", " ").replace("_", " "))
            in_text = _words(tool.description)
            score = sum(3 * (word in in_name) + (word in in_text) for word in words)
            if score:
                scored.append((-score, name))
        return [self._tools[name] for _, name in sorted(scored)[:limit]]

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        """Load the tools the query finds; say which (with their descriptions) or that none matched."""
        query = params.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError(texts.search_bad_query())
        limit = params.get("max_results", _MAX_RESULTS)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 20:
            raise ToolError(texts.search_bad_limit())
        query = query.strip()
        unknown: list[str] = []
        if query.startswith("select:"):
            found, unknown = self._select(query.removeprefix("select:"))
        else:
            found = self._match(query, limit)
        for tool in found:
            if tool.name not in self._loaded:
                self._load(tool)
                self._loaded.add(tool.name)
        details = {"query": query, "loaded": [tool.name for tool in found], "unknown": unknown}
        if not found:
            return ToolResult.text(texts.search_found_nothing(query, unknown), details=details)
        return ToolResult.text(
            texts.search_loaded([(tool.name, tool.description) for tool in found], unknown), details=details
        )
