"""A lead's root span: what `corral run`, the app, `corral.open_lead` and `corral mcp` open for a traced
lead, so every turn, model request, tool call and agent of that lead is one trace."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import corral._tracing as _tracing
from corral._install import missing_extra
from corral.errors import UsageError

if TYPE_CHECKING:
    from corral._tracing._records import Span, Tracer

__all__ = ["RunTrace", "start_run_trace"]


@dataclass
class RunTrace:
    """A traced lead's root span, until `close`; `owned`: this run set tracing up and turns it off."""

    tracer: Tracer
    root: Span
    token: object
    owned: bool = True

    def close(self, *, code: int | None = None) -> None:
        """End the root span (with the exit code), and when `owned` flush and turn tracing off."""
        if code is not None:
            self.root.set("corral.exit_code", code)
            if code != 0:
                self.root.fail(f"exit code {code}")
        if self.token is not None:
            self.tracer.deactivate(self.token)
            self.token = None
        self.root.end()
        if self.owned and _tracing.active is self.tracer:
            _tracing.shutdown()


def start_run_trace(
    file: Path | None, *, command: str, activate: bool = True, reuse_active: bool = False
) -> RunTrace | None:
    """Turn tracing on for a lead (a trace file and/or the `OTEL_*` exporters) and open its root span;
    `None` when nothing asks for traces.

    Args:
        file: Append the spans to this file (`--trace FILE`, `open_lead(trace=...)`).
        command: What opened the lead (`run`, `app`, `api`, `mcp`), the root's `corral.command`.
        activate: Make the root current in this context until `close` (a front end that runs the lead
            in the caller's context); else the caller makes it current where it needs it.
        reuse_active: Without a file, open the root under tracing this process set up already (a
            program that called `_tracing.setup` itself) and leave that tracing on at `close`.

    Raises:
        UsageError: The trace file cannot be written, or OpenTelemetry is asked for without the
            `corral[otel]` extra or with an unknown exporter.
    """
    owned = True
    tracer: Tracer | None
    if file is None and reuse_active and _tracing.active is not None:
        tracer, owned = _tracing.active, False
    else:
        if file is None and not _tracing.otel_requested():
            return None
        if file is not None and file.is_dir():
            raise UsageError(f"trace {file} is a directory: give a file to append the spans to")
        try:
            tracer = _tracing.setup(file=file)
        except OSError as exc:
            raise UsageError(f"cannot write the trace file {file}: {exc.strerror or exc}") from None
        except ImportError as exc:
            raise UsageError(
                missing_extra(
                    "otel", f"OTEL_* asks for OpenTelemetry traces but they cannot be exported ({exc})"
                )
                + "; or unset OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT"
            ) from None
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if tracer is None:
            return None
    root = tracer.start(
        "invoke_agent lead",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "lead",
            "corral.agent": "lead",
            "corral.command": command,
        },
    )
    return RunTrace(tracer, root, tracer.activate(root) if activate else None, owned)
