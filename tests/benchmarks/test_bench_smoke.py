"""Every benchmark script still runs: each `benchmarks/bench_*.py`, tiny, as its own process.

The benchmarks are not tests (they assert no timings), so nothing else runs them and a refactor can
break one unnoticed. Here each runs with the smallest parameters that still take every path it
measures, and must exit 0 and print one JSON object with its figures' top-level keys; every
`exactly_once` flag it reports must be true. A script that needs a missing tool (tmux, bubblewrap,
Ray) is skipped with the reason, except under `CI=true`, where `.ci/run` installs them and a skip
would hide a broken benchmark. The Ray benchmark runs on the session's test cluster
(tests/ray/test_bench_ray_smoke.py), not here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests._ci import unavailable

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

_TIMEOUT_S = 110.0
"""Per script, by default; the suite's per-test timeout is 120 s."""


@dataclass(frozen=True, slots=True)
class Smoke:
    """How one benchmark script runs tiny and what its JSON must hold."""

    args: tuple[str, ...]
    keys: frozenset[str]
    """Top-level keys of the printed object."""
    needs: tuple[str, ...] = ()
    """Executables the script cannot run without."""
    check: Callable[[dict[str, Any]], None] | None = None
    """Optional further check of the parsed object."""


def _peer(out: dict[str, Any]) -> None:
    for system in ("corral-teams", "corral-agent"):
        runs = out["results"][system]["by_n"]["2"]
        assert runs["failed_runs"] == 0, out
        assert runs["lead_requests"] >= 1 and runs["agent_requests"] >= 1, out
    # The peer runs when Node, Pi and pi-extended-teams are installed; else the script says why.
    assert "pi" in out["results"] or "pi" in out["skipped"], out
    assert out["fanout"]["agents"] == 3, out
    # Nagle's algorithm would stall each kept-alive request ~40 ms: a tax on the peer's many requests.
    assert out["fake_server"]["tcp_nodelay"] is True, out
    # A dropped connection attempt waits 1 s for its SYN to be resent (None: not Linux, not counted).
    assert out["fake_server"]["listen_drops"] in (0, None), out


def _shared_server(out: dict[str, Any]) -> None:
    # Every agent of the lead's process is answered by the one server process its host started.
    assert out["shared"]["server_processes"] == 1 and out["shared"]["agents"] == 3, out


def _harness(out: dict[str, Any]) -> None:
    assert out["fake_agent"]["corral_overhead"]["n"] == 2, out
    assert out["fan_out"]["agents"] == 2 and out["fan_out"]["corral_rss_mb"]["peak"] > 0, out


def _tui(out: dict[str, Any]) -> None:
    # The agents must still be working when the keys are typed: else the loaded figure measures
    # an idle app.
    assert out["loaded"]["working_at_start"] == 2, out["loaded"]
    assert out["long_reply"]["reply_s"] is not None, out["long_reply"]


def _fanout(out: dict[str, Any]) -> None:
    assert out["all_finalized"] is True, out


def _fanout_sizes(out: dict[str, Any]) -> None:
    assert [run["agents"] for run in out["runs"]] == [2, 3], out
    assert all(run["all_finalized"] is True for run in out["runs"]), out
    assert set(out["scaling"]) == {"2", "3"}, out


def _teams(out: dict[str, Any]) -> None:
    assert out["swarm"]["failed_at_spawn"] == 0, out


def _delivery(out: dict[str, Any]) -> None:
    assert out["all_settled_compact"]["synthesis"]["input_tokens"] > 0, out


