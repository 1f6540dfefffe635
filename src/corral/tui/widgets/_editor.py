"""The prompt editor: multi-line, with history; Enter sends, Alt+Enter sends as a follow-up.

Tab completes the word before the cursor: a slash command at the start of the
prompt, or an `@path` (relative to the working directory; a directory gets a
trailing `/`). One candidate is inserted; several extend the word to their
common prefix and are listed (`CompletionsShown`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from textual import events
from textual.message import Message
from textual.widgets import TextArea

__all__ = ["Editor"]

SendKind = Literal["send", "follow_up"]


class Editor(TextArea):
    """A `TextArea` whose Enter submits; Shift+Enter or Ctrl+J insert a newline.

    Up on the first line walks back through the history, Down on the last line forward.
    Down with an empty editor (and no history walk) asks for agent navigation.
    """

    class Submitted(Message):
        """The user sent the editor's text."""

        def __init__(self, text: str, kind: SendKind) -> None:
            super().__init__()
            self.text = text
            self.kind = kind

    class NavigateRequested(Message):
        """Down with an empty editor: open agent navigation."""

    class CompletionsShown(Message):
        """Tab found several candidates for the word before the cursor."""

        def __init__(self, candidates: Sequence[str]) -> None:
            super().__init__()
            self.candidates = list(candidates)

    def __init__(self, *, commands: Sequence[str] = (), cwd: Path | None = None) -> None:
        super().__init__(id="editor", soft_wrap=True, show_line_numbers=False, compact=True)
        self.commands = list(commands)
        """Slash commands Tab completes."""
        self.cwd = cwd
        """Where `@path` completion looks (`None`: the process's working directory)."""
        self.sent: list[str] = []
        """Texts sent, oldest first (Up/Down walk them)."""
        self._history_index: int | None = None
        self._draft = ""

    def _submit(self, kind: SendKind) -> None:
        text = self.text.strip()
        if not text:
            return
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._history_index = None
        self.clear()
        self.post_message(self.Submitted(text, kind))

    def _show(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)

    def complete(self) -> bool:
        """Complete the word before the cursor; `False` when there is nothing to complete."""
        row, column = self.cursor_location
        line = self.document.get_line(row)
        before = line[:column]
        start = len(before) - len(before.split(" ")[-1])
        word = before[start:]
        if word.startswith("/") and row == 0 and start == 0:
            candidates = [name for name in self.commands if name.startswith(word)]
            suffix = " "
        elif word.startswith("@"):
            candidates = ["@" + path for path in _paths(word[1:], self.cwd)]
            suffix = ""
        else:
            return False
        if not candidates:
            return True
        if len(candidates) == 1:
            chosen = candidates[0]
            replacement = chosen if chosen.endswith("/") else chosen + suffix
        else:
            replacement = _common_prefix(candidates)
            self.post_message(self.CompletionsShown(candidates))
        self.replace(replacement, (row, start), (row, column))
        return True

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "tab" and self.complete():
            event.stop()
            event.prevent_default()
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self._submit("send")
            return
        if event.key in ("alt+enter", "ctrl+s"):
            event.stop()
            event.prevent_default()
            self._submit("follow_up")
            return
        if event.key in ("shift+enter", "ctrl+j"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "down" and not self.text and self._history_index is None:
            event.stop()
            event.prevent_default()
            self.post_message(self.NavigateRequested())
            return
        if event.key == "up" and self.cursor_location[0] == 0 and self.sent:
            event.stop()
            event.prevent_default()
            if self._history_index is None:
                self._draft = self.text
                self._history_index = len(self.sent)
            self._history_index = max(0, self._history_index - 1)
            self._show(self.sent[self._history_index])
            return
        if (
            event.key == "down"
            and self._history_index is not None
            and self.cursor_location[0] == self.document.line_count - 1
        ):
            event.stop()
            event.prevent_default()
            self._history_index += 1
            if self._history_index >= len(self.sent):
                self._history_index = None
                self._show(self._draft)
            else:
                self._show(self.sent[self._history_index])
            return
        await super()._on_key(event)


def _paths(prefix: str, cwd: Path | None) -> list[str]:
    """Entries whose path starts with `prefix` (relative to `cwd`); directories end with `/`."""
    base = Path(cwd) if cwd is not None else Path.cwd()
    folder, _, name = prefix.rpartition("/")
    directory = (base / folder) if folder else base
    if prefix.startswith(("/", "~")):
        directory = Path(os.path.expanduser(folder or "/"))
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError:
        return []
    head = f"{folder}/" if folder else ""
    found: list[str] = []
    for entry in entries:
        if not entry.name.startswith(name) or (entry.name.startswith(".") and not name.startswith(".")):
            continue
        found.append(head + entry.name + ("/" if entry.is_dir() else ""))
    return found


def _common_prefix(words: Sequence[str]) -> str:
    """The longest string every word starts with (character by character)."""
    first, last = min(words), max(words)
    size = next(
        (i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), min(len(first), len(last))
    )
    return first[:size]
