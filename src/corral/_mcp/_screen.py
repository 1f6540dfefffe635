"""Malformed lines over stdio: each gets a JSON-RPC error, and the server reads on.

The SDK's stdio transport drops a line it cannot validate (the client's request is never
answered). `ScreenedLines` stands in for its input: it reads the client's lines from a private
copy of fd 0 (fd 0 itself then reads the null device, as the SDK would arrange, so agents' commands
never read the client's stream) and hands the SDK only lines it accepts. Every other line is
answered here (`screen`): a parse error (-32700) for what is not JSON or nests too deeply to read,
an invalid request (-32600) for JSON that is no JSON-RPC 2.0 message, with the request's `id`
when one can be read (else `null`). Blank lines are skipped.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import anyio
import mcp_types as types
from pydantic import ValidationError

__all__ = ["INVALID_REQUEST", "PARSE_ERROR", "ScreenedLines", "private_stdin", "screen"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
FORMAT = "send one JSON-RPC 2.0 message (a JSON object) per line"


def _error(request_id: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


def _request_id(value: object) -> int | str | None:
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def screen(line: str) -> types.JSONRPCError | None:
    """The error answer to a malformed line; `None` when the SDK takes the line as a message."""
    try:
        data = json.loads(line)
    except RecursionError:
        return _error(None, PARSE_ERROR, f"Parse error: the line nests JSON too deeply to read; {FORMAT}")
    except ValueError as exc:
        return _error(None, PARSE_ERROR, f"Parse error: the line is not JSON ({exc}); {FORMAT}")
    if not isinstance(data, dict):
        what = (
            "a batch (a JSON array), which MCP does not take" if isinstance(data, list) else "not an object"
        )
        return _error(None, INVALID_REQUEST, f"Invalid Request: the message is {what}; {FORMAT}")
    if "id" in data and data["id"] is not None and _request_id(data["id"]) is None:
        return _error(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    request_id = _request_id(data.get("id"))
    if "result" in data and "error" in data:
        return _error(
            request_id, INVALID_REQUEST, "Invalid Request: a response has a result or an error, not both"
        )
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        if any(error["type"] == "json_invalid" for error in exc.errors()):
            problem = "it nests too deeply (more than 200 levels); flatten the parameters"
        else:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"][1:]) or "the message"
            problem = f"{where}: {first['msg']}"
        return _error(request_id, INVALID_REQUEST, f"Invalid Request: {problem}; {FORMAT}")
    return None


@contextlib.contextmanager
def private_stdin() -> Iterator[int]:
    """A private copy of fd 0 for reading the client's lines; fd 0 reads the null device meanwhile."""
    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        yield private
    finally:
        os.dup2(private, 0)
        os.close(private)


class ScreenedLines:
    """The client's lines the SDK takes (`first`, then what `fd` reads); the others are answered
    through what `attach` gives (once the transport's write stream exists)."""

    def __init__(self, fd: int, first: bytes | None) -> None:
        self._fd = fd
        self._first = first
        self._answer: Callable[[types.JSONRPCError], Awaitable[None]] | None = None
        self._attached = anyio.Event()

    def attach(self, answer: Callable[[types.JSONRPCError], Awaitable[None]]) -> None:
        """Answer rejected lines with `answer` (lines rejected before this wait for it)."""
        self._answer = answer
        self._attached.set()

    async def reject(self, error: types.JSONRPCError) -> None:
        await self._attached.wait()
        assert self._answer is not None
        await self._answer(error)

    async def _lines(self) -> AsyncIterator[bytes]:
        if self._first is not None:
            yield self._first
        stream: Any = anyio.wrap_file(os.fdopen(self._fd, "rb", closefd=False))
        while line := await stream.readline():
            yield line

    def __aiter__(self) -> AsyncIterator[str]:
        return self._screened()

    async def _screened(self) -> AsyncIterator[str]:
        async for raw in self._lines():
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            error = screen(line)
            if error is None:
                yield line
            else:
                await self.reject(error)