SMOKES: dict[str, Smoke] = {
    # `script` or `script:variant` (another option that takes another path) -> its tiny run.
    "bench_budget": Smoke(
        ("--requests", "20", "--overshoot-agents", "3", "--tree-tokens", "3000"),
        frozenset({"requests", "check", "record", "check_and_record", "overshoot"}),
    ),
    "bench_capacity": Smoke(
        ("--burst", "6", "--limit", "2", "--repeat", "1"),
        frozenset({"burst", "limit", "capacity_controller", "baseline_semaphore"}),
    ),
    "bench_delegate": Smoke(
        ("--iterations", "2", "--warmup", "1"),
        frozenset({"delegate_to_first_request", "delegate_to_result_delivered", "exactly_once"}),
    ),
    "bench_delivery": Smoke(
        (),
        frozenset({"reports", "immediate_full", "all_settled_compact", "ratios_compact_over_immediate"}),
        check=_delivery,
    ),
    "bench_exit": Smoke(("--runs", "1", "--agents", "2"), frozenset({"plain", "swarm_2"})),
    "bench_fanout": Smoke(
        ("--agents", "4", "--tool-calls", "2"),
        frozenset({"agents", "wall_s", "cpu_s", "gc", "exactly_once", "all_finalized", "peak_rss_mb"}),
        check=_fanout,
    ),
    "bench_fanout:sizes": Smoke(
        ("--agents", "2,3", "--tool-calls", "1"),
        frozenset({"runs", "scaling", "exactly_once", "all_finalized"}),
        check=_fanout_sizes,
    ),
    "bench_harness": Smoke(
        ("--iterations", "2", "--warmup", "1", "--real", "", "--agents", "2"),
        frozenset({"fake_agent", "real_agents", "fan_out", "real_agents_missing"}),
        check=_harness,
    ),
    "bench_http": Smoke(
        ("--agents", "2", "--requests", "2"),
        frozenset({"model_creation_cpu_ms", "requests_sent", "connections_accepted"}),
    ),
    "bench_loop": Smoke(("--turns", "5"), frozenset({"turns", "p50_ms", "p95_ms", "total_s"})),
    "bench_acp": Smoke(
        ("--iterations", "2", "--warmup", "1", "--startups", "1", "--cancels", "2"),
        frozenset(
            {
                "startup_to_initialize",
                "prompt_to_first_chunk",
                "delegate_to_result_shown",
                "cancel_to_answer",
            }
        ),
    ),
    "bench_mcp": Smoke(
        ("--iterations", "2", "--warmup", "1", "--agents", "3", "--startups", "1"),
        frozenset(
            {
                "in_process_round_trip",
                "mcp_stdio_round_trip",
                "mcp_overhead_p50_ms",
                "fanout",
                "startup_to_initialize",
                "startup_to_tools_list",
            }
        ),
    ),
    "bench_mcp_client": Smoke(
        ("--iterations", "3", "--warmup", "1", "--agents", "3", "--calls", "1"),
        frozenset({"overhead", "shared"}),
        check=_shared_server,
    ),
    "bench_peer": Smoke(
        ("--n", "2", "--runs", "1", "--fanout", "3"),
        frozenset({"sizes", "runs", "results", "skipped", "fanout"}),
        check=_peer,
    ),
    "bench_hooks": Smoke(
        ("--rule-calls", "40", "--hook-calls", "2"),
        frozenset({"rules", "gate_without_hooks", "python_hook", "shell_hook"}),
    ),
    "bench_ratelimit": Smoke(
        ("--requests", "50", "--repeat", "1"),
        frozenset({"requests", "per_request_us", "stored_window_read_us", "contended_overhead_us"}),
    ),
    "bench_sandbox": Smoke(
        ("--runs", "2"), frozenset({"runs", "unconfined", "sandbox", "legacy_ro_bind_root"}), needs=("bwrap",)
    ),
    "bench_skills": Smoke(
        ("--skills", "3", "--repeat", "1"),
        frozenset({"skills", "section_chars", "described", "discover", "bodies_chars_kept_out"}),
    ),
    "bench_session": Smoke(
        ("--entries", "50", "--tail-mb", "1", "--repeat", "1"), frozenset({"context", "tail"})
    ),
    "bench_first_request": Smoke(
        ("--runs", "1"), frozenset({"cpu_to_first_request", "wall_to_first_request", "load_average"})
    ),
    "bench_startup": Smoke(("--runs", "1"), frozenset({"help", "run_print_scripted"})),
    "bench_store_loop": Smoke(
        ("--agents", "3", "--activity", "1", "--rounds", "1"), frozenset({"on_loop", "to_thread"})
    ),
    "bench_teams": Smoke(
        ("--spawns", "2", "--warmup", "1", "--swarm", "3", "--burst", "5", "--limit", "2"),
        frozenset({"spawn_latency", "swarm", "burst"}),
        check=_teams,
    ),
    "bench_tmux": Smoke(
        ("--iterations", "1", "--warmup", "0"),
        frozenset({"delegate_to_worker_ready", "round_trip_to_delivered", "exactly_once"}),
        needs=("tmux",),
    ),
    "bench_tracing": Smoke(
        ("--agents", "3", "--tool-calls", "1", "--rounds", "1"),
        frozenset({"best_wall_s", "spans_written", "overhead_pct", "cpu_overhead_pct"}),
    ),
    # Agents of 100 steps of 100 ms: still working while the keys are typed (`_tui` checks it), even
    # on a loaded machine; the app closes right after the keys, so the steps left cost nothing.
    "bench_tui": Smoke(
        (
            *("--agents", "2", "--keys", "3", "--steps", "100", "--step-ms", "100"),
            *("--reply-kb", "0.5", "--reply-deltas", "5", "--reply-pace-ms", "5", "--reply-timeout", "60"),
        ),
        frozenset({"baseline", "loaded", "long_reply"}),
        check=_tui,
    ),
    # The teams surface: one `spawn_swarm_agents` call instead of `agent` delegates; the long reply
    # is the same path as above, so `--reply-only` is not run apart.
    "bench_tui:teams": Smoke(
        (
            *("--surface", "teams", "--agents", "2", "--keys", "3", "--steps", "100", "--step-ms", "100"),
            *("--reply-kb", "0.5", "--reply-deltas", "5", "--reply-pace-ms", "5", "--reply-timeout", "60"),
        ),
        frozenset({"baseline", "loaded", "long_reply"}),
        check=_tui,
    ),
    # Each provider API the fake server speaks: the requests and replies differ.
    "bench_turn": Smoke(("--turns", "1", "--sizes", "1"), frozenset({"api", "lead_turn"})),
    "bench_turn:openai-responses": Smoke(
        ("--turns", "1", "--sizes", "1", "--api", "openai-responses"), frozenset({"api", "lead_turn"})
    ),
    "bench_turn:anthropic": Smoke(
        ("--turns", "1", "--sizes", "1", "--api", "anthropic"), frozenset({"api", "lead_turn"})
    ),
    "bench_workspace": Smoke(
        ("--files", "20", "--rounds", "1"),
        frozenset({"take_snapshot", "unpack", "collect_patch", "apply_patch", "discard"}),
    ),
    "bench_worktree": Smoke(
        ("--files", "20", "--rounds", "1", "--writers", "2", "--edits", "2"),
        frozenset({"git", "create_teardown", "writers"}),
    ),
}

