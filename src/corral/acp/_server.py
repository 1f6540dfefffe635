"""`corral acp`: the corral lead as an Agent Client Protocol agent, one lead per ACP session.

The editor starts `corral acp` and speaks JSON-RPC over its stdio (`_wire`). Each `session/new`
opens a lead session (`launch_session`, as `corral run` does: built-in tools and the surfaces, and
deliveries wake the lead); `session/load` reopens one by id, recovered as with `--continue`, and
replays its history. Everything the lead does, in a prompt's turn or in a wake turn a result started,
streams as `session/update`s (`_updates`).

Nothing lost at every boundary: what reached the lead (a result, a report) is in its session before
anything shows it; the server sends each such item once and then moves the lead session's cursor
(`corral-lead-cursor`, the entry `corral mcp`'s `wait` uses) past it, only once its line is written
to the client. A server killed in between leaves the cursor before the item, and `session/load`
replays the whole session, so the item is shown then, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral._version import __version__
from corral.agent import (
    AgentEndEvent,
    AgentEvent,
    AgentSettledEvent,
    MessageEndEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
)
from corral.errors import CorralError
from corral.lead import CURSOR_TYPE, ItemLog, Launched, LaunchOptions, LeadItem, launch_session
from corral.llm import AssistantMessage, CustomMessage, TextContent
from corral.orchestration.kernel import fault_point
from corral.session import CustomEntry, CustomMessageEntry, MessageEntry

from ._updates import Update, UpdateMapper
from ._wire import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    Incoming,
    RpcError,
    Wire,
    parse_line,
)

__all__ = ["PROTOCOL_VERSION", "AcpOptions", "AcpServer", "serve"]

PROTOCOL_VERSION = 1
ASK_TIMEOUT_ENV = "CORRAL_ACP_ASK_TIMEOUT"
"""Seconds a question waits for the editor's answer before it is rejected (default 600)."""
_ALLOW, _REJECT = "allow", "reject"
_REJECTED = (
    "No: the user rejected this through the editor (or did not answer in time); do not do it, "
    "and say so in your result."
)


@dataclass
class AcpOptions:
    """The `corral acp` flags (those of `corral run` that apply)."""

    cwd: Path
    """Where a session opens when the client gives no usable `cwd`."""
    model: str | None = None
    surfaces: list[str] | None = None
    session: str | None = None
    """`--session`: the first `session/new` reopens this lead session instead."""
    continue_recent: bool = False
    """`--continue`: the first `session/new` reopens its directory's newest session."""


@dataclass
class _Session:
    """One ACP session: one lead."""

    launched: Launched
    server: AcpServer
    mapper: UpdateMapper = field(default_factory=UpdateMapper)
    live: bool = False
    """The client knows the session: updates are sent (before that they are dropped; replay covers them)."""
    turn: asyncio.Task[None] | None = None
    cancelled: bool = False
    _log: ItemLog | None = None
    _shown: int = 0
    """Items of the log the client has been sent."""
    _unsubscribe: Callable[[], None] | None = None
    _children: dict[str, Callable[[], None]] = field(default_factory=dict)
    _asks: set[str] = field(default_factory=set)

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
        self._unsubscribe = self.launched.agent.subscribe(self._on_event)

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
                self._children[generation.run_id] = child.subscribe(self._child_listener(generation.label))

    def _child_listener(self, label: str) -> Callable[[AgentEvent], None]:
        return lambda event: self._on_child_event(label, event)

    def _on_child_event(self, label: str, event: object) -> None:
        if isinstance(event, ToolExecutionStartEvent):
            target = next((v for k, v in event.args.items() if k in ("path", "pattern", "command")), "")
            self.send(self.mapper.agent_progress(label, f"→ {event.tool_name} {str(target)[:100]}".rstrip()))
        elif isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            text = "".join(part.text for part in event.message.content if isinstance(part, TextContent))
            first = text.strip().splitlines()[0][:200] if text.strip() else ""
            self.send(self.mapper.agent_progress(label, first))

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
                agents.caller, ReplyParams(agent=item.agent, message="Yes." if allowed else _REJECTED)
            )

    # --- replay ------------------------------------------------------------------------------------------

    def replay(self) -> None:
        """Send the session's history as updates (`session/load`), then what arrived since."""
        self.live = True
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
        agent = self.launched.agent
        self.cancelled = False
        self.turn = asyncio.ensure_future(agent.prompt_when_idle(text))
        try:
            await self.turn
        except asyncio.CancelledError:
            if not self.cancelled:
                raise
        finally:
            self.turn = None
        self.drain()
        if self.cancelled:
            return "cancelled"
        last = next((m for m in reversed(agent.messages) if isinstance(m, AssistantMessage)), None)
        if last is not None and last.stop_reason == "aborted":
            return "cancelled"
        if last is not None and last.stop_reason == "length":
            return "max_tokens"
        return "end_turn"

    async def cancel(self) -> None:
        self.cancelled = True
        if self.turn is not None:
            self.turn.cancel()
        await self.launched.agent.abort()

    async def aclose(self) -> None:
        self.live = False
        for unsubscribe in self._children.values():
            unsubscribe()
        if self._unsubscribe is not None:
            self._unsubscribe()
        try:
            await self.launched.aclose()
        finally:
            self.launched.session.close()


