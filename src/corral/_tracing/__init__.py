"""Traces of a lead run and every agent it owns: spans through no-op-by-default hooks.

Off by default, and then free: `active` is `None` and every call site checks that one module
attribute before it builds a span (nothing else of tracing is imported; OpenTelemetry never is).
`setup()` turns it on for this process with one backend:

- **OpenTelemetry** (the `corral[otel]` extra) when the standard `OTEL_*` environment variables ask
  for an exporter (`OTEL_TRACES_EXPORTER`, `OTEL_EXPORTER_OTLP_ENDPOINT` or
  `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `OTEL_SDK_DISABLED=true` wins), or when a `TracerProvider` is
  passed in. Spans are OpenTelemetry spans, current in OpenTelemetry's context, so pydantic-ai's own
  instrumentation (`model_instrumentation()`) nests under corral's model-request spans.
- **The built-in recorder** otherwise: a few lines of span bookkeeping with no dependency.

Either backend writes the spans to a `--trace FILE` (one JSON object per line, OpenTelemetry's JSON
span form) and to any in-memory `MemorySink` (tests). Context crosses processes as a W3C
`traceparent` in a `TraceCarrier` (a tmux worker's environment; a Ray task's arguments): the other
process calls `resume(carrier)` and its spans join the same trace.
"""

from __future__ import annotations

import contextvars
import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from corral._tracing._records import AttributeValue, Span, SpanRecord, SpanSink

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

__all__ = [
    "TRACEPARENT_ENV",
    "TRACE_FILE_ENV",
    "AttributeValue",
    "JsonLinesSink",
    "MemorySink",
    "Span",
    "SpanRecord",
    "SpanSink",
    "TraceCarrier",
    "Tracer",
    "active",
    "current_carrier",
    "model_instrumentation",
    "otel_requested",
    "resume",
    "setup",
    "shutdown",
    "span",
    "span_json",
]

TRACEPARENT_ENV = "TRACEPARENT"
"""The environment variable carrying a W3C trace context into a child process (OpenTelemetry's
environment-carrier convention)."""
TRACE_FILE_ENV = "CORRAL_TRACE_FILE"
"""The environment variable naming the `--trace` file a child process appends its spans to."""
PYDANTIC_AI_ENV = "CORRAL_TRACE_PYDANTIC_AI"
"""`1`/`true`: let pydantic-ai instrument its model requests too (OpenTelemetry backend only)."""

active: Tracer | None = None
"""The process's tracer; `None` while tracing is off (the only thing hot paths look at)."""


# --- records and sinks ------------------------------------------------------------------------


def _iso(ns: int) -> str:
    """`ns` since the epoch as OpenTelemetry's JSON writes it (UTC, microseconds, `Z`)."""
    seconds, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest // 1000:06d}Z"


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


class JsonLinesSink:
    """Appends each finished span to a file as one JSON line (`0600`; several processes may append).

    Each line is one `write` on an `O_APPEND` descriptor, so lines of concurrent writers (a host and
    its tmux workers) do not interleave.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def export(self, record: SpanRecord) -> None:
        """Write `record` as one line."""
        self.write_line(span_json(record))

    def write_line(self, data: Mapping[str, Any]) -> None:
        """Write one JSON object as a line."""
        import json

        if self._fd is None:
            return
        line = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
        os.write(self._fd, line.encode("utf-8"))

    def close(self) -> None:
        """Close the file."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


# --- spans and tracers ------------------------------------------------------------------------


class Tracer(Protocol):
    """A tracing backend: starts spans, makes one current, names the current context."""

    def start(self, name: str, attributes: Mapping[str, AttributeValue], parent: Span | None = None) -> Span:
        """Start a span under `parent`, else the current one, else the process's remote parent, else as
        a new trace's root."""

    def current(self) -> Span | None:
        """The current span of this context (`None`: none)."""

    def activate(self, span: Span) -> object:
        """Make `span` current in this context; the token for `deactivate`."""

    def deactivate(self, token: object) -> None:
        """Undo one `activate`."""

    def traceparent(self) -> str | None:
        """The current context as a W3C `traceparent` (`None`: no span)."""

    def shutdown(self) -> None:
        """Flush and release the backend."""


