"""The OpenTelemetry backend (the `corral[otel]` extra), imported only when it is asked for.

Spans are SDK spans made current in OpenTelemetry's own context, so anything else instrumented with
OpenTelemetry in the process (pydantic-ai's model requests) nests under them. Exporters follow the
standard variables: `OTEL_TRACES_EXPORTER` (`otlp` by default, `console`, `none`; several separated
by commas), `OTEL_EXPORTER_OTLP_*` (endpoint, headers, `…_PROTOCOL`: `http/protobuf` by default,
`grpc` with `opentelemetry-exporter-otlp-proto-grpc` installed), `OTEL_SERVICE_NAME`,
`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

from corral._tracing._records import AttributeValue, Span, SpanRecord, SpanSink
from corral._version import __version__

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import Span as SdkSpan

__all__ = ["OtelTracer", "provider_from_env"]


def _exporter(name: str, environ: Mapping[str, str]) -> SpanExporter:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if name != "otlp":
        raise ValueError(f"unknown OTEL_TRACES_EXPORTER {name!r}: use otlp, console or none")
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    ).strip()
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
                OTLPSpanExporter,
            )
        except ImportError as exc:
            raise ImportError(
                f"OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs opentelemetry-exporter-otlp-proto-grpc ({exc}); "
                "pip install it, or use http/protobuf"
            ) from None
        return OTLPSpanExporter()  # type: ignore[no-any-return,unused-ignore]
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter()


def provider_from_env(environ: Mapping[str, str]) -> TracerProvider:
    """A `TracerProvider` with the exporters `OTEL_TRACES_EXPORTER` names (batched)."""
    names = [n.strip().lower() for n in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if n.strip()]
    named = environ.get("OTEL_SERVICE_NAME") or "service.name=" in environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; `corral` when they name none.
    provider = TracerProvider(resource=Resource.create({} if named else {"service.name": "corral"}))
    for name in names or ["otlp"]:
        if name != "none":
            provider.add_span_processor(BatchSpanProcessor(_exporter(name, environ)))
    return provider


def _value(value: object) -> AttributeValue:
    if isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Sequence):
        return ", ".join(str(item) for item in value)
    return str(value)


_SCOPE = "corral"
"""The instrumentation scope of corral's spans."""


class _SinkProcessor(SpanProcessor):
    """Hands finished spans to corral's sinks (the `--trace` file, memory).

    corral's own spans are handed over by `_OtelSpan.end` from what corral already holds (no reading
    back of the SDK's attribute mapping); this processor takes the spans of other instrumentation in
    the process (pydantic-ai's model requests), told apart by their instrumentation scope.
    """

    def __init__(self, sinks: tuple[SpanSink, ...]) -> None:
        self.sinks = sinks
        self.closed = False

    def export(self, record: SpanRecord) -> None:
        if self.closed:
            return
        for sink in self.sinks:
            sink.export(record)

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        scope = span.instrumentation_scope
        if self.closed or context is None or (scope is not None and scope.name == _SCOPE):
            return
        status = span.status
        self.export(
            SpanRecord(
                name=span.name,
                trace_id=f"{context.trace_id:032x}",
                span_id=f"{context.span_id:016x}",
                parent_id=None if span.parent is None else f"{span.parent.span_id:016x}",
                start_ns=span.start_time or 0,
                end_ns=span.end_time or 0,
                attributes={k: _value(v) for k, v in (span.attributes or {}).items()},
                error=(status.description or "error") if status.status_code is StatusCode.ERROR else None,
            )
        )

    def shutdown(self) -> None:
        self.closed = True
        for sink in self.sinks:
            sink.close()


