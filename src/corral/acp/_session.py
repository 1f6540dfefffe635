"""One ACP session: one corral lead, its updates, its items and their cursor, its questions.

Loaded on the first `session/new` or `session/load`, so `corral acp` answers `initialize` before it
imports the lead (see `_server`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from corral.agent import (
    AgentEndEvent,
    AgentEvent,
    AgentSettledEvent,
    MessageEndEvent,
    MessageUpdateEvent,
    ToolCheck,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolVerdict,
)
from corral.errors import CorralError
from corral.lead import CURSOR_TYPE, ItemLog, Launched, LeadItem
from corral.llm import AssistantMessage, CustomMessage, TextContent, ToolCall
from corral.orchestration.kernel import fault_point
from corral.session import CustomEntry, CustomMessageEntry, MessageEntry

from . import texts
from ._updates import Update, UpdateMapper
from ._wire import RpcError, Wire

_T = TypeVar("_T")


class SessionServer(Protocol):
    """What a lead session needs of the server that holds it."""

    wire: Wire
    ask_timeout: float | None
    """Seconds a question waits for the editor's answer (`None`: no limit)."""

    def spawn(self, coro: Any) -> None:
        """Run `coro` as a task the server ends when it closes."""


__all__ = ["LeadSession", "SessionServer"]

_ALLOW, _ALWAYS, _REJECT = "allow", "allow_always", "reject"


