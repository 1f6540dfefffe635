"""The `write` tool: create or overwrite a file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from corral.agent._tool import AgentTool, ToolError, ToolResult, ToolUpdate

from ._common import object_schema, require_str, resolve_to_cwd

__all__ = ["WriteTool", "js_length"]


def js_length(text: str) -> int:
    """`text.length` as JavaScript counts it (UTF-16 code units), which Pi reports as "bytes"."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


class WriteTool(AgentTool):
    """Write a whole file, creating parent directories; overwrites what is there."""

    name = "write"
    label = "write"
    description = (
        "Write content to a file. Creates the file if it does not exist and overwrites it if it does; "
        "parent directories are created as needed. Use it for new files or complete rewrites; for "
        "changes to part of an existing file, prefer edit."
    )
    parameters = object_schema(
        {
            "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
            "content": {"type": "string", "description": "Content to write to the file"},
        },
        ["path", "content"],
    )
    prompt_snippet = "Create or overwrite files"
    prompt_guidelines = ("Use write only for new files or complete rewrites.",)

    def __init__(self, cwd: Path) -> None:
        """Create the tool.

        Args:
            cwd: Directory that relative paths are resolved against.
        """
        self.cwd = Path(cwd)

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        """Write `params["content"]` to `params["path"]`.

        The write runs in a worker thread; a cancellation does not interrupt
        it halfway, so the file is either written whole or not at all touched.
        """
        path = require_str(params, "path")
        content = require_str(params, "content")
        absolute = resolve_to_cwd(path, self.cwd)
        await asyncio.to_thread(_write, absolute, path, content)
        return ToolResult.text(f"Successfully wrote {js_length(content)} bytes to {path}")


def _write(absolute: Path, path: str, content: str) -> None:
    try:
        absolute.parent.mkdir(parents=True, exist_ok=True)
        with absolute.open("w", encoding="utf-8", errors="surrogatepass", newline="") as handle:
            handle.write(content)
    except IsADirectoryError:
        raise ToolError(f"Cannot write {path}: it is a directory.") from None
    except OSError as exc:
        raise ToolError(f"Cannot write {path}: {exc.strerror or exc}") from None