class _OtelSpan:
    """An SDK span plus corral's copy of its attributes and error, for the sinks when it ends."""

    __slots__ = ("attributes", "error", "inner", "out")

    def __init__(
        self,
        inner: trace.Span,
        attributes: Mapping[str, AttributeValue] | None = None,
        out: _SinkProcessor | None = None,
    ) -> None:
        self.inner = inner
        self.out = out
        self.attributes: dict[str, AttributeValue] = {} if attributes is None else dict(attributes)
        self.error: str | None = None

    def set(self, key: str, value: AttributeValue) -> None:
        self.inner.set_attribute(key, value)
        self.attributes[key] = value

    def update(self, attributes: Mapping[str, AttributeValue]) -> None:
        self.inner.set_attributes(attributes)
        self.attributes.update(attributes)

    def fail(self, description: str) -> None:
        self.inner.set_status(Status(StatusCode.ERROR, description))
        self.error = description

    def end(self) -> None:
        inner = self.inner
        out, self.out = self.out, None  # a second `end` records nothing
        inner.end()
        if out is None or out.closed:
            return
        sdk = cast("SdkSpan", inner)
        context = sdk.get_span_context()
        parent = sdk.parent
        out.export(
            SpanRecord(
                name=sdk.name,
                trace_id=f"{context.trace_id:032x}",
                span_id=f"{context.span_id:016x}",
                parent_id=None if parent is None else f"{parent.span_id:016x}",
                start_ns=sdk.start_time or 0,
                end_ns=sdk.end_time or 0,
                attributes=self.attributes,
                error=self.error,
            )
        )


class OtelTracer:
    """corral's tracer over an OpenTelemetry `TracerProvider`."""

    def __init__(
        self,
        sinks: tuple[SpanSink, ...],
        remote: tuple[str, str] | None,
        *,
        provider: TracerProvider | None,
        environ: Mapping[str, str],
    ) -> None:
        self.owned = provider is None
        self.provider = provider_from_env(environ) if provider is None else provider
        self.sinks = sinks
        self._processor: _SinkProcessor | None = None
        if sinks:
            self._processor = _SinkProcessor(sinks)
            self.provider.add_span_processor(self._processor)
        self._tracer = self.provider.get_tracer(_SCOPE, __version__)
        self._remote: otel_context.Context | None = None
        if remote is not None:
            parent = SpanContext(
                trace_id=int(remote[0], 16),
                span_id=int(remote[1], 16),
                is_remote=True,
                trace_flags=TraceFlags(TraceFlags.SAMPLED),
            )
            self._remote = trace.set_span_in_context(NonRecordingSpan(parent))

    def start(self, name: str, attributes: Mapping[str, AttributeValue], parent: Span | None = None) -> Span:
        context = None
        if isinstance(parent, _OtelSpan):
            context = trace.set_span_in_context(parent.inner)
        elif self._remote is not None and not trace.get_current_span().get_span_context().is_valid:
            context = self._remote
        return _OtelSpan(
            self._tracer.start_span(name, context=context, attributes=attributes), attributes, self._processor
        )

    def remote(self, trace_id: str, span_id: str) -> Span:
        parent = SpanContext(
            trace_id=int(trace_id, 16),
            span_id=int(span_id, 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        return _OtelSpan(NonRecordingSpan(parent))

    def current(self) -> Span | None:
        span = trace.get_current_span()
        return _OtelSpan(span) if span.get_span_context().is_valid else None

    def activate(self, span: Span) -> object:
        assert isinstance(span, _OtelSpan)
        return otel_context.attach(trace.set_span_in_context(span.inner))

    def deactivate(self, token: object) -> None:
        otel_context.detach(token)  # type: ignore[arg-type]

    def traceparent(self) -> str | None:
        context = trace.get_current_span().get_span_context()
        if not context.is_valid and self._remote is not None:
            context = trace.get_current_span(self._remote).get_span_context()
        if not context.is_valid:
            return None
        return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"

    def shutdown(self) -> None:
        if self.owned:
            self.provider.shutdown()
            return
        self.provider.force_flush()
        if self._processor is not None:
            self._processor.shutdown()
