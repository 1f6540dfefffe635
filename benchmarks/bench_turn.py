"""One lead turn against an OpenAI-compatible server, with 20, 50 and 100 large messages in context.

A lead's context grows with every report it receives; what a turn costs on the
client (building the provider request from the context, the agent loop,
persisting the reply) should not grow with it beyond sending the bytes. The
lead here is an `AgentSession` on a provider model (`--api`, default `openai-chat`) whose
session already holds N reports (custom messages of 1,500 characters, as a
`corral-team-report` is) each answered by a short assistant reply; a turn is
one `prompt` → the reply persisted. The server (`tests/llm/fake_server.py`)
runs in a separate process and answers at once, so the client's CPU time per
turn (`time.process_time`) is corral's own cost; wall time is given beside it.

Prints one JSON object: per N, the median and p95 of client CPU ms and wall ms
per turn over `--turns` turns (after two warm-up turns).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import environment

from corral.agent import AgentSession
from corral.llm import ApiKind, AssistantMessage, CustomMessage, ModelInfo, TextContent, UserMessage
from corral.llm._providers import create_provider_model
from corral.llm._providers._convert import pi_api_name
from corral.session import SessionManager

REPO = Path(__file__).resolve().parent.parent

SERVER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.llm.fake_server import FakeProviderServer, FakeReply
server = FakeProviderServer().start()
server.default_reply = FakeReply(text="Noted.")
print(server.base_url, flush=True)
sys.stdin.read()
server.close()
"""

REPORT = "The module reads its configuration once at start-up and caches it. " * 23  # ~1,500 chars


def _session(cwd: Path, messages: int, info: ModelInfo) -> SessionManager:
    session = SessionManager.create(cwd, persist=False)
    session.append_message(UserMessage(content=[TextContent(text="Spawn the swarm and synthesise.")]))
    for index in range(messages):
        session.append_message(
            CustomMessage(custom_type="corral-team-report", content=f"Report {index}: {REPORT}")
        )
        session.append_message(
            AssistantMessage(
                content=[TextContent(text=f"Noted report {index}.")],
                api=pi_api_name(info),
                provider=info.provider,
                model=info.id,
            )
        )
    return session


async def _turns(base_url: str, api: ApiKind, messages: int, turns: int, cwd: Path) -> dict[str, object]:
    info = ModelInfo("bench", "bench-model", api, context_window=10_000_000)
    endpoint = base_url.removesuffix("/v1") if api == "anthropic" else base_url
    model = create_provider_model(info, api_key="k", base_url=endpoint)
    agent = AgentSession(
        session=_session(cwd, messages, info), model=model, thinking_level="off", tools=[], cwd=cwd
    )
    cpu, wall = [], []
    for turn in range(turns + 2):
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        await agent.prompt(f"Next ({turn}).")
        await agent.wait_for_idle()
        if turn >= 2:
            cpu.append((time.process_time() - start_cpu) * 1000)
            wall.append((time.perf_counter() - start_wall) * 1000)
        last = agent.messages[-1]
        assert isinstance(last, AssistantMessage) and last.stop_reason == "stop", last
    ordered = sorted(cpu)
    return {
        "messages_in_context": len(agent.messages),
        "cpu_ms_p50": round(statistics.median(cpu), 2),
        "cpu_ms_p95": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 2),
        "wall_ms_p50": round(statistics.median(wall), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=20, help="measured turns per size (default 20)")
    parser.add_argument("--sizes", default="20,50,100", help="reports in context (default 20,50,100)")
    parser.add_argument(
        "--api",
        default="openai-chat",
        choices=["openai-chat", "openai-responses", "anthropic"],
        help="the wire API (default openai-chat)",
    )
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(REPO)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        results = {}
        with tempfile.TemporaryDirectory(prefix="corral-bench-turn-") as tmp:
            for size in (int(s) for s in args.sizes.split(",")):
                results[f"reports_{size}"] = asyncio.run(
                    _turns(base_url, args.api, size, args.turns, Path(tmp))
                )
        print(
            json.dumps(
                {
                    "benchmark": "turn",
                    "api": args.api,
                    "lead_turn": results,
                    "load_average": [round(x, 2) for x in os.getloadavg()],
                    "env": environment("benchmarks/bench_turn.py"),
                },
                indent=2,
            )
        )
        return 0
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
