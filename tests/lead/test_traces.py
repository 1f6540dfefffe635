"""Traces of a lead run in this process, read from OpenTelemetry's in-memory exporter: one trace id, and
every agent's span under the tool call that delegated or spawned it — in-process, a swarm, a tmux worker
(whose spans arrive through the trace file it appends to from its own process)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import corral
from corral import _tracing
from corral.errors import UsageError
from tests._waits import eventually
from tests.otel_extra import require_otel
from tests.runtime._tmux_fixtures import kill_server, require_tmux

from .conftest import WAIT, ApiEnv

require_otel()

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

AGENT_STEPS = [{"tool_calls": [{"name": "ls", "args": {}}]}, {"text": "agent result"}]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    _tracing.shutdown()
    yield memory
    _tracing.shutdown()


def _start(provider_of: InMemorySpanExporter, file: Path | None = None) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(provider_of))
    _tracing.setup(otel_provider=provider, file=file, environ={})


async def _run_lead(env: ApiEnv, steps: list[dict[str, object]], surfaces: tuple[str, ...]) -> None:
    """The lead's run as `corral run` makes it: its root span current while the lead works."""
    env.script({"*": AGENT_STEPS}, steps=steps)
    with _tracing.span("invoke_agent lead", {"corral.agent": "lead"}):
        async with corral.open_lead(cwd=env.work, model="scripted/team", surfaces=surfaces) as lead:
            await lead.prompt("go")
            assert await lead.wait_quiet(timeout=WAIT)


