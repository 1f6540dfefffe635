"""The built-in recorder: span ids, parentage through a context variable, sinks on end (the `--trace`
file, memory). No dependency; loaded only when tracing is turned on."""

from __future__ import annotations

import contextvars
import os
import random
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from corral._tracing._records import AttributeValue, Span, SpanRecord, SpanSink

__all__ = ["BuiltinTracer", "JsonLinesSink", "MemorySink", "parse_traceparent", "span_json"]


_encoder: Any = None


def _dumps(value: object) -> str:
    global _encoder
    if _encoder is None:
        import json

        _encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
    return _encoder.encode(value)  # type: ignore[no-any-return]


_second: list[Any] = [None, ""]


def _iso(ns: int) -> str:
    """`ns` since the epoch as OpenTelemetry's JSON writes it (UTC, microseconds, `Z`)."""
    seconds, rest = divmod(ns, 1_000_000_000)
    if _second[0] != seconds:  # spans end many to a second: format the second once
        _second[0], _second[1] = seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{_second[1]}.{rest // 1000:06d}Z"


def span_json(record: SpanRecord) -> dict[str, Any]:
    """`record` in OpenTelemetry's JSON span form (what the Python SDK's `ReadableSpan.to_json` writes)."""
    status: dict[str, str] = {"status_code": "UNSET"}
    if record.error is not None:
        status = {"status_code": "ERROR", "description": record.error}
    return {
        "name": record.name,
        "context": {
            "trace_id": f"0x{record.trace_id}",
            "span_id": f"0x{record.span_id}",
            "trace_state": "[]",
        },
        "kind": "SpanKind.INTERNAL",
        "parent_id": None if record.parent_id is None else f"0x{record.parent_id}",
        "start_time": _iso(record.start_ns),
        "end_time": _iso(record.end_ns),
        "status": status,
        "attributes": dict(record.attributes),
        "events": [],
        "links": [],
        "resource": {"attributes": {"service.name": "corral"}, "schema_url": ""},
    }


class MemorySink:
    """Keeps finished spans in a list (tests, benchmarks)."""

    def __init__(self) -> None:
        self.spans: list[SpanRecord] = []

    def export(self, record: SpanRecord) -> None:
        """Append `record`."""
        self.spans.append(record)

    def close(self) -> None:
        """Nothing to release."""


FLUSH_S = 0.2
"""Finished spans are written at least this often while spans end (and all at `close`)."""
_FLUSH_BYTES = 64 * 1024


class JsonLinesSink:
    """Appends finished spans to a file, one JSON line each (`0600`; several processes may append).

    Lines are buffered and written together — when an agent's span (`invoke_agent …`) ends, when a
    span ends `FLUSH_S` after the last write, when 64 KiB are pending, and at `close` — each batch in one `write` on an `O_APPEND` descriptor, so
    the lines of concurrent writers (a host and its tmux workers) do not interleave. A process killed
    outright loses at most its last `FLUSH_S` of spans.
    """

    def __init__(self, path: Path) -> None:
        import threading

        self.path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._pending: list[str] = []
        self._size = 0
        self._written = time.monotonic()
        self._lock = threading.Lock()

    def export(self, record: SpanRecord) -> None:
        """Write `record` as one line (`span_json`'s object; only the name, the status and the
        attributes go through the JSON encoder, the fixed parts are formatted)."""
        if self._fd is None:
            return
        dumps = _dumps
        status = '{"status_code":"UNSET"}'
        if record.error is not None:
            status = '{"status_code":"ERROR","description":' + dumps(record.error) + "}"
        parent = "null" if record.parent_id is None else f'"0x{record.parent_id}"'
        line = (
            f'{{"name":{dumps(record.name)},"context":{{"trace_id":"0x{record.trace_id}",'
            f'"span_id":"0x{record.span_id}","trace_state":"[]"}},"kind":"SpanKind.INTERNAL",'
            f'"parent_id":{parent},"start_time":"{_iso(record.start_ns)}","end_time":"{_iso(record.end_ns)}",'
            f'"status":{status},"attributes":{dumps(dict(record.attributes))},"events":[],"links":[],'
            f'"resource":{{"attributes":{{"service.name":"corral"}},"schema_url":""}}}}\n'
        )
        with self._lock:
            self._pending.append(line)
            self._size += len(line)
            if (
                self._size >= _FLUSH_BYTES
                or record.name.startswith("invoke_agent")  # an agent's spans are on disk when it ends
                or time.monotonic() - self._written >= FLUSH_S
            ):
                self._flush()

    def _flush(self) -> None:
        if self._pending and self._fd is not None:
            data = "".join(self._pending).encode("utf-8")
            self._pending.clear()
            self._size = 0
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        self._written = time.monotonic()

    def close(self) -> None:
        """Write what is pending and close the file."""
        with self._lock:
            if self._fd is not None:
                try:
                    self._flush()
                finally:
                    os.close(self._fd)
                    self._fd = None


_TRACE_FLAGS = "01"


def parse_traceparent(value: str | None) -> tuple[str, str] | None:
    """`(trace_id, span_id)` of a valid version-00 `traceparent`, else `None`."""
    if not value:
        return None
    parts = value.strip().lower().split("-")
    if len(parts) != 4 or parts[0] != "00" or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    try:
        int(parts[1], 16)
        int(parts[2], 16)
    except ValueError:
        return None
    if parts[1] == "0" * 32 or parts[2] == "0" * 16:
        return None
    return parts[1], parts[2]


class _BuiltinSpan:
    __slots__ = (
        "attributes",
        "ended",
        "error",
        "name",
        "parent_id",
        "sinks",
        "span_id",
        "start_ns",
        "trace_id",
    )

    def __init__(
        self,
        name: str,
        trace_id: str,
        parent_id: str | None,
        attributes: Mapping[str, AttributeValue],
        sinks: tuple[SpanSink, ...],
    ) -> None:
        self.name = name
        self.trace_id = trace_id
        self.span_id = f"{random.getrandbits(64) or 1:016x}"
        self.parent_id = parent_id
        self.attributes = dict(attributes)
        self.sinks = sinks
        self.start_ns = time.time_ns()
        self.error: str | None = None
        self.ended = False

    def set(self, key: str, value: AttributeValue) -> None:
        self.attributes[key] = value

    def update(self, attributes: Mapping[str, AttributeValue]) -> None:
        self.attributes.update(attributes)

    def fail(self, description: str) -> None:
        self.error = description

    def end(self) -> None:
        if self.ended:
            return
        self.ended = True
        record = SpanRecord(
            name=self.name,
            trace_id=self.trace_id,
            span_id=self.span_id,
            parent_id=self.parent_id,
            start_ns=self.start_ns,
            end_ns=time.time_ns(),
            attributes=self.attributes,
            error=self.error,
        )
        for sink in self.sinks:
            sink.export(record)


_current: contextvars.ContextVar[_BuiltinSpan | None] = contextvars.ContextVar("corral_span", default=None)


class BuiltinTracer:
    """The built-in recorder: span ids, parentage through a context variable, sinks on end."""

    def __init__(self, sinks: tuple[SpanSink, ...], remote: tuple[str, str] | None) -> None:
        self.sinks = sinks
        self.parent = remote

    def start(self, name: str, attributes: Mapping[str, AttributeValue], parent: Span | None = None) -> Span:
        if not isinstance(parent, _BuiltinSpan):
            parent = _current.get()
        if parent is not None:
            trace_id, parent_id = parent.trace_id, parent.span_id
        elif self.parent is not None:
            trace_id, parent_id = self.parent
        else:
            trace_id, parent_id = f"{random.getrandbits(128) or 1:032x}", None
        return _BuiltinSpan(name, trace_id, parent_id, attributes, self.sinks)

    def current(self) -> Span | None:
        return _current.get()

    def remote(self, trace_id: str, span_id: str) -> Span:
        span = _BuiltinSpan("remote", trace_id, None, {}, ())
        span.span_id = span_id
        span.ended = True  # never exported
        return span

    def activate(self, span: Span) -> object:
        assert isinstance(span, _BuiltinSpan)
        return _current.set(span)

    def deactivate(self, token: object) -> None:
        _current.reset(token)  # type: ignore[arg-type]

    def traceparent(self) -> str | None:
        span = _current.get()
        if span is not None:
            return f"00-{span.trace_id}-{span.span_id}-{_TRACE_FLAGS}"
        if self.parent is not None:
            return f"00-{self.parent[0]}-{self.parent[1]}-{_TRACE_FLAGS}"
        return None

    def shutdown(self) -> None:
        for sink in self.sinks:
            sink.close()
