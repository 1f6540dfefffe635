"""Last event → process exit of `corral run --mode json`: a plain prompt, and a teams swarm of N agents.

Each sample is a fresh process with a fresh data root and a zero-latency
scripted model. The clock stops twice: when the last JSON event line arrives on
the pipe (each line is flushed as it is written) and when the process has
exited (`wait()` returns). The figure is the difference — what the process
does after it has said everything: closing the store and sessions, and
interpreter teardown. The swarm lead spawns N read agents with
`spawn_swarm_agents`; each reports 1,500 characters, so the process holds a
realistic object graph at exit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import corral_command, environment, summary_ms

REPORT = "x" * 1500


def swarm_script(agents: int) -> str:
    members = [{"name": f"a{i}", "prompt": f"task {i}"} for i in range(agents)]
    return json.dumps(
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_swarm_agents",
                            "args": {"defaults": {"model_slot": "read-collect"}, "agents": members},
                        }
                    ]
                },
                {"text": "Waiting for reports."},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "*": [
                    {
                        "tool_calls": [
                            {
                                "name": "report_and_exit",
                                "args": {"content": REPORT, "outcome": "succeeded"},
                            }
                        ]
                    }
                ]
            },
        }
    )


def one_exit(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(last line → exit, whole run) in seconds."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    last = start
    for _line in proc.stdout:
        last = time.perf_counter()
    code = proc.wait()
    end = time.perf_counter()
    if code != 0:
        raise SystemExit(f"{argv} exited {code}: {proc.stderr.read().decode()[-800:] if proc.stderr else ''}")
    return end - last, end - start


def measure(argv: list[str], root: Path, script: str, runs: int) -> dict[str, object]:
    exits, walls = [], []
    for run in range(runs):
        home = root / f"home-{run}-{len(script)}"
        scripts = root / "scripts"
        scripts.mkdir(exist_ok=True)
        (scripts / "lead.json").write_text(script)
        project = root / "project"
        project.mkdir(exist_ok=True)
        env = dict(os.environ)
        env.update(CORRAL_HOME=str(home), CORRAL_SCRIPTS=str(scripts), XDG_CONFIG_HOME=str(root / "config"))
        exit_s, wall_s = one_exit(argv, env, project)
        exits.append(exit_s)
        walls.append(wall_s)
        shutil.rmtree(home, ignore_errors=True)
    return {"last_event_to_exit": summary_ms(exits), "wall": summary_ms(walls)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10, help="samples per case (default 10)")
    parser.add_argument("--agents", type=int, default=20, help="swarm size (default 20)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="corral-bench-exit-"))
    try:
        base = [*corral_command(), "run", "--mode", "json", "--model", "scripted/lead", "-p", "go"]
        plain = json.dumps({"steps": [{"text": "ok"}], "on_exhausted": "repeat_last"})
        result = {
            "benchmark": "exit",
            "plain": measure([*base, "--surfaces", ""], root, plain, args.runs),
            f"swarm_{args.agents}": measure(
                [*base, "--surfaces", "teams"], root, swarm_script(args.agents), args.runs
            ),
            "target_ms": {"last_event_to_exit_p50": 50},
            "load_average": os.getloadavg(),
            "env": environment("benchmarks/bench_exit.py"),
        }
        print(json.dumps(result, indent=2))
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
