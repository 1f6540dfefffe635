"""Output truncation shared by the built-in tools (Pi's `truncate.ts` contract).

Two independent limits apply, whichever is hit first: a line limit
(`DEFAULT_MAX_LINES`, 2000) and a byte limit (`DEFAULT_MAX_BYTES`, 50 KB,
counted in UTF-8). `truncate_head` keeps the beginning (file reads, search
results) and never returns a partial line: when the first line alone is over
the byte limit it returns nothing and sets `first_line_exceeds_limit`.
`truncate_tail` keeps the end (command output); its one exception to the
whole-lines rule is a last line that alone exceeds the byte limit, of which
it keeps the end (`last_line_partial`).
"""

from __future__ import annotations

import decimal
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "GREP_MAX_LINE_LENGTH",
    "TruncationResult",
    "format_size",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
    "utf8_len",
]

DEFAULT_MAX_LINES = 2000
"""Line cap for tool output."""
DEFAULT_MAX_BYTES = 50 * 1024
"""Byte cap for tool output (51200 bytes, "50.0KB")."""
GREP_MAX_LINE_LENGTH = 500
"""Characters kept of one grep output line."""

TruncatedBy = Literal["lines", "bytes"]


@dataclass(frozen=True, slots=True)
class TruncationResult:
    """What a truncation kept and why."""

    content: str
    """The kept text."""
    _: KW_ONLY
    truncated: bool
    """Whether anything was cut."""
    truncated_by: TruncatedBy | None
    """Which limit was hit first (`None` when nothing was cut)."""
    total_lines: int
    """Lines in the original text (`text.split("\\n")`)."""
    total_bytes: int
    """UTF-8 bytes in the original text."""
    output_lines: int
    """Lines in `content`."""
    output_bytes: int
    """UTF-8 bytes in `content`."""
    last_line_partial: bool
    """Tail truncation only: `content` is the end of one over-long last line."""
    first_line_exceeds_limit: bool
    """Head truncation only: the first line alone is over the byte limit (`content` is empty)."""
    max_lines: int
    """The line limit that was applied."""
    max_bytes: int
    """The byte limit that was applied."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form kept in tool result details (Pi's camelCase field names)."""
        return {
            "content": self.content,
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }


def utf8_len(text: str) -> int:
    """Length of `text` in UTF-8 bytes (a lone surrogate counts 3, as in Node)."""
    return len(text.encode("utf-8", "surrogatepass"))


def format_size(num_bytes: int) -> str:
    """A byte count for people: `512B`, `50.0KB`, `1.5MB` (one decimal, halves round up)."""
    if num_bytes < 1024:
        return f"{num_bytes}B"
    unit, divisor = ("KB", 1024) if num_bytes < 1024 * 1024 else ("MB", 1024 * 1024)
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        value = (decimal.Decimal(num_bytes) / divisor).quantize(
            decimal.Decimal("0.1"), rounding=decimal.ROUND_HALF_UP
        )
    return f"{value}{unit}"


def _untruncated(
    content: str, total_lines: int, total_bytes: int, max_lines: int, max_bytes: int
) -> TruncationResult:
    return TruncationResult(
        content,
        truncated=False,
        truncated_by=None,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=total_lines,
        output_bytes=total_bytes,
        last_line_partial=False,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def truncate_head(
    text: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the first lines of `text` that fit both limits; never a partial line.

    Args:
        text: The text to cut.
        max_lines: Line limit.
        max_bytes: Byte limit (UTF-8).

    Returns:
        The kept text and what was cut.
    """
    total_bytes = utf8_len(text)
    lines = text.split("\n")
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(text, total_lines, total_bytes, max_lines, max_bytes)
    if utf8_len(lines[0]) > max_bytes:
        return TruncationResult(
            "",
            truncated=True,
            truncated_by="bytes",
            total_lines=total_lines,
            total_bytes=total_bytes,
            output_lines=0,
            output_bytes=0,
            last_line_partial=False,
            first_line_exceeds_limit=True,
            max_lines=max_lines,
            max_bytes=max_bytes,
        )
    kept: list[str] = []
    used = 0
    truncated_by: TruncatedBy = "lines"
    for index, line in enumerate(lines[:max_lines]):
        size = utf8_len(line) + (1 if index > 0 else 0)
        if used + size > max_bytes:
            truncated_by = "bytes"
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        truncated_by = "lines"
    content = "\n".join(kept)
    return TruncationResult(
        content,
        truncated=True,
        truncated_by=truncated_by,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=len(kept),
        output_bytes=utf8_len(content),
        last_line_partial=False,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def _tail_bytes(line: str, max_bytes: int) -> str:
    """The end of `line` that fits in `max_bytes`, starting on a character boundary."""
    data = line.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return line
    start = len(data) - max_bytes
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:].decode("utf-8", "replace")


def truncate_tail(
    text: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the last lines of `text` that fit both limits.

    If the last line alone is over the byte limit, its end is kept
    (`last_line_partial`).

    Args:
        text: The text to cut.
        max_lines: Line limit.
        max_bytes: Byte limit (UTF-8).

    Returns:
        The kept text and what was cut.
    """
    total_bytes = utf8_len(text)
    lines = text.split("\n")
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(text, total_lines, total_bytes, max_lines, max_bytes)
    kept: list[str] = []
    used = 0
    truncated_by: TruncatedBy = "lines"
    last_line_partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        size = utf8_len(line) + (1 if kept else 0)
        if used + size > max_bytes:
            truncated_by = "bytes"
            if not kept:
                partial = _tail_bytes(line, max_bytes)
                kept.append(partial)
                used = utf8_len(partial)
                last_line_partial = True
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        truncated_by = "lines"
    kept.reverse()
    content = "\n".join(kept)
    return TruncationResult(
        content,
        truncated=True,
        truncated_by=truncated_by,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=len(kept),
        output_bytes=utf8_len(content),
        last_line_partial=last_line_partial,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """Cut one line to `max_chars` characters, marking the cut with `... [truncated]`.

    Returns:
        The (possibly cut) line and whether it was cut.
    """
    if len(line) <= max_chars:
        return line, False
    return f"{line[:max_chars]}... [truncated]", True