ELSEWHERE = {"bench_ray": "tests/ray/test_bench_ray_smoke.py (on the session's Ray cluster)"}


def run_bench(name: str, args: tuple[str, ...], *, timeout_s: float = _TIMEOUT_S) -> dict[str, Any]:
    """Run `benchmarks/<name>.py args` and return the JSON object it printed."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        cwd=BENCHMARKS.parent,
    )
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stderr[-3000:]}"
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        pytest.fail(f"{name} printed no JSON object ({exc}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    assert isinstance(out, dict), f"{name} printed {type(out).__name__}, not an object"
    return out


def exactly_once_flags(out: object, path: str = "") -> dict[str, object]:
    """Every `exactly_once` value in the object, by its dotted path."""
    found: dict[str, object] = {}
    if isinstance(out, dict):
        for key, value in out.items():
            here = f"{path}.{key}" if path else str(key)
            if key == "exactly_once":
                found[here] = value
            found.update(exactly_once_flags(value, here))
    elif isinstance(out, list):
        for index, value in enumerate(out):
            found.update(exactly_once_flags(value, f"{path}[{index}]"))
    return found


def check_output(name: str, out: dict[str, Any], keys: frozenset[str]) -> None:
    """The keys the script's figures live under are there; no figure reports a lost or repeated result."""
    assert "skipped" not in out or name == "bench_peer", f"{name} skipped itself: {out['skipped']}"
    missing = keys - out.keys()
    assert not missing, f"{name} printed no {sorted(missing)} (keys: {sorted(out)})"
    flags = exactly_once_flags(out)
    assert all(value is True for value in flags.values()), f"{name}: exactly-once broken: {flags}"


def _script(run: str) -> str:
    return run.partition(":")[0]


def test_every_benchmark_has_a_smoke_run() -> None:
    scripts = {path.stem for path in BENCHMARKS.glob("bench_*.py")}
    covered = {_script(run) for run in SMOKES} | set(ELSEWHERE)
    assert scripts == covered, (
        f"give each benchmark a tiny run in {Path(__file__).name}: "
        f"missing {sorted(scripts - covered)}, stale {sorted(covered - scripts)}"
    )


@pytest.mark.parametrize("run", sorted(SMOKES))
def test_benchmark_runs_tiny(run: str) -> None:
    smoke, name = SMOKES[run], _script(run)
    missing = [tool for tool in smoke.needs if shutil.which(tool) is None]
    if missing:
        unavailable(f"{name} needs {', '.join(missing)} (not installed)")
    out = run_bench(name, smoke.args)
    check_output(name, out, smoke.keys)
    if smoke.check is not None:
        smoke.check(out)
