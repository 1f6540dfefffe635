"""Session store figures: load and context-build time of a large session, tail-read time of a huge file.

Prints one JSON object:

* `load_s`: `SessionManager.open(read_only=True)` of a synthetic session of
  `--entries` entries (default 100,000: user / assistant-with-tool-call /
  tool-result turns, with a compaction and a side branch);
* `build_context_s`: `build_session_context` of that session at its leaf
  (target < 1 s);
* `tail_s`: `read_tail_entries` (1 MiB window) of a `--tail-mb` file
  (default 100 MB; target < 50 ms: the cost must not grow with the file);

each as mean ± stdev over `--repeat` runs, plus the Python and SQLite
versions and the platform. Files live in a temporary directory that is
removed afterwards.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from corral.session import SessionManager, build_session_context, read_tail_entries

CONTEXT_TARGET_S = 1.0
TAIL_TARGET_S = 0.050


def _entry(entry_id: str, parent: str | None, body: dict[str, Any]) -> str:
    # Pi's key order: type, id, parentId, timestamp, then the entry's own fields.
    entry = {
        "type": body["type"],
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:00.000Z",
    }
    entry.update(body)
    return json.dumps(entry, separators=(",", ":"))


def _turn(i: int, filler: str) -> list[dict[str, Any]]:
    usage = {
        "input": 100 + i,
        "output": 20,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 120 + i,
        "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0},
    }
    return [
        {"type": "message", "message": {"role": "user", "content": f"step {i} {filler}", "timestamp": i}},
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"doing {i}"},
                    {"type": "toolCall", "id": f"c{i}", "name": "read", "arguments": {"path": f"f{i}.py"}},
                ],
                "api": "scripted",
                "provider": "scripted",
                "model": "bench",
                "usage": usage,
                "stopReason": "toolUse",
                "timestamp": i,
            },
        },
        {
            "type": "message",
            "message": {
                "role": "toolResult",
                "toolCallId": f"c{i}",
                "toolName": "read",
                "content": [{"type": "text", "text": filler}],
                "isError": False,
                "timestamp": i,
            },
        },
    ]


def write_session(path: Path, entries: int, *, filler_bytes: int) -> int:
    """Write a linear session of `entries` entries (plus a compaction and a side branch); returns its size."""
    filler = "x" * filler_bytes
    header = {
        "type": "session",
        "version": 3,
        "id": "bench",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/b",
    }
    with path.open("w") as handle:
        handle.write(json.dumps(header, separators=(",", ":")) + "\n")
        parent: str | None = None
        written = 0
        turn = 0
        while written < entries:
            for body in _turn(turn, filler):
                if written == entries // 2:
                    # One compaction halfway, keeping the last few entries before it.
                    body = {
                        "type": "compaction",
                        "summary": "s",
                        "firstKeptEntryId": f"{written - 6:08x}",
                        "tokensBefore": 1,
                    }
                if written == entries // 3:
                    # A side branch off an older entry (not on the final path).
                    entry_id = f"{written:08x}"
                    handle.write(_entry(entry_id, f"{written - 10:08x}", body) + "\n")
                    written += 1
                    continue
                entry_id = f"{written:08x}"
                handle.write(_entry(entry_id, parent, body) + "\n")
                parent = entry_id
                written += 1
                if written >= entries:
                    break
            turn += 1
    return path.stat().st_size


def _time(fn: Callable[[], object], repeat: int) -> dict[str, float]:
    gc.collect()
    samples: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return {
        "mean": statistics.fmean(samples),
        "stdev": statistics.stdev(samples) if len(samples) > 1 else 0.0,
        "min": min(samples),
        "max": max(samples),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one JSON object; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--entries", type=int, default=100_000, help="entries in the context session (100000)"
    )
    parser.add_argument("--tail-mb", type=int, default=100, help="size of the tail-read file in MB (100)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per figure (5)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="corral-bench-session-") as tmp:
        directory = Path(tmp)
        session_path = directory / "context.jsonl"
        session_bytes = write_session(session_path, args.entries, filler_bytes=40)
        load = _time(lambda: SessionManager.open(session_path, read_only=True), max(1, args.repeat // 2))
        manager = SessionManager.open(session_path, read_only=True)
        entries = manager.entries
        leaf = manager.leaf_id
        context = build_session_context(entries, leaf)
        build = _time(lambda: build_session_context(entries, leaf), args.repeat)

        tail_path = directory / "tail.jsonl"
        filler = 900
        per_entry = 905  # average bytes per entry of a user / assistant / tool-result turn
        tail_entries = max(10, args.tail_mb * 1_000_000 // per_entry)
        tail_bytes = write_session(tail_path, tail_entries, filler_bytes=filler)
        tail = _time(lambda: read_tail_entries(tail_path), args.repeat)
        tail_count = len(read_tail_entries(tail_path))

    result = {
        "benchmark": "session",
        "script": "benchmarks/bench_session.py",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "context": {
            "entries": len(entries),
            "file_bytes": session_bytes,
            "messages_in_context": len(context.messages),
            "load_s": load,
            "build_context_s": build,
            "target_s": CONTEXT_TARGET_S,
            "ok": build["mean"] < CONTEXT_TARGET_S,
        },
        "tail": {
            "file_bytes": tail_bytes,
            "window_bytes": 1 << 20,
            "entries_read": tail_count,
            "tail_s": tail,
            "target_s": TAIL_TARGET_S,
            "ok": tail["mean"] < TAIL_TARGET_S,
        },
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
