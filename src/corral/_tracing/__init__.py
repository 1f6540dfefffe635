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

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

    from corral._tracing._carrier import TraceCarrier
    from corral._tracing._records import AttributeValue, Span, SpanSink, Tracer

# The package defines only the switch and the hooks below, so importing it loads no class of the
# recorder and no dataclass; it re-exports nothing: import the rest from the module that defines it
# (`_builtin`: `MemorySink`, `JsonLinesSink`; `_carrier`: `TraceCarrier`; `_records`: `Span`, `Tracer`).
__all__ = [
    "active",
    "current_carrier",
    "model_instrumentation",
    "otel_requested",
    "resume",
    "setup",
    "setup_for",
    "shutdown",
    "span",
    "under_carrier",
]

active: Tracer | None = None
"""The process's tracer; `None` while tracing is off (the only thing hot paths look at)."""


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
    from corral._tracing._carrier import PYDANTIC_AI_ENV, TraceCarrier

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
    from corral._tracing._builtin import BuiltinTracer, JsonLinesSink, parse_traceparent
    from corral._tracing._carrier import PYDANTIC_AI_ENV

    remote = parse_traceparent(parent)
    use_otel = otel_provider is not None or otel_requested(env)
    if not use_otel and file is None and not sinks:
        return None
    file_sink = None if file is None else JsonLinesSink(file)
    all_sinks = sinks if file_sink is None else (file_sink, *sinks)
    tracer: Tracer
    if use_otel:
        try:
            from corral._tracing._otel import OtelTracer

            tracer = OtelTracer(all_sinks, remote, provider=otel_provider, environ=env)
        except BaseException:
            if file_sink is not None:
                file_sink.close()
            raise
        _otel_provider = tracer.provider
    else:
        tracer = BuiltinTracer(all_sinks, remote)
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


class under_carrier:
    """Make a carrier's span current for a `with` block, so what it starts (a task: `create_task`
    copies the context) continues that trace: a process running agents of several parents (a Ray
    worker) uses this per agent instead of `resume`. Tracing must be set up in this process already
    (`setup_for(carrier)`); nothing happens while it is off or without a carrier."""

    __slots__ = ("_carrier", "_token", "_tracer")

    def __init__(self, carrier: TraceCarrier | None) -> None:
        self._carrier = carrier
        self._tracer: Tracer | None = None
        self._token: object = None

    def __enter__(self) -> None:
        tracer = active
        if tracer is None or self._carrier is None:
            return
        from corral._tracing._builtin import parse_traceparent

        ids = parse_traceparent(self._carrier.traceparent)
        if ids is None:
            return
        self._tracer = tracer
        self._token = tracer.activate(tracer.remote(*ids))

    def __exit__(self, *exc: object) -> None:
        if self._tracer is not None:
            self._tracer.deactivate(self._token)
            self._tracer = None


def setup_for(carrier: TraceCarrier | None) -> Tracer | None:
    """Turn tracing on in a long-lived worker process for a carrier's trace, once (no process-wide
    parent: each agent runs `under_carrier` its own). The trace file is used when this machine can
    append to it (else only the `OTEL_*` exporters, if any); a failure leaves tracing off."""
    if carrier is None or active is not None:
        return active
    for key, value in carrier.otel_env.items():
        os.environ.setdefault(key, value)
    file = None if carrier.file is None else Path(carrier.file)
    if file is not None and not file.parent.is_dir():
        file = None
    try:
        return setup(file=file, environ=carrier.otel_env)
    except (OSError, ImportError, ValueError):
        return None


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
