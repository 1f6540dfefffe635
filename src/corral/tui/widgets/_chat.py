"""The lead chat: one card per message, tool call, thinking block and delivered agent event.

Cards only render; the app decides what to show by feeding them agent events.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from markdown_it import MarkdownIt
from rich.text import Text
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownBlock
from textual.worker import Worker, WorkerCancelled

from corral._units import format_elapsed
from corral.agent import (
    AgentEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ModelNoticeEvent,
    RateLimitWaitEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    reply_note,
)
from corral.llm import (
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
)
from corral.orchestration.teams.messages.records import TEAM_MESSAGE_TYPE
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.tui._format import LARGE_LOG_LINES, summarize_args
from corral.tui._palette import DARK_DEFAULTS, ActivityPalette

RESULT_TYPE = "corral-agent-result"
"""`custom_type` of a delivered managed-agent result."""
ASK_TYPE = "corral-agent-ask"
"""`custom_type` of a delivered managed-agent question."""

__all__ = [
    "ANSWER_HINT",
    "AgentAskCard",
    "AgentResultCard",
    "AssistantCard",
    "BashCard",
    "ChatLog",
    "NoticeCard",
    "TeamMessageCard",
    "TeamReportCard",
    "ThinkingBlock",
    "ToolCard",
    "UserCard",
    "content_text",
]


class UserCard(Static):
    """A message the user sent."""

    def __init__(self, text: str, *, queued: str | None = None) -> None:
        prefix = f"[{queued}] " if queued else ""
        super().__init__(Text(prefix + text), classes="user")


class NoticeCard(Static):
    """A one-line note from the app (command results, errors, hints)."""

    def __init__(self, text: str, *, kind: str = "info") -> None:
        super().__init__(Text(text), classes=f"notice {kind}")


class ThinkingBlock(Collapsible):
    """The model's reasoning, dimmed and collapsible (collapsed once the reply is complete)."""

    def __init__(self) -> None:
        self._body = Static("", classes="thinking-text")
        super().__init__(self._body, title="thinking", collapsed=False, classes="thinking")

    def set_text(self, text: str) -> None:
        """Replace the reasoning text."""
        self._body.update(Text(text))


class AssistantCard(Vertical):
    """One assistant reply: optional thinking, then Markdown text, then an error line if it failed.

    A reply that streams in is appended to its Markdown document (`Markdown.append` re-parses only
    from the last block), never re-rendered whole per delta. Deltas that arrive while an append
    runs are coalesced into the next one by a single writer, so the deltas of a fast model cost a
    few appends, not one each. When the reply is complete its block structure is compared with a
    full parse; where streaming could not produce the same document (a later reference definition
    or HTML, or a block Textual's append split differently) the reply is rendered once, whole.
    """

    def __init__(self) -> None:
        super().__init__(classes="assistant")
        self.text = ""
        """The reply text shown so far (its render may still be catching up while streaming)."""
        self.thinking = ""
        self.rendered = ""
        """The text of the completed reply, set once its final render is in place."""
        self._thinking: ThinkingBlock | None = None
        self._markdown: Markdown | None = None
        self._error: Static | None = None
        self._pending = ""
        self._writer: Worker[None] | None = None

    @property
    def writing(self) -> bool:
        """True while streamed text is still being appended to the document."""
        return self._writer is not None

    async def show(self, *, text: str, thinking: str, error: str | None = None, done: bool = False) -> None:
        """Render the reply so far; with `done`, wait until the whole reply is laid out.

        Streaming updates return at once (the writer appends in the background, one append at a
        time); a non-streaming update (a transcript loaded whole) renders before returning. A card
        no longer in the chat (cleared, or the app closing while the lead still streams) ignores it.
        """
        if not self.is_attached:
            return
        if thinking and thinking != self.thinking:
            if self._thinking is None:
                self._thinking = ThinkingBlock()
                await self.mount(self._thinking, before=0 if self.children else None)
            self._thinking.set_text(thinking)
        self.thinking = thinking
        if text != self.text:
            if self._markdown is None and done:
                self._markdown = Markdown(text, classes="reply")
                await self.mount(self._markdown)
            elif self._markdown is None or text.startswith(self.text):
                if self._markdown is None:
                    self._markdown = Markdown(classes="reply")
                    await self.mount(self._markdown)
                self._pending += text[len(self.text) :]
                if self._writer is None:
                    self._writer = self.run_worker(self._write(), group="markdown")
            else:
                await self._drain()
                await self._markdown.update(text)
        self.text = text
        if done:
            await self._drain()
            if not self.is_attached:
                return
            if self._markdown is not None and not _same_blocks(self._markdown, text):
                await self._markdown.update(text)
            self.rendered = text
            if self._thinking is not None:
                self._thinking.collapsed = True
        if error and self._error is None:
            self._error = Static(Text(error), classes="error")
            await self.mount(self._error)

    async def _write(self) -> None:
        """Append what streamed in since the last append, until nothing is pending."""
        try:
            while self._pending and self._markdown is not None:
                fragment, self._pending = self._pending, ""
                await self._markdown.append(fragment)
        finally:
            self._writer = None

    async def _drain(self) -> None:
        writer = self._writer
        if writer is not None:
            # Cancelled when the card left the chat (a reset while the reply streamed): nothing to draw.
            with contextlib.suppress(WorkerCancelled):
                await writer.wait()


