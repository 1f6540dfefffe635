"""The `read` tool: a text file with continuation hints, or an image."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.agent._tool import AgentTool, ToolError, ToolResult, ToolUpdate
from corral.llm import ImageContent, TextContent

from ._common import object_schema, optional_int, require_str, resolve_read_path
from ._images import MAX_IMAGE_BYTES, MAX_IMAGE_SIDE, detect_image_mime, image_size
from ._truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_head, utf8_len

if TYPE_CHECKING:
    from ._sandbox import ReadGuard

__all__ = ["ReadTool"]


class ReadTool(AgentTool):
    """Read a file: text with Pi's 2000-line / 50 KB cap and continuation notices, or an image."""

    name = "read"
    label = "read"
    description = (
        "Read the contents of a file. Supports text files and images (jpg, png, gif, webp); images are "
        f"returned as attachments. Text output is truncated to {DEFAULT_MAX_LINES} lines or "
        f"{DEFAULT_MAX_BYTES // 1024}KB, whichever comes first; a notice at the end then says which offset "
        "to continue from. Use offset and limit to read a large file in parts, and keep going with offset "
        "until you have what you need."
    )
    parameters = object_schema(
        {
            "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
            "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
            "limit": {"type": "number", "description": "Maximum number of lines to read"},
        },
        ["path"],
    )
    prompt_snippet = "Read file contents"
    prompt_guidelines = ("Use read to examine files before editing them; do not use cat or sed for this.",)

    def __init__(self, cwd: Path, *, guard: ReadGuard | None = None) -> None:
        """Create the tool.

        Args:
            cwd: Directory that relative paths are resolved against.
            guard: What it may open (a read agent's: the sandbox's view); `None`: anything.
        """
        self.cwd = Path(cwd)
        self.guard = guard

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        """Read the file named by `params["path"]`."""
        path = require_str(params, "path")
        offset = optional_int(params, "offset")
        limit = optional_int(params, "limit")
        return await asyncio.to_thread(self._read, path, offset, limit)

    def _read(self, path: str, offset: int | None, limit: int | None) -> ToolResult:
        absolute = resolve_read_path(path, self.cwd)
        if self.guard is not None:
            self.guard.check(absolute)
        try:
            data = absolute.read_bytes()
        except FileNotFoundError:
            raise ToolError(f"File not found: {path}") from None
        except IsADirectoryError:
            raise ToolError(f"Cannot read {path}: it is a directory. Use ls to list it.") from None
        except OSError as exc:
            raise ToolError(f"Cannot read {path}: {exc.strerror or exc}") from None
        mime = detect_image_mime(data[:16])
        if mime is not None:
            return _image_result(data, mime)
        return _text_result(data.decode("utf-8", "replace"), path, offset, limit)


def _image_result(data: bytes, mime: str) -> ToolResult:
    note = f"Read image file [{mime}]"
    size = image_size(data, mime)
    if len(data) > MAX_IMAGE_BYTES or (size is not None and max(size) > MAX_IMAGE_SIDE):
        shape = f"{size[0]}x{size[1]}, " if size is not None else ""
        note += (
            f"\n[Image omitted: it is {shape}{format_size(len(data))}, over the inline limit of "
            f"{format_size(MAX_IMAGE_BYTES)} and {MAX_IMAGE_SIDE}px per side. Make a smaller copy to view it.]"
        )
        return ToolResult([TextContent(text=note)])
    encoded = base64.b64encode(data).decode("ascii")
    return ToolResult([TextContent(text=note), ImageContent(data=encoded, mime_type=mime)])


def _text_result(text: str, path: str, offset: int | None, limit: int | None) -> ToolResult:
    lines = text.split("\n")
    total = len(lines)
    start = max(0, offset - 1) if offset else 0
    start_display = start + 1
    if start >= total:
        raise ToolError(f"Offset {offset} is beyond end of file ({total} lines total)")
    user_limited: int | None = None
    if limit is not None:
        end = min(start + max(limit, 0), total)
        selected = "\n".join(lines[start:end])
        user_limited = end - start
    else:
        selected = "\n".join(lines[start:])
    truncation = truncate_head(selected)
    details: dict[str, Any] | None = None
    if truncation.first_line_exceeds_limit:
        line_size = format_size(utf8_len(lines[start]))
        output = (
            f"[Line {start_display} is {line_size}, exceeds {format_size(DEFAULT_MAX_BYTES)} limit. "
            f"Use bash: sed -n '{start_display}p' {path} | head -c {DEFAULT_MAX_BYTES}]"
        )
        details = {"truncation": truncation.to_dict()}
    elif truncation.truncated:
        end_display = start_display + truncation.output_lines - 1
        next_offset = end_display + 1
        output = truncation.content
        if truncation.truncated_by == "lines":
            output += f"\n\n[Showing lines {start_display}-{end_display} of {total}. Use offset={next_offset} to continue.]"
        else:
            output += (
                f"\n\n[Showing lines {start_display}-{end_display} of {total} "
                f"({format_size(DEFAULT_MAX_BYTES)} limit). Use offset={next_offset} to continue.]"
            )
        details = {"truncation": truncation.to_dict()}
    elif user_limited is not None and start + user_limited < total:
        remaining = total - (start + user_limited)
        next_offset = start + user_limited + 1
        output = (
            f"{truncation.content}\n\n[{remaining} more lines in file. Use offset={next_offset} to continue.]"
        )
    else:
        output = truncation.content
    return ToolResult.text(output, details=details)
