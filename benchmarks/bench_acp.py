"""`corral acp`: spawn → `initialize` answer, prompt → first streamed chunk, delegate → result shown.

The lead runs on a zero-latency scripted model (`scripted/bench`) in a temp data root; the editor
is the ACP SDK's own client (`agent-client-protocol`), so the figures are corral's own cost plus
the ACP transport's.

- **start-up** (target ≤ 300 ms): spawning `corral acp` until the `initialize` answer on its
  stdout (raw JSON-RPC, no SDK on the client side).
- **first chunk** (target ≤ 50 ms): from sending `session/prompt` to the client receiving the
  first `agent_message_chunk`; beside it the same in process (`prompt` → the first text delta of
  the lead's `AgentSession`).
- **result shown** (target ≤ 30 ms beyond in process): from the client receiving the delegated
  agent's `tool_call` to receiving the `tool_call_update` that completes it with the agent's result;
  beside it the same in process (the lead's `agent` tool call starting → the result message in the
  lead's session).
- **cancel** (target ≤ 1 s): a prompt whose lead runs one tool and then waits on a model request
  that would take ten minutes; from sending `session/cancel` once the tool completed to the
  prompt's answer (`cancelled`), each in a new session.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import corral_command, environment, start_json_lines, summary_ms
from _orch import data_root

_DELEGATE = {"name": "agent", "args": {"action": "delegate", "definition": "scout", "task": "t"}}
_LS = {"name": "ls", "args": {"path": "."}}
SCRIPT = {
    "steps": [
        {
            "expect": {"last_user_contains": "hold", "tools_ok": True},
            "delay_ms": 600_000,
            "text": "never",
            "otherwise": {
                "expect": {"last_user_contains": "hold"},
                "text": "holding",
                "tool_calls": [_LS],
                "otherwise": {
                    "expect": {"tools_ok": True},
                    "text": "started",
                    "otherwise": {
                        "expect": {"last_user_contains": "Agent result"},
                        "text": "got it",
                        "otherwise": {"text": "delegating", "tool_calls": [_DELEGATE]},
                    },
                },
            },
        }
    ],
    "on_exhausted": "repeat_last",
    "agents": {"*": [{"text": "done"}]},
}
"""Each prompt `go` delegates one scout and ends its turn; the result wakes the lead ("got it").
A prompt `hold` runs `ls`, then waits ten minutes on its next model request unless cancelled."""
CORRAL = corral_command()
WAIT_S = 60.0


def _startup(root: Path, runs: int) -> list[float]:
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    samples: list[float] = []
    for _ in range(runs):
        process, answer, _, seconds = start_json_lines(
            [*CORRAL, "acp", "--cwd", str(root / "work"), "--model", "scripted/bench"], request
        )
        samples.append(seconds)
        assert answer.get("id") == 1 and answer["result"]["protocolVersion"] == 1, answer
        process.stdin.close()
        process.wait(timeout=30)
        process.stdout.close()
    return samples


async def _in_process(root: Path, iterations: int, warmup: int) -> tuple[list[float], list[float]]:
    from corral.agent import MessageEndEvent, MessageUpdateEvent, ToolExecutionStartEvent
    from corral.lead import LaunchOptions, launch_session
    from corral.llm import CustomMessage

    launched = launch_session(LaunchOptions(root / "work", model="scripted/bench", surfaces=["agent"]))
    await launched.attach_host()
    marks: dict[str, float] = {}
    arrived = asyncio.Event()

    def on_event(event: object) -> None:
        now = time.perf_counter()
        if isinstance(event, MessageUpdateEvent) and event.assistant_message_event.type == "text_delta":
            marks.setdefault("chunk", now)
        elif isinstance(event, ToolExecutionStartEvent) and event.tool_name == "agent":
            marks.setdefault("tool", now)
        elif (
            isinstance(event, MessageEndEvent)
            and isinstance(event.message, CustomMessage)
            and event.message.custom_type == "corral-agent-result"
        ):
            marks.setdefault("result", now)
            arrived.set()

    unsubscribe = launched.agent.subscribe(on_event)
    chunks: list[float] = []
    results: list[float] = []
    try:
        for index in range(warmup + iterations):
            marks.clear()
            arrived.clear()
            start = time.perf_counter()
            await launched.agent.prompt_when_idle("go")
            await asyncio.wait_for(arrived.wait(), WAIT_S)
            await launched.wait_until_quiet()
            if index >= warmup:
                chunks.append(marks["chunk"] - start)
                results.append(marks["result"] - marks["tool"])
    finally:
        unsubscribe()
        await launched.aclose()
        launched.session.close()
    return chunks, results


class _Editor:
    """The ACP SDK client's side: timestamps of the updates the benchmark waits for."""

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}
        self.think: str | None = None
        self.changed = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        from acp.schema import AgentMessageChunk, ToolCallProgress, ToolCallStart

        now = time.perf_counter()
        if isinstance(update, AgentMessageChunk):
            self.marks.setdefault("chunk", now)
        elif isinstance(update, ToolCallStart) and update.kind == "think":
            self.think = update.tool_call_id
            self.marks.setdefault("tool", now)
        elif isinstance(update, ToolCallProgress) and update.status == "completed":
            self.marks.setdefault("result" if update.tool_call_id == self.think else "tool_done", now)
        self.changed.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def on_connect(self, conn: Any) -> None:
        pass

    async def until(self, key: str) -> None:
        async with asyncio.timeout(WAIT_S):
            while key not in self.marks:
                self.changed.clear()
                await self.changed.wait()


