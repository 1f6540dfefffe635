"""corral as an MCP client: the user's MCP servers reach every agent, lead to leaf (docs/mcp-servers.md).

`McpServers` is one host process's servers (one session per server, shared by that process's agents,
started on first use); `McpGrant` says which servers an agent gets, narrowed from its parent's
(`narrow`); `McpToolset` is what it got: `McpTool`s named `mcp__<server>__<tool>` and a `McpReport`
that names every server, those that failed included. The MCP SDK (the `mcp` extra) is imported only
when a server starts.
"""

from ._connection import (
    INSTALL_HINT,
    McpCallError,
    McpUnavailableError,
    ServerConnection,
    ServerState,
    preload_sdk,
)
from ._grant import NO_MCP, McpChoice, McpGrant, lead_grant, narrow
from ._pool import McpReport, McpServers, McpToolset, ServerOutcome
from ._search import SEARCH_TOOL, McpToolSearch, ToolSearchMode
from ._tool import McpTool, is_read_only, mcp_tool_name, tool_result

__all__ = [
    "INSTALL_HINT",
    "NO_MCP",
    "SEARCH_TOOL",
    "McpCallError",
    "McpChoice",
    "McpGrant",
    "McpReport",
    "McpServers",
    "McpTool",
    "McpToolSearch",
    "McpToolset",
    "McpUnavailableError",
    "ServerConnection",
    "ServerOutcome",
    "ServerState",
    "ToolSearchMode",
    "is_read_only",
    "lead_grant",
    "mcp_tool_name",
    "narrow",
    "preload_sdk",
    "tool_result",
]
