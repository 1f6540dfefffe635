"""The tool interface: what the agent loop runs when the model calls a tool.

Built-in tools (`corral.agent.tools`) and tools registered by higher layers
(the orchestration surfaces) implement the same interface. A tool reports a
failure by raising `ToolError` (its message becomes an `isError` result);
any other exception is also turned into an error result by the loop.
Cancellation (abort, interrupt) arrives as `asyncio.CancelledError` in
`execute`: a tool must stop its work (kill its processes) and re-raise.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any

from corral.llm import ImageContent, TextContent, ToolDefinition

__all__ = ["AgentTool", "ToolError", "ToolResult", "ToolUpdate"]


@dataclass
class ToolResult:
    """What a tool returns: content for the model, details for programs."""

    content: list[TextContent | ImageContent]
    _: KW_ONLY
    details: Any = None
    """Structured data kept in the session (never sent to the model)."""
    is_error: bool = False
    terminate: bool = False
    """End the turn after this tool batch when every result of the batch asks for it
    (no further model request; queued steering still starts a new turn)."""

    @classmethod
    def text(cls, text: str, *, details: Any = None, is_error: bool = False) -> ToolResult:
        """A result holding one text block."""
        return cls([TextContent(text=text)], details=details, is_error=is_error)


ToolUpdate = Callable[[ToolResult], None]
"""Progress callback: called with the cumulative partial result so far."""


class ToolError(Exception):
    """A tool failed in a way the model should be told about.

    `details` (optional) is kept on the error result like a normal result's.
    """

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.details = details


class AgentTool(abc.ABC):
    """A tool the model can call."""

    name: str
    """Name as offered to the model."""
    label: str = ""
    """Short human-readable label for front ends."""
    description: str = ""
    parameters: dict[str, Any] = {}  # noqa: RUF012 - overridden per tool
    """JSON Schema of the arguments object."""
    prompt_snippet: str | None = None
    """One line for the system prompt's "Available tools" list."""
    prompt_guidelines: tuple[str, ...] = ()
    """Bullets added to the system prompt's guidelines while the tool is active."""

    @abc.abstractmethod
    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        """Run the tool. `params` have been validated against `parameters`."""

    def definition(self) -> ToolDefinition:
        """The tool as offered to the model."""
        return ToolDefinition(name=self.name, description=self.description, parameters=self.parameters)
