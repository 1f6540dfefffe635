"""The prompt editor: multi-line, with history; Enter sends, Alt+Enter sends as a follow-up."""

from __future__ import annotations

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

    def __init__(self) -> None:
        super().__init__(id="editor", soft_wrap=True, show_line_numbers=False, compact=True)
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

    async def _on_key(self, event: events.Key) -> None:
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
