"""`AcpAgentSession`: an agent behind the Agent Client Protocol, driven like corral's own agent.

It is an `AgentSession` whose runs are ACP turns: the prompt, steering and follow-up queues, `abort`,
idleness, events and the session file are the base class's; a run sends the queued messages as
one `session/prompt` to the agent process (started on the first run: `initialize`, then
`session/new` in the agent's cwd) instead of requesting a model. The agent's `session/update`s
become the run's messages in corral's (Pi-compatible) session file:

* message chunks and thought chunks → an assistant message's text and thinking;
* a tool call → a `toolCall` part of the assistant message it follows, and, once the agent reports
  it `completed` or `failed`, its `toolResult` (a call the turn left open gets an error result, so
  every call in the file has one, as in corral's own transcripts);
* a plan → a `corral-acp-plan` custom entry; usage → the final message's usage.

The turn's final answer is its last assistant message (the text after its last tool call), which
the managed child stores and delivers like any agent's. `abort` sends `session/cancel`, answers an
open permission request `cancelled` and waits (bounded) for the agent's `cancelled` stop. The agent
process lives until `close`, which ends its whole process tree.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral._version import __version__
from corral.agent import (
    AgentSession,
    AgentStartEvent,
    GuardVerdict,
    RequestEstimate,
    RunOutcome,
    ToolCheck,
    ToolExecutionEndEvent,
    ToolExecutionResult,
    ToolExecutionStartEvent,
    ToolVerdict,
    TurnEndEvent,
)
from corral.llm import (
    AgentMessage,
    AssistantMessage,
    Cost,
    CustomMessage,
    LlmContext,
    Model,
    ModelInfo,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
)
from corral.session import CustomEntry, MessageEntry

from ._commands import AcpCommand
from ._config import SessionConfig, config_choices
from ._files import FileAccess
from ._mcp import McpServerSpec, session_servers
from ._permissions import PermissionAsker, PermissionOption, PermissionRequest, file_request
from ._rpc import AcpConnection, AcpError
from ._texts import denied_call, file_question, refused_file, seeded_prompt, transcript_seed
from ._tools import PolicyCall, file_call, tool_calls

if TYPE_CHECKING:
    from corral.llm import AssistantMessageEvent
    from corral.session import SessionManager
    from corral.settings import Settings

__all__ = [
    "PLAN_ENTRY",
    "PROTOCOL_VERSION",
    "SESSION_ENTRY",
    "AcpAgentSession",
    "AcpModel",
]

PROTOCOL_VERSION = 1
"""The ACP version corral speaks (`initialize`'s `protocolVersion`)."""

PLAN_ENTRY = "corral-acp-plan"
"""The custom entry an agent's plan is recorded as (`{"entries": [...]}` as the agent sent it)."""

SESSION_ENTRY = "corral-acp-session"
"""The custom entry that keeps the agent's id for the session (`{"sessionId": …, "how": "new" |
"loaded" | "seeded"}`), appended each time the agent's session is ready: a `continue` loads the last
one with `session/load` where the agent offers it."""

_log = logging.getLogger("corral.harness.acp")

_CANCEL_GRACE_S = 10.0
"""How long an aborted turn waits for the agent's answer to `session/cancel`."""

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "max_tokens": "length",
    "max_turn_requests": "length",
    "refusal": "error",
    "cancelled": "aborted",
}


