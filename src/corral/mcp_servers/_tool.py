"""An MCP server's tool as an agent's tool: `mcp__<server>__<tool>`, its result as a `ToolResult`.

Names follow Claude Code's `mcp__<server>__<tool>`; a tool name with characters providers refuse
(anything but letters, digits, `_` and `-`) has them replaced by `_`, and a name longer than the 64
characters OpenAI accepts is cut and given a short hash, so two tools never share a name.

Results: text blocks stay text, images stay images, audio and binary resources are named (not
sent), a resource link or an embedded text resource becomes text. Structured content is kept in the
result's details, and sent as JSON text when the server sent no text block. `isError` makes an error
result; a call that could not be made (server down, timeout) is a `ToolError` saying why.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from corral.agent import AgentTool, ToolError, ToolResult, ToolUpdate
from corral.llm import ImageContent, TextContent

from ._connection import McpCallError

if TYPE_CHECKING:
    import mcp_types

    from ._connection import ServerConnection

__all__ = ["MAX_TOOL_NAME", "McpTool", "is_read_only", "mcp_tool_name", "tool_result"]

MAX_TOOL_NAME = 64
"""The longest tool name every provider accepts (OpenAI's limit; Anthropic's is 128)."""
_MAX_DESCRIPTION = 4000
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def mcp_tool_name(server: str, tool: str) -> str:
    """The name an agent sees for `tool` of `server`: `mcp__<server>__<tool>`, made valid for providers."""
    name = f"mcp__{server}__{_INVALID.sub('_', tool)}"
    if len(name) <= MAX_TOOL_NAME and _INVALID.search(tool) is None:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_TOOL_NAME - 9]}_{digest}"


def is_read_only(tool: mcp_types.Tool) -> bool:
    """Whether the server annotates `tool` `readOnlyHint: true` (absent means no)."""
    annotations = tool.annotations
    return bool(annotations is not None and annotations.read_only_hint is True)


class McpTool(AgentTool):
    """One tool of an MCP server, called through the server's shared session in this process."""

    def __init__(self, connection: ServerConnection, tool: mcp_types.Tool) -> None:
        self.connection = connection
        self.remote_name = tool.name
        """The tool's name on its server."""
        self.server = connection.name
        self.name = mcp_tool_name(connection.name, tool.name)
        self.label = f"{connection.name}: {tool.title or tool.name}"
        description = (tool.description or tool.title or tool.name).strip()
        if len(description) > _MAX_DESCRIPTION:
            description = description[:_MAX_DESCRIPTION] + " …(cut)"
        self.description = description
        schema = {key: value for key, value in dict(tool.input_schema).items() if key != "$schema"}
        schema.setdefault("type", "object")
        self.parameters = schema
        self.read_only = is_read_only(tool)

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        """Call the tool on its server; its result as a `ToolResult`."""
        try:
            result = await self.connection.call(self.remote_name, params)
        except McpCallError as exc:
            raise ToolError(str(exc), details={"server": self.server, "tool": self.remote_name}) from None
        return tool_result(self.server, self.remote_name, result)


def tool_result(server: str, tool: str, result: mcp_types.CallToolResult) -> ToolResult:
    """An MCP `CallToolResult` as the agent's `ToolResult` (see the module docstring)."""
    import mcp_types as types

    content: list[TextContent | ImageContent] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            content.append(TextContent(text=block.text))
        elif isinstance(block, types.ImageContent):
            content.append(ImageContent(data=block.data, mime_type=block.mime_type))
        elif isinstance(block, types.AudioContent):
            size = len(block.data) * 3 // 4
            content.append(TextContent(text=f"[audio {block.mime_type}, about {size} bytes: not shown]"))
        elif isinstance(block, types.ResourceLink):
            about = f" ({block.description})" if block.description else ""
            content.append(TextContent(text=f"[resource link: {block.name} {block.uri}{about}]"))
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                content.append(TextContent(text=f"[resource {resource.uri}]\n{resource.text}"))
            else:
                mime = resource.mime_type or "binary"
                content.append(TextContent(text=f"[resource {resource.uri}: {mime}, not shown]"))
        else:  # a content type of a later protocol version
            content.append(TextContent(text=f"[{getattr(block, 'type', 'unknown')} content: not shown]"))
    details: dict[str, Any] = {"server": server, "tool": tool}
    structured = result.structured_content
    if structured is not None:
        details["structuredContent"] = structured
        if not any(isinstance(block, TextContent) for block in content):
            content.insert(0, TextContent(text=json.dumps(structured, ensure_ascii=False)))
    if not content:
        content.append(TextContent(text="(no content)"))
    return ToolResult(content, details=details, is_error=bool(result.is_error))
