"""The `grep` tool: search file contents, in pure Python, like `rg --hidden`.

Files come from `walk` (gitignore-aware, hidden files included, `.git`
skipped, links not followed). A file holding a NUL byte is binary and is
skipped. Lines are split on `\\n`; a match is searched per line with
Python's `re` (ripgrep's syntax for everything commonly used). Files are
searched in path order and the search stops at `limit` matches. Each match
prints as its own block: `path:line: text`, with `context` lines around it
as `path-line- text`. The search runs in a worker thread and stops at the
next file when the call is cancelled.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.agent._tool import AgentTool, ToolError, ToolResult, ToolUpdate

from ._common import object_schema, optional_bool, optional_int, optional_str, require_str, resolve_to_cwd
from ._truncate import DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, format_size, truncate_head, truncate_line
from ._walk import WalkCancelled, glob_matcher, walk

if TYPE_CHECKING:
    from ._sandbox import ReadGuard

__all__ = ["GrepTool"]

DEFAULT_GREP_LIMIT = 100
_UNLIMITED_LINES = 2**53 - 1


class GrepTool(AgentTool):
    """Search file contents for a regex or literal, honouring `.gitignore`."""

    name = "grep"
    label = "grep"
    description = (
        "Search file contents for a pattern (a regular expression, or a literal string with literal=true). "
        "Returns matching lines as path:line: text, with context lines as path-line- text; paths are "
        "relative to the searched directory. Respects .gitignore and includes hidden files. Output is "
        f"limited to {DEFAULT_GREP_LIMIT} matches (change with limit) or {DEFAULT_MAX_BYTES // 1024}KB, "
        f"and long lines are cut to {GREP_MAX_LINE_LENGTH} characters."
    )
    parameters = object_schema(
        {
            "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
            "path": {
                "type": "string",
                "description": "Directory or file to search (default: current directory)",
            },
            "glob": {
                "type": "string",
                "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'",
            },
            "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
            "literal": {
                "type": "boolean",
                "description": "Treat pattern as literal string instead of regex (default: false)",
            },
            "context": {
                "type": "number",
                "description": "Number of lines to show before and after each match (default: 0)",
            },
            "limit": {
                "type": "number",
                "description": f"Maximum number of matches to return (default: {DEFAULT_GREP_LIMIT})",
            },
        },
        ["pattern"],
    )
    prompt_snippet = "Search file contents for patterns (respects .gitignore)"
    prompt_guidelines = (
        "Prefer grep, find and ls over bash for exploring files (faster, respects .gitignore).",
    )

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
        """Run the search in a worker thread; a cancel stops it at the next file."""
        pattern = require_str(params, "pattern")
        root = resolve_to_cwd(optional_str(params, "path") or ".", self.cwd)
        if self.guard is not None:
            self.guard.check(root)
        search = _Search(
            root=root,
            skip=None if self.guard is None else self.guard.walk_skip(root),
            pattern=pattern,
            glob=optional_str(params, "glob"),
            ignore_case=optional_bool(params, "ignoreCase"),
            literal=optional_bool(params, "literal"),
            context=max(0, optional_int(params, "context") or 0),
            limit=max(1, optional_int(params, "limit") or DEFAULT_GREP_LIMIT),
        )
        try:
            return await asyncio.to_thread(search.run)
        finally:
            search.cancel.set()


class _Search:
    def __init__(
        self,
        *,
        root: Path,
        skip: Callable[[str], bool] | None,
        pattern: str,
        glob: str | None,
        ignore_case: bool,
        literal: bool,
        context: int,
        limit: int,
    ) -> None:
        self.root = root
        self.skip = skip
        flags = re.IGNORECASE if ignore_case else 0
        try:
            self.regex = re.compile(re.escape(pattern) if literal else pattern, flags)
        except re.error as exc:
            raise ToolError(
                f"Invalid regex {pattern!r}: {exc}. Fix the pattern or pass literal=true."
            ) from None
        self.glob = glob_matcher(glob) if glob else None
        self.context = context
        self.limit = limit
        self.cancel = threading.Event()
        self.lines_truncated = False

    def run(self) -> ToolResult:
        if not self.root.exists():
            raise ToolError(f"Path not found: {self.root}")
        blocks: list[str] = []
        count = 0
        try:
            for display, lines in self._files():
                for number, line in enumerate(lines, start=1):
                    if self.regex.search(line) is None:
                        continue
                    count += 1
                    blocks.extend(self._block(display, lines, number))
                    if count >= self.limit:
                        break
                if count >= self.limit:
                    break
        except WalkCancelled:
            raise ToolError("Operation aborted") from None
        if count == 0:
            return ToolResult.text("No matches found")
        truncation = truncate_head("\n".join(blocks), max_lines=_UNLIMITED_LINES)
        output = truncation.content
        details: dict[str, Any] = {}
        notices: list[str] = []
        if count >= self.limit:
            notices.append(
                f"{self.limit} matches limit reached. Use limit={self.limit * 2} for more, or refine pattern"
            )
            details["matchLimitReached"] = self.limit
        if truncation.truncated:
            notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
            details["truncation"] = truncation.to_dict()
        if self.lines_truncated:
            notices.append(
                f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
            )
            details["linesTruncated"] = True
        if notices:
            output += f"\n\n[{'. '.join(notices)}]"
        return ToolResult.text(output, details=details or None)

    def _files(self) -> Iterator[tuple[str, list[str]]]:
        if self.root.is_file():
            lines = _read_lines(str(self.root))
            if lines is not None:
                yield self.root.name, lines
            return
        for entry in walk(self.root, cancel=self.cancel, skip=self.skip):
            if not entry.is_file or (self.glob is not None and not self.glob(entry.rel)):
                continue
            lines = _read_lines(entry.path)
            if lines is not None:
                yield entry.rel, lines

    def _block(self, display: str, lines: list[str], number: int) -> list[str]:
        start = max(1, number - self.context)
        end = min(len(lines), number + self.context)
        block: list[str] = []
        for current in range(start, end + 1):
            text, cut = truncate_line(lines[current - 1].replace("\r", ""))
            self.lines_truncated = self.lines_truncated or cut
            separator = ":" if current == number else "-"
            block.append(f"{display}{separator}{current}{separator} {text}")
        return block


def _read_lines(path: str) -> list[str] | None:
    """The file's lines, or `None` for binary or unreadable files."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    if b"\0" in data:
        return None
    text = data.decode("utf-8", "replace")
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n") if text else []