class AcpModel(Model):
    """The model line of an ACP agent's session (`acp/<name>`): the agent runs its own model, so
    corral never requests this one."""

    def __init__(self, name: str) -> None:
        super().__init__(
            ModelInfo("acp", name, "acp", name=f"ACP agent {name}", context_window=0, max_tokens=0)
        )

    async def stream(
        self, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """Never called: an ACP agent's runs are its own turns."""
        raise RuntimeError("an ACP agent runs its own model; corral does not request one")
        yield  # pragma: no cover - makes this an async generator


def _text_of(message: AgentMessage) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") for block in content if isinstance(block, TextContent))


def _content_text(items: object) -> str:
    """The text of a tool call's `content` (text blocks, diffs and terminals in brief)."""
    parts: list[str] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "content":
            block = item.get("content")
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        elif kind == "diff":
            parts.append(f"diff {item.get('path', '')}:\n{item.get('newText', '')}")
        elif kind == "terminal":
            parts.append(f"terminal {item.get('terminalId', '')}")
    return "\n".join(parts)


class _ToolCallState:
    def __init__(self, call_id: str, fields: Mapping[str, Any]) -> None:
        self.call_id = call_id
        self.title = ""
        self.kind = "other"
        self.raw_input: dict[str, Any] = {}
        self.status = "pending"
        self.content: object = None
        self.raw_output: object = None
        self.locations: object = None
        self.note = ""
        """What corral's policy did with the call (a denial's reason), shown before its result."""
        self.ended = False
        self.merge(fields)

    def merge(self, fields: Mapping[str, Any]) -> None:
        if isinstance(fields.get("title"), str):
            self.title = fields["title"]
        if isinstance(fields.get("kind"), str):
            self.kind = fields["kind"]
        if isinstance(fields.get("rawInput"), dict):
            self.raw_input = dict(fields["rawInput"])
        if isinstance(fields.get("status"), str):
            self.status = fields["status"]
        if "content" in fields:
            self.content = fields["content"]
        if "rawOutput" in fields:
            self.raw_output = fields["rawOutput"]
        if isinstance(fields.get("locations"), list):
            self.locations = fields["locations"]

    @property
    def done(self) -> bool:
        return self.status in ("completed", "failed")

    def tool_call(self) -> ToolCall:
        arguments = dict(self.raw_input)
        if self.title and "title" not in arguments:
            arguments["title"] = self.title
        return ToolCall(id=self.call_id, name=self.kind, arguments=arguments)

    def result_text(self) -> str:
        text = _content_text(self.content)
        if not text and self.raw_output is not None:
            text = (
                self.raw_output
                if isinstance(self.raw_output, str)
                else json.dumps(self.raw_output, ensure_ascii=False)
            )
        text = text or f"({self.status})"
        return f"{self.note}\n{text}" if self.note else text


class _Turn:
    """One ACP turn's updates, turned into the run's messages as they come."""

    def __init__(self, agent: AcpAgentSession, added: list[AgentMessage]) -> None:
        self.agent = agent
        self.added = added
        self.parts: list[TextContent | ThinkingContent | ToolCall] = []
        self.calls: dict[str, _ToolCallState] = {}
        self.results: list[ToolResultMessage] = []
        self.usage: Usage | None = None
        self.session_cost: float | None = None
        """The session's cost so far in USD, as the agent's last `usage_update` said (cumulative)."""
        self.approved: set[str] = set()
        """Files (real paths) a permission request of this turn was allowed to touch: the agent's file
        requests for them are not asked about again."""

    def update(self, update: Mapping[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            block = update.get("content")
            if not isinstance(block, dict) or block.get("type") != "text":
                return
            if self.calls:
                self.flush("toolUse")  # the agent went on after its tool calls: a new message
            text = str(block.get("text", ""))
            last = self.parts[-1] if self.parts else None
            if kind == "agent_message_chunk":
                if isinstance(last, TextContent):
                    last.text += text
                else:
                    self.parts.append(TextContent(text=text))
            elif isinstance(last, ThinkingContent):
                last.thinking += text
            else:
                self.parts.append(ThinkingContent(thinking=text))
        elif kind == "tool_call":
            call_id = str(update.get("toolCallId") or f"acp-call-{len(self.calls) + 1}")
            state = self.calls.get(call_id)
            if state is None:
                state = _ToolCallState(call_id, update)
                self.calls[call_id] = state
                self.parts.append(state.tool_call())
                self.agent._tool_started(state)
            else:
                state.merge(update)
            self._maybe_done(state)
        elif kind == "tool_call_update":
            found = self.calls.get(str(update.get("toolCallId")))
            if found is not None:
                found.merge(update)
                self._maybe_done(found)
        elif kind == "plan":
            entries = update.get("entries")
            self.agent.session.append_custom(
                PLAN_ENTRY, {"entries": entries if isinstance(entries, list) else []}
            )
        elif kind == "usage_update":
            used = update.get("used")
            if isinstance(used, int):
                self.usage = Usage(total_tokens=used)
            cost = update.get("cost")
            if isinstance(cost, dict) and cost.get("currency") == "USD":
                amount = cost.get("amount")
                if isinstance(amount, int | float):
                    self.session_cost = float(amount)

    def _maybe_done(self, state: _ToolCallState) -> None:
        if state.done and not state.ended:
            state.ended = True
            self.agent._tool_ended(state)

    def flush(
        self, stop_reason: StopReason, error_message: str | None = None, *, final: bool = False
    ) -> AssistantMessage | None:
        """End the message so far (and its tool calls' results); `None` when there is none. The
        turn's `final` message carries its usage."""
        if not self.parts and not self.calls:
            return None
        message = self.agent._reply(list(self.parts), stop_reason, error_message)
        if final and not self.calls and self.usage is not None:
            message.usage = self.usage
        self.parts = []
        self.agent._add_message(message, self.added)
        for state in self.calls.values():
            if not state.done:
                state.status = "failed"
                state.content = [
                    {
                        "type": "content",
                        "content": {
                            "type": "text",
                            "text": "Operation aborted"
                            if stop_reason == "aborted"
                            else "(no result reported before the agent went on)",
                        },
                    }
                ]
                self._maybe_done(state)
            result = ToolResultMessage(
                tool_call_id=state.call_id,
                tool_name=state.kind,
                content=[TextContent(text=state.result_text())],
                is_error=state.status == "failed",
            )
            self.results.append(result)
            self.agent._add_message(result, self.added)
        self.calls = {}
        return message


def _selected(choice: PermissionOption | None) -> dict[str, object]:
    """A permission request's answer: the option chosen, or `cancelled` when there is none."""
    if choice is None:
        return {"outcome": {"outcome": "cancelled"}}
    return {"outcome": {"outcome": "selected", "optionId": choice.option_id}}


class AcpAgentSession(AgentSession):
    """An ACP agent process as an agent session (see the module docstring).

    Args:
        command: How to start the agent.
        session: The session file its turns are recorded in.
        cwd: The agent's working directory (`session/new`'s `cwd`).
        settings: corral's settings (queue modes); compaction and retries are the agent's own.
        agent_name: The managed agent's label.
        permissions: Who answers its permission requests; `None` rejects them.
        env: Its environment (default: corral's).
        stderr_path: A file for its stderr (default: discarded).
        on_session: Called with `new`, `loaded` or `seeded` once the agent's session is ready,
            before the first prompt is sent (the host's fault point).
        config: The definition's model and thinking level, set as the agent's session config
            options where it offers them (`_config.py`).
        writable: Whether the agent's `fs/write_text_file` requests are answered (`False`: refused,
            and not offered in `initialize`); its reads are, within `cwd` (`_files.py`).
        mcp_servers: The MCP servers the agent is given in `session/new` and `session/load`
            (`_mcp.py`).
        mcp_withheld: Servers its grant named that it is not given, with why (recorded with the
            session, `mcpWithheld`, beside those its `initialize` answer cannot take).

    The agent's tool gate (`set_tool_gate`: the user's permission rules and PreToolUse hooks, as
    every agent of its place in the tree gets) judges its permission requests and file requests
    before anyone is asked: a denial rejects the request, an allow by a rule or a hook approves it,
    and the rest is asked as before (`_tools.py` maps ACP's tool calls to the tools rules name).
    """

    def __init__(
        self,
        *,
        command: AcpCommand,
        session: SessionManager,
        cwd: Path,
        settings: Settings | None = None,
        agent_name: str | None = None,
        permissions: PermissionAsker | None = None,
        env: Mapping[str, str] | None = None,
        stderr_path: Path | None = None,
        on_session: Callable[[str], None] | None = None,
        config: SessionConfig | None = None,
        writable: bool = True,
        mcp_servers: Sequence[McpServerSpec] = (),
        mcp_withheld: Mapping[str, str] | None = None,
    ) -> None:
        if settings is not None:
            settings = settings.model_copy(
                update={"compaction": settings.compaction.model_copy(update={"enabled": False})}
            )
        super().__init__(
            session=session,
            model=AcpModel(command.name),
            thinking_level="off",
            tools=[],
            cwd=cwd,
            settings=settings,
            system_prompt="",
            agent_name=agent_name,
        )
        if settings is None:
            self.set_auto_compaction(False)
        self.command = command
        """How the agent is started."""
        self.permissions = permissions
        """Who answers its permission requests (`None`: they are rejected)."""
        self._env = env
        self._stderr_path = stderr_path
        self._conn: AcpConnection | None = None
        self._acp_session_id: str | None = None
        self._turn: _Turn | None = None
        self._on_session = on_session
        self.config = config or SessionConfig()
        """The definition's model and thinking level for the agent's session."""
        self.files = FileAccess(cwd, writable=writable)
        """Answers the agent's file requests, within its cwd."""
        self.mcp_servers = tuple(mcp_servers)
        """The MCP servers it is given (those its `initialize` answer cannot take are withheld)."""
        self._mcp_withheld = dict(mcp_withheld or {})
        self._prior = list(self.messages)
        """The session's messages before this agent started (a `continue`): the seed of a new ACP
        session when the agent cannot load its earlier one."""
        self._seed: str | None = None
        self._load_refused: str | None = None
        self._timed_out = False
        self._session_cost: float | None = None
        self.metered: bool | None = None
        """Whether the agent reports its usage (`usage_update`, or usage in its prompt answers):
        `None` until a turn ended, `False` while none of its turns reported any (*unmetered*: its
        budget counts only time)."""
        self._asking: set[asyncio.Task[PermissionOption | None]] = set()
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The agent process's id, once started."""
        return None if self._conn is None else self._conn.pid

    @property
    def acp_session_id(self) -> str | None:
        """The agent's id for this session (`session/new`), once started."""
        return self._acp_session_id

    # --- the connection -------------------------------------------------------------------------

    async def _connection(self) -> tuple[AcpConnection, str]:
        if self._closed:
            raise AcpError("the ACP agent was closed")
        if self._conn is not None and self._acp_session_id is not None and self._conn.ended is None:
            return self._conn, self._acp_session_id
        if self._conn is not None:
            raise AcpError(f"the ACP agent is gone: {self._conn.ended or 'not started'}")
        self._acp_session_id = None
        try:
            self._conn = await AcpConnection.start(
                self.command.argv,
                cwd=self.cwd,
                env=self._env,
                stderr_path=self._stderr_path,
                handler=self._on_request,
                on_notification=self._on_notification,
            )
        except OSError as exc:
            raise AcpError(f"could not start {self.command.argv[0]!r}: {exc}") from None
        init = await self._conn.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {
                    "fs": {"readTextFile": True, "writeTextFile": self.files.writable},
                    "terminal": False,
                },
                "clientInfo": {"name": "corral", "version": __version__},
            },
        )
        version = init.get("protocolVersion") if isinstance(init, dict) else None
        if version != PROTOCOL_VERSION:
            raise AcpError(f"the agent speaks ACP version {version!r}; corral speaks {PROTOCOL_VERSION}")
        caps = init.get("agentCapabilities") if isinstance(init, dict) else None
        can_load = isinstance(caps, dict) and caps.get("loadSession") is True
        servers, withheld = session_servers(self.mcp_servers, caps)
        withheld = {**self._mcp_withheld, **withheld}
        saved = self.saved_session_id()
        session_id: object = None
        how = "new"
        if saved is not None and can_load:
            try:
                answer = await self._conn.request(
                    "session/load", {"sessionId": saved, "cwd": str(self.cwd), "mcpServers": servers}
                )
            except AcpError as exc:
                if self._conn.ended is not None:
                    raise
                self._load_refused = str(exc)  # the agent lost it: a new session, seeded below
            else:
                session_id, how = saved, "loaded"
                self._session_cost = self._recorded_cost(saved)
        if session_id is None:
            answer = await self._conn.request("session/new", {"cwd": str(self.cwd), "mcpServers": servers})
            session_id = answer.get("sessionId") if isinstance(answer, dict) else None
            if not isinstance(session_id, str) or not session_id:
                raise AcpError("the agent's session/new answer has no sessionId")
            if self._prior:
                how = "seeded"
                self._seed = transcript_seed(self._prior)
        assert isinstance(session_id, str)
        entry: dict[str, object] = {"sessionId": session_id, "how": how}
        if self._load_refused is not None:
            entry["loadRefused"] = self._load_refused
        if servers:
            entry["mcpServers"] = [str(server["name"]) for server in servers]
        if withheld:
            entry["mcpWithheld"] = withheld
        options = answer.get("configOptions") if isinstance(answer, dict) else None
        entry.update(await self._configure(self._conn, session_id, options))
        self.session.append_custom(SESSION_ENTRY, entry)
        self._acp_session_id = session_id
        if self._on_session is not None:
            self._on_session(how)
        return self._conn, session_id

    async def _configure(self, conn: AcpConnection, session_id: str, options: object) -> dict[str, object]:
        """Set the config options the definition's model and thinking level map to; what was set
        (`config`) and what could not be (`configUnmatched`), for the session entry."""
        choices, unmatched = config_choices(options, self.config)
        done: dict[str, str] = {}
        for choice in choices:
            try:
                await conn.request(
                    "session/set_config_option",
                    {"sessionId": session_id, "configId": choice.config_id, "value": choice.value},
                )
            except AcpError as exc:
                if conn.ended is not None:
                    raise
                unmatched[choice.config_id] = f"the agent refused {choice.value}: {exc}"
            else:
                done[choice.config_id] = choice.value
        out: dict[str, object] = {}
        if done:
            out["config"] = done
        if unmatched:
            out["configUnmatched"] = unmatched
        return out

    def _recorded_cost(self, session_id: str) -> float:
        """What the turns of the agent's session `session_id` cost so far, as the session file
        recorded them: the baseline of its cumulative cost once loaded again."""
        total, counting = 0.0, False
        for entry in self.session.entries:
            if isinstance(entry, CustomEntry) and entry.custom_type == SESSION_ENTRY:
                data = entry.data if isinstance(entry.data, dict) else {}
                counting = data.get("sessionId") == session_id
            elif counting and isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
                total += entry.message.usage.cost.total
        return total

    def saved_session_id(self) -> str | None:
        """The agent's id of this session's last ACP session (`SESSION_ENTRY`), or `None`."""
        for entry in reversed(self.session.entries):
            if isinstance(entry, CustomEntry) and entry.custom_type == SESSION_ENTRY:
                data = entry.data if isinstance(entry.data, dict) else {}
                found = data.get("sessionId")
                return found if isinstance(found, str) and found else None
        return None

    def _forget_connection(self) -> None:
        """Drop a connection that did not finish starting (the next run starts the agent anew)."""
        if self._conn is not None and self._acp_session_id is None:
            self._conn.abandon()
            self._conn = None

    async def close(self) -> None:
        """End the agent's process tree (idempotent); later runs fail."""
        self._closed = True
        self._cancel_asks()
        if self._conn is not None:
            await self._conn.close()

    def kill(self) -> Awaitable[None] | None:
        """End the agent's process tree at once (SIGKILL, synchronous): for paths that cannot wait.
        Returns the reaping of the killed process (its pipes closed), for a caller that can await it."""
        self._closed = True
        self._cancel_asks()
        if self._conn is not None:
            return self._conn.abandon()
        return None

    def _on_notification(self, method: str, params: Mapping[str, Any]) -> None:
        if method != "session/update" or params.get("sessionId") != self._acp_session_id:
            return
        update = params.get("update")
        if self._turn is not None and isinstance(update, dict):
            self._turn.update(update)

    async def _on_request(self, method: str, params: Mapping[str, Any]) -> object:
        if method == "session/request_permission":
            return await self._permission(PermissionRequest.from_params(params), params)
        if method == "fs/read_text_file":
            await self._file_policy(method, params)
            return await asyncio.to_thread(self.files.read, params)
        if method == "fs/write_text_file":
            if self.files.writable:
                await self._file_policy(method, params)
            await asyncio.to_thread(self.files.write, params)
            return None
        if method.startswith("terminal/"):
            raise AcpError(
                f"Method not found: {method} (corral offers no terminal: its clientCapabilities.terminal "
                "is false)",
                code=-32601,
            )
        raise AcpError(f"Method not found: {method}", code=-32601)

    # --- the user's policy over the agent's requests ----------------------------------------------

    async def _judge(self, calls: Sequence[PolicyCall], call_id: str) -> tuple[str, ToolVerdict] | None:
        """What the agent's tool gate says of `calls` (one ACP tool call or file request): the first
        denial, else the first ask, else a default's answer, else the allow; with the tool it named.
        `None` without a gate (no rules, no hooks)."""
        gate = self.tool_gate
        if gate is None or not calls:
            return None
        judged: list[tuple[str, ToolVerdict]] = []
        for name, arguments in calls:
            check = ToolCheck(call_id, name, arguments, self.session.session_id, self.session.path, self.cwd)
            try:
                verdict = await gate.before_tool(check)
            except Exception as exc:  # a gate that fails denies (the policy could not be checked)
                _log.exception("tool gate failed on the ACP agent's %s request", name)
                verdict = ToolVerdict(
                    "deny", f"the tool policy could not be checked ({exc or type(exc).__name__})"
                )
            if verdict.decision == "deny":
                return name, verdict
            judged.append((name, verdict))
        asked = next((pair for pair in judged if pair[1].decision == "ask"), None)
        defaulted = next((pair for pair in judged if pair[1].by_default), None)
        return asked or defaulted or judged[0]

    def _call_fields(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The permission request's tool call, completed by what the turn's updates said of it."""
        call = params.get("toolCall")
        fields = dict(call) if isinstance(call, dict) else {}
        state = None if self._turn is None else self._turn.calls.get(str(fields.get("toolCallId")))
        if state is not None:
            known: dict[str, object] = {"kind": state.kind, "title": state.title, "rawInput": state.raw_input}
            if state.locations is not None:
                known["locations"] = state.locations
            for key, value in known.items():
                if fields.get(key) in (None, "", {}, []):
                    fields[key] = value
        return fields

    async def _permission(self, request: PermissionRequest, params: Mapping[str, Any]) -> object:
        fields = self._call_fields(params)
        raw = fields.get("rawInput")
        calls = tool_calls(
            str(fields.get("kind") or "other"),
            str(fields.get("title") or ""),
            raw if isinstance(raw, dict) else {},
            fields.get("locations"),
        )
        judged = await self._judge(calls, request.tool_call_id)
        choice: PermissionOption | None = None
        if judged is not None:
            name, verdict = judged
            if verdict.decision == "deny":
                self._note_call(fields, denied_call(name, verdict.reason))
                return _selected(request.rejection())
            if verdict.decision == "allow" and not verdict.by_default:
                choice = request.allow_once()  # allowed by a rule or a hook: nobody is asked
        asker = self.permissions
        if choice is None and asker is not None and request.options and self._turn is not None:
            cancelled, choice = await self._ask_owner(asker, request)
            if cancelled:
                return {"outcome": {"outcome": "cancelled"}}
        choice = choice or request.rejection()
        if choice is not None and choice.kind.startswith("allow") and self._turn is not None:
            self._turn.approved.update(
                os.path.realpath(str(args["path"]))
                for _, args in calls
                if isinstance(args.get("path"), str) and os.path.isabs(str(args["path"]))
            )
        return _selected(choice)

    async def _ask_owner(
        self, asker: PermissionAsker, request: PermissionRequest
    ) -> tuple[bool, PermissionOption | None]:
        """`(cancelled, the owner's choice)`: `None` when nobody could answer; `cancelled` when the
        question was cancelled (an abort, the time limit, close)."""
        task = asyncio.ensure_future(asker.ask(request))
        self._asking.add(task)
        try:
            await asyncio.wait((task,))
        finally:
            self._asking.discard(task)
        if task.cancelled():
            return True, None
        return False, task.result()

    def _note_call(self, fields: Mapping[str, Any], note: str) -> None:
        """Show `note` with the tool call's result in the transcript (the call is recorded if the
        agent asked about it before reporting it)."""
        turn = self._turn
        call_id = fields.get("toolCallId")
        if turn is None or not isinstance(call_id, str) or not call_id:
            return
        if call_id not in turn.calls:
            turn.update({**fields, "sessionUpdate": "tool_call", "status": "pending"})
        state = turn.calls.get(call_id)
        if state is not None:
            state.note = note

    async def _file_policy(self, method: str, params: Mapping[str, Any]) -> None:
        """Judge an `fs/*` request by the agent's tool gate: a denial raises the error the agent gets;
        an ask goes to the owner (unless a permission request of this turn already covered the file),
        and with nobody to answer, or a rejection, the request is refused.

        Raises:
            AcpError: The policy refuses the request.
        """
        call = file_call(method, params)
        judged = None if call is None else await self._judge([call], "")
        if call is None or judged is None:
            return
        name, verdict = judged
        path = str(call[1]["path"])
        if verdict.decision == "deny":
            raise AcpError(refused_file(name, path, verdict.reason), code=-32602)
        if verdict.decision != "ask":
            return
        turn = self._turn
        if turn is not None and os.path.isabs(path) and os.path.realpath(path) in turn.approved:
            return
        asker = self.permissions
        choice = None
        if asker is not None and turn is not None:
            _, choice = await self._ask_owner(asker, file_request(file_question(name, path, verdict.reason)))
        if choice is None or not choice.kind.startswith("allow"):
            reason = verdict.reason if choice is None else f"{verdict.reason}, and it was not approved"
            if choice is None:
                reason += ", and no one could approve it"
            raise AcpError(refused_file(name, path, reason), code=-32602)

    def _cancel_asks(self) -> None:
        for task in tuple(self._asking):
            task.cancel()

    # --- the run: one ACP turn per queued batch -------------------------------------------------

    def _decide_after_run(self, last: AssistantMessage | None) -> None:
        return None  # the agent retries and compacts on its own

    async def _run_turns(self, prompts: Sequence[AgentMessage]) -> RunOutcome:
        added: list[AgentMessage] = []
        self._emit(AgentStartEvent())
        self._turn_started()
        for message in prompts:
            self._add_message(message, added)
        text = "\n\n".join(_text_of(m) for m in prompts)
        estimate = RequestEstimate(self.model.info, 0, 0)  # the agent's own requests: unknown here
        verdict = self._ask_guard(estimate)
        if verdict.action in ("notice", "final"):
            self._add_message(
                CustomMessage(custom_type=GuardVerdict.NOTICE_TYPE, content=verdict.text, display=True), added
            )
        if verdict.action in ("stop", "final"):  # a limit is reached: no further turn of the agent's
            self._ending = True
            return self._end_run(added, None)
        if verdict.action == "notice":
            text = f"{text}\n\n{verdict.text}"
        turn = _Turn(self, added)
        self._turn = turn
        self._timed_out = False
        timer = None
        if verdict.time_left_ms is not None:
            timer = asyncio.get_running_loop().call_later(verdict.time_left_ms / 1000, self._time_up)
        try:
            stop, error = await self._prompt(text)
        finally:
            self._turn = None
            if timer is not None:
                timer.cancel()
        if self._timed_out:
            stop, error = "aborted", "The turn was cancelled: the budget's time limit was reached"
            self._ending = True
        if turn.usage is not None or turn.session_cost is not None:
            self.metered = True
        elif self.metered is None and stop not in ("error", "aborted"):
            self.metered = False
        turn.usage = self._turn_usage(turn)
        last = turn.flush(stop, error, final=True)
        if last is None or last.tool_calls:  # no text after the last tool call: an empty final answer
            last = self._reply([], stop, error)
            if turn.usage is not None:
                last.usage = turn.usage
            self._add_message(last, added)
        self._guard_spent(last, estimate)
        self._emit(TurnEndEvent(message=last, tool_results=turn.results))
        self._turn_finished(last)
        return self._end_run(added, last)

    def _turn_usage(self, turn: _Turn) -> Usage | None:
        """The turn's usage: its tokens, and its cost (the growth of the session's cost)."""
        if turn.session_cost is None:
            return turn.usage
        usage = turn.usage.model_copy() if turn.usage is not None else Usage()
        spent = max(0.0, turn.session_cost - (self._session_cost or 0.0))
        self._session_cost = turn.session_cost
        usage.cost = Cost(total=spent)
        return usage

    def _ask_guard(self, estimate: RequestEstimate) -> GuardVerdict:
        guard = self._request_guard
        if guard is None:
            return GuardVerdict("go")
        try:
            return guard.before_request(estimate)
        except Exception:
            _log.exception("request guard failed before an ACP turn")
            return GuardVerdict("go")

    def _guard_spent(self, last: AssistantMessage, estimate: RequestEstimate) -> None:
        guard = self._request_guard
        if guard is None:
            return
        try:
            guard.after_reply(last, estimate)
        except Exception:
            _log.exception("request guard failed after an ACP turn")

    def _time_up(self) -> None:
        """A time limit of the agent's budget was reached during its turn: the guard marks it (and
        tells the lead), and the turn is cancelled."""
        self._timed_out = True
        self._ask_guard(RequestEstimate(self.model.info, 0, 0))
        self._cancel_asks()  # a permission question still open is answered `cancelled`
        if self._conn is not None and self._acp_session_id is not None:
            self._conn.notify("session/cancel", {"sessionId": self._acp_session_id})

    async def _prompt(self, text: str) -> tuple[StopReason, str | None]:
        """Send the turn's prompt; its stop reason (and error message) once the agent answered."""
        connect = asyncio.ensure_future(self._connection())
        self._active.add(connect)  # abort() cancels a start that hangs (an agent that never answers)
        try:
            await asyncio.wait((connect,))
        except asyncio.CancelledError:
            connect.cancel()
            raise
        finally:
            self._active.discard(connect)
        if connect.cancelled():
            self._forget_connection()
            return "aborted", "Request was aborted"
        try:
            conn, session_id = connect.result()
        except AcpError as exc:
            self._forget_connection()
            return "error", f"The ACP agent could not start: {exc}"
        if self._aborting or self._timed_out:
            return "aborted", "Request was aborted"
        if self._seed is not None:  # the first prompt of a new session that continues an old one
            text, self._seed = seeded_prompt(self._seed, text), None
        answer = conn.request_future(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )
        waiter = asyncio.ensure_future(asyncio.shield(answer))
        self._active.add(waiter)
        try:
            await asyncio.wait((waiter,))
        except asyncio.CancelledError:
            conn.notify("session/cancel", {"sessionId": session_id})
            raise
        finally:
            self._active.discard(waiter)
        if waiter.cancelled():  # abort(): ask the agent to stop, and wait for its answer
            conn.notify("session/cancel", {"sessionId": session_id})
            self._cancel_asks()
            try:
                await asyncio.wait_for(asyncio.shield(answer), _CANCEL_GRACE_S)
            except (TimeoutError, AcpError):
                pass
            if not answer.done():
                answer.cancel()
            return "aborted", "Request was aborted"
        try:
            result = answer.result()
        except AcpError as exc:
            return "error", f"The ACP agent failed: {exc}"
        reason = result.get("stopReason") if isinstance(result, dict) else None
        stop = _STOP_REASONS.get(str(reason), "stop")
        if stop == "aborted":
            return "aborted", "The agent cancelled the turn"
        if stop == "error":
            return "error", f"The agent ended its turn: {reason}"
        usage = result.get("usage") if isinstance(result, dict) else None
        if isinstance(usage, dict) and self._turn is not None:
            self._turn.usage = Usage(
                input=int(usage.get("inputTokens") or 0),
                output=int(usage.get("outputTokens") or 0),
                cache_read=int(usage.get("cachedReadTokens") or 0),
                cache_write=int(usage.get("cachedWriteTokens") or 0),
                total_tokens=int(usage.get("totalTokens") or 0),
            )
        return stop, None

    def _reply(
        self, content: list[TextContent | ThinkingContent | ToolCall], stop: StopReason, error: str | None
    ) -> AssistantMessage:
        info = self.model.info
        has_calls = any(isinstance(part, ToolCall) for part in content)
        return AssistantMessage(
            content=list(content),
            api=info.api,
            provider=info.provider,
            model=info.id,
            stop_reason="toolUse" if has_calls and stop == "stop" else stop,
            error_message=error if stop in ("error", "aborted") else None,
        )

    def _tool_started(self, state: _ToolCallState) -> None:
        self._emit(
            ToolExecutionStartEvent(tool_call_id=state.call_id, tool_name=state.kind, args=state.raw_input)
        )

    def _tool_ended(self, state: _ToolCallState) -> None:
        self._emit(
            ToolExecutionEndEvent(
                tool_call_id=state.call_id,
                tool_name=state.kind,
                result=ToolExecutionResult(content=[TextContent(text=state.result_text())]),
                is_error=state.status == "failed",
            )
        )
