"""`corral run` output modes: print (final text), json (event stream) and rpc (JSON lines both ways).

The JSON shapes follow Pi's print/JSON/RPC modes so that programs written for
Pi's process modes work against corral: the first JSON line is the session
header, every agent event follows as one line, and RPC responses are
`{"type": "response", "command", "success", "data" | "error", "id"}`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from corral.agent import AgentBusyError, AgentEvent, AgentSession
from corral.errors import CorralError
from corral.llm import AssistantMessage, to_json_dict

from ._launch import Launched

__all__ = ["run_json_mode", "run_print_mode", "run_rpc_mode"]


def _last_assistant(agent: AgentSession) -> AssistantMessage | None:
    for message in reversed(agent.messages):
        if isinstance(message, AssistantMessage):
            return message
    return None


def _final_exit(launched: Launched, err: TextIO) -> int:
    """1 (naming the reason on stderr) when the run ended in an error, an abort or SIGTERM; else 0."""
    if launched.terminated:
        # A SIGTERM during a tool call leaves the tool-calling reply as the last one;
        # it is not an answer.
        print("corral: aborted (SIGTERM)", file=err)
        return 1
    last = _last_assistant(launched.agent)
    if last is not None and last.stop_reason in ("error", "aborted"):
        reason = last.error_message or ("aborted" if last.stop_reason == "aborted" else "provider error")
        print(f"corral: {reason}", file=err)
        return 1
    return 0


async def _run_headless(launched: Launched, prompt: str, err: TextIO) -> None:
    """Run the prompt, then keep going while managed agents can still deliver to the lead."""
    await launched.agent.prompt(prompt)
    await launched.wait_until_quiet()
    if launched.host is not None:
        for warning in launched.host.warnings:
            print(f"corral: warning: {warning}", file=err)
    for line in launched.left_waiting():
        print(f"corral: {line}", file=err)


async def run_print_mode(launched: Launched, prompt: str, *, out: TextIO, err: TextIO) -> int:
    """Run one prompt and print the final assistant text. Exit 1 on a provider error or abort.

    With managed agents, the command ends when the lead is settled and nothing
    more can arrive for it; agents left waiting on a question or lost are named
    on stderr.
    """
    agent = launched.agent
    await _run_headless(launched, prompt, err)
    code = _final_exit(launched, err)
    if code == 0:
        last = _last_assistant(agent)
        text = last.text if last is not None else ""
        out.write(text + ("" if text.endswith("\n") else "\n"))
        out.flush()
    return code


class _LineWriter:
    """Writes one JSON object per line and flushes, so a reader sees each line at once."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def write(self, obj: Any) -> None:
        self._out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._out.flush()


def _event_json(event: AgentEvent) -> dict[str, Any]:
    return to_json_dict(event)


async def run_json_mode(launched: Launched, prompt: str, *, out: TextIO, err: TextIO) -> int:
    """Print the session header, then every event of the run as one JSON line."""
    agent = launched.agent
    writer = _LineWriter(out)
    writer.write(to_json_dict(agent.session.header))
    unsubscribe = agent.subscribe(lambda event: writer.write(_event_json(event)))
    try:
        await _run_headless(launched, prompt, err)
    finally:
        unsubscribe()
    return _final_exit(launched, err)


def _stdin_lines(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None], stream: Any) -> None:
    """Read LF-delimited lines in a thread (works for pipes, files and terminals alike)."""
    try:
        for raw in stream:
            line = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
            # LF framing only: strip one trailing CR, never split on U+2028/2029.
            line = line.removesuffix("\n").removesuffix("\r")
            loop.call_soon_threadsafe(queue.put_nowait, line)
    finally:
        loop.call_soon_threadsafe(queue.put_nowait, None)


