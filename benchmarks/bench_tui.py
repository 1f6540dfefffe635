"""TUI responsiveness with many agents streaming.

Opens the real app headless (Textual's `run_test`), has the lead delegate
`--agents` scripted agents that keep working (each step waits `--step-ms` and
runs a tool), then types into the editor while they run. `--surface agent`
(default) delegates managed agents with the `agent` tool; `--surface teams`
spawns teams read agents with one `spawn_swarm_agents` call (capacity raised
so none queue). Reports:

* keystroke echo: time from posting one key event to the editor until its text shows it
  (target: under 50 ms with 50 agents);
* activity card refreshes per second while the agents run (target: at least 4);
* CPU: process CPU time / wall time over the measured window (1.0 = one core pinned).

The baseline is the same app with no agents. A second figure streams one long
lead reply (`--reply-kb` of Markdown in `--reply-deltas` deltas, default 11.6 KB
in 466) into the chat:

* reply: time from the first delta to the final render of the whole reply, with
  every delta posted at once (a zero-latency model; target: at most 2 s), and the
  process's CPU time over the same span (the figure to compare on a loaded machine);
* echo while streaming: keystroke echo while the same reply streams one delta every
  `--reply-pace-ms` (default 10 ms), next to the baseline echo (target: unchanged).

`--reply-only` skips the agents figure. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import environment, summary_ms

_TOPICS = ("store", "delivery", "sandbox", "capacity", "sessions", "checkpoints", "verification", "runtime")


def long_reply(kilobytes: float) -> str:
    """A lead reply of about `kilobytes` KB with the Markdown a model writes: headings, paragraphs
    with inline code, emphasis and links, nested lists, a table and fenced code."""
    parts: list[str] = ["# Review of the change\n\nHere is what I found, file by file.\n"]
    size = len(parts[0].encode())
    index = 0
    while True:
        topic = _TOPICS[index % len(_TOPICS)]
        section = (
            f"## {index + 1}. The {topic} module\n\n"
            f"The `{topic}` code keeps its state in **one place**, which makes the *common* path "
            f"short; see [the docs](docs/{topic}.md) for the contract. Two things stand out:\n\n"
            f"- `_{topic}.py` opens a transaction per call\n"
            f"  - batching them would save one `fsync` each\n"
            f"- the tests cover the crash path but not the retry\n"
            f"1. rename `old_{topic}` to `{topic}_v2`\n"
            f"2. keep the migration idempotent\n\n"
            f"| check | before | after |\n| --- | --- | --- |\n"
            f"| {topic} p50 | {index + 12} ms | {index + 3} ms |\n| {topic} p95 | {index + 40} ms | {index + 9} ms |\n\n"
            f"```python\ndef {topic}_step(store, item):\n    with store.transaction() as tx:\n"
            f"        tx.insert(item)\n    return item.id\n```\n\n"
            f"> Note: the {topic} figures above come from the 2-core machine.\n"
        )
        if size + len(section.encode()) + 1 > kilobytes * 1000:
            break
        parts.append(section)
        size += len(section.encode()) + 1
        index += 1
    closing = "That is all; the figures are in the tables above."
    while size + len(closing.encode()) + 1 < kilobytes * 1000:
        closing += " Each figure is the median of five runs."
    parts.append(closing[: max(0, round(kilobytes * 1000) - size - 1)] + "\n")
    return "\n".join(parts)


def split_deltas(text: str, count: int) -> list[str]:
    """`text` cut into `count` consecutive pieces of nearly equal size (as a model streams tokens)."""
    step = len(text) / count
    cuts = [round(i * step) for i in range(count + 1)]
    return [text[cuts[i] : cuts[i + 1]] for i in range(count)]


def _script(agents: int, steps: int, step_ms: int, surface: str) -> str:
    lines = ["steps:", '  - text: "Delegating."', "    tool_calls:"]
    if surface == "teams" and agents:
        members = ", ".join(f"{{name: a{i}, model_slot: read-collect, prompt: work}}" for i in range(agents))
        lines.append(f"      - {{name: spawn_swarm_agents, args: {{agents: [{members}]}}}}")
    for index in range(agents if surface == "agent" else 0):
        lines.append(
            f"      - {{name: agent, args: {{action: delegate, definition: scout, label: a{index}, task: work}}}}"
        )
    if not agents:
        lines[-2:] = []
    lines += ['  - text: "Waiting."', "on_exhausted: repeat_last", "agents:", '  "*":']
    for _ in range(steps):
        lines += [
            f'    - {{text: "step", delay_ms: {step_ms}, tool_calls: [{{name: ls, args: {{path: .}}}}]}}'
        ]
    if surface == "teams":
        lines.append('    - {tool_calls: [{name: report_and_exit, args: {content: "done"}}]}')
    else:
        lines.append('    - {text: "done"}')
    return "\n".join(lines) + "\n"


async def _measure(
    root: Path, agents: int, keys: int, steps: int, step_ms: int, surface: str = "agent"
) -> dict[str, Any]:
    from textual import events

    from corral._cli._launch import LaunchOptions
    from corral.tui import CorralApp
    from corral.tui.widgets import ActivityCard, Editor

    scripts = root / "scripts"
    scripts.mkdir(exist_ok=True)
    name = f"bench{agents}"
    (scripts / f"{name}.yaml").write_text(_script(agents, steps, step_ms, surface))
    project = root / f"project{agents}"
    project.mkdir()
    app = CorralApp(LaunchOptions(project, model=f"scripted/{name}", surfaces=[surface]))
    refreshes: list[float] = []
    original = ActivityCard.show_rows

    def counting(self: ActivityCard, rows: Any) -> None:
        refreshes.append(time.perf_counter())
        original(self, rows)

    ActivityCard.show_rows = counting  # type: ignore[method-assign]
    try:
        async with app.run_test(size=(120, 60)) as pilot:
            editor = app.query_one(Editor)
            while app.starting:  # the app paints first, then opens the lead
                await pilot.pause()
            if agents:
                await pilot.press(*"go")
                await pilot.press("enter")
                deadline = time.perf_counter() + 60
                while len(app.rows) < agents and time.perf_counter() < deadline:
                    await pilot.pause()
            working = sum(1 for row in app.rows if row.state in ("working", "thinking"))
            refreshes.clear()
            cpu0, wall0 = time.process_time(), time.perf_counter()
            echo: list[float] = []
            for index in range(keys):
                char = "abcdefghij"[index % 10]
                before = len(editor.text)
                start = time.perf_counter()
                editor.post_message(events.Key(char, char))
                while len(editor.text) == before:
                    await asyncio.sleep(0.0005)
                echo.append(time.perf_counter() - start)
                await asyncio.sleep(0.02)  # a typing pace, not a wait for the app
            cpu1, wall1 = time.process_time(), time.perf_counter()
            window = wall1 - wall0
            return {
                "agents": agents,
                "surface": surface,
                "working_at_start": working,
                "echo": summary_ms(echo),
                "activity_refreshes_per_s": round(len(refreshes) / window, 2),
                "cpu_share": round((cpu1 - cpu0) / window, 3),
                "window_s": round(window, 3),
            }
    finally:
        ActivityCard.show_rows = original  # type: ignore[method-assign]


def _reply_events(deltas: list[str]) -> tuple[Any, list[Any], Any]:
    """The lead's message_start, one message_update per delta, and message_end for one reply."""
    from corral.agent import MessageEndEvent, MessageStartEvent, MessageUpdateEvent
    from corral.llm import AssistantMessage, TextContent
    from corral.llm._model import TextDeltaEvent

    start = MessageStartEvent(message=AssistantMessage(content=[]))
    updates: list[Any] = []
    text = ""
    for delta in deltas:
        text += delta
        partial = AssistantMessage(content=[TextContent(text=text)])
        updates.append(
            MessageUpdateEvent(
                message=partial,
                assistant_message_event=TextDeltaEvent(content_index=0, delta=delta, partial=partial),
            )
        )
    end = MessageEndEvent(message=AssistantMessage(content=[TextContent(text=text)]))
    return start, updates, end


