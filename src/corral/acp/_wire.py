"""JSON-RPC 2.0 over newline-delimited stdio, as ACP frames it: the agent's side.

Hostile input never ends the server: every line is decoded and parsed defensively (invalid UTF-8,
nesting deeper than the parser allows, integers past Python's digit limit, `NaN`/`Infinity`), and
anything that is not a well-formed request, notification or response gets the JSON-RPC error of its
kind (a notification gets none, as JSON-RPC says). Input is read from the descriptor with `os.read`
in a thread; output is written with `os.write` to a descriptor of its own, whole lines at a time,
so nothing else the process prints can split a message.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from corral._jsonlines import read_lines, reject_constant, valid_id

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Incoming",
    "RpcError",
    "Wire",
    "parse_line",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
"""ACP's error for a session id the agent does not know."""

RequestId = str | int | float


class RpcError(Exception):
    """A JSON-RPC error answer: `code` and a message that says what to do."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        """The `error` member of the answer."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


@dataclass(frozen=True)
class Incoming:
    """One parsed line: a request (`id` set), a notification (`has_id` false), or a response."""

    method: str | None
    """The method of a request or notification; `None` for a response."""
    params: dict[str, Any]
    """Its params (`{}` when absent)."""
    id: RequestId | None
    has_id: bool
    """Whether the line carried an `id` (a request or a response)."""
    result: object = None
    error: dict[str, Any] | None = None


def parse_line(raw: bytes) -> Incoming:
    """One input line as a message.

    Raises:
        RpcError: `PARSE_ERROR` for a line that is not UTF-8 JSON Python can hold; `INVALID_REQUEST`
            for JSON that is not a JSON-RPC 2.0 message (its `data` holds the id when one was valid).
    """
    try:
        text = raw.removesuffix(b"\r").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RpcError(
            PARSE_ERROR, f"the line is not valid UTF-8 (byte {exc.start}); send UTF-8 JSON"
        ) from None
    try:
        message = json.loads(text, parse_constant=reject_constant)
        json.dumps(message)  # integers past the digit limit fail here rather than when answering
    except RecursionError:
        raise RpcError(PARSE_ERROR, "the JSON is nested too deeply") from None
    except ValueError as exc:
        raise RpcError(PARSE_ERROR, f"the line is not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise RpcError(INVALID_REQUEST, "a JSON-RPC message is a JSON object")
    has_id = "id" in message
    ident = message.get("id")
    if has_id and ident is not None and not valid_id(ident):
        raise RpcError(INVALID_REQUEST, '"id" must be a string or a finite number')
    if message.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'a JSON-RPC 2.0 message has "jsonrpc": "2.0"', data=_id_data(ident))
    method = message.get("method")
    if method is None and has_id and ("result" in message or "error" in message):
        error = message.get("error")
        return Incoming(
            None, {}, ident, True, message.get("result"), error if isinstance(error, dict) else None
        )
    if not isinstance(method, str):
        raise RpcError(INVALID_REQUEST, 'a request has a string "method"', data=_id_data(ident))
    params = message.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, f"{method}: params must be an object", data=_id_data(ident))
    return Incoming(method, params, ident, has_id)


def _id_data(ident: object) -> object:
    return {"id": ident} if valid_id(ident) else None


class Wire:
    """The agent's end of the connection: lines in from `read_fd`, lines out to `write_fd`."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[object]] = {}
        self.closed = False
        """The client is gone (its end of our output closed, or a write failed)."""
        self.on_close: Callable[[], None] | None = None

    # --- output -------------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> bool:
        """Write one message as a line; `False` when the client is gone (nothing was written)."""
        if self.closed:
            return False
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._write_fd, view)
                view = view[written:]
        except OSError:
            self._lost()
            return False
        return True

    def respond(self, ident: RequestId | None, result: object) -> bool:
        """Answer request `ident` with `result`."""
        return self.send({"jsonrpc": "2.0", "id": ident, "result": result})

    def fail(self, ident: RequestId | None, error: RpcError) -> bool:
        """Answer request `ident` with `error`."""
        return self.send({"jsonrpc": "2.0", "id": ident, "error": error.to_json()})

    def notify(self, method: str, params: dict[str, Any]) -> bool:
        """Send a notification; `True` once its line is written (the client's pipe holds it)."""
        return self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any], *, timeout: float | None) -> object:
        """Ask the client and wait for its answer.

        Raises:
            RpcError: the client answered with an error, or is gone.
            TimeoutError: no answer within `timeout` seconds.
        """
        ident = next(self._ids)
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        try:
            if not self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}):
                raise RpcError(INTERNAL_ERROR, "the client is gone")
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(ident, None)

    def answer(self, message: Incoming) -> None:
        """A response from the client: settle the request it answers (unknown ids are ignored)."""
        if not isinstance(message.id, int):
            return
        future = self._pending.get(message.id)
        if future is None or future.done():
            return
        if message.error is not None:
            code = message.error.get("code")
            text = message.error.get("message")
            future.set_exception(
                RpcError(code if isinstance(code, int) else INTERNAL_ERROR, str(text or "client error"))
            )
        else:
            future.set_result(message.result)

    def _lost(self) -> None:
        if self.closed:
            return
        self.closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(RpcError(INTERNAL_ERROR, "the client is gone"))
        if self.on_close is not None:
            self.on_close()

    def input_ended(self) -> None:
        """The client closed our input: nothing it asked for can be answered any more."""
        self._lost()

    # --- input --------------------------------------------------------------------------------------

    def start_reading(self, queue: asyncio.Queue[bytes | None]) -> None:
        """Read LF-framed lines in a daemon thread into `queue` (`None` at end of input)."""
        loop = asyncio.get_running_loop()
        threading.Thread(
            target=read_lines, args=(loop, queue, self._read_fd), name="corral-acp-stdin", daemon=True
        ).start()
