"""`corral run --mode rpc`: Pi's RPC protocol, JSON lines on stdin and stdout.

Commands and responses carry Pi's shapes (`@mariozechner/pi-coding-agent`
0.73 and `@earendil-works/pi-coding-agent` 1.x, `docs/rpc.md`), so Pi's own
`RpcClient` can drive corral. A response is
`{"type": "response", "command", "success", "data" | "error", "id"}`; events
are the agent's, one per line, without an `id`.

Hostile input never ends the process: every line is framed, decoded and parsed
defensively (invalid UTF-8, nesting deeper than the parser allows, integers
past Python's digit limit, `NaN`/`Infinity`), and an `id` must be a string or
a finite number before it is echoed. Input is read from the descriptor with
`os.read` in a thread, never through `sys.stdin`'s buffered reader, so
shutdown with the reader still blocked cannot trip the interpreter's
buffered-I/O lock.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from corral._jsonlines import read_lines, reject_constant, valid_id
from corral.agent import AgentBusyError, AgentSession
from corral.agent.tools import BashTool, UserCommandResult, run_user_command
from corral.errors import CorralError
from corral.llm import (
    THINKING_LEVELS,
    BashExecutionMessage,
    ImageContent,
    ModelInfo,
    ModelPrices,
    TextContent,
    UserMessage,
    available_thinking_levels,
    listed_prices,
    to_json_dict,
)
from corral.session import MessageEntry, SessionManager, SessionTreeNode
from corral.session import clone as clone_session
from corral.session import fork as fork_session

from ._launch import Launched
from ._modes import LineWriter, event_json

__all__ = ["model_json", "parse_command", "run_rpc_mode", "tree_json"]

_QUEUE_MODES = ("all", "one-at-a-time")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""After `json.loads` joined every valid pair, any surrogate left in a string is a lone one."""
_CONCURRENT = frozenset({"compact"})
"""Commands answered when they finish, while later lines are already being handled."""
_EXIT_CODES = {signal.SIGTERM: 143, signal.SIGHUP: 129, signal.SIGINT: 130}
"""Pi's exit codes for SIGTERM and SIGHUP in RPC mode (128 + the signal); SIGINT alike."""


class RpcInputError(CorralError):
    """A line or a command field that corral cannot accept."""


# --- input -------------------------------------------------------------------------------------------