def _state_json(agent: AgentSession) -> dict[str, Any]:
    session = agent.session
    info = agent.model.info
    state: dict[str, Any] = {
        "model": {"provider": info.provider, "id": info.id, "contextWindow": info.context_window},
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
    return state


class _RpcServer:
    def __init__(self, agent: AgentSession, writer: _LineWriter) -> None:
        self.agent = agent
        self.writer = writer
        self.runs: set[asyncio.Task[None]] = set()

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

    def _start_run(self, command: str, request_id: Any, coro_factory: Callable[[], Any]) -> None:
        async def run() -> None:
            try:
                await coro_factory()
            except CorralError as exc:
                self.respond(command, request_id, error=str(exc))

        task = asyncio.ensure_future(run())
        self.runs.add(task)
        task.add_done_callback(self.runs.discard)

    async def handle(self, line: str) -> None:
        if not line.strip():
            return
        try:
            command = json.loads(line)
        except json.JSONDecodeError as exc:
            self.respond("parse", None, error=f"invalid JSON: {exc.msg} at column {exc.colno}")
            return
        if not isinstance(command, dict) or not isinstance(command.get("type"), str):
            self.respond("parse", None, error='a command is a JSON object with a string "type"')
            return
        kind: str = command["type"]
        request_id = command.get("id")
        handler = getattr(self, "cmd_" + kind, None)
        if handler is None:
            self.respond(kind, request_id, error=f"unknown command {kind!r}")
            return
        try:
            await handler(command, request_id)
        except CorralError as exc:
            self.respond(kind, request_id, error=str(exc))

    def _message_text(self, command: dict[str, Any]) -> str:
        message = command.get("message")
        if not isinstance(message, str) or not message:
            raise _RpcInputError('"message" must be a non-empty string')
        return message

    async def cmd_prompt(self, command: dict[str, Any], request_id: Any) -> None:
        text = self._message_text(command)
        behavior = command.get("streamingBehavior")
        if behavior not in (None, "steer", "followUp"):
            raise _RpcInputError('"streamingBehavior" must be "steer" or "followUp"')
        if self.agent.is_streaming and behavior is None:
            raise AgentBusyError(
                'the agent is already working: send "steer" or "follow_up", or set "streamingBehavior"'
            )
        # Pi answers a prompt at once; a later failure arrives as events (and a second response).
        self.respond("prompt", request_id)
        self._start_run("prompt", request_id, lambda: self.agent.prompt(text, streaming_behavior=behavior))

    async def cmd_steer(self, command: dict[str, Any], request_id: Any) -> None:
        self.agent.steer(self._message_text(command))
        self.respond("steer", request_id)

    async def cmd_follow_up(self, command: dict[str, Any], request_id: Any) -> None:
        self.agent.follow_up(self._message_text(command))
        self.respond("follow_up", request_id)

    async def cmd_abort(self, command: dict[str, Any], request_id: Any) -> None:
        await self.agent.abort()
        self.respond("abort", request_id)

    async def cmd_get_state(self, command: dict[str, Any], request_id: Any) -> None:
        self.respond("get_state", request_id, data=_state_json(self.agent))

    async def cmd_get_messages(self, command: dict[str, Any], request_id: Any) -> None:
        messages = [to_json_dict(message) for message in self.agent.messages]
        self.respond("get_messages", request_id, data={"messages": messages})

    async def cmd_get_session_stats(self, command: dict[str, Any], request_id: Any) -> None:
        self.respond("get_session_stats", request_id, data=to_json_dict(self.agent.stats()))

    async def cmd_compact(self, command: dict[str, Any], request_id: Any) -> None:
        instructions = command.get("customInstructions")
        if instructions is not None and not isinstance(instructions, str):
            raise _RpcInputError('"customInstructions" must be a string')
        entry = await self.agent.compact(instructions)
        data = {
            "summary": entry.summary,
            "firstKeptEntryId": entry.first_kept_entry_id,
            "tokensBefore": entry.tokens_before,
            "details": entry.details,
        }
        self.respond("compact", request_id, data=data)


class _RpcInputError(CorralError):
    """A malformed RPC command."""


async def run_rpc_mode(launched: Launched, *, stdin: Any, out: TextIO) -> int:
    """Serve JSON-lines commands from `stdin` until it closes, then wait until nothing more can arrive."""
    agent = launched.agent
    writer = _LineWriter(out)
    server = _RpcServer(agent, writer)
    unsubscribe = agent.subscribe(lambda event: writer.write(_event_json(event)))
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    reader = threading.Thread(target=_stdin_lines, args=(loop, queue, stdin), daemon=True, name="rpc-stdin")
    reader.start()
    try:
        while (line := await queue.get()) is not None:
            await server.handle(line)
        if server.runs:
            await asyncio.gather(*server.runs, return_exceptions=True)
        await launched.wait_until_quiet()
    finally:
        unsubscribe()
    return 0


def stdin_stream() -> Any:
    """The process's standard input as bytes lines."""
    return sys.stdin.buffer