def _same_blocks(markdown: Markdown, text: str) -> bool:
    """Whether `markdown`'s top-level blocks are those a full render of `text` has (kind and lines).

    False when the text defines link references or holds HTML (a streamed block cannot see a
    later reference definition, and Textual renders no HTML block, which confuses its append).
    """
    env: dict[str, Any] = {}
    tokens = MarkdownIt("gfm-like").parse(text, env)
    if env.get("references") or any(token.type == "html_block" for token in tokens):
        return False
    expected = [(token.type, tuple(token.map)) for token in tokens if token.level == 0 and token.map]
    shown = [(block.name, tuple(block.source_range)) for block in markdown.query_children(MarkdownBlock)]
    return markdown.source == text and shown == expected


class ToolCard(Static):
    """A tool call and its result: one line, output collapsed beyond `LARGE_LOG_LINES` lines."""

    def __init__(self, call_id: str, name: str, args: dict[str, Any]) -> None:
        super().__init__(classes="tool running")
        self.call_id = call_id
        self.tool_name = name
        self.args = args
        self.output = ""
        self.is_error = False
        self.done = False
        self.expanded = False
        self._render_card()

    @property
    def is_large(self) -> bool:
        """True when the output has more lines than are shown collapsed."""
        return len(self.output.splitlines()) > LARGE_LOG_LINES

    def set_result(self, output: str, *, is_error: bool) -> None:
        """Show the finished result."""
        self.output = output
        self.is_error = is_error
        self.done = True
        self.set_class(False, "running")
        self.set_class(is_error, "failed")
        self._render_card()

    def set_expanded(self, expanded: bool) -> None:
        """Show the whole output (`True`) or only its first lines."""
        self.expanded = expanded
        self._render_card()

    def _render_card(self) -> None:
        mark = "…" if not self.done else ("✗" if self.is_error else "✓")
        text = Text(f"{mark} {self.tool_name} ", style="bold")
        text.append(summarize_args(self.args), style="dim")
        lines = self.output.splitlines()
        shown = lines if self.expanded or not self.is_large else lines[:LARGE_LOG_LINES]
        for line in shown:
            text.append("\n  " + line)
        if len(shown) < len(lines):
            text.append(f"\n  … {len(lines) - len(shown)} more lines (l to expand)", style="italic dim")
        self.update(text)


class BashCard(Static):
    """A shell command the user ran with `!cmd` (or `!!cmd`, kept out of the model's context)."""

    def __init__(self, command: str, *, excluded: bool = False) -> None:
        super().__init__(classes="tool bash running")
        self.command = command
        self.excluded = excluded
        self.output = ""
        self.exit_code: int | None = None
        self.done = False
        self._render_card()

    def set_result(self, message: BashExecutionMessage) -> None:
        """Show the command's output and exit code."""
        self.output = message.output
        self.exit_code = message.exit_code
        self.done = True
        self.set_class(False, "running")
        self.set_class(message.cancelled or (message.exit_code or 0) != 0, "failed")
        self._render_card()

    def _render_card(self) -> None:
        text = Text(f"$ {self.command}", style="bold")
        if self.excluded:
            text.append("  (not sent to the model)", style="dim")
        elif self.done:
            text.append("  (added to the lead's context)", style="dim")
        lines = self.output.splitlines()
        for line in lines[:LARGE_LOG_LINES]:
            text.append("\n  " + line)
        if len(lines) > LARGE_LOG_LINES:
            text.append(f"\n  … {len(lines) - LARGE_LOG_LINES} more lines", style="italic dim")
        if not self.done:
            text.append("\n  running …", style="italic dim")
        elif self.exit_code not in (0, None):
            text.append(f"\n  exit code {self.exit_code}", style="bold")
        self.update(text)