def parse_command(raw: bytes) -> dict[str, Any]:
    """One input line as a command object.

    LF framing: one trailing CR is stripped; U+2028/2029 are ordinary characters.
    Lone surrogates written as `\\uD800` escapes become U+FFFD.

    Raises:
        RpcInputError: the line is not UTF-8, not JSON that Python can hold (too deep, an integer
            past the digit limit, `NaN`/`Infinity`), not an object with a string `type`, or its `id`
            is not a string or a finite number.
    """
    try:
        text = raw.removesuffix(b"\r").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RpcInputError(
            f"Failed to parse command: the line is not valid UTF-8 (byte {exc.start}); send UTF-8 JSON"
        ) from None
    try:
        command = json.loads(text, parse_constant=reject_constant)
        encoded = json.dumps(command, ensure_ascii=False)
    except RecursionError:
        raise RpcInputError("Failed to parse command: the JSON is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, the integer digit limit, NaN/Infinity
        raise RpcInputError(f"Failed to parse command: {exc}") from None
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError:
        command = json.loads(_LONE_SURROGATE.sub("\ufffd", encoded))
    if not isinstance(command, dict) or not isinstance(command.get("type"), str):
        raise RpcInputError('a command is a JSON object with a string "type"')
    if "id" in command and command["id"] is not None and not valid_id(command["id"]):
        raise RpcInputError('"id" must be a string or a finite number')
    if isinstance(command.get("id"), float) and command["id"].is_integer() and abs(command["id"]) < 2**53:
        command["id"] = int(command["id"])
    return command


# --- shapes ------------------------------------------------------------------------------------------


_PI_API_NAMES = {"openai-chat": "openai-completions", "anthropic": "anthropic-messages"}
"""corral's API kinds by Pi's names (`openai-responses` is the same; `scripted` has no Pi counterpart)."""


def model_json(info: ModelInfo, base_url: str | None) -> dict[str, Any]:
    """A model in Pi's `Model` shape (`id`, `name`, `api` by Pi's name, `provider`, `baseUrl`, …).

    `cost` holds the configured prices or the catalogue's base rates, zeros when neither is known.
    """
    prices = listed_prices(info, endpoint=base_url) or ModelPrices()
    return {
        "id": info.id,
        "name": info.name or info.id,
        "api": _PI_API_NAMES.get(info.api, info.api),
        "provider": info.provider,
        "baseUrl": base_url or "",
        "reasoning": info.reasoning,
        "input": list(info.input),
        "cost": {
            "input": prices.input,
            "output": prices.output,
            "cacheRead": prices.cache_read,
            "cacheWrite": prices.cache_write,
        },
        "contextWindow": info.context_window,
        "maxTokens": info.max_tokens,
    }


def tree_json(roots: list[SessionTreeNode]) -> str:
    """Pi's `SessionTreeNode[]` (`{entry, children, label?}`) as JSON text, built without recursion.

    ASCII-escaped, so any text the session holds (a lone surrogate included) stays valid.
    """
    out = ["["]
    frames: list[tuple[Iterator[SessionTreeNode], list[bool]]] = [(iter(roots), [True])]
    while frames:
        siblings, first = frames[-1]
        node = next(siblings, None)
        if node is None:
            frames.pop()
            out.append("]}" if frames else "]")
            continue
        if not first[0]:
            out.append(",")
        first[0] = False
        head: dict[str, Any] = {"entry": to_json_dict(node.entry)}
        if node.label is not None:
            head["label"] = node.label
        out.append(json.dumps(head)[:-1] + ', "children": [')
        frames.append((iter(node.children), [True]))
    return "".join(out)


# --- the server --------------------------------------------------------------------------------------

Handler = Callable[[dict[str, Any], Any], Awaitable[None]]


class RpcServer:
    """Answers commands for the agent of `launched` (which session commands may replace)."""

    def __init__(self, launched: Launched, writer: LineWriter) -> None:
        self.launched = launched
        self.writer = writer
        self.runs: set[asyncio.Task[None]] = set()
        self._unsubscribe: Callable[[], None] | None = None
        self._bash_tool = BashTool(launched.cwd, shell_path=launched.settings.shell_path)
        self._bash: asyncio.Task[Any] | None = None
        self._subscribe()

    @property
    def agent(self) -> AgentSession:
        return self.launched.agent

    def _subscribe(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._unsubscribe = self.agent.subscribe(lambda event: self.writer.write(event_json(event)))

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._bash is not None:
            self._bash.cancel()

    def respond(self, command: str, request_id: Any, *, data: Any = None, error: str | None = None) -> None:
        response: dict[str, Any] = {"type": "response", "command": command, "success": error is None}
        if error is None:
            if data is not None:
                response["data"] = data
        else:
            response["error"] = error
        if request_id is not None:
            response["id"] = request_id
        self.writer.write(response)

    async def handle_line(self, raw: bytes) -> None:
        """Answer one input line; never raises (except cancellation)."""
        if not raw.strip():
            return
        try:
            command = parse_command(raw)
        except RpcInputError as exc:
            self.respond("parse", None, error=str(exc))
            return
        kind: str = command["type"]
        request_id = command.get("id")
        handler: Handler | None = getattr(self, "cmd_" + kind, None)
        if handler is None:
            self.respond(kind, request_id, error=f"Unknown command: {kind}")
            return
        if kind in _CONCURRENT:
            # Long commands run beside the input loop, so `abort`/`abort_bash` can reach them.
            task = asyncio.ensure_future(self._answer(handler, kind, command, request_id))
            self.runs.add(task)
            task.add_done_callback(self.runs.discard)
            return
        await self._answer(handler, kind, command, request_id)

    async def _answer(self, handler: Handler, kind: str, command: dict[str, Any], request_id: Any) -> None:
        try:
            await handler(command, request_id)
        except CorralError as exc:
            self.respond(kind, request_id, error=str(exc))
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            self.respond(kind, request_id, error=f"internal error: {type(exc).__name__}: {exc}")

    # --- fields ---------------------------------------------------------------

    @staticmethod
    def _str(command: dict[str, Any], name: str, *, allow_empty: bool = True) -> str:
        value = command.get(name)
        if not isinstance(value, str) or (not allow_empty and not value):
            raise RpcInputError(f'"{name}" must be a {"" if allow_empty else "non-empty "}string')
        return value

    @staticmethod
    def _bool(command: dict[str, Any], name: str) -> bool:
        value = command.get(name)
        if not isinstance(value, bool):
            raise RpcInputError(f'"{name}" must be true or false')
        return value

    def _images(self, command: dict[str, Any]) -> list[ImageContent]:
        raw = command.get("images")
        if raw is None or raw == []:
            return []
        if not isinstance(raw, list):
            raise RpcInputError('"images" must be an array of {type: "image", data, mimeType}')
        images = []
        for index, item in enumerate(raw):
            if (
                not isinstance(item, dict)
                or item.get("type", "image") != "image"
                or not isinstance(item.get("data"), str)
                or not isinstance(item.get("mimeType"), str)
                or not item["mimeType"].startswith("image/")
            ):
                raise RpcInputError(
                    f'"images[{index}]" must be {{"type": "image", "data": <base64>, "mimeType": "image/…"}}'
                )
            images.append(ImageContent(data=item["data"], mime_type=item["mimeType"]))
        info = self.agent.model.info
        if "image" not in info.input:
            raise RpcInputError(
                f"{info.ref} does not accept images (its input is {', '.join(info.input)}): switch to a model "
                "with image input (set_model; `corral models --json` lists each model's input) or send text only"
            )
        return images

    def _message(self, command: dict[str, Any]) -> str | UserMessage:
        images = self._images(command)
        text = self._str(command, "message", allow_empty=bool(images))
        if not images:
            return text
        blocks: list[TextContent | ImageContent] = [TextContent(text=text)] if text else []
        return UserMessage(content=[*blocks, *images])

    # --- prompting ------------------------------------------------------------

    async def cmd_prompt(self, command: dict[str, Any], request_id: Any) -> None:
        message = self._message(command)
        behavior = command.get("streamingBehavior")
        if behavior not in (None, "steer", "followUp"):
            raise RpcInputError('"streamingBehavior" must be "steer" or "followUp"')
        agent = self.agent
        if not agent.is_idle and behavior is None:
            raise AgentBusyError(
                'the agent is already working: send "steer" or "follow_up", or set "streamingBehavior"'
            )
        disposition = "started" if agent.is_idle else "queued"
        self.respond("prompt", request_id, data={"disposition": disposition})

        async def run() -> None:
            try:
                await agent.prompt(message, streaming_behavior=behavior)
            except CorralError as exc:  # Pi 0.73: a second, failed response; 1.x reports it as events
                self.respond("prompt", request_id, error=str(exc))

        task = asyncio.ensure_future(run())
        self.runs.add(task)
        task.add_done_callback(self.runs.discard)

    async def cmd_steer(self, command: dict[str, Any], request_id: Any) -> None:
        self.agent.steer(self._message(command))
        self.respond("steer", request_id, data={"disposition": "queued"})

    async def cmd_follow_up(self, command: dict[str, Any], request_id: Any) -> None:
        self.agent.follow_up(self._message(command))
        self.respond("follow_up", request_id, data={"disposition": "queued"})

    async def cmd_abort(self, command: dict[str, Any], request_id: Any) -> None:
        await self.agent.abort()
        self.respond("abort", request_id)

    async def cmd_clear_queue(self, command: dict[str, Any], request_id: Any) -> None:
        steering, follow_up = self.agent.clear_queue()
        self.respond("clear_queue", request_id, data={"steering": steering, "followUp": follow_up})

    # --- state ----------------------------------------------------------------

    def _model_json(self, info: ModelInfo) -> dict[str, Any]:
        return model_json(info, self.launched.registry.base_url_for(info))

    async def cmd_get_state(self, command: dict[str, Any], request_id: Any) -> None:
        agent = self.agent
        session = agent.session
        state: dict[str, Any] = {
            "model": self._model_json(agent.model.info),
            "thinkingLevel": agent.thinking_level,
            "isStreaming": agent.is_streaming,
            "isCompacting": agent.is_compacting,
            "steeringMode": agent.steering_mode,
            "followUpMode": agent.follow_up_mode,
            "sessionFile": str(session.path) if session.path is not None else None,
            "sessionId": session.session_id,
            "autoCompactionEnabled": agent.auto_compaction_enabled,
            "messageCount": len(agent.messages),
            "pendingMessageCount": agent.pending_message_count,
        }
        if session.name:
            state["sessionName"] = session.name
        self.respond("get_state", request_id, data=state)

    async def cmd_get_messages(self, command: dict[str, Any], request_id: Any) -> None:
        messages = [to_json_dict(message) for message in self.agent.messages]
        self.respond("get_messages", request_id, data={"messages": messages})

    async def cmd_get_entries(self, command: dict[str, Any], request_id: Any) -> None:
        session = self.agent.session
        entries = session.entries
        since = command.get("since")
        if since is not None:
            if not isinstance(since, str):
                raise RpcInputError('"since" must be an entry id (a string)')
            index = next((i for i, entry in enumerate(entries) if entry.id == since), None)
            if index is None:
                raise RpcInputError(f"Entry not found: {since}")
            entries = entries[index + 1 :]
        data = {"entries": [to_json_dict(entry) for entry in entries], "leafId": session.leaf_id}
        self.respond("get_entries", request_id, data=data)

    async def cmd_get_tree(self, command: dict[str, Any], request_id: Any) -> None:
        # Written by hand: a long linear session nests one level per entry, deeper than json.dumps goes.
        session = self.agent.session
        head = json.dumps({"type": "response", "command": "get_tree", "success": True})[:-1]
        line = f'{head}, "data": {{"tree": {tree_json(session.get_tree())}, "leafId": {json.dumps(session.leaf_id)}}}'
        if request_id is not None:
            line += f', "id": {json.dumps(request_id)}'
        self.writer.write_json_text(line + "}")

    async def cmd_get_session_stats(self, command: dict[str, Any], request_id: Any) -> None:
        self.respond("get_session_stats", request_id, data=to_json_dict(self.agent.stats()))

    async def cmd_get_last_assistant_text(self, command: dict[str, Any], request_id: Any) -> None:
        self.respond("get_last_assistant_text", request_id, data={"text": self.agent.last_assistant_text()})

    async def cmd_get_commands(self, command: dict[str, Any], request_id: Any) -> None:
        # Pi lists extension commands, prompt templates and skills; corral has none of them.
        self.respond("get_commands", request_id, data={"commands": []})

    # --- model and thinking -----------------------------------------------------

    def _available(self) -> list[ModelInfo]:
        return self.launched.registry.available_models()

    def _switch_model(self, info: ModelInfo) -> None:
        self.launched.switch_model(info)

    async def cmd_set_model(self, command: dict[str, Any], request_id: Any) -> None:
        provider = self._str(command, "provider")
        model_id = self._str(command, "modelId")
        info = next((m for m in self._available() if (m.provider, m.id) == (provider, model_id)), None)
        if info is None:
            raise RpcInputError(
                f"Model not found: {provider}/{model_id} (get_available_models lists the usable ones)"
            )
        self._switch_model(info)
        self.respond("set_model", request_id, data=self._model_json(info))

    async def cmd_cycle_model(self, command: dict[str, Any], request_id: Any) -> None:
        models = self._available()
        if len(models) <= 1:
            self.respond("cycle_model", request_id, data=None)
            return
        current = self.agent.model.info
        index = next(
            (i for i, m in enumerate(models) if (m.provider, m.id) == (current.provider, current.id)), 0
        )
        info = models[(index + 1) % len(models)]
        self._switch_model(info)
        data = {
            "model": self._model_json(info),
            "thinkingLevel": self.agent.thinking_level,
            "isScoped": False,
        }
        self.respond("cycle_model", request_id, data=data)

    async def cmd_get_available_models(self, command: dict[str, Any], request_id: Any) -> None:
        models = [self._model_json(info) for info in self._available()]
        self.respond("get_available_models", request_id, data={"models": models})

    async def cmd_set_thinking_level(self, command: dict[str, Any], request_id: Any) -> None:
        level = command.get("level")
        if level == "max":  # Pi 1.x's level above xhigh: the highest this model has, as Pi runs it
            level = "xhigh"
        if level not in THINKING_LEVELS:
            raise RpcInputError(f'"level" must be one of {", ".join(THINKING_LEVELS)} or max')
        self.agent.set_thinking_level(level)
        self.respond("set_thinking_level", request_id)

    async def cmd_cycle_thinking_level(self, command: dict[str, Any], request_id: Any) -> None:
        info = self.agent.model.info
        if not info.reasoning:
            self.respond("cycle_thinking_level", request_id, data=None)
            return
        levels = available_thinking_levels(info)
        current = self.agent.thinking_level
        level = levels[(levels.index(current) + 1) % len(levels)] if current in levels else levels[0]
        self.agent.set_thinking_level(level)
        self.respond("cycle_thinking_level", request_id, data={"level": self.agent.thinking_level})

    async def cmd_get_available_thinking_levels(self, command: dict[str, Any], request_id: Any) -> None:
        levels = list(available_thinking_levels(self.agent.model.info))
        self.respond("get_available_thinking_levels", request_id, data={"levels": levels})

    # --- queue modes, compaction, retry -------------------------------------------

    def _mode(self, command: dict[str, Any]) -> Any:
        mode = command.get("mode")
        if mode not in _QUEUE_MODES:
            raise RpcInputError('"mode" must be "all" or "one-at-a-time"')
        return mode

    async def cmd_set_steering_mode(self, command: dict[str, Any], request_id: Any) -> None:
        self.agent.set_steering_mode(self._mode(command))
        self.respond("set_steering_mode", request_id)

    async def cmd_set_follow_up_mode(self, command: dict[str, Any], request_id: Any) -> None:
        self.agent.set_follow_up_mode(self._mode(command))
        self.respond("set_follow_up_mode", request_id)

    async def cmd_compact(self, command: dict[str, Any], request_id: Any) -> None:
        instructions = command.get("customInstructions")
        if instructions is not None and not isinstance(instructions, str):
            raise RpcInputError('"customInstructions" must be a string')
        entry = await self.agent.compact(instructions)
        data = {
            "summary": entry.summary,
            "firstKeptEntryId": entry.first_kept_entry_id,
            "tokensBefore": entry.tokens_before,
            "details": entry.details,
        }
        self.respond("compact", request_id, data=data)

    async def cmd_set_auto_compaction(self, command: dict[str, Any], request_id: Any) -> None:
        self.agent.set_auto_compaction(self._bool(command, "enabled"))
        self.respond("set_auto_compaction", request_id)

    async def cmd_set_auto_retry(self, command: dict[str, Any], request_id: Any) -> None:
        self.agent.set_auto_retry(self._bool(command, "enabled"))
        self.respond("set_auto_retry", request_id)

    async def cmd_abort_retry(self, command: dict[str, Any], request_id: Any) -> None:
        self.agent.abort_retry()
        self.respond("abort_retry", request_id)

    # --- bash -----------------------------------------------------------------

    async def cmd_bash(self, command: dict[str, Any], request_id: Any) -> None:
        text = self._str(command, "command", allow_empty=False)
        exclude = command.get("excludeFromContext", False)
        if not isinstance(exclude, bool):
            raise RpcInputError('"excludeFromContext" must be true or false')
        if self._bash is not None:
            raise RpcInputError("a bash command is already running: wait for its response or send abort_bash")
        # Started now, so an `abort_bash` on the next line finds it; answered when it ends.
        self._bash = asyncio.ensure_future(run_user_command(self._bash_tool, text))
        responder = asyncio.ensure_future(self._finish_bash(self._bash, text, exclude, request_id))
        self.runs.add(responder)
        responder.add_done_callback(self.runs.discard)

    async def _finish_bash(
        self, running: asyncio.Future[UserCommandResult], text: str, exclude: bool, request_id: Any
    ) -> None:
        try:
            result = await asyncio.shield(running)
        except asyncio.CancelledError:
            if not running.cancelled():
                raise
            result = UserCommandResult(
                output="", exit_code=None, cancelled=True, truncated=False, full_output_path=None
            )
        finally:
            self._bash = None
        fields: dict[str, Any] = {"command": text, "output": result.output, "cancelled": result.cancelled}
        fields["truncated"] = result.truncated
        if result.exit_code is not None:
            fields["exit_code"] = result.exit_code
        if result.full_output_path is not None:
            fields["full_output_path"] = result.full_output_path
        if exclude:
            fields["exclude_from_context"] = True
        self.agent.record_bash_execution(BashExecutionMessage(**fields))
        data: dict[str, Any] = {
            "output": result.output,
            "cancelled": result.cancelled,
            "truncated": result.truncated,
        }
        if result.exit_code is not None:
            data["exitCode"] = result.exit_code
        if result.full_output_path is not None:
            data["fullOutputPath"] = result.full_output_path
        self.respond("bash", request_id, data=data)

    async def cmd_abort_bash(self, command: dict[str, Any], request_id: Any) -> None:
        if self._bash is not None:
            self._bash.cancel()
        self.respond("abort_bash", request_id)

    # --- sessions ---------------------------------------------------------------

    async def _replace(self, session: SessionManager) -> None:
        await self.launched.replace_session(session)
        self._subscribe()

    def _sessions_root(self) -> Path | None:
        path = self.agent.session.path
        return path.parent.parent if path is not None else None

    async def cmd_new_session(self, command: dict[str, Any], request_id: Any) -> None:
        parent = command.get("parentSession")
        if parent is not None and not isinstance(parent, str):
            raise RpcInputError('"parentSession" must be a session file path')
        current = self.agent.session
        session = SessionManager.create(
            self.launched.cwd,
            sessions_root=self._sessions_root(),
            parent_session=parent,
            persist=current.path is not None,
        )
        await self._replace(session)
        self.respond("new_session", request_id, data={"cancelled": False})

    async def cmd_switch_session(self, command: dict[str, Any], request_id: Any) -> None:
        path = Path(self._str(command, "sessionPath", allow_empty=False)).expanduser()
        if not path.is_absolute():
            path = self.launched.cwd / path
        current = self.agent.session.path
        if current is not None and path.resolve() == current.resolve():
            self.respond("switch_session", request_id, data={"cancelled": False})
            return
        await self._replace(SessionManager.open(path))
        self.respond("switch_session", request_id, data={"cancelled": False})

    def _require_file(self, what: str) -> SessionManager:
        session = self.agent.session
        if session.path is None:
            raise RpcInputError(f"{what} needs a session file; this one is in memory only (--no-session)")
        session.flush()
        return session

    async def cmd_fork(self, command: dict[str, Any], request_id: Any) -> None:
        entry_id = self._str(command, "entryId", allow_empty=False)
        if not self.agent.is_idle:
            raise AgentBusyError("the agent is busy: abort it or wait for agent_settled before forking")
        source = self._require_file("fork")
        session, text = fork_session(source, entry_id)
        await self._replace(session)
        self.respond("fork", request_id, data={"text": text, "cancelled": False})

    async def cmd_clone(self, command: dict[str, Any], request_id: Any) -> None:
        if not self.agent.is_idle:
            raise AgentBusyError("the agent is busy: abort it or wait for agent_settled before cloning")
        source = self._require_file("clone")
        if source.leaf_id is None:
            raise RpcInputError("Cannot clone session: no current entry selected")
        await self._replace(clone_session(source, source.leaf_id))
        self.respond("clone", request_id, data={"cancelled": False})

    async def cmd_get_fork_messages(self, command: dict[str, Any], request_id: Any) -> None:
        messages = []
        for entry in self.agent.session.entries:
            if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
                text = entry.message.text
                if text:
                    messages.append({"entryId": entry.id, "text": text})
        self.respond("get_fork_messages", request_id, data={"messages": messages})

    async def cmd_set_session_name(self, command: dict[str, Any], request_id: Any) -> None:
        name = self._str(command, "name").strip()
        if not name:
            raise RpcInputError("Session name cannot be empty")
        session = self.agent.session
        session.append_session_info(name)
        self.respond("set_session_name", request_id)
        self.writer.write({"type": "session_info_changed", "name": session.name})

    async def cmd_export_html(self, command: dict[str, Any], request_id: Any) -> None:
        raise RpcInputError(
            "export_html is not supported: corral has no HTML exporter. The session file (get_state's "
            "sessionFile) is in Pi's format, so Pi's own `pi --export <file>` can render it"
        )


async def _serve(server: RpcServer, queue: asyncio.Queue[bytes | None], launched: Launched) -> None:
    while (line := await queue.get()) is not None:
        await server.handle_line(line)
    if server.runs:
        await asyncio.gather(*server.runs, return_exceptions=True)
    await launched.wait_until_quiet()


async def run_rpc_mode(launched: Launched, *, stdin_fd: int, out: TextIO) -> int:
    """Serve JSON-lines commands from `stdin_fd` until it closes, then wait until nothing more can arrive.

    SIGTERM, SIGHUP and SIGINT end the process whether it is idle or busy: the
    run is aborted (its partial reply kept with stop reason `aborted`), and the
    exit code is 143, 129 or 130 (Pi's 128 + signal). A second signal during
    that shutdown exits at once.
    """
    writer = LineWriter(out)
    server = RpcServer(launched, writer)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()
    reader = threading.Thread(target=read_lines, args=(loop, queue, stdin_fd), daemon=True, name="rpc-stdin")
    reader.start()
    received: list[int] = []
    stop = asyncio.Event()

    def on_signal(signum: signal.Signals) -> None:
        received.append(_EXIT_CODES[signum])
        if len(received) > 1:
            os._exit(received[0])
        stop.set()

    for signum in _EXIT_CODES:
        loop.add_signal_handler(signum, on_signal, signum)
    serving = asyncio.ensure_future(_serve(server, queue, launched))
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((serving, stopping), return_when=asyncio.FIRST_COMPLETED)
        if not received:
            serving.result()
            return 0
        serving.cancel()
        for task in tuple(server.runs):
            task.cancel()
        await asyncio.gather(serving, *server.runs, return_exceptions=True)
        await launched.agent.abort()
        return received[0]
    finally:
        stopping.cancel()
        server.close()
        for signum in _EXIT_CODES:
            loop.remove_signal_handler(signum)