_TRACE_FLAGS = "01"


def _parse_traceparent(value: str | None) -> tuple[str, str] | None:
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


class _BuiltinTracer:
    """The built-in recorder: span ids, parentage through a context variable, sinks on end."""

    def __init__(self, sinks: tuple[SpanSink, ...], remote: tuple[str, str] | None) -> None:
        self.sinks = sinks
        self.remote = remote

    def start(self, name: str, attributes: Mapping[str, AttributeValue], parent: Span | None = None) -> Span:
        if not isinstance(parent, _BuiltinSpan):
            parent = _current.get()
        if parent is not None:
            trace_id, parent_id = parent.trace_id, parent.span_id
        elif self.remote is not None:
            trace_id, parent_id = self.remote
        else:
            trace_id, parent_id = f"{random.getrandbits(128) or 1:032x}", None
        return _BuiltinSpan(name, trace_id, parent_id, attributes, self.sinks)

    def current(self) -> Span | None:
        return _current.get()

    def activate(self, span: Span) -> object:
        assert isinstance(span, _BuiltinSpan)
        return _current.set(span)

    def deactivate(self, token: object) -> None:
        _current.reset(token)  # type: ignore[arg-type]

    def traceparent(self) -> str | None:
        span = _current.get()
        if span is not None:
            return f"00-{span.trace_id}-{span.span_id}-{_TRACE_FLAGS}"
        if self.remote is not None:
            return f"00-{self.remote[0]}-{self.remote[1]}-{_TRACE_FLAGS}"
        return None

    def shutdown(self) -> None:
        for sink in self.sinks:
            sink.close()


# --- carrying the context into another process ------------------------------------------------


@dataclass(frozen=True, slots=True)
class TraceCarrier:
    """What another process needs to continue this trace: the W3C context, the trace file, the
    `OTEL_*` configuration. Plain strings, so it travels in an environment or a task's arguments."""

    traceparent: str
    file: str | None = None
    otel_env: Mapping[str, str] = field(default_factory=dict)

    def as_env(self) -> dict[str, str]:
        """The carrier as environment variables (`TRACEPARENT`, `CORRAL_TRACE_FILE`, `OTEL_*`)."""
        env = dict(self.otel_env)
        env[TRACEPARENT_ENV] = self.traceparent
        if self.file is not None:
            env[TRACE_FILE_ENV] = self.file
        return env

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> TraceCarrier | None:
        """The carrier a parent put into `environ`, or `None`."""
        traceparent = environ.get(TRACEPARENT_ENV)
        if _parse_traceparent(traceparent) is None:
            return None
        assert traceparent is not None
        otel = {k: v for k, v in environ.items() if k.startswith("OTEL_")}
        return cls(traceparent=traceparent, file=environ.get(TRACE_FILE_ENV) or None, otel_env=otel)


_file: Path | None = None
_pydantic_ai = False
_otel_provider: TracerProvider | None = None


def current_carrier() -> TraceCarrier | None:
    """The carrier for a process started now, from the current span; `None` while tracing is off.

    A runtime that starts agents in other processes (tmux, Ray) calls this where it launches one and
    hands the result over (`TraceCarrier.as_env()` for an environment); the other side calls `resume`.
    """
    tracer = active
    if tracer is None:
        return None
    traceparent = tracer.traceparent()
    if traceparent is None:
        return None
    otel = {k: v for k, v in os.environ.items() if k.startswith("OTEL_")}
    if _pydantic_ai:
        otel[PYDANTIC_AI_ENV] = "1"
    return TraceCarrier(traceparent=traceparent, file=None if _file is None else str(_file), otel_env=otel)