async def _measure_reply(
    root: Path, kilobytes: float, deltas: int, keys: int, pace_ms: int, timeout_s: float
) -> dict[str, Any]:
    from textual import events

    from corral._cli._launch import LaunchOptions
    from corral.tui import CorralApp
    from corral.tui.app import LeadEvent
    from corral.tui.widgets import AssistantCard, Editor

    text = long_reply(kilobytes)
    start, updates, end = _reply_events(split_deltas(text, deltas))
    scripts = root / "scripts"
    scripts.mkdir(exist_ok=True)
    (scripts / "benchreply.yaml").write_text('steps:\n  - text: "ok"\n')
    project = root / "project-reply"
    project.mkdir(exist_ok=True)
    app = CorralApp(LaunchOptions(project, model="scripted/benchreply", surfaces=[]))
    result: dict[str, Any] = {"reply_bytes": len(text.encode()), "deltas": deltas}

    def rendered(before: int) -> bool:
        cards = list(app.query(AssistantCard))
        return len(cards) > before and cards[-1].rendered == text

    async with app.run_test(size=(120, 60)) as pilot:
        editor = app.query_one(Editor)
        while app.starting:  # the app paints first, then opens the lead
            await pilot.pause()
        # 1. the whole reply at once
        began, cpu_began = time.perf_counter(), time.process_time()
        for event in (start, *updates, end):
            app.post_message(LeadEvent(event))
        while not rendered(0):
            if time.perf_counter() - began > timeout_s:
                result["reply_s"] = None
                result["timed_out_after_s"] = timeout_s
                return result
            await asyncio.sleep(0.005)
        result["reply_s"] = round(time.perf_counter() - began, 3)
        # CPU time of the process over the same span: comparable across machine loads
        result["reply_cpu_s"] = round(time.process_time() - cpu_began, 3)

        # 2. keystroke echo while a paced reply streams
        async def stream() -> None:
            # Delta i is due `i * pace_ms` after the start; each wake posts every delta now due, as
            # a socket buffers a provider's stream while the event loop is busy.
            app.post_message(LeadEvent(start))
            began = time.perf_counter()
            posted = 0
            while posted < len(updates):
                due = min(len(updates), int((time.perf_counter() - began) * 1000 / pace_ms) + 1)
                for event in updates[posted:due]:
                    app.post_message(LeadEvent(event))
                posted = max(posted, due)
                await asyncio.sleep(pace_ms / 1000)
            app.post_message(LeadEvent(end))

        streaming = asyncio.create_task(stream())
        echo: list[float] = []
        for index in range(keys):
            if streaming.done():
                break
            char = "abcdefghij"[index % 10]
            before = len(editor.text)
            began = time.perf_counter()
            editor.post_message(events.Key(char, char))
            while len(editor.text) == before:
                await asyncio.sleep(0.0005)
            echo.append(time.perf_counter() - began)
            await asyncio.sleep(0.02)  # a typing pace, not a wait for the app
        await streaming
        while not rendered(1):
            await asyncio.sleep(0.005)
        result["echo_while_streaming"] = summary_ms(echo) if echo else None
        result["pace_ms"] = pace_ms
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", type=int, default=50, help="managed agents (default 50)")
    parser.add_argument("--keys", type=int, default=100, help="keystrokes measured (default 100)")
    parser.add_argument("--steps", type=int, default=40, help="scripted steps per agent (default 40)")
    parser.add_argument("--step-ms", type=int, default=100, help="latency per agent step (default 100)")
    parser.add_argument(
        "--surface",
        choices=("agent", "teams"),
        default="agent",
        help="how the lead delegates (default agent)",
    )
    parser.add_argument("--reply-kb", type=float, default=11.6, help="long reply size in KB (default 11.6)")
    parser.add_argument(
        "--reply-deltas", type=int, default=466, help="deltas of the long reply (default 466)"
    )
    parser.add_argument(
        "--reply-pace-ms", type=int, default=10, help="delta interval while echo is measured (default 10)"
    )
    parser.add_argument(
        "--reply-timeout", type=float, default=300.0, help="give up on the long reply after this many seconds"
    )
    parser.add_argument("--reply-only", action="store_true", help="measure only the long reply")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="corral-bench-tui-"))
    os.environ.update(
        CORRAL_HOME=str(root / "home"),
        CORRAL_SCRIPTS=str(root / "scripts"),
        XDG_CONFIG_HOME=str(root / "config"),
    )
    settings = root / "config" / "corral" / "settings.toml"
    settings.parent.mkdir(parents=True)
    settings.write_text(f"[teams.read_agents]\nmax_concurrent = {max(args.agents, 1)}\n")
    baseline = loaded = None
    try:
        baseline = asyncio.run(_measure(root, 0, args.keys, args.steps, args.step_ms, args.surface))
        if not args.reply_only:
            loaded = asyncio.run(
                _measure(root, args.agents, args.keys, args.steps, args.step_ms, args.surface)
            )
        reply = asyncio.run(
            _measure_reply(
                root, args.reply_kb, args.reply_deltas, args.keys, args.reply_pace_ms, args.reply_timeout
            )
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        json.dumps(
            {
                "benchmark": "tui",
                "environment": environment("benchmarks/bench_tui.py"),
                "targets": {"echo_p95_ms": 50, "activity_refreshes_per_s": 4, "long_reply_s": 2},
                "baseline": baseline,
                "loaded": loaded,
                "long_reply": reply,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
