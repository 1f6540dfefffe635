"""A fake model-provider HTTP server on loopback, for testing the real provider code path.

`FakeProviderServer` runs `http.server.ThreadingHTTPServer` in a background
thread on `127.0.0.1` (random port) and speaks just enough of four wire APIs
for the official SDKs (and the agents of `tests/harness/real`) to accept its answers:

* OpenAI Responses: `POST /v1/responses` (SSE stream and plain JSON);
* OpenAI Chat Completions: `POST /v1/chat/completions` (SSE chunks with a
  `stream_options.include_usage` usage chunk, and plain JSON);
* Anthropic Messages: `POST /v1/messages` (SSE `message_start` … `message_stop`,
  and plain JSON);
* Gemini: `POST …/models/<model>:streamGenerateContent` (SSE `data:` chunks of candidates) and
  `:generateContent` (plain JSON).

Tests queue replies (`queue_text`, `queue_tool_call`, `queue_error`, or a whole
`FakeReply`) which are served first-in first-out whatever the path, and read
back every request from `requests`. A reply with `chunk_delay` streams slowly
and stops as soon as the client goes away; `disconnected` is set when that is
noticed. Responses use HTTP/1.1 keep-alive (chunked transfer for streams), and
`close()` shuts every open connection so no thread or socket outlives the test.

The server is deliberately forgiving about requests (it never validates them)
and strict about what it sends (complete objects, so SDK models are populated).
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

__all__ = [
    "FakeProviderServer",
    "FakeReply",
    "FakeToolCall",
    "FakeUsage",
    "RecordedRequest",
]

_Api = Literal["responses", "chat", "anthropic", "gemini"]


@dataclass
class FakeToolCall:
    """A tool call the fake model makes."""

    name: str
    arguments: dict[str, Any]
    id: str | None = None
    """Call id; generated (`call_<n>` / `toolu_<n>`) when `None`."""
    raw_arguments: str | None = None
    """Chat Completions only: send this text as the arguments instead of `arguments` as JSON
    (for arguments that are not valid JSON)."""


@dataclass
class FakeUsage:
    """Token counts of a reply, stated once and sent in each API's own shape.

    `input` is the *uncached* prompt tokens (Anthropic's `input_tokens`); OpenAI
    gets `prompt_tokens = input + cache_read` and never sees `cache_write`.
    `output` includes `reasoning`, as OpenAI counts it.
    """

    input: int = 10
    output: int = 5
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0


@dataclass
class FakeReply:
    """One queued answer: content, usage and how to deliver it."""

    text: str | list[str] = ""
    """The reply text; a list gives the exact stream deltas."""
    thinking: str | list[str] | None = None
    """Reasoning text (summary for Responses, `reasoning_content` for chat, a thinking block for Anthropic)."""
    thinking_signature: str | None = None
    """Anthropic thinking signature / Responses `encrypted_content`."""
    tool_calls: list[FakeToolCall] = field(default_factory=list)
    usage: FakeUsage = field(default_factory=FakeUsage)
    stop: Literal["stop", "length"] = "stop"
    """`length` ends as if the output cap was hit."""
    status: int = 200
    """An HTTP status >= 400 makes this an error reply."""
    error_message: str = ""
    """The provider's error message for an error reply."""
    error_body: Any = None
    """Exact error body to send instead of the API's usual error shape."""
    chunk_delay: float = 0.0
    """Seconds between streamed events (slow mode, for abort tests)."""
    repeat_text: int = 1
    """Send the text deltas this many times (a long slow stream)."""
    fail_after: int | None = None
    """Stream this many events, then the API's in-stream error event (with `error_message`) and stop."""
    no_usage: bool = False
    """Chat Completions only: report no usage (no usage chunk; `usage: null` in a plain reply), as
    some local servers do."""
    repeat_tool_name: bool = False
    """Chat Completions only: repeat each tool call's id and name in every arguments chunk, as
    llama.cpp's server does."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers (`retry-after`, rate-limit headers, …)."""
    drop_after: int | None = None
    """Stream this many events, then close the connection without ending the body (a dropped stream)."""
    failed: bool = False
    """Responses only: end the stream with `response.failed` (its `error` carries `error_message`)
    instead of `response.completed`."""


@dataclass
class RecordedRequest:
    """A request the server received."""

    method: str
    path: str
    """The path without the query string."""
    query: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The parsed JSON body (`None` when empty or not JSON)."""
    at: float = 0.0
    """`time.monotonic()` when the request arrived (its body read)."""
    raw: bytes = b""
    """The body as sent."""
    header_order: list[str] = field(default_factory=list)
    """Header names (lower-cased) in the order they arrived."""


class _Server(ThreadingHTTPServer):
    request_queue_size = 128
    daemon_threads = True
    allow_reuse_address = True

    fake: FakeProviderServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    """`TCP_NODELAY`: headers and each chunk leave at once, as a real server's would (see
    `FakeProviderServer.nagle_connections`)."""
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, add=False)

    def do_GET(self) -> None:
        path = self.path.partition("?")[0]
        models = self.server.fake.models
        if path.endswith("/models") and models is not None:
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in models]
            self._send_json(200, {"object": "list", "data": data})
            return
        self._send_json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path, _, query = self.path.partition("?")
        fake = self.server.fake
        recorded = RecordedRequest(
            method="POST",
            path=path,
            query=query,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            at=time.monotonic(),
            raw=raw,
            header_order=[k.lower() for k in self.headers],
        )
        fake._record(recorded)
        try:
            self._answer(fake, path, body, recorded)
        finally:
            fake._answered()

    def _answer(self, fake: FakeProviderServer, path: str, body: Any, recorded: RecordedRequest) -> None:
        api: _Api
        if path.endswith("/responses"):
            api = "responses"
        elif path.endswith("/chat/completions"):
            api = "chat"
        elif path.endswith("/messages"):
            api = "anthropic"
        elif path.endswith((":generateContent", ":streamGenerateContent")):
            api = "gemini"
        else:
            self._send_json(404, {"error": {"message": f"unknown path {path}", "type": "not_found"}})
            return
        if api not in fake.wire_apis:
            self._send_json(404, {"detail": "Not Found"})
            return
        reply = fake.responder(recorded) if fake.responder is not None else None
        if reply is None:
            reply = fake._next_reply()
        if reply is None:
            self._send_json(500, _error_body(api, 500, "fake server: no reply queued"))
            return
        if reply.status >= 400:
            err = (
                reply.error_body
                if reply.error_body is not None
                else _error_body(api, reply.status, reply.error_message)
            )
            self._send_json(reply.status, err, reply.headers)
            return
        model = str(body.get("model", "fake-model")) if isinstance(body, dict) else "fake-model"
        stream = isinstance(body, dict) and bool(body.get("stream"))
        if api == "gemini":  # the model and streaming are in the path
            model = path.rpartition("/")[2].partition(":")[0]
            stream = path.endswith(":streamGenerateContent")
        builder = _Builder(api, reply, model, fake._next_id())
        if not stream:
            self._send_json(200, builder.plain(), reply.headers)
            return
        self._stream(api, reply, builder.events())

    # --- writing --------------------------------------------------------

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, api: _Api, reply: FakeReply, events: Iterator[tuple[str | None, Any]]) -> None:
        fake = self.server.fake
        delay = reply.chunk_delay
        self.send_response(200)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for index, (name, data) in enumerate(events):
                if delay and index and fake._closing.wait(delay):
                    self.close_connection = True
                    return
                if reply.drop_after is not None and index == reply.drop_after:
                    self.close_connection = True
                    return
                if reply.fail_after is not None and index == reply.fail_after:
                    name, data = _stream_error(api, reply.error_message, index)
                    self._chunk(_sse(name, data))
                    break
                self._chunk(_sse(name, data))
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
            fake._client_went_away()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _sse(name: str | None, data: Any) -> bytes:
    text = "" if name is None else f"event: {name}\n"
    text += "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n"
    return text.encode()


def _stream_error(api: _Api, message: str, sequence: int) -> tuple[str | None, Any]:
    """The event an API sends when a stream fails after it started."""
    if api == "anthropic":
        return "error", {"type": "error", "error": {"type": "overloaded_error", "message": message}}
    if api == "responses":
        return "error", {
            "type": "error",
            "code": "server_error",
            "message": message,
            "param": None,
            "sequence_number": sequence,
        }
    return None, {"error": {"message": message, "type": "server_error", "param": None, "code": None}}


def _error_body(api: _Api, status: int, message: str) -> Any:
    if api == "anthropic":
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = {400: "invalid_request_error", 401: "invalid_request_error", 429: "rate_limit_error"}.get(
        status, "server_error"
    )
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _split(text: str | list[str] | None) -> list[str]:
    if text is None:
        return []
    if isinstance(text, list):
        return text
    if not text:
        return []
    words = text.split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]


def _split_json(arguments: dict[str, Any]) -> list[str]:
    raw = json.dumps(arguments)
    if len(raw) < 3:
        return [raw]
    third = len(raw) // 3
    return [raw[:third], raw[third : 2 * third], raw[2 * third :]]


class _Builder:
    """Builds the plain body or the SSE events of one reply for one API."""

    def __init__(self, api: _Api, reply: FakeReply, model: str, serial: int) -> None:
        self.api = api
        self.reply = reply
        self.model = model
        self.serial = serial
        self.text_deltas = _split(reply.text) * max(1, reply.repeat_text)
        self.text = "".join(self.text_deltas)
        self.thinking_deltas = _split(reply.thinking)
        self.thinking = "".join(self.thinking_deltas)
        prefix = "toolu" if api == "anthropic" else "call"
        self.calls = [
            (call.id or f"{prefix}_{serial}_{i}", call.name, call.arguments)
            for i, call in enumerate(reply.tool_calls)
        ]
        self.chat_args = [
            call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
            for call in reply.tool_calls
        ]

    def plain(self) -> Any:
        return {
            "responses": self._responses_plain,
            "chat": self._chat_plain,
            "anthropic": self._anthropic_plain,
            "gemini": self._gemini_plain,
        }[self.api]()

    def events(self) -> Iterator[tuple[str | None, Any]]:
        if self.api == "responses":
            return self._responses_events()
        if self.api == "chat":
            return self._chat_events()
        if self.api == "gemini":
            return self._gemini_events()
        return self._anthropic_events()

    # --- Gemini -----------------------------------------------------------

    def _gemini_usage(self) -> dict[str, Any]:
        u = self.reply.usage
        prompt = u.input + u.cache_read
        return {
            "promptTokenCount": prompt,
            "candidatesTokenCount": u.output,
            "totalTokenCount": prompt + u.output,
            "cachedContentTokenCount": u.cache_read,
        }

    def _gemini_candidate(self, parts: list[dict[str, Any]], finish: bool) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = "MAX_TOKENS" if self.reply.stop == "length" else "STOP"
        return candidate

    def _gemini_calls(self) -> list[dict[str, Any]]:
        return [{"functionCall": {"name": name, "args": args}} for _, name, args in self.calls]

    def _gemini_plain(self) -> Any:
        parts: list[dict[str, Any]] = [{"text": self.text}] if self.text else []
        return {
            "candidates": [self._gemini_candidate(parts + self._gemini_calls(), True)],
            "usageMetadata": self._gemini_usage(),
            "modelVersion": self.model,
        }

    def _gemini_events(self) -> Iterator[tuple[str | None, Any]]:
        def chunk(parts: list[dict[str, Any]], finish: bool = False) -> tuple[None, Any]:
            body: dict[str, Any] = {
                "candidates": [self._gemini_candidate(parts, finish)],
                "modelVersion": self.model,
            }
            if finish:
                body["usageMetadata"] = self._gemini_usage()
            return None, body

        for delta in self.thinking_deltas:
            yield chunk([{"text": delta, "thought": True}])
        for delta in self.text_deltas:
            yield chunk([{"text": delta}])
        yield chunk(self._gemini_calls(), finish=True)

    # --- OpenAI Responses -------------------------------------------------

    def _responses_usage(self) -> dict[str, Any]:
        u = self.reply.usage
        prompt = u.input + u.cache_read
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": u.cache_read},
            "output_tokens": u.output,
            "output_tokens_details": {"reasoning_tokens": u.reasoning},
            "total_tokens": prompt + u.output,
        }

    def _responses_items(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if self.thinking_deltas:
            items.append(
                {
                    "id": f"rs_{self.serial}",
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": self.thinking}],
                    "encrypted_content": self.reply.thinking_signature,
                    "status": "completed",
                }
            )
        if self.text_deltas:
            items.append(
                {
                    "id": f"msg_{self.serial}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": self.text, "annotations": [], "logprobs": []}
                    ],
                }
            )
        for call_id, name, arguments in self.calls:
            items.append(
                {
                    "id": f"fc_{call_id}",
                    "type": "function_call",
                    "call_id": call_id,
                    "name": name,
                    "arguments": json.dumps(arguments),
                    "status": "completed",
                }
            )
        return items

    def _responses_object(self, status: str, output: list[dict[str, Any]], usage: bool) -> dict[str, Any]:
        incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
        return {
            "id": f"resp_{self.serial}",
            "object": "response",
            "created_at": 1_700_000_000,
            "model": self.model,
            "status": status,
            "output": output,
            "error": None,
            "incomplete_details": incomplete,
            "instructions": None,
            "metadata": {},
            "parallel_tool_calls": True,
            "temperature": 1.0,
            "top_p": 1.0,
            "tool_choice": "auto",
            "tools": [],
            "usage": self._responses_usage() if usage else None,
        }

    def _final_status(self) -> str:
        return "incomplete" if self.reply.stop == "length" else "completed"

    def _responses_plain(self) -> Any:
        return self._responses_object(self._final_status(), self._responses_items(), usage=True)

    def _responses_events(self) -> Iterator[tuple[str | None, Any]]:
        seq = itertools.count()

        def ev(kind: str, **payload: Any) -> tuple[str, Any]:
            return kind, {"type": kind, "sequence_number": next(seq), **payload}

        yield ev("response.created", response=self._responses_object("in_progress", [], usage=False))
        yield ev("response.in_progress", response=self._responses_object("in_progress", [], usage=False))
        items = self._responses_items()
        for out_index, item in enumerate(items):
            item_id = item["id"]
            if item["type"] == "reasoning":
                yield ev(
                    "response.output_item.added",
                    output_index=out_index,
                    item={**item, "summary": [], "encrypted_content": None, "status": "in_progress"},
                )
                part = {"type": "summary_text", "text": ""}
                yield ev(
                    "response.reasoning_summary_part.added",
                    item_id=item_id,
                    output_index=out_index,
                    summary_index=0,
                    part=part,
                )
                for delta in self.thinking_deltas:
                    yield ev(
                        "response.reasoning_summary_text.delta",
                        item_id=item_id,
                        output_index=out_index,
                        summary_index=0,
                        delta=delta,
                    )
                yield ev(
                    "response.reasoning_summary_text.done",
                    item_id=item_id,
                    output_index=out_index,
                    summary_index=0,
                    text=self.thinking,
                )
                yield ev(
                    "response.reasoning_summary_part.done",
                    item_id=item_id,
                    output_index=out_index,
                    summary_index=0,
                    part={"type": "summary_text", "text": self.thinking},
                )
            elif item["type"] == "message":
                yield ev(
                    "response.output_item.added",
                    output_index=out_index,
                    item={**item, "content": [], "status": "in_progress"},
                )
                empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                yield ev(
                    "response.content_part.added",
                    item_id=item_id,
                    output_index=out_index,
                    content_index=0,
                    part=empty,
                )
                for delta in self.text_deltas:
                    yield ev(
                        "response.output_text.delta",
                        item_id=item_id,
                        output_index=out_index,
                        content_index=0,
                        delta=delta,
                        logprobs=[],
                    )
                yield ev(
                    "response.output_text.done",
                    item_id=item_id,
                    output_index=out_index,
                    content_index=0,
                    text=self.text,
                    logprobs=[],
                )
                yield ev(
                    "response.content_part.done",
                    item_id=item_id,
                    output_index=out_index,
                    content_index=0,
                    part=item["content"][0],
                )
            else:
                yield ev(
                    "response.output_item.added",
                    output_index=out_index,
                    item={**item, "arguments": "", "status": "in_progress"},
                )
                for delta in _split_json(json.loads(item["arguments"])):
                    yield ev(
                        "response.function_call_arguments.delta",
                        item_id=item_id,
                        output_index=out_index,
                        delta=delta,
                    )
                yield ev(
                    "response.function_call_arguments.done",
                    item_id=item_id,
                    output_index=out_index,
                    name=item["name"],
                    arguments=item["arguments"],
                )
            yield ev("response.output_item.done", output_index=out_index, item=item)
        if self.reply.failed:
            failed = self._responses_object("failed", items, usage=True)
            failed["error"] = {"code": "server_error", "message": self.reply.error_message}
            yield ev("response.failed", response=failed)
            return
        status = self._final_status()
        final = "response.incomplete" if status == "incomplete" else "response.completed"
        yield ev(final, response=self._responses_object(status, items, usage=True))

    # --- OpenAI Chat Completions -----------------------------------------

    def _chat_usage(self) -> dict[str, Any]:
        u = self.reply.usage
        prompt = u.input + u.cache_read
        return {
            "prompt_tokens": prompt,
            "completion_tokens": u.output,
            "total_tokens": prompt + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cache_read},
            "completion_tokens_details": {"reasoning_tokens": u.reasoning},
        }

    def _chat_finish(self) -> str:
        if self.reply.stop == "length":
            return "length"
        return "tool_calls" if self.calls else "stop"

    def _chat_plain(self) -> Any:
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None, "refusal": None}
        if self.thinking:
            message["reasoning_content"] = self.thinking
        if self.calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": text}}
                for (cid, name, _), text in zip(self.calls, self.chat_args, strict=True)
            ]
        return {
            "id": f"chatcmpl-{self.serial}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": self.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": self._chat_finish(), "logprobs": None}
            ],
            "usage": None if self.reply.no_usage else self._chat_usage(),
        }

    def _chat_events(self) -> Iterator[tuple[str | None, Any]]:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, Any]:
            return None, {
                "id": f"chatcmpl-{self.serial}",
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            }

        yield chunk({"role": "assistant", "content": ""})
        for delta in self.thinking_deltas:
            yield chunk({"reasoning_content": delta})
        for delta in self.text_deltas:
            yield chunk({"content": delta})
        for index, (cid, name, _args) in enumerate(self.calls):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": cid,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
            text = self.chat_args[index]
            third = max(1, len(text) // 3)
            for start in range(0, len(text), third):
                call: dict[str, Any] = {
                    "index": index,
                    "function": {"arguments": text[start : start + third]},
                }
                if self.reply.repeat_tool_name:
                    call["id"] = cid
                    call["type"] = "function"
                    call["function"]["name"] = name
                yield chunk({"tool_calls": [call]})
        yield chunk({}, self._chat_finish())
        if self.reply.no_usage:
            yield None, "[DONE]"
            return
        yield (
            None,
            {
                "id": f"chatcmpl-{self.serial}",
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": self.model,
                "choices": [],
                "usage": self._chat_usage(),
            },
        )
        yield None, "[DONE]"

    # --- Anthropic Messages ------------------------------------------------

    def _anthropic_stop(self) -> str:
        if self.reply.stop == "length":
            return "max_tokens"
        return "tool_use" if self.calls else "end_turn"

    def _anthropic_blocks(self) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if self.thinking_deltas:
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": self.thinking,
                    "signature": self.reply.thinking_signature or "",
                }
            )
        if self.text_deltas:
            blocks.append({"type": "text", "text": self.text, "citations": None})
        for cid, name, args in self.calls:
            blocks.append({"type": "tool_use", "id": cid, "name": name, "input": args})
        return blocks

    def _anthropic_usage(self, output: int) -> dict[str, Any]:
        u = self.reply.usage
        return {
            "input_tokens": u.input,
            "output_tokens": output,
            "cache_read_input_tokens": u.cache_read,
            "cache_creation_input_tokens": u.cache_write,
        }

    def _anthropic_message(
        self, content: list[dict[str, Any]], stop: str | None, output: int
    ) -> dict[str, Any]:
        return {
            "id": f"msg_{self.serial}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": self._anthropic_usage(output),
        }

    def _anthropic_plain(self) -> Any:
        return self._anthropic_message(
            self._anthropic_blocks(), self._anthropic_stop(), self.reply.usage.output
        )

    def _anthropic_events(self) -> Iterator[tuple[str | None, Any]]:
        def ev(kind: str, **payload: Any) -> tuple[str, Any]:
            return kind, {"type": kind, **payload}

        yield ev("message_start", message=self._anthropic_message([], None, 1))
        for index, block in enumerate(self._anthropic_blocks()):
            if block["type"] == "thinking":
                yield ev(
                    "content_block_start",
                    index=index,
                    content_block={"type": "thinking", "thinking": "", "signature": ""},
                )
                for delta in self.thinking_deltas:
                    yield ev(
                        "content_block_delta",
                        index=index,
                        delta={"type": "thinking_delta", "thinking": delta},
                    )
                if block["signature"]:
                    yield ev(
                        "content_block_delta",
                        index=index,
                        delta={"type": "signature_delta", "signature": block["signature"]},
                    )
            elif block["type"] == "text":
                yield ev("content_block_start", index=index, content_block={"type": "text", "text": ""})
                for delta in self.text_deltas:
                    yield ev("content_block_delta", index=index, delta={"type": "text_delta", "text": delta})
            else:
                yield ev(
                    "content_block_start",
                    index=index,
                    content_block={"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}},
                )
                for part in _split_json(block["input"]):
                    yield ev(
                        "content_block_delta",
                        index=index,
                        delta={"type": "input_json_delta", "partial_json": part},
                    )
            yield ev("content_block_stop", index=index)
        yield ev(
            "message_delta",
            delta={"stop_reason": self._anthropic_stop(), "stop_sequence": None},
            usage={"output_tokens": self.reply.usage.output},
        )
        yield ev("message_stop")


class FakeProviderServer:
    """A fake OpenAI / Anthropic / Gemini endpoint on `127.0.0.1`, answering from a queue of replies.

    Use as a context manager (or call `start()` / `close()`)::

        with FakeProviderServer() as server:
            server.queue_text("hi")
            ...  # point a client at server.base_url (OpenAI) or server.url (Anthropic)
            assert server.requests[0].body["model"] == "gpt-test"
    """

    def __init__(self) -> None:
        self._replies: deque[FakeReply] = deque()
        self._lock = threading.Lock()
        self._serial = itertools.count(1)
        self._closing = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[RecordedRequest] = []
        """Every request received, in arrival order."""
        self.default_reply: FakeReply | None = None
        """Served when the queue is empty (else the server answers 500)."""
        self.wire_apis: set[str] = {"responses", "chat", "anthropic", "gemini"}
        """The wire APIs served; a POST to another's path answers 404 (as a server without it)."""
        self.models: list[str] | None = None
        """Model ids listed by `GET …/models` (`None`: that path answers 404)."""
        self.disconnected = threading.Event()
        """Set when a client closed its connection in the middle of a stream."""
        self.disconnects = 0
        """How many streams a client abandoned."""
        self.connections_accepted = 0
        """How many TCP connections the server accepted (keep-alive reuses one for many requests)."""
        self.nagle_connections = 0
        """Accepted connections that answer with Nagle's algorithm on (`TCP_NODELAY` unset): each
        response's second small write would then wait for the client's delayed ACK (~40 ms per
        request on a kept-alive connection), a cost no real provider has. It stays 0."""
        self.responder: Callable[[RecordedRequest], FakeReply | None] | None = None
        """Called (on the server's thread) for each model request before the queue: a reply it returns
        is served instead of the queue's next; `None` falls through to the queue."""
        self.in_flight = 0
        """Model requests being answered right now."""
        self.peak_in_flight = 0
        """The most model requests answered at once."""

    # --- lifecycle --------------------------------------------------------

    def start(self) -> FakeProviderServer:
        """Bind a random loopback port and serve in a background thread."""
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-provider", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, end slow streams and close every open connection."""
        self._closing.set()
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def port(self) -> int:
        """The bound port."""
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>` (Anthropic's base URL form)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>/v1` (OpenAI's base URL form)."""
        return f"{self.url}/v1"

    # --- queueing ---------------------------------------------------------

    def queue(self, reply: FakeReply) -> FakeReply:
        """Queue one reply; returns it."""
        with self._lock:
            self._replies.append(reply)
        return reply

    def queue_text(self, text: str | list[str], **options: Any) -> FakeReply:
        """Queue a text reply (`options` are further `FakeReply` fields)."""
        return self.queue(FakeReply(text=text, **options))

    def queue_tool_call(self, name: str, arguments: dict[str, Any], **options: Any) -> FakeReply:
        """Queue a reply making one tool call (`options` are further `FakeReply` fields)."""
        call_id = options.pop("call_id", None)
        return self.queue(FakeReply(tool_calls=[FakeToolCall(name, arguments, call_id)], **options))

    def queue_error(self, status: int, message: str = "", *, body: Any = None) -> FakeReply:
        """Queue an HTTP error reply in the API's own error shape (or exactly `body`)."""
        return self.queue(FakeReply(status=status, error_message=message, error_body=body))

    @property
    def pending(self) -> int:
        """Replies still queued."""
        with self._lock:
            return len(self._replies)

    # --- used by the handler ---------------------------------------------

    def _next_reply(self) -> FakeReply | None:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return self.default_reply

    def _next_id(self) -> int:
        with self._lock:
            return next(self._serial)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _answered(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
                self.connections_accepted += 1
                if not conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY):
                    self.nagle_connections += 1
            else:
                self._connections.discard(conn)

    def _client_went_away(self) -> None:
        with self._lock:
            self.disconnects += 1
        self.disconnected.set()