class AgentResultCard(Static):
    """A managed agent's result, delivered into the lead: the agent, its status and elapsed time, then
    the text. The ids (session, request) are behind `l`, like long tool logs."""

    def __init__(self, text: str, details: Any) -> None:
        super().__init__(classes="agent-result")
        facts = details if isinstance(details, dict) else {}
        self.agent = str(facts.get("agent") or "agent")
        self.status = str(facts.get("status") or "completed")
        elapsed = facts.get("elapsed_ms")
        self.elapsed = format_elapsed(elapsed if isinstance(elapsed, int) else None)
        header, _, body = text.partition("\n\n")
        if not header.startswith("Agent result ·"):
            header, body = "", text
        self.ids = header
        self.body = body.strip()
        self.expanded = False
        self.set_class(self.status != "completed", "failed")
        self._render_card()

    def set_expanded(self, expanded: bool) -> None:
        """Show the ids line (`True`) or hide it."""
        self.expanded = expanded
        self._render_card()

    def _render_card(self) -> None:
        mark = "◆" if self.status == "completed" else "✗"
        text = Text(f"{mark} {self.agent}", style="bold")
        text.append(
            f" · {self.status} · {self.elapsed}", style="bold" if self.status != "completed" else "dim"
        )
        text.append("\n" + self.body)
        if self.ids and self.expanded:
            text.append("\n" + self.ids, style="dim")
        elif self.ids:
            text.append("\n(l shows the session and request ids)", style="italic dim")
        self.update(text)


ANSWER_HINT = (
    "To answer: press ↓ on an empty prompt to open the agents view, pick the agent with ↑/↓, "
    "press m, type the answer and press Enter. Or tell the lead here and it replies for you."
)
"""How a person answers an agent's question in the app (shown on every question card)."""


class AgentAskCard(Static):
    """A managed agent's question (`ask_owner`), delivered into the lead, with how to answer it."""

    def __init__(self, text: str, details: Any) -> None:
        facts = details if isinstance(details, dict) else {}
        label = facts.get("agent")
        question = facts.get("question")
        title = f"? question from {label}" if label else "? agent question"
        body = Text(title + "\n", style="bold")
        body.append(str(question) if isinstance(question, str) and question.strip() else text)
        body.append("\n" + ANSWER_HINT, style="italic dim")
        super().__init__(body, classes="agent-ask")


_REPORT_FOOTER = "The agent has exited; do not stop it."


