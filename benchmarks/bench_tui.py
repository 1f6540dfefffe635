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

The baseline is the same app with no agents. Prints one JSON object.
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
    try:
        baseline = asyncio.run(_measure(root, 0, args.keys, args.steps, args.step_ms, args.surface))
        loaded = asyncio.run(_measure(root, args.agents, args.keys, args.steps, args.step_ms, args.surface))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        json.dumps(
            {
                "benchmark": "tui",
                "environment": environment("benchmarks/bench_tui.py"),
                "targets": {"echo_p95_ms": 50, "activity_refreshes_per_s": 4},
                "baseline": baseline,
                "loaded": loaded,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
