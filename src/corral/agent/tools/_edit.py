"""The `edit` tool: replace unique pieces of text in a file, and show the diff.

Two argument forms are accepted, as in Pi: the single `{path, oldText,
newText}` and Pi's `{path, edits: [{oldText, newText}, ...]}` (also an
`edits` sent as a JSON string or as one object, and top-level
`oldText`/`newText` next to `edits`, which join the list). Every `oldText` is
matched against the original file, not after earlier edits; the matched
regions must be unique and must not overlap; all edits are applied at once
or none is (the file is untouched when any fails).

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
import itertools
import json
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
            "edits": {
                "type": "array",
                "description": (
                    "Several replacements in one call, instead of oldText/newText. Each oldText is "
                    "matched against the original file and must be unique and not overlap another."
                ),
                "items": {
                    "type": "object",
                    "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                    "required": ["oldText", "newText"],
                },
            },
        },
        ["path"],
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
        edits, multi = _edit_list(params)
        absolute = resolve_to_cwd(path, self.cwd)
        return await asyncio.to_thread(_edit, absolute, path, edits, multi)


def _edit_list(params: dict[str, Any]) -> tuple[list[tuple[str, str]], bool]:
    """The replacements asked for, and whether they came as Pi's `edits[]` form."""
    raw = params.get("edits")
    if isinstance(raw, str):
        # Some models send the array as a JSON string.
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ToolError(
                "Edit tool input is invalid. edits must be an array of {oldText, newText}."
            ) from None
    if isinstance(raw, dict):
        raw = [raw]
    if raw is None:
        return [(require_str(params, "oldText"), require_str(params, "newText"))], False
    if not isinstance(raw, list):
        raise ToolError("Edit tool input is invalid. edits must be an array of {oldText, newText}.")
    edits: list[tuple[str, str]] = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ToolError(f"Edit tool input is invalid. edits[{index}] must be an object.")
        old_text, new_text = item.get("oldText"), item.get("newText")
        if not isinstance(old_text, str) or not isinstance(new_text, str):
            raise ToolError(f"Edit tool input is invalid. edits[{index}] needs string oldText and newText.")
        edits.append((old_text, new_text))
    legacy_old, legacy_new = params.get("oldText"), params.get("newText")
    if isinstance(legacy_old, str) and isinstance(legacy_new, str):
        edits.append((legacy_old, legacy_new))
    if not edits:
        raise ToolError("Edit tool input is invalid. edits must contain at least one replacement.")
    return edits, True


def _find(content: str, fuzzy_content: str, old: str) -> tuple[int, bool]:
    """Where `old` is: exact first, else in the fuzzy form (index, fuzzy?); -1 when absent."""
    index = content.find(old)
    if index >= 0:
        return index, False
    fuzzy_old = fuzzy_normalize(old)
    return (fuzzy_content.find(fuzzy_old) if fuzzy_old else -1), True


def _edit(absolute: Path, path: str, edits: list[tuple[str, str]], multi: bool) -> ToolResult:
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
    pairs = [(_to_lf(old), _to_lf(new)) for old, new in edits]
    for i, (old, _) in enumerate(pairs):
        if not old:
            label = f"edits[{i}].oldText" if multi else "oldText"
            raise ToolError(f"{label} must not be empty in {path}. Give the exact text to replace.")
    fuzzy_content = fuzzy_normalize(content)
    found = [_find(content, fuzzy_content, old) for old, _ in pairs]
    for i, (index, _) in enumerate(found):
        if index < 0:
            what = "the exact text" if not multi else f"the text of edits[{i}]"
            raise ToolError(
                f"Could not find {what} in {path}. "
                "The old text must match exactly including all whitespace and newlines."
            )
    # When any edit needed the fuzzy form, every edit is applied to that form (as Pi does).
    use_fuzzy = any(fuzzy for _, fuzzy in found)
    base = fuzzy_content if use_fuzzy else content
    spans: list[tuple[int, int, str, int]] = []
    for i, (old, new) in enumerate(pairs):
        fuzzy_old = fuzzy_normalize(old)
        occurrences = fuzzy_content.count(fuzzy_old) if fuzzy_old else 1
        if occurrences > 1:
            which = f" (edits[{i}])" if multi else ""
            raise ToolError(
                f"Found {occurrences} occurrences of the text in {path}{which}. "
                "The text must be unique. Please provide more context to make it unique."
            )
        needle = fuzzy_old if use_fuzzy else old
        index = base.find(needle)
        if index < 0:
            index, needle = base.find(fuzzy_old), fuzzy_old
        spans.append((index, index + len(needle), new, i))
    spans.sort()
    for (_, end_a, _, i), (start_b, _, _, j) in itertools.pairwise(spans):
        if start_b < end_a:
            raise ToolError(
                f"edits[{i}] and edits[{j}] overlap in {path}. Merge them into one edit or target disjoint regions."
            )
    updated = base
    for start, end, new, _ in reversed(spans):
        updated = updated[:start] + new + updated[end:]
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
    message = (
        f"Successfully replaced {len(edits)} block(s) in {path}."
        if multi
        else f"Successfully replaced text in {path}."
    )
    return ToolResult.text(message, details={"diff": diff, "firstChangedLine": first_changed})