class TeamReportCard(Vertical):
    """A teams report (`corral-team-report`): name, outcome, verification, acceptance and summary,
    with the full report collapsed below (click `report` to expand)."""

    def __init__(self, text: str, details: Any, *, palette: ActivityPalette = DARK_DEFAULTS) -> None:
        facts = details if isinstance(details, dict) else {}
        self.agent_name = str(facts.get("name") or "agent")
        self.outcome = str(facts.get("effective_outcome") or facts.get("outcome") or "unspecified")
        verification = facts.get("verification")
        self.verification = (
            str(verification.get("state")) if isinstance(verification, dict) else "not-requested"
        )
        acceptance = facts.get("acceptance")
        self.acceptance = str(acceptance.get("state")) if isinstance(acceptance, dict) else "pending"
        self.status = str(facts.get("status") or "completed")
        parts = text.split("\n\n")
        self.summary = ""
        body = parts[1:]
        if body and body[0].startswith("Summary: "):
            self.summary = body.pop(0).removeprefix("Summary: ").strip()
        if body and body[-1].startswith(_REPORT_FOOTER):
            body.pop()
        self.body = "\n\n".join(body).strip()
        if not self.summary:
            first = next((line for line in self.body.splitlines() if line.strip()), "")
            self.summary = first[:100]
        head = Text("◆ report from ", style="bold")
        head.append(self.agent_name, style=f"bold {palette.names}")
        if facts.get("tier"):
            head.append(f" ({facts['tier']})", style="dim")
        if self.status != "completed":
            head.append(f"  {self.status}", style=f"bold {palette.error}")
        head.append("\n")
        outcome_style = {"succeeded": "green", "blocked": palette.warning, "failed": palette.error}
        head.append("outcome ")
        head.append(self.outcome, style=f"bold {outcome_style.get(self.outcome, '')}".strip())
        head.append(f" · verification {self.verification} · acceptance {self.acceptance}", style="dim")
        if self.summary:
            head.append("\n" + self.summary)
        self._body = Static(Text(self.body), classes="team-report-body")
        self.collapsible = Collapsible(self._body, title="report", collapsed=True)
        super().__init__(Static(head, classes="team-report-head"), self.collapsible, classes="team-report")


class TeamMessageCard(Static):
    """A message from a teams agent (or a notice from corral) to the lead (`corral-team-message`)."""

    def __init__(self, text: str, details: Any, *, palette: ActivityPalette = DARK_DEFAULTS) -> None:
        facts = details if isinstance(details, dict) else {}
        sender = str(facts.get("from") or "agent")
        summary = facts.get("summary")
        _, _, content = text.partition("\n\n")
        title = Text("✉ message from ", style="bold")
        title.append(sender, style=f"bold {palette.names}")
        if summary:
            title.append(f" — {summary}", style="dim")
        title.append("\n")
        title.append(content or text, style=palette.messages)
        super().__init__(title, classes="team-message")


