"""The tracing module: off means nothing, the built-in recorder and the OpenTelemetry backend record the
same parentage, the carrier crosses into another process's context, spans are OTel's JSON form."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral import _tracing
from corral._tracing._builtin import MemorySink
from corral._tracing._carrier import TraceCarrier
from tests.otel_extra import require_otel

require_otel()

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

NO_OTEL: dict[str, str] = {}


@pytest.fixture(autouse=True)
def _off() -> Iterator[None]:
    _tracing.shutdown()
    yield
    _tracing.shutdown()


def _otel() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


async def _workload() -> None:
    """A root, a child in the same task, and two grandchildren in tasks created under the child."""

    async def leaf(name: str) -> None:
        with _tracing.span(name, {"corral.agent": name}):
            await asyncio.sleep(0)

    with _tracing.span("root"), _tracing.span("tool"):
        await asyncio.gather(asyncio.ensure_future(leaf("a")), asyncio.ensure_future(leaf("b")))


def test_off_records_nothing_and_the_carrier_is_none() -> None:
    assert _tracing.setup(environ=NO_OTEL) is None
    assert _tracing.active is None
    with _tracing.span("x") as span:
        assert span is None
    assert _tracing.current_carrier() is None


@pytest.mark.parametrize("backend", ["builtin", "otel"])
def test_both_backends_record_the_same_parentage_across_tasks(backend: str) -> None:
    memory = MemorySink()
    provider = _otel()[0] if backend == "otel" else None
    _tracing.setup(sinks=(memory,), otel_provider=provider, environ=NO_OTEL)
    asyncio.run(_workload())
    by_name = {s.name: s for s in memory.spans}
    assert set(by_name) == {"root", "tool", "a", "b"}
    assert len({s.trace_id for s in memory.spans}) == 1
    assert by_name["root"].parent_id is None
    assert by_name["tool"].parent_id == by_name["root"].span_id
    assert by_name["a"].parent_id == by_name["tool"].span_id
    assert by_name["b"].parent_id == by_name["tool"].span_id
    assert by_name["a"].attributes["corral.agent"] == "a"


def test_an_exception_marks_the_span_failed() -> None:
    memory = MemorySink()
    _tracing.setup(sinks=(memory,), environ=NO_OTEL)
    with pytest.raises(ValueError), _tracing.span("boom"):
        raise ValueError("bad input")
    [span] = memory.spans
    assert span.error == "ValueError: bad input"


@pytest.mark.parametrize("backend", ["builtin", "otel"])
def test_a_resumed_process_continues_the_trace_under_the_carried_span(backend: str) -> None:
    memory = MemorySink()
    _tracing.setup(sinks=(memory,), otel_provider=_otel()[0] if backend == "otel" else None, environ=NO_OTEL)
    with _tracing.span("launch"):
        carrier = _tracing.current_carrier()
    assert carrier is not None
    [launch] = memory.spans
    assert carrier.traceparent.startswith(f"00-{launch.trace_id}-{launch.span_id}-")
    env = carrier.as_env()
    assert env["TRACEPARENT"] == carrier.traceparent
    # The other side: a fresh setup from the environment.
    other = MemorySink()
    received = TraceCarrier.from_env(env)
    assert received is not None and received.traceparent == carrier.traceparent
    _tracing.setup(sinks=(other,), parent=received.traceparent, environ=NO_OTEL)
    with _tracing.span("worker"), _tracing.span("inner"):
        pass
    worker = next(s for s in other.spans if s.name == "worker")
    inner = next(s for s in other.spans if s.name == "inner")
    assert (worker.trace_id, worker.parent_id) == (launch.trace_id, launch.span_id)
    assert inner.parent_id == worker.span_id


@pytest.mark.parametrize(
    "value",
    [
        "",
        "00-abc-def-01",
        "01-" + "a" * 32 + "-" + "b" * 16 + "-01",
        "00-" + "0" * 32 + "-" + "b" * 16 + "-01",
    ],
)
def test_a_malformed_traceparent_is_no_carrier(value: str) -> None:
    assert TraceCarrier.from_env({"TRACEPARENT": value}) is None


def test_the_file_sink_writes_otel_json_lines_private_and_appends(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    for name in ("first", "second"):
        _tracing.setup(file=path, environ=NO_OTEL)
        with _tracing.span(name, {"corral.agent": "lead", "n": 1}):
            pass
        _tracing.shutdown()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["name"] for line in lines] == ["first", "second"]
    first = lines[0]
    assert first["context"]["trace_id"].startswith("0x") and len(first["context"]["trace_id"]) == 34
    assert len(first["context"]["span_id"]) == 18 and first["parent_id"] is None
    assert first["start_time"].endswith("Z") and first["end_time"] >= first["start_time"]
    assert first["attributes"] == {"corral.agent": "lead", "n": 1}


def test_the_otel_backend_writes_the_file_in_the_same_form(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    provider, exporter = _otel()
    _tracing.setup(file=path, otel_provider=provider, environ=NO_OTEL)
    with _tracing.span("outer"), _tracing.span("inner", {"gen_ai.request.model": "m"}):
        pass
    _tracing.shutdown()
    lines = {d["name"]: d for d in map(json.loads, path.read_text().splitlines())}
    assert lines["inner"]["parent_id"] == lines["outer"]["context"]["span_id"]
    assert lines["inner"]["attributes"] == {"gen_ai.request.model": "m"}
    assert {s.name for s in exporter.get_finished_spans()} == {"outer", "inner"}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, False),
    ],
)
def test_the_standard_variables_decide_whether_opentelemetry_exports(
    env: dict[str, str], expected: bool
) -> None:
    assert _tracing.otel_requested(env) is expected


def test_an_unknown_exporter_is_refused_with_what_to_use() -> None:
    with pytest.raises(ValueError, match="use otlp, console or none"):
        _tracing.setup(environ={"OTEL_TRACES_EXPORTER": "zipkin-typo"})
    assert _tracing.active is None


def test_pydantic_ai_instrumentation_follows_the_variable_and_needs_opentelemetry() -> None:
    provider, _ = _otel()
    _tracing.setup(otel_provider=provider, environ={})
    assert _tracing.model_instrumentation() is None
    _tracing.setup(otel_provider=provider, environ={"CORRAL_TRACE_PYDANTIC_AI": "1"})
    assert _tracing.model_instrumentation() is provider
    _tracing.setup(sinks=(MemorySink(),), environ={"CORRAL_TRACE_PYDANTIC_AI": "1"})
    assert _tracing.model_instrumentation() is None  # the built-in recorder has no provider to give


def test_the_service_is_named_corral_unless_the_variables_name_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from corral._tracing._otel import provider_from_env

    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    assert provider_from_env({"OTEL_TRACES_EXPORTER": "none"}).resource.attributes["service.name"] == "corral"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "nightly")
    named = provider_from_env({"OTEL_TRACES_EXPORTER": "none", "OTEL_SERVICE_NAME": "nightly"})
    assert named.resource.attributes["service.name"] == "nightly"


def test_a_written_line_is_exactly_the_spans_json_form(tmp_path: Path) -> None:
    from corral._tracing._builtin import JsonLinesSink, span_json
    from corral._tracing._records import SpanRecord

    records = [
        SpanRecord(
            'chat "m"',
            "a" * 32,
            "b" * 16,
            None,
            1_700_000_000_123_456_789,
            1_700_000_001_0,
            {"ü": "é\n", "n": 1.5},
        ),
        SpanRecord("tool", "a" * 32, "c" * 16, "b" * 16, 5, 6, {"ok": False}, error='failed: "quoted"\nline'),
    ]
    sink = JsonLinesSink(tmp_path / "t.jsonl")
    for record in records:
        sink.export(record)
    sink.close()
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines == [span_json(record) for record in records]
    assert lines[0]["start_time"] == "2023-11-14T22:13:20.123456Z"
    assert lines[1]["status"] == {"status_code": "ERROR", "description": 'failed: "quoted"\nline'}


@pytest.mark.parametrize("backend", ["builtin", "otel"])
def test_agents_of_several_parents_in_one_process_each_continue_their_own(backend: str) -> None:
    memory = MemorySink()
    _tracing.setup(sinks=(memory,), otel_provider=_otel()[0] if backend == "otel" else None, environ=NO_OTEL)
    carriers = []
    for name in ("tool-a", "tool-b"):
        with _tracing.span(name):
            carriers.append(_tracing.current_carrier())
    _tracing.shutdown()
    # The worker process: tracing set up once, then each agent under its own carrier.
    other = MemorySink()
    _tracing.setup(sinks=(other,), otel_provider=_otel()[0] if backend == "otel" else None, environ=NO_OTEL)

    async def agent(name: str) -> None:
        with _tracing.span(name):
            await asyncio.sleep(0)

    async def main() -> None:
        tasks = []
        for carrier, name in zip(carriers, ("agent-a", "agent-b"), strict=True):
            with _tracing.under_carrier(carrier):
                tasks.append(asyncio.ensure_future(agent(name)))
        await asyncio.gather(*tasks)

    asyncio.run(main())
    tools = {s.name: s for s in memory.spans}
    agents = {s.name: s for s in other.spans}
    assert set(agents) == {"agent-a", "agent-b"}  # the remote parents themselves are never recorded
    for tool, name in (("tool-a", "agent-a"), ("tool-b", "agent-b")):
        assert (agents[name].trace_id, agents[name].parent_id) == (tools[tool].trace_id, tools[tool].span_id)


def test_a_worker_sets_up_from_a_carrier_once_and_only_with_somewhere_to_write(tmp_path: Path) -> None:
    carrier = TraceCarrier(traceparent="00-" + "a" * 32 + "-" + "b" * 16 + "-01")
    assert _tracing.setup_for(carrier) is None  # no file, no exporter: nothing to record into
    unreachable = TraceCarrier(carrier.traceparent, file=str(tmp_path / "not-here" / "t.jsonl"))
    assert _tracing.setup_for(unreachable) is None  # another machine's path: left off, no error
    reachable = TraceCarrier(carrier.traceparent, file=str(tmp_path / "t.jsonl"))
    tracer = _tracing.setup_for(reachable)
    assert tracer is not None and _tracing.setup_for(reachable) is tracer  # once per process
    with _tracing.under_carrier(reachable), _tracing.span("agent"):
        pass
    _tracing.shutdown()
    [line] = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert (line["context"]["trace_id"], line["parent_id"]) == ("0x" + "a" * 32, "0x" + "b" * 16)


def test_otel_backend_hands_its_own_and_other_instrumentations_spans_to_the_sinks_once() -> None:
    """corral's spans reach the sinks from corral's own copy of their attributes (set one by one or at
    once, a failure included); spans of other instrumentation on the same provider (pydantic-ai's)
    through the span processor — each exactly once, parented as in OpenTelemetry."""
    provider, exporter = _otel()
    memory = MemorySink()
    _tracing.setup(sinks=(memory,), otel_provider=provider, environ=NO_OTEL)
    with _tracing.span("chat team", {"corral.agent": "a"}) as chat:
        assert chat is not None
        chat.set("corral.one", 1)
        chat.update({"gen_ai.usage.output_tokens": 5, "corral.stop_reason": "error"})
        chat.fail("overloaded")
        with provider.get_tracer("pydantic-ai").start_as_current_span(
            "foreign", attributes={"k": ("x", "y")}
        ):
            pass
    chat.end()  # a second end records nothing more
    _tracing.shutdown()
    by_name = {r.name: r for r in memory.spans}
    assert len(memory.spans) == 2 and set(by_name) == {"chat team", "foreign"}
    record = by_name["chat team"]
    assert dict(record.attributes) == {
        "corral.agent": "a",
        "corral.one": 1,
        "gen_ai.usage.output_tokens": 5,
        "corral.stop_reason": "error",
    }
    assert record.error == "overloaded"
    assert by_name["foreign"].parent_id == record.span_id and by_name["foreign"].attributes["k"] == "x, y"
    [sdk_chat] = [s for s in exporter.get_finished_spans() if s.name == "chat team"]
    assert dict(sdk_chat.attributes or {}) == dict(record.attributes)  # the exporters see the same