def _span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def _parent(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def _one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def _check_agent_subtree(spans: list[ReadableSpan], agent: ReadableSpan, label: str) -> None:
    """The agent's turns hang under its span; its model requests and tool calls under those turns."""
    assert agent.attributes is not None and agent.attributes["corral.agent"] == label
    turns = [s for s in spans if s.name == "corral.turn" and _parent(s) == _span_id(agent)]
    assert len(turns) == 2
    turn_ids = {_span_id(t) for t in turns}
    chats = [s for s in spans if s.name == "chat team" and _parent(s) in turn_ids]
    assert len(chats) == 2
    for chat in chats:
        attrs = chat.attributes or {}
        assert attrs["gen_ai.request.model"] == "team" and attrs["corral.agent"] == label
        assert int(attrs["gen_ai.usage.input_tokens"]) > 0 and int(attrs["gen_ai.usage.output_tokens"]) > 0  # type: ignore[arg-type]
        assert "corral.cost_usd" in attrs
    [ls] = [s for s in spans if s.name == "execute_tool ls" and _parent(s) in turn_ids]
    assert (ls.attributes or {})["gen_ai.tool.name"] == "ls"


async def test_a_delegated_agent_is_traced_under_the_leads_tool_call(
    api_env: ApiEnv, exporter: InMemorySpanExporter
) -> None:
    _start(exporter)
    steps = [
        {
            "tool_calls": [
                {
                    "name": "agent",
                    "args": {"action": "delegate", "definition": "scout", "task": "t", "label": "s1"},
                }
            ]
        },
        {"text": "waiting"},
    ]
    await _run_lead(api_env, steps, ("agent",))
    spans = list(exporter.get_finished_spans())
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 1
    root = _one(spans, "invoke_agent lead")
    assert root.parent is None
    lead_turns = [s for s in spans if s.name == "corral.turn" and _parent(s) == _span_id(root)]
    assert lead_turns and all((t.attributes or {})["corral.agent"] == "lead" for t in lead_turns)
    call = _one(spans, "execute_tool agent")
    assert _parent(call) in {_span_id(t) for t in lead_turns}
    agent = _one(spans, "invoke_agent s1")
    assert _parent(agent) == _span_id(call)
    assert (agent.attributes or {})["corral.runtime"] == "inprocess"
    _check_agent_subtree(spans, agent, "s1")


async def test_every_swarm_member_is_traced_under_the_spawn_call(
    api_env: ApiEnv, exporter: InMemorySpanExporter
) -> None:
    _start(exporter)
    swarm = {
        "defaults": {"model_slot": "read-collect"},
        "agents": [{"name": n, "prompt": f"task {n}"} for n in ("a", "b", "c")],
    }
    steps = [{"tool_calls": [{"name": "spawn_swarm_agents", "args": swarm}]}, {"text": "waiting"}]
    await _run_lead(api_env, steps, ("teams",))
    spans = list(exporter.get_finished_spans())
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 1
    call = _one(spans, "execute_tool spawn_swarm_agents")
    members = [s for s in spans if s.name.startswith("invoke_agent ") and s.name != "invoke_agent lead"]
    assert sorted((m.attributes or {})["corral.agent"] for m in members) == ["a", "b", "c"]
    assert all(_parent(m) == _span_id(call) for m in members)
    for member in members:
        label = str((member.attributes or {})["corral.agent"])
        turns = [s for s in spans if s.name == "corral.turn" and _parent(s) == _span_id(member)]
        assert turns, label


async def test_a_tmux_worker_continues_the_trace_in_its_own_process(
    api_env: ApiEnv, exporter: InMemorySpanExporter
) -> None:
    require_tmux()
    socket = api_env.home / "tmux" / "default"
    if len(str(socket)) > 100:
        pytest.skip("the temporary directory's path is too long for a tmux socket")
    (api_env.root / "config" / "corral" / "settings.toml").write_text(
        'default_model = "scripted/team"\nruntime = "tmux"\n'
    )
    trace_file = api_env.root / "trace.jsonl"
    _start(exporter, file=trace_file)
    steps = [
        {
            "tool_calls": [
                {
                    "name": "agent",
                    "args": {"action": "delegate", "definition": "scout", "task": "t", "label": "w1"},
                }
            ]
        },
        {"text": "waiting"},
    ]
    try:
        await _run_lead(api_env, steps, ("agent",))
    finally:
        kill_server(socket)
    _tracing.shutdown()
    local = list(exporter.get_finished_spans())
    assert not any(s.name == "invoke_agent w1" for s in local)  # it ran in the worker's process
    call = _one(local, "execute_tool agent")
    assert call.context is not None
    # The worker appends its spans from its own process when its agent's span ends.
    await eventually(lambda: '"name":"invoke_agent w1"' in trace_file.read_text())
    lines = [json.loads(line) for line in trace_file.read_text().splitlines()]
    [worker] = [d for d in lines if d["name"] == "invoke_agent w1"]
    assert worker["attributes"]["corral.runtime"] == "tmux"
    assert worker["context"]["trace_id"] == f"0x{call.context.trace_id:032x}"
    assert worker["parent_id"] == f"0x{call.context.span_id:016x}"
    turns = [
        d for d in lines if d["name"] == "corral.turn" and d["parent_id"] == worker["context"]["span_id"]
    ]
    assert len(turns) == 2
    turn_ids = {t["context"]["span_id"] for t in turns}
    assert sum(1 for d in lines if d["name"] == "chat team" and d["parent_id"] in turn_ids) == 2
    assert sum(1 for d in lines if d["name"] == "execute_tool ls" and d["parent_id"] in turn_ids) == 1


def _file_spans(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _named(spans: list[dict[str, object]], name: str) -> dict[str, object]:
    found = [s for s in spans if s["name"] == name]
    assert len(found) == 1, [s["name"] for s in spans]
    return found[0]


def _sid(span: dict[str, object]) -> object:
    context = span["context"]
    assert isinstance(context, dict)
    return context["span_id"]


async def test_open_lead_with_a_trace_file_writes_the_leads_own_trace(api_env: ApiEnv) -> None:
    """`open_lead(trace=FILE)` is `--trace` for a program: a root span for the lead, the program's tool
    calls under it, each delegated agent under the call that started it; tracing ends with the lead."""
    _tracing.shutdown()
    api_env.script({"*": AGENT_STEPS})
    trace_file = api_env.root / "api-trace.jsonl"
    async with corral.open_lead(cwd=api_env.work, trace=trace_file) as lead:
        assert _tracing.active is not None
        handle = await lead.delegate("scout", "t", label="s1")
        item = await handle.result(timeout=WAIT)
        assert item.text.endswith("agent result")
    assert _tracing.active is None
    spans = _file_spans(trace_file)
    assert len({s["context"]["trace_id"] for s in spans}) == 1  # type: ignore[index]
    root = _named(spans, "invoke_agent lead")
    assert root["parent_id"] is None
    assert root["attributes"]["corral.command"] == "api"  # type: ignore[index]
    call = _named(spans, "execute_tool agent")
    assert call["parent_id"] == _sid(root)
    agent = _named(spans, "invoke_agent s1")
    assert agent["parent_id"] == _sid(call)
    turns = [s for s in spans if s["name"] == "corral.turn" and s["parent_id"] == _sid(agent)]
    assert len(turns) == 2


async def test_open_lead_under_the_programs_tracing_opens_the_leads_root(
    api_env: ApiEnv, exporter: InMemorySpanExporter
) -> None:
    """Tracing set up by the program (OpenTelemetry here): the lead opens its own root span, its model's
    turns hang under it, and the program's tracing stays on after the lead closes."""
    _start(exporter)
    steps = [
        {
            "tool_calls": [
                {
                    "name": "agent",
                    "args": {"action": "delegate", "definition": "scout", "task": "t", "label": "s1"},
                }
            ]
        },
        {"text": "waiting"},
    ]
    api_env.script({"*": AGENT_STEPS}, steps=steps)
    async with corral.open_lead(cwd=api_env.work, model="scripted/team") as lead:
        await lead.prompt("go")
        assert await lead.wait_quiet(timeout=WAIT)
        listed = await lead.call("agent_list", {})
        assert listed.ok
    assert _tracing.active is not None
    spans = list(exporter.get_finished_spans())
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 1
    root = _one(spans, "invoke_agent lead")
    assert root.parent is None and (root.attributes or {})["corral.command"] == "api"
    lead_turns = {_span_id(s) for s in spans if s.name == "corral.turn" and _parent(s) == _span_id(root)}
    assert lead_turns
    call = _one(spans, "execute_tool agent")
    assert _parent(call) in lead_turns
    assert _parent(_one(spans, "invoke_agent s1")) == _span_id(call)
    assert _parent(_one(spans, "execute_tool agent_list")) == _span_id(root)


async def test_open_lead_refuses_a_directory_as_its_trace_file(api_env: ApiEnv) -> None:
    _tracing.shutdown()
    with pytest.raises(UsageError, match="is a directory"):
        async with corral.open_lead(cwd=api_env.work, trace=api_env.work):
            pass
    assert _tracing.active is None


async def test_open_lead_follows_the_otel_variables_without_a_trace_file(
    api_env: ApiEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`OTEL_TRACES_EXPORTER` alone traces a program's lead on a provider built from the variables: one
    trace, the lead's root, the call, the delegated agent under it; tracing ends when the lead closes."""
    _tracing.shutdown()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    api_env.script({"*": AGENT_STEPS})
    memory = InMemorySpanExporter()
    async with corral.open_lead(cwd=api_env.work) as lead:
        provider = getattr(_tracing.active, "provider", None)
        assert isinstance(provider, TracerProvider)  # built from OTEL_* by open_lead
        provider.add_span_processor(SimpleSpanProcessor(memory))  # before any span of the lead ends
        handle = await lead.delegate("scout", "t", label="s1")
        await handle.result(timeout=WAIT)
    assert _tracing.active is None
    spans = list(memory.get_finished_spans())
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 1
    root = _one(spans, "invoke_agent lead")
    assert root.parent is None
    call = _one(spans, "execute_tool agent")
    assert _parent(call) == _span_id(root)
    assert _parent(_one(spans, "invoke_agent s1")) == _span_id(call)
