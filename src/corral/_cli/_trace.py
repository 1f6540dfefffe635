"""`--trace FILE` for `corral run` and the app, and `corral trace FILE`: the span tree in the terminal.

A traced front end opens one root span for the lead's run (`invoke_agent lead`) and keeps it current
while the run lasts, so every turn, model request, tool call and agent of the run is one trace.
`corral trace` reads the JSON lines back (OpenTelemetry's JSON span form, from corral or any SDK
that writes that form) and prints each trace as a tree: span, agent, duration, tokens, cost.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from corral._tracing._run import RunTrace, start_run_trace
from corral.errors import UsageError

__all__ = ["RunTrace", "TraceSpan", "read_trace", "render_trace", "start_run_trace"]


# --- reading a trace file ---------------------------------------------------------------------------


@dataclass
class TraceSpan:
    """One span read back from a trace file."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    start: datetime
    end: datetime
    attributes: dict[str, Any]
    failed: bool
    children: list[TraceSpan] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        """Its duration."""
        return max(0.0, (self.end - self.start).total_seconds())

    def totals(self) -> tuple[int, float]:
        """Tokens (input + output) and cost (USD) of the model requests in its subtree."""
        attrs = self.attributes
        tokens = _int(attrs.get("gen_ai.usage.input_tokens")) + _int(attrs.get("gen_ai.usage.output_tokens"))
        cost = _float(attrs.get("corral.cost_usd"))
        for child in self.children:
            more_tokens, more_cost = child.totals()
            tokens += more_tokens
            cost += more_cost
        return tokens, cost


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _hex_id(value: object, digits: int, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} is not a string")
    text = value.lower().removeprefix("0x")
    if len(text) != digits or any(c not in "0123456789abcdef" for c in text):
        raise ValueError(f"{what} {value!r} is not {digits} hex digits")
    return text


def _time(value: object, what: str) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"{what} is not a timestamp")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{what} {value!r} is not an ISO 8601 timestamp") from None


def _span(data: object) -> TraceSpan:
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    name = data.get("name")
    context = data.get("context")
    if not isinstance(name, str):
        raise ValueError("no span name")
    if not isinstance(context, dict):
        raise ValueError("no context object")
    parent = data.get("parent_id")
    attributes = data.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise ValueError("attributes is not an object")
    status = data.get("status")
    return TraceSpan(
        name=name,
        trace_id=_hex_id(context.get("trace_id"), 32, "context.trace_id"),
        span_id=_hex_id(context.get("span_id"), 16, "context.span_id"),
        parent_id=None if parent is None else _hex_id(parent, 16, "parent_id"),
        start=_time(data.get("start_time"), "start_time"),
        end=_time(data.get("end_time"), "end_time"),
        attributes=attributes,
        failed=isinstance(status, dict) and status.get("status_code") == "ERROR",
    )


def read_trace(path: Path) -> list[TraceSpan]:
    """The spans of a trace file, linked into trees; the roots, oldest first.

    Raises:
        UsageError: The file cannot be read, holds no spans, or a line is not a span.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the trace file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not a trace file: it is not UTF-8 text") from None
    spans: list[TraceSpan] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            spans.append(_span(json.loads(line)))
        except RecursionError:
            raise UsageError(
                f"{path} is not a trace file: line {number} nests JSON too deeply to read; "
                "write one with corral run --trace FILE"
            ) from None
        except ValueError as exc:  # json.JSONDecodeError is one
            raise UsageError(
                f"{path} is not a trace file: line {number} is not a span in OpenTelemetry's JSON form "
                f"({exc}); write one with corral run --trace FILE"
            ) from None
    if not spans:
        raise UsageError(f"the trace file {path} holds no spans")
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    roots: list[TraceSpan] = []
    for span in spans:
        parent = None if span.parent_id is None else by_id.get((span.trace_id, span.parent_id))
        (roots if parent is None else parent.children).append(span)
    for span in spans:
        span.children.sort(key=lambda s: s.start)
    roots.sort(key=lambda s: s.start)
    return roots


def _label(span: TraceSpan) -> str:
    if span.name == "corral.turn" and "corral.turn" in span.attributes:
        return f"turn {span.attributes['corral.turn']}"
    return span.name


def _figures(span: TraceSpan) -> str:
    tokens, cost = span.totals()
    parts = [f"{span.seconds:.2f} s"]
    if tokens:
        parts.append(f"{tokens:,} tok")
    if cost:
        parts.append(f"${cost:.4f}")
    if span.failed:
        parts.append("error")
    return "  ".join(parts)


def render_trace(path: Path, out: TextIO) -> None:
    """Print every trace of `path` as a tree: span, agent, duration, tokens, cost.

    Raises:
        UsageError: `read_trace` refused the file.
    """
    roots = read_trace(path)
    rows: list[tuple[str, str, str]] = []

    def walk(span: TraceSpan, lead: str, tail: str) -> None:
        agent = span.attributes.get("corral.agent")
        rows.append((lead + _label(span), agent if isinstance(agent, str) else "", _figures(span)))
        for index, child in enumerate(span.children):
            last = index == len(span.children) - 1
            walk(child, tail + ("└─ " if last else "├─ "), tail + ("   " if last else "│  "))

    traces: dict[str, list[TraceSpan]] = {}
    for root in roots:
        traces.setdefault(root.trace_id, []).append(root)
    for number, (trace_id, members) in enumerate(traces.items()):
        if number:
            rows.append(("", "", ""))
        count = sum(_count(m) for m in members)
        agents = len({a for m in members for a in _agents(m)})
        tokens = sum(m.totals()[0] for m in members)
        cost = sum(m.totals()[1] for m in members)
        start = min(m.start for m in members)
        seconds = (max(m.end for m in members) - start).total_seconds()
        rows.append(
            (
                f"trace {trace_id}",
                f"{agents} agent{'s' if agents != 1 else ''}",
                f"{count} spans  {seconds:.2f} s  {tokens:,} tok  ${cost:.4f}  "
                f"{start.strftime('%Y-%m-%d %H:%M:%S')} UTC",
            )
        )
        for member in members:
            walk(member, "", "")
    width = min(72, max(len(r[0]) for r in rows))
    agent_width = min(24, max(len(r[1]) for r in rows))
    for name, agent, figures in rows:
        if not name:
            print(file=out)
            continue
        print(f"{name:<{width}}  {agent:<{agent_width}}  {figures}".rstrip(), file=out)


def _count(span: TraceSpan) -> int:
    return 1 + sum(_count(c) for c in span.children)


def _agents(span: TraceSpan) -> set[str]:
    agent = span.attributes.get("corral.agent")
    found = {agent} if isinstance(agent, str) else set()
    for child in span.children:
        found |= _agents(child)
    return found
