"""Agent-loop overhead per turn.

One prompt drives `--turns` turns; in each the model (answering at once, no
latency) calls one trivial tool, the loop runs it and persists the assistant
message and the tool result to a session file in a temp dir. The time of each
turn (`turn_start` to `turn_end`) is the loop's own overhead: events, tool
preparation and validation, context conversion and persistence. Target:
mean below 2 ms per turn.

Prints one JSON object: mean, p50, p95 and max ms per turn, total seconds, and
the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from corral.agent import AgentEvent, AgentSession, AgentTool, ToolResult, ToolUpdate
from corral.llm import (
    AssistantMessage,
    AssistantMessageEvent,
    DoneEvent,
    LlmContext,
    Model,
    ModelInfo,
    StartEvent,
    StreamOptions,
    TextContent,
    ToolCall,
    Usage,
)
from corral.session import SessionManager


class _InstantModel(Model):
    """Calls the `noop` tool `turns - 1` times, then answers with text."""

    def __init__(self, turns: int) -> None:
        super().__init__(ModelInfo("bench", "instant", "scripted", context_window=10_000_000))
        self.remaining = turns

    async def stream(
        self, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.remaining -= 1
        base = {"api": "scripted", "provider": "bench", "model": "instant"}
        yield StartEvent(partial=AssistantMessage(**base))
        usage = Usage(input=100, output=10, total_tokens=110)
        if self.remaining > 0:
            call = ToolCall(id=f"c{self.remaining}", name="noop", arguments={"n": self.remaining})
            message = AssistantMessage(content=[call], usage=usage, stop_reason="toolUse", **base)
            yield DoneEvent(reason="toolUse", message=message)
        else:
            message = AssistantMessage(content=[TextContent(text="done")], usage=usage, **base)
            yield DoneEvent(reason="stop", message=message)


class _NoopTool(AgentTool):
    name = "noop"
    description = "Does nothing."
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        return ToolResult.text("ok")


async def _run(turns: int, root: Path) -> list[float]:
    cwd = root / "project"
    cwd.mkdir()
    session = SessionManager.create(cwd, sessions_root=root / "sessions")
    agent = AgentSession(
        session=session,
        model=_InstantModel(turns),
        thinking_level="off",
        tools=[_NoopTool()],
        cwd=cwd,
        system_prompt="bench",
    )
    durations: list[float] = []
    started = 0.0

    def on_event(event: AgentEvent) -> None:
        nonlocal started
        if event.type == "turn_start":
            started = time.perf_counter()
        elif event.type == "turn_end":
            durations.append((time.perf_counter() - started) * 1000)

    agent.subscribe(on_event)
    await agent.prompt("go")
    session.close()
    return durations


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--turns", type=int, default=1000, help="turns with one tool call each (default 1000)"
    )
    args = parser.parse_args(argv)
    gc.collect()
    with tempfile.TemporaryDirectory(prefix="corral-bench-loop-") as tmp:
        begin = time.perf_counter()
        durations = asyncio.run(_run(args.turns, Path(tmp)))
        total = time.perf_counter() - begin
    ordered = sorted(durations)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

    print(
        json.dumps(
            {
                "benchmark": "loop_overhead_per_turn",
                "turns": len(durations),
                "mean_ms": round(statistics.fmean(durations), 4),
                "p50_ms": round(pct(0.50), 4),
                "p95_ms": round(pct(0.95), 4),
                "max_ms": round(ordered[-1], 4),
                "total_s": round(total, 3),
                "target_mean_ms": 2.0,
                "python": sys.version.split()[0],
                "sqlite": sqlite3.sqlite_version,
                "platform": platform.platform(),
                "runtime": "in-process",
                "script": "benchmarks/bench_loop.py",
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
