"""The `edit` tool: replace one unique piece of text in a file, and show the diff.

Matching follows Pi. A UTF-8 byte-order mark is set aside, line endings are
normalised to `\\n` (and the file's own ending, `\\r\\n` or `\\n`, restored on
write), then `oldText` is looked for exactly. If it is not there, both sides
are compared in a *fuzzy* form: NFKC, trailing whitespace removed from every
line, smart quotes, Unicode dashes and Unicode spaces mapped to ASCII. A
fuzzy match edits that normalised form, so the written file is normalised
throughout (as in Pi). Occurrences are counted in the fuzzy form, so the text
must be unique there too.

The diff in `details["diff"]` is line-based with line numbers, four lines of
context around each change and ` …` rows for skipped lines:
`+<new line no> text` for added lines, `-<old line no> text` for removed
ones and ` <old line no> text` for context, numbers right-aligned to the
widest line number. `details["firstChangedLine"]` is the first changed line
in the new file.
"""

from __future__ import annotations

import asyncio
import difflib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.agent._tool import AgentTool, ToolError, ToolResult, ToolUpdate

from ._common import object_schema, require_str, resolve_to_cwd

__all__ = ["EditTool", "fuzzy_normalize", "generate_diff"]

_SINGLE_QUOTES = re.compile("[\u2018\u2019\u201a\u201b]")
_DOUBLE_QUOTES = re.compile("[\u201c\u201d\u201e\u201f]")
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]")
_SPACES = re.compile("[\u00a0\u2002-\u200a\u202f\u205f\u3000]")
_BOM = "\ufeff"


def fuzzy_normalize(text: str) -> str:
    """The form used for fuzzy matching: NFKC, no trailing whitespace, ASCII quotes, dashes and spaces."""
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = _SINGLE_QUOTES.sub("'", text)
    text = _DOUBLE_QUOTES.sub('"', text)
    text = _DASHES.sub("-", text)
    return _SPACES.sub(" ", text)


def _detect_line_ending(text: str) -> str:
    for index, char in enumerate(text):
        if char == "\n":
            return "\n"
        if char == "\r":
            return "\r\n" if text[index + 1 : index + 2] == "\n" else "\n"
    return "\n"


def _to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True, slots=True)
class _Part:
    kind: str  # "equal" | "removed" | "added"
    lines: list[str]


