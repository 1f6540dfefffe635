"""Shared helpers for the built-in tool tests."""

from __future__ import annotations

from typing import Any

from corral.agent import ToolResult
from corral.llm import TextContent


def text_of(result: ToolResult) -> str:
    """The text of a result's first (text) block."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def details_of(result: ToolResult) -> dict[str, Any]:
    """A result's details as a dict (empty when there are none)."""
    return dict(result.details or {})
