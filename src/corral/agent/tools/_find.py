"""The `find` tool: list paths matching a glob, like `fd --glob --hidden`.

Entries come from `walk` (gitignore-aware, hidden included, `.git` skipped,
links listed but not followed). Files, directories and links all match, as
with fd; directories are printed with a trailing `/` (fd 9 and later do
this, and Pi keeps it). Paths are relative to the search directory and come
in path order.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.agent._tool import AgentTool, ToolError, ToolResult, ToolUpdate

from ._common import object_schema, optional_int, optional_str, require_str, resolve_to_cwd
from ._truncate import DEFAULT_MAX_BYTES, format_size, truncate_head
from ._walk import WalkCancelled, glob_matcher, walk

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._sandbox import ReadGuard

__all__ = ["FindTool"]

DEFAULT_FIND_LIMIT = 1000
_UNLIMITED_LINES = 2**53 - 1


class FindTool(AgentTool):
    """Find files and directories by glob, honouring `.gitignore`."""

    name = "find"
    label = "find"
    description = (
        "Search for files by glob pattern, e.g. '*.ts', '**/*.json' or 'src/**/*.spec.ts'. A pattern "
        "without '/' matches file names at any depth; one with '/' matches the path relative to the "
        "search directory. Returns matching paths relative to the search directory (directories end "
        "with '/'). Respects .gitignore and includes hidden files. Output is limited to "
        f"{DEFAULT_FIND_LIMIT} results (change with limit) or {DEFAULT_MAX_BYTES // 1024}KB."
    )
    parameters = object_schema(
        {
            "pattern": {
                "type": "string",
                "description": "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'",
            },
            "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
            "limit": {
                "type": "number",
                "description": f"Maximum number of results (default: {DEFAULT_FIND_LIMIT})",
            },
        },
        ["pattern"],
    )
    prompt_snippet = "Find files by glob pattern (respects .gitignore)"
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
        """Run the search in a worker thread; a cancel stops it at the next directory."""
        pattern = require_str(params, "pattern")
        root = resolve_to_cwd(optional_str(params, "path") or ".", self.cwd)
        if self.guard is not None:
            self.guard.check(root)
        skip = None if self.guard is None else self.guard.walk_skip(root)
        limit = max(1, optional_int(params, "limit") or DEFAULT_FIND_LIMIT)
        cancel = threading.Event()
        try:
            return await asyncio.to_thread(_find, root, pattern, limit, cancel, skip)
        finally:
            cancel.set()


def _find(
    root: Path, pattern: str, limit: int, cancel: threading.Event, skip: Callable[[str], bool] | None
) -> ToolResult:
    if not root.exists():
        raise ToolError(f"Path not found: {root}")
    if not root.is_dir():
        raise ToolError(f"Not a directory: {root}")
    matches = glob_matcher(pattern)
    results: list[str] = []
    try:
        for entry in walk(root, cancel=cancel, skip=skip):
            if matches(entry.rel):
                results.append(entry.rel + "/" if entry.is_dir else entry.rel)
                if len(results) >= limit:
                    break
    except WalkCancelled:
        raise ToolError("Operation aborted") from None
    if not results:
        return ToolResult.text("No files found matching pattern")
    truncation = truncate_head("\n".join(results), max_lines=_UNLIMITED_LINES)
    output = truncation.content
    details: dict[str, Any] = {}
    notices: list[str] = []
    if len(results) >= limit:
        notices.append(f"{limit} results limit reached. Use limit={limit * 2} for more, or refine pattern")
        details["resultLimitReached"] = limit
    if truncation.truncated:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation.to_dict()
    if notices:
        output += f"\n\n[{'. '.join(notices)}]"
    return ToolResult.text(output, details=details or None)