def _line_tokens(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def _parts(old: str, new: str) -> list[_Part]:
    old_tokens, new_tokens = _line_tokens(old), _line_tokens(new)
    matcher = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
    parts: list[_Part] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            parts.append(_Part("equal", old_tokens[i1:i2]))
            continue
        if i2 > i1:
            parts.append(_Part("removed", old_tokens[i1:i2]))
        if j2 > j1:
            parts.append(_Part("added", new_tokens[j1:j2]))
    return parts


def generate_diff(old: str, new: str, context_lines: int = 4) -> tuple[str, int | None]:
    """A numbered line diff of `old` → `new` and the first changed line in `new`.

    Args:
        old: Text before the change.
        new: Text after the change.
        context_lines: Unchanged lines shown before and after each change.

    Returns:
        The diff text (format in the module docstring) and the 1-based first
        changed line of `new` (`None` when nothing changed).
    """
    parts = _parts(old, new)
    width = len(str(max(len(old.split("\n")), len(new.split("\n")))))
    gap = f" {'':>{width}} ..."
    output: list[str] = []
    old_no = new_no = 1
    last_was_change = False
    first_changed: int | None = None
    for index, part in enumerate(parts):
        raw = [token[:-1] if token.endswith("\n") else token for token in part.lines]
        if part.kind != "equal":
            if first_changed is None:
                first_changed = new_no
            for line in raw:
                if part.kind == "added":
                    output.append(f"+{new_no:>{width}} {line}")
                    new_no += 1
                else:
                    output.append(f"-{old_no:>{width}} {line}")
                    old_no += 1
            last_was_change = True
            continue
        next_is_change = index < len(parts) - 1 and parts[index + 1].kind != "equal"
        if last_was_change or next_is_change:
            shown = raw
            skip_start = skip_end = 0
            if not last_was_change:
                skip_start = max(0, len(raw) - context_lines)
                shown = raw[skip_start:]
            if not next_is_change and len(shown) > context_lines:
                skip_end = len(shown) - context_lines
                shown = shown[:context_lines]
            if skip_start:
                output.append(gap)
                old_no += skip_start
                new_no += skip_start
            for line in shown:
                output.append(f" {old_no:>{width}} {line}")
                old_no += 1
                new_no += 1
            if skip_end:
                output.append(gap)
                old_no += skip_end
                new_no += skip_end
        else:
            old_no += len(raw)
            new_no += len(raw)
        last_was_change = False
    return "\n".join(output), first_changed


class EditTool(AgentTool):
    """Replace exactly one occurrence of `oldText` with `newText` in a file."""

    name = "edit"
    label = "edit"
    description = (
        "Edit a file by replacing exact text. oldText must match a unique part of the file exactly, "
        "including whitespace, indentation and newlines; include enough surrounding lines to make it "
        "unique. The match is tried exactly first, then ignoring trailing whitespace and typographic "
        "quotes, dashes and spaces. Returns a diff of the change. Use this for precise, surgical edits."
    )
    parameters = object_schema(
        {
            "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
            "oldText": {
                "type": "string",
                "description": "Exact text to find and replace (must match exactly)",
            },
            "newText": {"type": "string", "description": "New text to replace the old text with"},
        },
        ["path", "oldText", "newText"],
    )
    prompt_snippet = "Make surgical edits to files (find exact text and replace)"
    prompt_guidelines = ("Use edit for precise changes (the old text must match exactly and be unique).",)

    def __init__(self, cwd: Path) -> None:
        """Create the tool.

        Args:
            cwd: Directory that relative paths are resolved against.
        """
        self.cwd = Path(cwd)

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        """Apply the replacement; runs in a worker thread so a cancel never leaves half a file."""
        path = require_str(params, "path")
        old_text = require_str(params, "oldText")
        new_text = require_str(params, "newText")
        absolute = resolve_to_cwd(path, self.cwd)
        return await asyncio.to_thread(_edit, absolute, path, old_text, new_text)


def _edit(absolute: Path, path: str, old_text: str, new_text: str) -> ToolResult:
    try:
        raw = absolute.read_bytes().decode("utf-8", "replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise ToolError(f"File not found: {path}") from None
    except OSError as exc:
        raise ToolError(f"Cannot read {path}: {exc.strerror or exc}") from None
    bom = _BOM if raw.startswith(_BOM) else ""
    content = raw[len(bom) :]
    ending = _detect_line_ending(content)
    content = _to_lf(content)
    old = _to_lf(old_text)
    new = _to_lf(new_text)
    if not old:
        raise ToolError(f"oldText must not be empty in {path}. Give the exact text to replace.")
    base = content
    index = content.find(old)
    length = len(old)
    fuzzy_content = fuzzy_normalize(content)
    fuzzy_old = fuzzy_normalize(old)
    if index < 0:
        index = fuzzy_content.find(fuzzy_old) if fuzzy_old else -1
        if index < 0:
            raise ToolError(
                f"Could not find the exact text in {path}. "
                "The old text must match exactly including all whitespace and newlines."
            )
        base = fuzzy_content
        length = len(fuzzy_old)
    occurrences = fuzzy_content.count(fuzzy_old) if fuzzy_old else 1
    if occurrences > 1:
        raise ToolError(
            f"Found {occurrences} occurrences of the text in {path}. "
            "The text must be unique. Please provide more context to make it unique."
        )
    updated = base[:index] + new + base[index + length :]
    if updated == base:
        raise ToolError(
            f"No changes made to {path}. The replacement produced identical content. "
            "This might indicate an issue with special characters or the text not existing as expected."
        )
    final = bom + (updated.replace("\n", "\r\n") if ending == "\r\n" else updated)
    try:
        absolute.write_bytes(final.encode("utf-8", "surrogatepass"))
    except OSError as exc:
        raise ToolError(f"Cannot write {path}: {exc.strerror or exc}") from None
    diff, first_changed = generate_diff(content, updated)
    return ToolResult.text(
        f"Successfully replaced text in {path}.", details={"diff": diff, "firstChangedLine": first_changed}
    )