@dataclass
class LeadSession:
    """One ACP session: one lead."""

    launched: Launched
    server: SessionServer
    mapper: UpdateMapper = field(default_factory=UpdateMapper)
    live: bool = False
    """The client knows the session: updates are sent (before that they are dropped; replay covers them)."""
    turn: asyncio.Task[Any] | None = None
    cancelled: bool = False
    _log: ItemLog | None = None
    _shown: int = 0
    """Items of the log the client has been sent."""
    _unsubscribe: Callable[[], None] | None = None
    _children: dict[str, Callable[[], None]] = field(default_factory=dict)
    _asks: set[str] = field(default_factory=set)
    _always: set[tuple[str, str]] = field(default_factory=set)
    """(tool, why it asked) pairs the user chose "always allow" for, in this session."""

    @property
    def session_id(self) -> str:
        return self.launched.session.session_id

    @property
    def log(self) -> ItemLog:
        if self._log is None:
            self._log = ItemLog(self.launched.session)
        return self._log

    # --- sending --------------------------------------------------------------------------------------

    def send(self, update: Update | None) -> bool:
        if update is None or not self.live:
            return False
        return self.server.wire.notify("session/update", {"sessionId": self.session_id, "update": update})

    def subscribe(self) -> None:
        """Stream the lead's events to the client, and let the client's user answer its tool calls'
        `ask` verdicts."""
        self._unsubscribe = self.launched.agent.subscribe(self._on_event)
        self.launched.agent.set_tool_approver(self.approve_tool)

    def _on_event(self, event: object) -> None:
        if isinstance(event, MessageUpdateEvent):
            streamed = event.assistant_message_event
            if streamed.type == "text_delta":
                self.send(self.mapper.message_chunk(streamed.delta))
            elif streamed.type == "thinking_delta":
                self.send(self.mapper.thought_chunk(streamed.delta))
        elif isinstance(event, ToolExecutionStartEvent):
            self.send(self.mapper.tool_started(event.tool_call_id, event.tool_name, dict(event.args)))
        elif isinstance(event, ToolExecutionEndEvent):
            text = "".join(part.text for part in event.result.content if isinstance(part, TextContent))
            details = event.result.details
            self.send(self.mapper.tool_ended(event.tool_call_id, text, details, is_error=event.is_error))
            self._follow_children()
        elif isinstance(event, MessageEndEvent):
            message = event.message
            if isinstance(message, CustomMessage):
                self.drain()
            elif isinstance(message, AssistantMessage) and message.stop_reason == "error":
                self.send(
                    self.mapper.message_chunk(f"\n[error: {message.error_message or 'the model failed'}]")
                )
        elif isinstance(event, AgentEndEvent | AgentSettledEvent):
            self.drain()

    # --- agents' progress --------------------------------------------------------------------------------

    def _follow_children(self) -> None:
        """Stream the progress of each agent a tool call stands for, when it runs in this process."""
        agents = self.launched.agents
        if agents is None:
            return
        waiting = set(self.mapper.waiting_agents())
        for generation in agents.tree():
            if generation.label not in waiting or generation.run_id in self._children:
                continue
            child = agents.session(generation.run_id)
            if child is not None:
                label = generation.label
                # What it did so far, then each later message: every assistant message once (no await
                # between reading its messages and subscribing).
                for message in list(child.messages):
                    self._child_message(label, message)
                self._children[generation.run_id] = child.subscribe(self._child_listener(label))

    def _child_listener(self, label: str) -> Callable[[AgentEvent], None]:
        def listen(event: AgentEvent) -> None:
            if isinstance(event, MessageEndEvent):
                self._child_message(label, event.message)

        return listen

    def _child_message(self, label: str, message: object) -> None:
        """An agent's assistant message as progress lines: its first line of text, then its tool calls."""
        if not isinstance(message, AssistantMessage):
            return
        for part in message.content:
            if isinstance(part, TextContent) and part.text.strip():
                self.send(self.mapper.agent_progress(label, part.text.strip().splitlines()[0][:200]))
            elif isinstance(part, ToolCall):
                target = next(
                    (v for k, v in part.arguments.items() if k in ("path", "pattern", "command")), ""
                )
                self.send(self.mapper.agent_progress(label, f"→ {part.name} {str(target)[:100]}".rstrip()))

    # --- items -------------------------------------------------------------------------------------------

    def drain(self) -> None:
        """Show every item the client has not been sent, in order; move the cursor past each sent one."""
        if not self.live:
            return
        items = self.log.refresh()
        while self._shown < len(items):
            item = items[self._shown]
            update = self.mapper.item(item)
            fault_point("acp_before_show")  # persisted, not yet shown: a crash test kills here
            if update is not None and not self.send(update):
                return  # the client is gone: the cursor stays before this item
            self._shown += 1
            self._advance_cursor(item)
            if item.kind == "ask":
                self._ask(item)

    def _advance_cursor(self, item: LeadItem) -> None:
        with contextlib.suppress(CorralError, OSError):
            self.launched.session.append_custom(CURSOR_TYPE, {"after": item.entry_id})

    def saved_cursor(self) -> str | None:
        for entry in reversed(self.launched.session.entries):
            if isinstance(entry, CustomEntry) and entry.custom_type == CURSOR_TYPE:
                data = entry.data if isinstance(entry.data, dict) else {}
                after = data.get("after")
                return after if isinstance(after, str) else None
        return None

    # --- asks --------------------------------------------------------------------------------------------

    def _ask(self, item: LeadItem) -> None:
        ask_id = item.details.get("ask_id")
        run_id = item.details.get("run_id")
        host = self.launched.host
        if not isinstance(ask_id, str) or not isinstance(run_id, str) or host is None or ask_id in self._asks:
            return
        pending = host.kernel.pending_ask(run_id)
        if pending is None or pending.ask_id != ask_id:
            return  # answered already
        self._asks.add(ask_id)
        self.server.spawn(self._ask_user(item, ask_id))

    async def _ask_user(self, item: LeadItem, ask_id: str) -> None:
        agent = item.agent or "an agent"
        question = str(item.details.get("question") or item.text)
        params = {
            "sessionId": self.session_id,
            "toolCall": {
                "toolCallId": f"corral-ask-{ask_id}",
                "title": f"{agent} asks: {question[:200]}",
                "kind": "other",
                "status": "pending",
                "content": [{"type": "content", "content": {"type": "text", "text": item.text}}],
            },
            "options": [
                {"optionId": _ALLOW, "name": "Yes", "kind": "allow_once"},
                {"optionId": _REJECT, "name": "No", "kind": "reject_once"},
            ],
        }
        answer: object = None
        with contextlib.suppress(RpcError, TimeoutError):
            answer = await self.server.wire.request(
                "session/request_permission", params, timeout=self.server.ask_timeout
            )
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        allowed = isinstance(outcome, dict) and outcome.get("optionId") == _ALLOW
        agents = self.launched.agents
        if agents is None or item.agent is None:
            return
        from corral.orchestration.surfaces import ReplyParams

        with contextlib.suppress(CorralError):
            await agents.controller.reply(
                agents.caller,
                ReplyParams(agent=item.agent, message="Yes." if allowed else texts.ASK_REJECTED),
            )

    async def approve_tool(self, check: ToolCheck, verdict: ToolVerdict) -> ToolVerdict:
        """The lead's tool call that the rules or a hook ask about: ask the editor's user with
        `session/request_permission` (allow once, always allow for this session — the same tool
        asked for the same reason —, or reject). Rejected, dismissed, unanswered within the ask
        timeout, or a client that cannot ask: denied, saying which."""
        asked = verdict.reason or "the tool policy asks for approval"
        key = (check.tool_name, asked)
        if key in self._always:
            return ToolVerdict("allow", "the user always allows it in this session")
        params = {
            "sessionId": self.session_id,
            "toolCall": UpdateMapper.permission_call(
                check.call_id, check.tool_name, dict(check.arguments), asked
            ),
            "options": [
                {"optionId": _ALLOW, "name": "Allow once", "kind": "allow_once"},
                {"optionId": _ALWAYS, "name": "Always allow in this session", "kind": "allow_always"},
                {"optionId": _REJECT, "name": "Reject", "kind": "reject_once"},
            ],
        }
        timeout = self.server.ask_timeout
        try:
            answer = await self.server.wire.request("session/request_permission", params, timeout=timeout)
        except TimeoutError:
            return ToolVerdict("deny", texts.approval_unanswered(asked, timeout))
        except RpcError as exc:
            return ToolVerdict("deny", texts.approval_failed(asked, exc.message))
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        chosen = outcome.get("optionId") if isinstance(outcome, dict) else None
        if chosen == _ALWAYS:
            self._always.add(key)
        if chosen in (_ALLOW, _ALWAYS):
            return ToolVerdict("allow", "the user allowed it in the editor")
        if chosen == _REJECT:
            return ToolVerdict("deny", texts.approval_rejected(asked))
        return ToolVerdict("deny", texts.approval_cancelled(asked))

    # --- replay ------------------------------------------------------------------------------------------

    def replay(self, *, again: bool = False) -> None:
        """Send the session's history as updates (`session/load`), then what arrived since.

        `again`: the client loads a session this server has open; it gets the whole history anew."""
        if again:
            self.mapper = UpdateMapper()
            self._shown = 0
        self.live = True
        self.send(UpdateMapper.commands_update())
        items = {item.entry_id: index for index, item in enumerate(self.log.refresh())}
        for entry in list(self.launched.session.entries):
            index = items.get(entry.id)
            if index is not None:
                item = self.log.at(index)
                if item is not None and index == self._shown:
                    if item.kind != "ask":
                        self.send(self.mapper.item(item))
                    self._shown += 1
            elif isinstance(entry, MessageEntry):
                for update in self.mapper.replay_message(entry.message):
                    self.send(update)
            elif isinstance(entry, CustomMessageEntry):
                continue
        last = self.log.at(self._shown - 1) if self._shown else None
        if last is not None and self.saved_cursor() != last.entry_id and not self.server.wire.closed:
            self._advance_cursor(last)
        # Questions still open are asked again.
        for index in range(self._shown):
            asked = self.log.at(index)
            if asked is not None and asked.kind == "ask":
                self._ask(asked)
        self.drain()

    # --- a prompt turn -----------------------------------------------------------------------------------

    async def prompt(self, text: str) -> str:
        command = text.strip().split()
        if command and command[0] == "/agents":
            self.send(self.mapper.message_chunk(self.agents_text()))
            return "end_turn"
        agent = self.launched.agent
        if command and command[0] == "/merge":
            # a turn of its own, so no prompt runs beside it, and after the lead's own turn (a wake
            # turn's tools may be writing the files it merges)
            merged = await self._as_turn(self._merge_when_idle(command[1:]))
            if merged is None:
                return "cancelled"
            self.send(self.mapper.message_chunk(merged))
            return "end_turn"
        await self._as_turn(agent.prompt_when_idle(text))
        self.drain()
        if self.cancelled:
            return "cancelled"
        last = next((m for m in reversed(agent.messages) if isinstance(m, AssistantMessage)), None)
        if last is not None and last.stop_reason == "aborted":
            return "cancelled"
        if last is not None and last.stop_reason == "length":
            return "max_tokens"
        return "end_turn"

    def agents_text(self) -> str:
        """`/agents`: the lead's agents and their state, one line each (no model turn)."""
        agents = self.launched.agents
        if agents is None:
            return "This lead has no agent surfaces."
        lines = []
        for view in agents.views():
            generation = view.generation
            ask = " — asks: " + view.pending_ask.question if view.pending_ask is not None else ""
            lines.append(f"- {generation.label} ({generation.definition}): {view.state}{ask}")
        host = self.launched.host
        if host is not None and host.has_teams:
            import time

            for row in agents.team_rows(agents.team_snapshot(), now_ms=int(time.time() * 1000)):
                lines.append(f"- {row.name} ({row.tier}): {row.status or 'queued'}")
        return "\n".join(lines) if lines else "No agents."

    async def _as_turn(self, work: Coroutine[Any, Any, _T]) -> _T | None:
        """Run `work` as this session's prompt turn (`session/cancel` cancels it; another prompt is
        refused meanwhile); `None` when it was cancelled."""
        self.cancelled = False
        turn: asyncio.Task[_T] = asyncio.ensure_future(work)
        self.turn = turn
        try:
            return await turn
        except asyncio.CancelledError:
            if not self.cancelled:
                raise
            return None
        finally:
            self.turn = None

    async def _merge_when_idle(self, arguments: list[str]) -> str:
        await self.launched.agent.wait_for_idle()
        return await self.merge_text(arguments)

    async def merge_text(self, arguments: list[str]) -> str:
        """`/merge <agent> [--discard]`: merge an isolated writer's branch into the working tree, or
        drop it, as `corral merge` does (no model turn)."""
        discard = "--discard" in arguments
        names = [argument for argument in arguments if argument != "--discard"]
        if len(names) != 1 or any(argument.startswith("-") for argument in names):
            return "Usage: /merge <agent> [--discard] (the agent's label, name or run id)."
        agents = self.launched.agents
        if agents is None:
            return "This lead has no agent surfaces, so no agent has a branch to merge."
        try:
            outcome = await agents.merge(names[0], discard=discard)
        except CorralError as exc:
            return f"merge failed: {exc}"
        return outcome.message + "".join(f"\n  {path}" for path in outcome.paths)

    async def cancel(self) -> None:
        self.cancelled = True
        if self.turn is not None:
            self.turn.cancel()
        await self.launched.agent.abort()

    async def aclose(self) -> None:
        self.live = False
        self.launched.agent.set_tool_approver(None)
        for unsubscribe in self._children.values():
            unsubscribe()
        if self._unsubscribe is not None:
            self._unsubscribe()
        try:
            await self.launched.aclose()
        finally:
            self.launched.session.close()