async def _over_acp(
    root: Path, iterations: int, warmup: int, cancels: int
) -> tuple[list[float], list[float], list[float]]:
    import acp

    editor = _Editor()
    chunks: list[float] = []
    results: list[float] = []
    cancelled: list[float] = []
    async with (
        acp.spawn_agent_process(
            editor,  # type: ignore[arg-type]
            CORRAL[0],
            *CORRAL[1:],
            "acp",
            "--cwd",
            str(root / "work"),
            "--model",
            "scripted/bench",
            env=dict(os.environ),
            transport_kwargs={"stderr": subprocess.DEVNULL, "shutdown_timeout": 20.0},
        ) as (conn, _process)
    ):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(root / "work"), mcp_servers=[])
        for index in range(warmup + iterations):
            editor.marks.clear()
            start = time.perf_counter()
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")])
            await editor.until("result")
            if index >= warmup:
                chunks.append(editor.marks["chunk"] - start)
                results.append(editor.marks["result"] - editor.marks["tool"])
        for _ in range(cancels):  # each in a new session: the script's `ls` runs on its first prompt only
            held = await conn.new_session(cwd=str(root / "work"), mcp_servers=[])
            editor.marks.clear()
            turn = asyncio.ensure_future(
                conn.prompt(session_id=held.session_id, prompt=[acp.text_block("hold")])
            )
            await editor.until("tool_done")
            start = time.perf_counter()
            await conn.cancel(session_id=held.session_id)
            async with asyncio.timeout(WAIT_S):
                answer = await turn
            cancelled.append(time.perf_counter() - start)
            assert answer.stop_reason == "cancelled", answer
    return chunks, results, cancelled


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20, help="timed prompts (default 20)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed prompts first (default 2)")
    parser.add_argument("--startups", type=int, default=10, help="timed server start-ups (default 10)")
    parser.add_argument("--cancels", type=int, default=10, help="timed cancels (default 10)")
    args = parser.parse_args()
    gc.collect()
    out: dict[str, Any] = {"benchmark": "acp"}
    with data_root(SCRIPT, "corral-bench-acp-") as root:
        out["startup_to_initialize"] = {**summary_ms(_startup(root, args.startups)), "target_p50_ms": 300}
    with data_root(SCRIPT, "corral-bench-acp-") as root:
        chunk_in, result_in = asyncio.run(_in_process(root, args.iterations, args.warmup))
    with data_root(SCRIPT, "corral-bench-acp-") as root:
        chunk_acp, result_acp, cancel_acp = asyncio.run(
            _over_acp(root, args.iterations, args.warmup, args.cancels)
        )
    out["prompt_to_first_chunk"] = {
        "in_process": summary_ms(chunk_in),
        "acp": {**summary_ms(chunk_acp), "target_p50_ms": 50},
    }
    shown, base = summary_ms(result_acp), summary_ms(result_in)
    out["delegate_to_result_shown"] = {
        "in_process": base,
        "acp": shown,
        "overhead_p50_ms": round(shown["p50_ms"] - base["p50_ms"], 3),
        "target_overhead_p50_ms": 30,
    }
    out["cancel_to_answer"] = {**summary_ms(cancel_acp), "target_p50_ms": 1000}
    out["environment"] = environment("bench_acp.py")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
