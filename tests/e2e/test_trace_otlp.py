"""With the `corral[otel]` extra, the standard `OTEL_*` variables export a run's trace over OTLP/HTTP
to a collector (a fake one on loopback): one trace, the service name, corral's spans and their parents."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.otel_extra import require_otel

from .conftest import Env, RunCorral

require_otel("opentelemetry.exporter.otlp.proto.http")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

SCRIPT = """
steps:
  - tool_calls:
      - name: agent
        args: {action: delegate, definition: scout, task: "look", label: looker}
  - text: "Waiting."
on_exhausted: repeat_last
agents:
  "*":
    - tool_calls: [{name: ls, args: {}}]
    - text: "Seen."
"""


class _Collector(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.bodies: list[tuple[str, bytes]] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Collector

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.server.bodies.append((self.path, self.rfile.read(length)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[_Collector]:
    server = _Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_otel_variables_export_the_run_to_a_collector(
    cli_env: Env, corral: RunCorral, collector: _Collector
) -> None:
    cli_env.script("team", SCRIPT)
    port = collector.server_address[1]
    done = corral(
        "run",
        "--model",
        "scripted/team",
        "-p",
        "look around",
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "OTEL_SERVICE_NAME": "corral-e2e"},
    )
    assert done.returncode == 0, done.stderr
    assert collector.bodies and all(path == "/v1/traces" for path, _ in collector.bodies)
    spans = []
    services = set()
    for _, body in collector.bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            for attribute in resource_spans.resource.attributes:
                if attribute.key == "service.name":
                    services.add(attribute.value.string_value)
            for scope in resource_spans.scope_spans:
                spans.extend(scope.spans)
    assert services == {"corral-e2e"}
    assert len({span.trace_id for span in spans}) == 1
    by_id = {span.span_id: span for span in spans}
    [agent] = [s for s in spans if s.name == "invoke_agent looker"]
    assert by_id[agent.parent_span_id].name == "execute_tool agent"
    [root] = [s for s in spans if not s.parent_span_id]
    assert root.name == "invoke_agent lead"
    chats = [s for s in spans if s.name == "chat team"]
    assert chats and all(
        any(a.key == "gen_ai.usage.output_tokens" and a.value.int_value > 0 for a in s.attributes)
        for s in chats
    )
