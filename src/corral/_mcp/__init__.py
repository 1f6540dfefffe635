"""`corral mcp`: an MCP server over one lead session (the official `mcp` SDK, imported only here).

See docs/mcp.md. `serve` runs it; `build_server` makes the server object (tests and benchmarks).
"""

from __future__ import annotations

from ._serve import McpOptions, parse_bind, serve
from ._server import (
    AGENTS_URI,
    INBOX_URI,
    LEAD_PROMPT,
    MCP_AGENT_TOOLS,
    WAIT_DEFAULT_MS,
    WAIT_MAX_MS,
    build_server,
)

__all__ = [
    "AGENTS_URI",
    "INBOX_URI",
    "LEAD_PROMPT",
    "MCP_AGENT_TOOLS",
    "WAIT_DEFAULT_MS",
    "WAIT_MAX_MS",
    "McpOptions",
    "build_server",
    "parse_bind",
    "serve",
]
