"""A stdio MCP server built on the official SDK's `MCPServer`, which speaks the 2026-07-28 era
(`server/discover`) as well as the `initialize` handshake: one read-only tool, `shout`."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("sdk-tiny")


@server.tool(annotations=ToolAnnotations(read_only_hint=True), description="Upper-case the text.")
def shout(text: str) -> str:
    return text.upper()


if __name__ == "__main__":
    server.run("stdio")
