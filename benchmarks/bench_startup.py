"""Cold start: `corral --help`, and `corral run -p` with a zero-latency scripted model.

Targets: under 300 ms each on a 2-core machine (issue 2 set 600 ms for the run; issue 16
lowered it to 300 ms). Each sample is
a fresh process (the cold-start cost a user pays), with a fresh data root.
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

SCRIPT = "steps:\n  - text: 'ok'\non_exhausted: repeat_last\n"


def time_command(argv: list[str], env: dict[str, str], cwd: Path, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
        samples.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{argv} failed: {done.stderr.decode()[-500:]}")
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15, help="samples per command (default 15)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="corral-bench-startup-"))
    try:
        scripts = root / "scripts"
        scripts.mkdir()
        (scripts / "bench.yaml").write_text(SCRIPT)
        project = root / "project"
        project.mkdir()
        env = dict(os.environ)
        env.update(
            CORRAL_HOME=str(root / "home"),
            CORRAL_SCRIPTS=str(scripts),
            XDG_CONFIG_HOME=str(root / "config"),
        )
        cmd = corral_command()
        time_command([*cmd, "--help"], env, project, 2)  # warm the OS file cache, not Python
        help_samples = time_command([*cmd, "--help"], env, project, args.runs)
        run_samples = time_command(
            [*cmd, "run", "--model", "scripted/bench", "-p", "hi"], env, project, args.runs
        )
        result = {
            "benchmark": "startup",
            "help": summary_ms(help_samples),
            "run_print_scripted": summary_ms(run_samples),
            "targets_ms": {"help_p50": 300, "run_print_scripted_p50": 300},
            "env": environment("benchmarks/bench_startup.py"),
        }
        print(json.dumps(result, indent=2))
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
