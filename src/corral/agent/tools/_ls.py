"""The `ls` tool: list one directory."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.agent._tool import AgentTool, ToolError, ToolResult, ToolUpdate

from ._common import object_schema, optional_int, optional_str, resolve_to_cwd
from ._truncate import DEFAULT_MAX_BYTES, format_size, truncate_head

if TYPE_CHECKING:
    from ._sandbox import ReadGuard

__all__ = ["LsTool"]

DEFAULT_LS_LIMIT = 500
_UNLIMITED_LINES = 2**53 - 1


class LsTool(AgentTool):
    """List a directory: sorted case-insensitively, dotfiles included, directories with `/`.

    As in Pi, `.gitignore` is not applied, and entries that cannot be
    `stat`-ed (such as broken links) are left out.
    """

    name = "ls"
    label = "ls"
    description = (
        "List directory contents. Entries are sorted alphabetically (case-insensitive), directories end "
        "with '/', and dotfiles are included. Output is limited to "
        f"{DEFAULT_LS_LIMIT} entries (change with limit) or {DEFAULT_MAX_BYTES // 1024}KB."
    )
    parameters = object_schema(
        {
            "path": {"type": "string", "description": "Directory to list (default: current directory)"},
            "limit": {
                "type": "number",
                "description": f"Maximum number of entries to return (default: {DEFAULT_LS_LIMIT})",
            },
        },
        [],
    )
    prompt_snippet = "List directory contents"
    prompt_guidelines = ()

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
        """List the directory in a worker thread."""
        directory = resolve_to_cwd(optional_str(params, "path") or ".", self.cwd)
        if self.guard is not None:
            self.guard.check(directory)
        limit = optional_int(params, "limit")
        return await asyncio.to_thread(_ls, directory, DEFAULT_LS_LIMIT if limit is None else max(1, limit))


def _ls(directory: Path, limit: int) -> ToolResult:
    if not directory.exists():
        raise ToolError(f"Path not found: {directory}")
    if not directory.is_dir():
        raise ToolError(f"Not a directory: {directory}")
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise ToolError(f"Cannot read directory: {exc.strerror or exc}") from None
    names.sort(key=lambda name: (name.lower(), name))
    results: list[str] = []
    limit_reached = False
    for name in names:
        if len(results) >= limit:
            limit_reached = True
            break
        try:
            is_dir = (directory / name).is_dir()
            os.stat(directory / name)
        except OSError:
            continue
        results.append(name + "/" if is_dir else name)
    if not results:
        return ToolResult.text("(empty directory)")
    truncation = truncate_head("\n".join(results), max_lines=_UNLIMITED_LINES)
    output = truncation.content
    details: dict[str, Any] = {}
    notices: list[str] = []
    if limit_reached:
        notices.append(f"{limit} entries limit reached. Use limit={limit * 2} for more")
        details["entryLimitReached"] = limit
    if truncation.truncated:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation.to_dict()
    if notices:
        output += f"\n\n[{'. '.join(notices)}]"
    return ToolResult.text(output, details=details or None)
