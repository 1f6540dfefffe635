"""The trace context another process continues: a W3C `traceparent`, the trace file, `OTEL_*`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from corral._tracing._builtin import parse_traceparent

__all__ = ["PYDANTIC_AI_ENV", "TRACEPARENT_ENV", "TRACE_FILE_ENV", "TraceCarrier"]

TRACEPARENT_ENV = "TRACEPARENT"
"""The environment variable carrying a W3C trace context into a child process (OpenTelemetry's
environment-carrier convention)."""
TRACE_FILE_ENV = "CORRAL_TRACE_FILE"
"""The environment variable naming the `--trace` file a child process appends its spans to."""
PYDANTIC_AI_ENV = "CORRAL_TRACE_PYDANTIC_AI"
"""`1`/`true`: let pydantic-ai instrument its model requests too (OpenTelemetry backend only)."""


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
        if parse_traceparent(traceparent) is None:
            return None
        assert traceparent is not None
        otel = {k: v for k, v in environ.items() if k.startswith("OTEL_")}
        return cls(traceparent=traceparent, file=environ.get(TRACE_FILE_ENV) or None, otel_env=otel)
