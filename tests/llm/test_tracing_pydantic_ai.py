"""pydantic-ai's own instrumentation, when asked for, nests under corral's model-request span (a real
OpenAI Responses request for an OpenAI reasoning model, which still goes through pydantic-ai, to a
fake server on loopback; Chat Completions and other Responses models do not); off by default."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from corral import _tracing
from corral.agent import AgentSession
from corral.llm._providers import create_provider_model
from corral.session import SessionManager
from tests.otel_extra import require_otel

from ._provider_contract import make_info
from .fake_server import FakeProviderServer

require_otel()

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


async def _one_request(
    server: FakeProviderServer, tmp_path: Path, *, pydantic_ai: bool
) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _tracing.setup(otel_provider=provider, pydantic_ai=pydantic_ai, environ={})
    try:
        server.queue_text("hello")
        model = create_provider_model(
            make_info("openai-responses", id="gpt-5-mini"), api_key="k", base_url=server.base_url
        )
        session = SessionManager.create(tmp_path, sessions_root=tmp_path / "sessions")
        agent = AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=tmp_path)
        await agent.prompt("hi")
        assert agent.last_assistant_text() == "hello"
        await model.aclose()
        session.close()
    finally:
        _tracing.shutdown()
    return list(exporter.get_finished_spans())


def _corral_chat(spans: list[ReadableSpan]) -> ReadableSpan:
    [chat] = [s for s in spans if s.name == "chat gpt-5-mini" and (s.attributes or {}).get("corral.agent")]
    return chat


async def test_pydantic_ai_spans_nest_under_corrals_request_span(
    server: FakeProviderServer, tmp_path: Path
) -> None:
    spans = await _one_request(server, tmp_path, pydantic_ai=True)
    chat = _corral_chat(spans)
    assert chat.context is not None
    nested = [s for s in spans if s.parent is not None and s.parent.span_id == chat.context.span_id]
    assert nested, [s.name for s in spans]
    assert all(s.context is not None and s.context.trace_id == chat.context.trace_id for s in nested)
    assert any("gen_ai.request.model" in (s.attributes or {}) for s in nested)


async def test_pydantic_ai_records_nothing_unless_asked(server: FakeProviderServer, tmp_path: Path) -> None:
    spans = await _one_request(server, tmp_path, pydantic_ai=False)
    chat = _corral_chat(spans)
    assert chat.context is not None
    assert not [s for s in spans if s.parent is not None and s.parent.span_id == chat.context.span_id]
    assert {s.name for s in spans} == {"corral.turn", "chat gpt-5-mini"}
