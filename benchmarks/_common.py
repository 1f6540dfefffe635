"""Shared helpers for the benchmark scripts: the `corral` command, environment facts and summary statistics."""

from __future__ import annotations

import platform
import sqlite3
import statistics
import sys
from pathlib import Path
from typing import Any


def corral_command() -> list[str]:
    """The `corral` command beside this interpreter (`python -m corral.cli` when it is not installed)."""
    exe = Path(sys.executable).with_name("corral")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "corral.cli"]


def start_json_lines(argv: list[str], request: dict[str, Any]) -> tuple[Any, dict[str, Any], float, float]:
    """Start `argv` (a stdio JSON-lines server: `corral mcp`, `corral acp`), send `request` and read the
    first line it answers: `(process, answer, spawn time, seconds from spawn to the answer)`, times by
    `perf_counter`. The process is left running with its stdin open for the caller."""
    import json
    import os
    import subprocess
    import time

    start = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ)
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write((json.dumps(request) + "\n").encode())
    process.stdin.flush()
    answer = json.loads(process.stdout.readline())
    return process, answer, start, time.perf_counter() - start


def environment(script: str) -> dict[str, Any]:
    """Facts that make a figure comparable: Python, SQLite, platform, CPU count, script."""
    import os

    return {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "script": script,
    }


def summary_ms(samples_s: list[float]) -> dict[str, float]:
    """Mean, standard deviation, p50 and p95 of samples given in seconds, in milliseconds."""
    ordered = sorted(samples_s)
    ms = [s * 1000 for s in ordered]
    p95_index = min(len(ms) - 1, max(0, round(0.95 * (len(ms) - 1))))
    return {
        "n": len(ms),
        "mean_ms": round(statistics.fmean(ms), 3),
        "stdev_ms": round(statistics.stdev(ms), 3) if len(ms) > 1 else 0.0,
        "p50_ms": round(statistics.median(ms), 3),
        "p95_ms": round(ms[p95_index], 3),
        "min_ms": round(ms[0], 3),
    }