class ChatLog(VerticalScroll):
    """A scrolling transcript (the lead's, or a followed agent's) built from agent events.

    Focusable so `l` can expand tool logs. It follows the bottom while scrolled
    there; scrolling up stops following until End (or scrolling back down).
    """

    BINDINGS: ClassVar[list[BindingType]] = [("l", "toggle_logs", "Expand logs")]

    can_focus = True

    def __init__(self, *, id: str = "chat") -> None:
        super().__init__(id=id)
        self.logs_expanded = False
        self.queued: dict[str, UserCard] = {}
        """Messages shown as queued (steer or follow-up), by text, until the agent takes them."""
        self._assistant: AssistantCard | None = None
        self._tools: dict[str, ToolCard] = {}
        self.palette: ActivityPalette = DARK_DEFAULTS
        """The `activityColors` palette for team cards."""
        self._rate_limit_since: int | None = None
        """When the rate-limit wait last noted began (one notice per wait)."""

    def on_mount(self) -> None:
        # Anchored: stays at the bottom as cards arrive and grow, until the user
        # scrolls up; scrolling back to the bottom resumes following.
        self.anchor()

    def add(self, card: Static | Vertical | VerticalScroll) -> None:
        """Append a card (the view follows it while anchored at the bottom)."""
        self.mount(card)

    def notice(self, text: str, *, kind: str = "info") -> NoticeCard:
        """Add a note from the app; returns its card (to update it later)."""
        card = NoticeCard(text, kind=kind)
        self.add(card)
        return card

    def action_toggle_logs(self) -> None:
        """Expand or collapse every large tool log, every result's ids and every teams report's body."""
        self.logs_expanded = not self.logs_expanded
        for card in self.query(ToolCard):
            card.set_expanded(self.logs_expanded)
        for result in self.query(AgentResultCard):
            result.set_expanded(self.logs_expanded)
        for report in self.query(TeamReportCard):
            report.collapsible.collapsed = not self.logs_expanded

    async def reset(self) -> None:
        """Remove every card."""
        await self.remove_children()
        self.queued.clear()
        self._assistant = None
        self._tools.clear()

    async def load(self, messages: Sequence[Any]) -> None:
        """Render a saved transcript."""
        for message in messages:
            self.render_start(message)
            if isinstance(message, AssistantMessage):
                await self.render_assistant(message, done=True)
                for call in message.tool_calls:
                    self._add_tool(call.id, call.name, call.arguments)
            elif isinstance(message, ToolResultMessage):
                card = self._tools.get(message.tool_call_id)
                if card is not None:
                    card.set_result(message.text, is_error=message.is_error)

    def render_start(self, message: Any) -> None:
        """Render a message entering the context."""
        if isinstance(message, UserMessage):
            text = content_text(message.content)
            queued = self.queued.pop(text, None)
            if queued is not None:
                queued.remove_class("queued")
                queued.update(text)
            else:
                self.add(UserCard(text))
        elif isinstance(message, CustomMessage) and message.custom_type == TEAM_REPORT_TYPE:
            self.add(TeamReportCard(content_text(message.content), message.details, palette=self.palette))
        elif isinstance(message, CustomMessage) and message.custom_type == TEAM_MESSAGE_TYPE:
            self.add(TeamMessageCard(content_text(message.content), message.details, palette=self.palette))
        elif isinstance(message, CustomMessage) and message.display:
            text = content_text(message.content)
            if message.custom_type == RESULT_TYPE:
                card = AgentResultCard(text, message.details)
                card.set_expanded(self.logs_expanded)
                self.add(card)
            elif message.custom_type == ASK_TYPE:
                self.add(AgentAskCard(text, message.details))
            else:
                self.notice(text)
        elif isinstance(message, AssistantMessage):
            self._assistant = AssistantCard()
            self.add(self._assistant)
        elif isinstance(message, BashExecutionMessage):
            bash = BashCard(message.command, excluded=bool(message.exclude_from_context))
            bash.set_result(message)
            self.add(bash)

    async def render_assistant(self, message: AssistantMessage, *, done: bool) -> None:
        """Render the assistant reply so far."""
        if self._assistant is None:
            self._assistant = AssistantCard()
            self.add(self._assistant)
        thinking = "".join(b.thinking for b in message.content if isinstance(b, ThinkingContent))
        error = None
        if done and message.stop_reason in ("error", "aborted"):
            error = f"{message.stop_reason}: {message.error_message or ''}".rstrip(": ")
        elif done:
            note = reply_note(message)
            error = f"note: {note}" if note is not None else None
        await self._assistant.show(text=message.text, thinking=thinking, error=error, done=done)

    def _add_tool(self, call_id: str, name: str, args: dict[str, Any]) -> None:
        card = ToolCard(call_id, name, args)
        card.set_expanded(self.logs_expanded)
        self._tools[call_id] = card
        self.add(card)

    async def apply(self, event: AgentEvent) -> None:
        """Render one agent event."""
        if isinstance(event, MessageStartEvent):
            self.render_start(event.message)
        elif isinstance(event, MessageUpdateEvent):
            await self.render_assistant(event.message, done=False)
        elif isinstance(event, MessageEndEvent):
            if isinstance(event.message, AssistantMessage):
                await self.render_assistant(event.message, done=True)
        elif isinstance(event, AutoRetryStartEvent):
            seconds = event.delay_ms / 1000
            self.notice(
                f"retrying in {seconds:g} s (attempt {event.attempt} of {event.max_attempts})",
                kind="warning",
            )
        elif isinstance(event, RateLimitWaitEvent):
            if event.waiting and event.since_ms != self._rate_limit_since:
                # Once per wait (its reason or expected end may change while it lasts).
                self._rate_limit_since = event.since_ms
                self.notice(f"{event.describe(int(time.time() * 1000))} at {event.endpoint}", kind="warning")
        elif isinstance(event, ModelNoticeEvent):
            self.notice(event.text, kind="warning")
        elif isinstance(event, CompactionEndEvent) and event.error_message and not event.aborted:
            self.notice(f"compaction ({event.reason}) failed: {event.error_message}", kind="warning")
        elif isinstance(event, ToolExecutionStartEvent):
            self._add_tool(event.tool_call_id, event.tool_name, event.args)
        elif isinstance(event, ToolExecutionEndEvent):
            card = self._tools.get(event.tool_call_id)
            if card is not None:
                card.set_result(content_text(event.result.content), is_error=event.is_error)


def content_text(content: str | Sequence[Any]) -> str:
    """The text of a message's content (text blocks joined; images skipped)."""
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))
