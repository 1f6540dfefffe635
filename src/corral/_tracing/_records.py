"""The span records and the two small protocols both backends share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

__all__ = ["AttributeValue", "Span", "SpanRecord", "SpanSink", "Tracer"]

AttributeValue = str | int | float | bool
"""A span attribute's value (OpenTelemetry's primitive types)."""


@dataclass(slots=True)
class SpanRecord:
    """One finished span, as the sinks receive it."""

    name: str
    trace_id: str
    """32 lowercase hex digits."""
    span_id: str
    """16 lowercase hex digits."""
    parent_id: str | None
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttributeValue]
    error: str | None = None
    """The error description when the span failed."""


class SpanSink(Protocol):
    """Where finished spans go."""

    def export(self, record: SpanRecord) -> None:
        """Take one finished span (called on the thread that ended it; must not block long)."""

    def close(self) -> None:
        """No more spans come."""


class Span(Protocol):
    """A started span."""

    def set(self, key: str, value: AttributeValue) -> None:
        """Set one attribute."""

    def update(self, attributes: Mapping[str, AttributeValue]) -> None:
        """Set several attributes at once (one call into the backend)."""

    def fail(self, description: str) -> None:
        """Mark the span as failed."""

    def end(self) -> None:
        """End the span (once)."""


class Tracer(Protocol):
    """A tracing backend: starts spans, makes one current, names the current context."""

    def start(self, name: str, attributes: Mapping[str, AttributeValue], parent: Span | None = None) -> Span:
        """Start a span under `parent`, else the current one, else the process's remote parent, else as
        a new trace's root."""

    def current(self) -> Span | None:
        """The current span of this context (`None`: none)."""

    def remote(self, trace_id: str, span_id: str) -> Span:
        """A span of another process (never recorded here) to start spans under or make current."""

    def activate(self, span: Span) -> object:
        """Make `span` current in this context; the token for `deactivate`."""

    def deactivate(self, token: object) -> None:
        """Undo one `activate`."""

    def traceparent(self) -> str | None:
        """The current context as a W3C `traceparent` (`None`: no span)."""

    def shutdown(self) -> None:
        """Flush and release the backend."""