def otel_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the standard `OTEL_*` variables ask for an exporter (and the SDK is not disabled)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def setup(
    *,
    file: Path | None = None,
    sinks: tuple[SpanSink, ...] = (),
    otel_provider: TracerProvider | None = None,
    parent: str | None = None,
    pydantic_ai: bool | None = None,
    environ: Mapping[str, str] | None = None,
) -> Tracer | None:
    """Turn tracing on for this process (replacing an earlier setup); the tracer, or `None` (off).

    Args:
        file: Append every span to this file as JSON lines.
        sinks: More sinks (e.g. a `MemorySink`).
        otel_provider: Use this OpenTelemetry `TracerProvider` (else one is built from `OTEL_*` when
            they ask for an exporter).
        parent: A `traceparent` this process's spans start under (a worker continuing a trace).
        pydantic_ai: Let pydantic-ai instrument model requests (default: `CORRAL_TRACE_PYDANTIC_AI`).
        environ: The environment to read (default `os.environ`).

    Raises:
        OSError: The trace file cannot be opened for appending.
        ImportError: OpenTelemetry is asked for but the `corral[otel]` extra is not installed.
    """
    global active, _file, _pydantic_ai, _otel_provider
    shutdown()
    env = os.environ if environ is None else environ
    remote = _parse_traceparent(parent)
    use_otel = otel_provider is not None or otel_requested(env)
    if not use_otel and file is None and not sinks:
        return None
    file_sink = None if file is None else JsonLinesSink(file)
    all_sinks = sinks if file_sink is None else (file_sink, *sinks)
    tracer: Tracer
    if use_otel:
        from corral._tracing._otel import OtelTracer

        tracer = OtelTracer(all_sinks, remote, provider=otel_provider, environ=env)
        _otel_provider = tracer.provider
    else:
        tracer = _BuiltinTracer(all_sinks, remote)
    _file = None if file is None else file.resolve()
    _pydantic_ai = _truthy(env.get(PYDANTIC_AI_ENV)) if pydantic_ai is None else pydantic_ai
    active = tracer
    return tracer


def resume(carrier: TraceCarrier | None) -> Tracer | None:
    """Continue a parent process's trace here (a worker's start); `None` when the parent traced nothing."""
    if carrier is None:
        return None
    for key, value in carrier.otel_env.items():  # the exporters read their settings from os.environ
        os.environ.setdefault(key, value)
    return setup(
        file=None if carrier.file is None else Path(carrier.file),
        parent=carrier.traceparent,
        environ=carrier.otel_env,
    )


def shutdown() -> None:
    """End tracing in this process: flush the exporters, close the file (safe to call when off)."""
    global active, _file, _pydantic_ai, _otel_provider
    tracer, active = active, None
    _file, _pydantic_ai, _otel_provider = None, False, None
    if tracer is not None:
        tracer.shutdown()


def model_instrumentation() -> TracerProvider | None:
    """The `TracerProvider` pydantic-ai should instrument model requests with, or `None` (not asked
    for, or the built-in recorder is in use)."""
    return _otel_provider if _pydantic_ai and active is not None else None


class span:
    """A span current for a `with` block, under the current one; nothing at all while tracing is off.

    An exception leaving the block marks the span failed (and propagates).
    """

    __slots__ = ("_attributes", "_name", "_span", "_token")

    def __init__(self, name: str, attributes: Mapping[str, AttributeValue] | None = None) -> None:
        self._name = name
        self._attributes = attributes
        self._span: Span | None = None
        self._token: object = None

    def __enter__(self) -> Span | None:
        tracer = active
        if tracer is None:
            return None
        self._span = tracer.start(self._name, self._attributes or {})
        self._token = tracer.activate(self._span)
        return self._span

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        current = self._span
        if current is None:
            return
        self._span = None
        if exc is not None:
            current.fail(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        tracer = active
        if tracer is not None:
            tracer.deactivate(self._token)
        current.end()
