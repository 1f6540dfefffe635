"""What each agent's provider model costs: making it, and the connections its requests open.

Makes `--agents` `openai-chat` provider models (as a swarm's spawns do: one per
agent) and times each creation (CPU, `time.process_time`); then each model
sends `--requests` requests in turn to the fake server
(`tests/llm/fake_server.py`, in this process, zero latency) and the server
counts the TCP connections it accepted.

Prints one JSON object: model creation p50/p95 CPU ms (an HTTPS endpoint, so
TLS set-up would show), requests sent and connections accepted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

from _common import environment

from corral.llm import DoneEvent, LlmContext, Model, ModelInfo, StreamOptions, TextContent, UserMessage
from corral.llm._providers import create_provider_model

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.llm.fake_server import FakeProviderServer, FakeReply


async def _ask(model: Model) -> None:
    context = LlmContext("be brief", [UserMessage(content=[TextContent(text="hi")])])
    last = None
    async for event in model.stream(context, StreamOptions()):
        last = event
    assert isinstance(last, DoneEvent), last


async def _requests(models: list[Model], requests: int) -> None:
    for _ in range(requests):
        for model in models:
            await _ask(model)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", type=int, default=50, help="models (default 50)")
    parser.add_argument("--requests", type=int, default=3, help="requests per model (default 3)")
    args = parser.parse_args()
    info = ModelInfo("bench", "bench-model", "openai-chat")
    create_provider_model(info, api_key="k", base_url="http://127.0.0.1:9/v1")  # imports, once
    creation = []
    for _ in range(args.agents):
        start = time.process_time()
        create_provider_model(info, api_key="k", base_url="https://api.example.invalid/v1")
        creation.append((time.process_time() - start) * 1000)
    ordered = sorted(creation)
    with FakeProviderServer() as server:
        server.default_reply = FakeReply(text="ok")
        models = [
            create_provider_model(info, api_key="k", base_url=server.base_url) for _ in range(args.agents)
        ]
        asyncio.run(_requests(models, args.requests))
        sent, accepted = len(server.requests), server.connections_accepted
    print(
        json.dumps(
            {
                "benchmark": "http",
                "agents": args.agents,
                "model_creation_cpu_ms": {
                    "p50": round(statistics.median(creation), 3),
                    "p95": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 3),
                },
                "requests_sent": sent,
                "connections_accepted": accepted,
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "env": environment("benchmarks/bench_http.py"),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