class AcpServer:
    """Serves ACP on a `Wire` until the client closes its end."""

    def __init__(self, wire: Wire, options: AcpOptions) -> None:
        self.wire = wire
        self.options = options
        self.sessions: dict[str, _Session] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._first_new = True
        self._opening = asyncio.Lock()
        raw = os.environ.get(ASK_TIMEOUT_ENV, "")
        try:
            self.ask_timeout: float | None = float(raw) if raw else 600.0
        except ValueError:
            self.ask_timeout = 600.0

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def serve(self) -> None:
        """Read and answer lines until the input ends; then close every lead."""
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.wire.start_reading(queue)
        try:
            while (line := await queue.get()) is not None:
                if line.strip():
                    self.handle_line(line)
        finally:
            self.wire.input_ended()
            await self.aclose()

    def handle_line(self, line: bytes) -> None:
        """One line from the client: answer it (requests run as tasks, so `session/cancel` gets through)."""
        try:
            message = parse_line(line)
        except RpcError as exc:
            ident = exc.data.get("id") if isinstance(exc.data, dict) else None
            exc.data = None
            self.wire.fail(ident, exc)
            return
        if message.method is None:
            self.wire.answer(message)
            return
        self.spawn(self._dispatch(message))

    async def _dispatch(self, message: Incoming) -> None:
        handler = _METHODS.get(message.method or "")
        try:
            if handler is None:
                raise RpcError(METHOD_NOT_FOUND, f"unknown method {message.method!r}")
            result = await handler(self, message.params)
        except RpcError as exc:
            if message.has_id:
                self.wire.fail(message.id, exc)
            return
        except CorralError as exc:
            if message.has_id:
                self.wire.fail(message.id, RpcError(INTERNAL_ERROR, str(exc)))
            return
        except Exception as exc:
            print(f"corral acp: {message.method} failed: {exc!r}", file=sys.stderr)
            if message.has_id:
                self.wire.fail(message.id, RpcError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
            return
        if message.has_id:
            self.wire.respond(message.id, result)
            if message.method == "session/new":
                session = self.sessions.get(str(result["sessionId"])) if result is not None else None
                if session is not None and not session.live:
                    session.replay()

    # --- methods -------------------------------------------------------------------------------------------

    async def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        _int_param(params, "protocolVersion")
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": False, "sse": False},
            },
            "agentInfo": {"name": "corral", "title": "corral", "version": __version__},
            "authMethods": [],
        }

    async def new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        cwd = self._cwd(params)
        _list_param(params, "mcpServers")
        session, resumed = None, False
        if self._first_new:
            self._first_new = False
            if self.options.session is not None or self.options.continue_recent:
                session, resumed = self.options.session, True
        opened = await self._open(
            LaunchOptions(
                cwd,
                model=self.options.model,
                session=session,
                continue_recent=resumed and session is None,
                surfaces=self.options.surfaces,
            )
        )
        return {"sessionId": opened.session_id}

    async def load_session(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = _str_param(params, "sessionId")
        cwd = self._cwd(params)
        _list_param(params, "mcpServers")
        known = self.sessions.get(session_id)
        if known is not None:
            known.mapper = UpdateMapper()
            known._shown = 0
            known.replay()
            return {}
        try:
            opened = await self._open(
                LaunchOptions(
                    cwd, model=self.options.model, session=session_id, surfaces=self.options.surfaces
                )
            )
        except CorralError as exc:
            raise RpcError(RESOURCE_NOT_FOUND, f"no lead session {session_id!r}: {exc}") from None
        opened.replay()
        return {}

    async def _open(self, options: LaunchOptions) -> _Session:
        async with self._opening:
            launched = launch_session(options)
            session = _Session(launched, self)
            try:
                await launched.attach_host()
            except BaseException:
                await session.aclose()
                raise
            known = self.sessions.get(session.session_id)
            if known is not None:  # the same lead session again: keep the open one
                await session.aclose()
                return known
            session.subscribe()
            self.sessions[session.session_id] = session
            return session

    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self._session(params)
        blocks = _list_param(params, "prompt")
        text = _prompt_text(blocks)
        if not text.strip():
            raise RpcError(
                INVALID_PARAMS, "session/prompt: the prompt has no text; send a text content block"
            )
        if session.turn is not None:
            raise RpcError(
                INVALID_PARAMS, "session/prompt: a prompt turn is running; cancel it or wait for its answer"
            )
        return {"stopReason": await session.prompt(text)}

    async def cancel(self, params: dict[str, Any]) -> None:
        session = self._session(params)
        await session.cancel()

    async def set_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        self._session(params)
        mode = _str_param(params, "modeId")
        raise RpcError(INVALID_PARAMS, f"session/set_mode: no mode {mode!r}; corral offers no modes yet")

    # --- helpers ------------------------------------------------------------------------------------------

    def _session(self, params: dict[str, Any]) -> _Session:
        session_id = _str_param(params, "sessionId")
        session = self.sessions.get(session_id)
        if session is None:
            raise RpcError(
                RESOURCE_NOT_FOUND,
                f"no open session {session_id!r}: open one with session/new or session/load",
            )
        return session

    def _cwd(self, params: dict[str, Any]) -> Path:
        raw = params.get("cwd")
        if raw is None:
            return self.options.cwd
        if not isinstance(raw, str) or not Path(raw).is_absolute() or not Path(raw).is_dir():
            raise RpcError(INVALID_PARAMS, f"cwd {raw!r}: pass the absolute path of an existing directory")
        return Path(raw)

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        for session in list(self.sessions.values()):
            with contextlib.suppress(Exception):
                await session.aclose()
        self.sessions.clear()


def _str_param(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"{name!r} must be a non-empty string")
    return value


def _int_param(params: dict[str, Any], name: str) -> int:
    value = params.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise RpcError(INVALID_PARAMS, f"{name!r} must be an integer (ACP's is 1)")
    return value


def _list_param(params: dict[str, Any], name: str) -> list[Any]:
    value = params.get(name, [])
    if not isinstance(value, list):
        raise RpcError(INVALID_PARAMS, f"{name!r} must be an array")
    return value


def _prompt_text(blocks: list[Any]) -> str:
    """The prompt's text: text blocks, embedded text resources, and resource links as `@uri`."""
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            raise RpcError(INVALID_PARAMS, "session/prompt: each prompt item is a content block object")
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            if isinstance(resource.get("text"), str):
                parts.append(f"\n{resource.get('uri', '')}:\n{resource['text']}")
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            parts.append(f"@{block['uri']}")
    return "".join(parts)


_METHODS = {
    "initialize": AcpServer.initialize,
    "session/new": AcpServer.new_session,
    "session/load": AcpServer.load_session,
    "session/prompt": AcpServer.prompt,
    "session/cancel": AcpServer.cancel,
    "session/set_mode": AcpServer.set_mode,
}


def serve(options: AcpOptions) -> int:
    """Run `corral acp` on this process's stdio until the client closes it; the exit code.

    The protocol gets a descriptor of its own (a copy of stdout); stdout itself then points at
    stderr, so nothing else the process prints can corrupt the stream.
    """
    out = os.dup(1)
    os.dup2(2, 1)
    wire = Wire(0, out)
    try:
        asyncio.run(AcpServer(wire, options).serve())
    except KeyboardInterrupt:
        return 130
    finally:
        with contextlib.suppress(OSError):
            os.close(out)
    return 0
