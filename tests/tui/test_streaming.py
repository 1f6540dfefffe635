"""A streamed reply renders the same document as the reply shown whole, without re-rendering it per delta.

Each test streams a reply into a chat one delta at a time (waiting for each append), and the same
reply whole into a second chat, then compares the screenshots of both.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Markdown

from corral.agent import MessageEndEvent, MessageStartEvent, MessageUpdateEvent
from corral.llm import AssistantMessage, TextContent
from corral.llm._model import TextDeltaEvent
from corral.tui.widgets import AssistantCard, ChatLog

from .conftest import wait_until

TCSS = Path(__file__).parents[2] / "src" / "corral" / "tui" / "app.tcss"
SIZE = (90, 160)

REPLY = """\
# Plan

The change touches **two** modules and one `helper`; see [the notes](docs/notes.md).

Setext heading
--------------

- first item
  - nested item with `code`
- second item

1. one
2. two

| file | lines |
| --- | --- |
| `a.py` | 12 |
| `b.py` | 340 |

```python
def main() -> int:
    return 0
```

> A quote
> over two lines.

---

Last paragraph, *emphasised*.
"""

REFERENCE_REPLY = """\
See [the guide][g] first.

Then the rest.

[g]: https://example.com/guide
"""


class ChatApp(App[None]):
    """One chat log with the app's styles."""

    CSS_PATH = str(TCSS)

    def compose(self) -> ComposeResult:
        yield ChatLog()


def _events(deltas: list[str]) -> Iterator[MessageStartEvent | MessageUpdateEvent | MessageEndEvent]:
    yield MessageStartEvent(message=AssistantMessage(content=[]))
    text = ""
    for delta in deltas:
        text += delta
        partial = AssistantMessage(content=[TextContent(text=text)])
        event = TextDeltaEvent(content_index=0, delta=delta, partial=partial)
        yield MessageUpdateEvent(message=partial, assistant_message_event=event)
    yield MessageEndEvent(message=AssistantMessage(content=[TextContent(text=text)]))


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _screenshot(app: App[None]) -> str:
    # The SVG's ids differ between apps; the drawing does not.
    return re.sub(r"terminal-\d+", "terminal", app.export_screenshot())


async def _settled(pilot: Pilot[None], card: AssistantCard, text: str) -> None:
    await wait_until(pilot, lambda: card.rendered == text)  # type: ignore[arg-type]
    await pilot.pause()


async def _whole(text: str) -> str:
    app = ChatApp()
    async with app.run_test(size=SIZE) as pilot:
        chat = app.query_one(ChatLog)
        await chat.load([AssistantMessage(content=[TextContent(text=text)])])
        await _settled(pilot, app.query_one(AssistantCard), text)
        return _screenshot(app)


async def _streamed(text: str, deltas: list[str], *, one_by_one: bool) -> str:
    app = ChatApp()
    async with app.run_test(size=SIZE) as pilot:
        chat = app.query_one(ChatLog)
        for event in _events(deltas):
            await chat.apply(event)
            if one_by_one:  # every delta its own append
                await wait_until(pilot, lambda: not app.query_one(AssistantCard).writing)  # type: ignore[arg-type]
        await _settled(pilot, app.query_one(AssistantCard), text)
        return _screenshot(app)


@contextmanager
def _counting_updates() -> Iterator[list[str]]:
    """Record every whole-document `Markdown.update` (the render streaming avoids)."""
    calls: list[str] = []
    original = Markdown.update

    def counting(self: Markdown, markdown: str) -> object:
        calls.append(markdown)
        return original(self, markdown)

    Markdown.update = counting  # type: ignore[assignment]
    try:
        yield calls
    finally:
        Markdown.update = original  # type: ignore[method-assign]


@pytest.mark.parametrize(("size", "one_by_one"), [(1, False), (7, True), (40, True)])
async def test_streamed_reply_renders_like_the_whole_reply_without_rerendering(
    size: int, one_by_one: bool
) -> None:
    whole = await _whole(REPLY)
    with _counting_updates() as updates:
        streamed = await _streamed(REPLY, _pieces(REPLY, size), one_by_one=one_by_one)
    assert "Last paragraph, emphasised." in _screenshot_text(streamed)
    assert streamed == whole
    # Streaming appended: no delta (and not the end) re-rendered the whole document.
    assert [len(text) for text in updates if text] == []


async def test_deltas_arriving_together_are_coalesced_into_few_appends() -> None:
    appends: list[str] = []
    original = Markdown.append

    def counting(self: Markdown, markdown: str) -> object:
        appends.append(markdown)
        return original(self, markdown)

    Markdown.append = counting  # type: ignore[assignment]
    try:
        streamed = await _streamed(REPLY, _pieces(REPLY, 3), one_by_one=False)
    finally:
        Markdown.append = original  # type: ignore[method-assign]
    assert "".join(appends) == REPLY
    assert len(appends) < len(_pieces(REPLY, 3)) // 4
    assert streamed == await _whole(REPLY)


async def test_a_reply_streaming_cannot_render_alike_is_rendered_whole_once_at_the_end() -> None:
    # The link's reference is defined after the paragraph that uses it: the streamed paragraph
    # was finished before the definition arrived.
    whole = await _whole(REFERENCE_REPLY)
    with _counting_updates() as updates:
        streamed = await _streamed(REFERENCE_REPLY, _pieces(REFERENCE_REPLY, 5), one_by_one=True)
    assert [text for text in updates if text] == [REFERENCE_REPLY]
    assert streamed == whole
    assert "[g]" not in _screenshot_text(whole)


def _screenshot_text(svg: str) -> str:
    """The visible characters of a screenshot (non-breaking spaces as spaces)."""
    spans = re.findall(r">([^<>]*)</text>", svg)
    return "".join(spans).replace("&#160;", " ").replace("\xa0", " ")


async def test_clearing_the_chat_while_a_reply_finishes_drops_it_and_renders_the_next() -> None:
    app = ChatApp()
    async with app.run_test(size=SIZE) as pilot:
        chat = app.query_one(ChatLog)
        events = list(_events(_pieces(REPLY, 3)))
        for event in events[:-1]:
            await chat.apply(event)
        streaming = app.query_one(AssistantCard)
        assert streaming.writing
        # The reply's end waits for the appends still running; /new clears the chat meanwhile.
        ending = asyncio.create_task(chat.apply(events[-1]))
        await asyncio.sleep(0)
        await chat.reset()
        await ending  # the cancelled writer is not an error
        assert not streaming.is_attached and streaming.rendered == ""
        await chat.apply(events[0])
        for event in events[1:]:
            await chat.apply(event)
        await _settled(pilot, app.query_one(AssistantCard), REPLY)
        assert len(app.query(AssistantCard)) == 1


async def test_a_reply_arriving_for_a_card_no_longer_in_the_chat_is_ignored() -> None:
    # The lead can still stream while the app closes (or after the chat was cleared).
    app = ChatApp()
    async with app.run_test(size=SIZE) as pilot:
        chat = app.query_one(ChatLog)
        card = AssistantCard()
        chat.add(card)
        await pilot.pause()
        await card.remove()
        await card.show(text="late *reply*", thinking="late thought", done=False)
        await card.show(text="late *reply*", thinking="late thought", done=True)
        assert card.rendered == "" and not card.children
