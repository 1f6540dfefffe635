"""The agent loop, its events, system prompt assembly and built-in tools."""

from ._tool import AgentTool, ToolError, ToolResult, ToolUpdate

__all__ = ["AgentTool", "ToolError", "ToolResult", "ToolUpdate"]
