"""tmux runtime latency: `delegate` → worker ready, and → result delivered.

A lead and its agents run on a zero-latency scripted model in a temp data
root; the agents run on the tmux runtime (a private tmux server on a socket in
the temp root). Each iteration delegates one `scout` whose reply is one line
of text and records (a) the time until `delegate` returns, which is when the
worker in its pane recorded its readiness (pid, pane id) and acknowledged its
task, and (b) the time until the result entry is persisted in the lead's
session (worker start, run, durable result, discovery by the host's store
poll, delivery). Python start-up and imports of the worker dominate.
Target: p50 round trip under 1 s.

Prints one JSON object with p50/p95 (via `summary_ms`) and the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, summary_ms
from _orch import data_root, result_arrivals, result_counts

SCRIPT = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": {"*": [{"text": "done"}]}}


async def _run(root: Path, iterations: int, warmup: int) -> tuple[list[float], list[float], bool]:
    from corral.agent import AgentSession
    from corral.lead._host import ComposedHost
    from corral.llm import ModelRegistry
    from corral.orchestration import Repositories, load_roster
    from corral.orchestration.surfaces import DelegateParams
    from corral.session import SessionManager
    from corral.settings import Settings

    work = root / "work"
    registry = ModelRegistry(Settings(), cwd=work)
    model = registry.create_model(registry.resolve("scripted/bench"), cwd=work)
    session = SessionManager.create(work, sessions_root=root / "sessions")
    lead = AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=work)
    host = ComposedHost(
        repositories=Repositories.open(root / "home" / "corral.db"),
        registry=registry,
        settings=Settings(runtime="tmux"),
        sessions_root=root / "sessions",
        roster_loader=lambda cwd: load_roster(cwd, user_dir=root / "none", trust=False),
        tmux_socket=root / "tmux.sock",
    )
    caller = await host.attach_lead(lead, surfaces=())
    delivered = result_arrivals(lead)
    ready: list[float] = []
    round_trip: list[float] = []
    try:
        for index in range(warmup + iterations):
            begin = time.perf_counter()
            result = await host.controller.delegate(
                caller, DelegateParams(definition="scout", task=f"t{index}")
            )
            started = time.perf_counter()
            while result.request_id not in delivered:
                await asyncio.sleep(0.002)
            if index >= warmup:
                ready.append(started - begin)
                round_trip.append(delivered[result.request_id] - begin)
            await host.wait_until_quiet(caller.session_id)
        counts = result_counts(lead)
        exactly_once = len(counts) == warmup + iterations and all(n == 1 for n in counts.values())
    finally:
        await host.aclose()
        session.close()
        subprocess.run(
            ["tmux", "-S", str(root / "tmux.sock"), "kill-server"], capture_output=True, check=False
        )
    return ready, round_trip, exactly_once


def main() -> None:
    """Run the benchmark and print its JSON summary."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    out: dict[str, Any] = {"benchmark": "tmux", "environment": environment(__file__)}
    if shutil.which("tmux") is None:
        out["skipped"] = "tmux is not installed"
        print(json.dumps(out, indent=2))
        return
    with data_root(SCRIPT, "corral-bench-tmux-") as root:
        ready, round_trip, exactly_once = asyncio.run(_run(root, args.iterations, args.warmup))
    out.update(
        delegate_to_worker_ready=summary_ms(ready),
        round_trip_to_delivered=summary_ms(round_trip),
        exactly_once=exactly_once,
        target="p50 round trip < 1000 ms",
    )
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
