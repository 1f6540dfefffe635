"""Teams surface: spawn latency, a 50-member swarm, and a 200-spawn burst through `max_concurrent: 8`.

Everything runs in one process on a zero-latency scripted model, over a real
store, a real host and real session files, each figure in its own temp data
root. The lead is attached with the `teams` surface and calls the teams core
directly (`host.teams.spawn` / `spawn_swarm` with parsed tool arguments), as
its `spawn_agent` / `spawn_swarm_agents` tools do. Every agent answers its
first model request with one `report_and_exit` call.

1. **Spawn latency** (`--spawns`, default 100, after `--warmup` 10): one
   `read-review` spawn at a time, from just before `spawn` to the moment the
   child's model is handed its first request (a wrapper around the child
   model's `stream` time-stamps the call the agent loop makes; nothing else
   is on that path). After each spawn the host is left to deliver the report
   and finalize. Target: p50 < 30 ms.
2. **Swarm** (`--swarm`, default 50): one `spawn_swarm_agents` call with
   `read-collect` members under the default `read_agents.max_concurrent`
   (25), so half the members queue. Wall time runs from the call until every
   `corral-team-report` is persisted in the lead's session (the lead's
   `message_end` for that entry); per-report latency is the same clock for
   each report. Peak RSS is the process high-water mark read right after
   this figure, which runs first. Target: < 2 s.
3. **Burst** (`--burst`, default 200, `--limit` 8): that many `spawn` calls at
   once against `read_agents.max_concurrent: 8`. Drain time runs from the
   burst until the host reports the lead quiet (every report delivered, every
   generation finalized). The concurrency observed is counted outside the
   capacity controller: the size of the teams core's map of launched, not yet
   released agents, sampled at every insertion; the controller's own count of
   held slots is sampled at the same moments. Both must stay ≤ the limit.

Each figure checks exactly-once delivery (one report entry per report id in
the lead's session file). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, summary_ms
from _orch import data_root

REPORT_TYPE = "corral-team-report"
REPORT_STEP = {
    "tool_calls": [
        {"name": "report_and_exit", "args": {"content": "Findings: none.", "outcome": "succeeded"}}
    ]
}
SCRIPT = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": {"*": [REPORT_STEP]}}


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


async def _start(root: Path, settings: Any) -> tuple[Any, Any, Any, list[BaseException]]:
    """A host with a scripted lead attached with the teams surface: `(host, lead, caller, errors)`."""
    from corral.agent import AgentSession
    from corral.lead._host import ComposedHost
    from corral.llm import ModelRegistry
    from corral.orchestration import Repositories, load_roster
    from corral.session import SessionManager

    work = root / "work"
    registry = ModelRegistry(settings, cwd=work)
    model = registry.create_model(registry.resolve("scripted/bench"), cwd=work)
    session = SessionManager.create(work, sessions_root=root / "sessions")
    lead = AgentSession(session=session, model=model, thinking_level="off", tools=[], cwd=work)
    host = ComposedHost(
        repositories=Repositories.open(root / "home" / "corral.db"),
        registry=registry,
        settings=settings,
        sessions_root=root / "sessions",
        roster_loader=lambda cwd: load_roster(cwd, user_dir=root / "none", trust=False),
    )
    errors: list[BaseException] = []
    host.on_background_error = errors.append
    caller = await host.attach_lead(lead, surfaces=("teams",))
    return host, lead, caller, errors


def _time_first_requests(registry: Any, on_first: Callable[[float], None]) -> None:
    """Wrap the registry so every model it creates from now on reports its first request's time."""
    create = registry.create_model

    def create_model(info: Any, **kwargs: Any) -> Any:
        model = create(info, **kwargs)
        stream = model.stream
        seen = False

        def timed_stream(context: Any, options: Any) -> Any:
            nonlocal seen
            if not seen:
                seen = True
                on_first(time.perf_counter())
            return stream(context, options)

        model.stream = timed_stream
        return model

    registry.create_model = create_model


def _on_reports(lead: Any, on_report: Callable[[str, float], None]) -> None:
    """Call `on_report(report_id, time)` when a `corral-team-report` entry is appended to the lead."""
    from corral.agent import MessageEndEvent
    from corral.llm import CustomMessage

    def listener(event: object) -> None:
        if (
            isinstance(event, MessageEndEvent)
            and isinstance(event.message, CustomMessage)
            and event.message.custom_type == REPORT_TYPE
        ):
            on_report(event.message.details["report_id"], time.perf_counter())

    lead.subscribe(listener)


def _report_counts(lead: Any) -> dict[str, int]:
    """`corral-team-report` entries per report id in the lead's session file."""
    counts: dict[str, int] = {}
    for line in Path(lead.session.path).read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "custom_message" and entry.get("customType") == REPORT_TYPE:
            report = entry["details"]["report_id"]
            counts[report] = counts.get(report, 0) + 1
    return counts


def _exactly_once(lead: Any, expected: int) -> bool:
    counts = _report_counts(lead)
    return len(counts) == expected and all(n == 1 for n in counts.values())


async def _close(host: Any, lead: Any, errors: list[BaseException]) -> None:
    await host.aclose()
    lead.session.close()
    if errors:
        raise RuntimeError(f"background errors during the benchmark: {errors!r}")


# --- 1. spawn → first model request ---------------------------------------------------------------


async def _spawn_latency(root: Path, spawns: int, warmup: int) -> dict[str, Any]:
    from corral.orchestration.surfaces.teams import parse_spawn
    from corral.settings import Settings

    host, lead, caller, errors = await _start(root, Settings())
    first: list[float] = []
    _time_first_requests(host.registry, first.append)
    delivered: dict[str, float] = {}
    _on_reports(lead, delivered.__setitem__)
    samples: list[float] = []
    sandbox = None
    try:
        for index in range(warmup + spawns):
            request = parse_spawn({"name": f"r{index}", "prompt": "Review x.", "model_slot": "read-review"})
            begin = time.perf_counter()
            outcome = await host.teams.spawning.spawn(caller, request)
            while len(first) <= index:
                await asyncio.sleep(0)
            if index >= warmup:
                samples.append(first[index] - begin)
            sandbox = outcome.sandbox
            while len(delivered) <= index:
                await asyncio.sleep(0)
            await host.wait_until_quiet(caller.session_id)
        exactly_once = _exactly_once(lead, warmup + spawns)
    finally:
        await _close(host, lead, errors)
    return {
        "spawns": spawns,
        "warmup": warmup,
        "tier": "read-review",
        "read_sandbox": sandbox,
        "spawn_to_first_request": summary_ms(samples),
        "exactly_once": exactly_once,
        "target_p50_ms": 30.0,
    }


# --- 2. 50-member swarm → every report persisted --------------------------------------------------


async def _swarm(root: Path, members: int) -> dict[str, Any]:
    from corral.orchestration.surfaces.teams import parse_swarm
    from corral.orchestration.teams.results import SpawnResult
    from corral.settings import Settings

    host, lead, caller, errors = await _start(root, Settings())
    delivered: dict[str, float] = {}
    all_in = asyncio.Event()

    def on_report(report_id: str, at: float) -> None:
        delivered.setdefault(report_id, at)
        if len(delivered) >= members:
            all_in.set()

    _on_reports(lead, on_report)
    limit = host.teams.capacity(caller.session_id).snapshot().kinds["read"].limit
    request = parse_swarm(
        {
            "defaults": {"model_slot": "read-collect"},
            "agents": [{"name": f"s{i}", "prompt": f"Collect part {i}."} for i in range(members)],
        }
    )
    try:
        begin = time.perf_counter()
        outcome = await host.teams.spawning.spawn_swarm(caller, request)
        returned = time.perf_counter() - begin
        await all_in.wait()
        wall = max(delivered.values()) - begin
        peak = _rss_mb()
        await host.wait_until_quiet(caller.session_id)
        spawned = [m for m in outcome.members if isinstance(m, SpawnResult)]
        queued = sum(1 for s in spawned if s.queued)
        exactly_once = _exactly_once(lead, members)
        finalized = all(g.phase == "finalized" for g in host.kernel.generations(include_finalized=True))
    finally:
        await _close(host, lead, errors)
    return {
        "members": members,
        "tier": "read-collect",
        "read_max_concurrent": limit,
        "queued_at_spawn": queued,
        "failed_at_spawn": len(outcome.members) - len(spawned),
        "swarm_call_returned_ms": round(returned * 1000, 3),
        "wall_to_all_reports_s": round(wall, 3),
        "report_latency": summary_ms([at - begin for at in delivered.values()]),
        "peak_rss_mb": peak,
        "exactly_once": exactly_once,
        "all_finalized": finalized,
        "target_wall_s": 2.0,
    }


# --- 3. 200 spawns against max_concurrent 8 ---------------------------------------------------------


class _PeakDict(dict[str, Any]):
    """The teams core's live-agent map, sampling its size (and the controller's count) at each insert."""

    def __init__(self, sample: Callable[[], int]) -> None:
        super().__init__()
        self.peak = 0
        self.peak_controller = 0
        self._sample = sample

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self.peak = max(self.peak, len(self))
        self.peak_controller = max(self.peak_controller, self._sample())


async def _burst(root: Path, burst: int, limit: int) -> dict[str, Any]:
    from corral.orchestration.surfaces.teams import parse_spawn
    from corral.settings import CapacitySettings, Settings, TeamsSettings

    settings = Settings(teams=TeamsSettings(read_agents=CapacitySettings(max_concurrent=limit)))
    host, lead, caller, errors = await _start(root, settings)
    capacity = host.teams.capacity(caller.session_id)
    live = _PeakDict(lambda: capacity.snapshot().kinds["read"].active)
    # The one live registry the teams services share (the host's tools find a member's `TeamChild`
    # in it by run id): every holder of it, the frozen `TeamContext` included, gets the counting one.
    teams = host.teams
    object.__setattr__(teams.context, "live", live)
    for holder in (teams, teams.spawning, teams.control, teams.reports):
        holder.live = live
    requests = [
        parse_spawn({"name": f"b{i}", "prompt": "Check one thing.", "model_slot": "read-collect"})
        for i in range(burst)
    ]
    try:
        begin = time.perf_counter()
        outcomes = await asyncio.gather(*(host.teams.spawning.spawn(caller, r) for r in requests))
        returned = time.perf_counter() - begin
        await host.wait_until_quiet(caller.session_id)
        drained = time.perf_counter() - begin
        queued = sum(1 for o in outcomes if o.queued)
        exactly_once = _exactly_once(lead, burst)
        finalized = all(g.phase == "finalized" for g in host.kernel.generations(include_finalized=True))
        launched = len(host.kernel.generations(include_finalized=True))
    finally:
        await _close(host, lead, errors)
    return {
        "burst": burst,
        "max_concurrent": limit,
        "queued_at_spawn": queued,
        "spawn_calls_returned_ms": round(returned * 1000, 3),
        "drain_s": round(drained, 3),
        "max_live_agents_observed": live.peak,
        "max_slots_held_by_controller": live.peak_controller,
        "within_limit": live.peak <= limit and live.peak_controller <= limit,
        "launched": launched,
        "exactly_once": exactly_once,
        "all_finalized": finalized,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the three figures and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=100, help="timed spawns for figure 1 (default 100)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed spawns first (default 10)")
    parser.add_argument("--swarm", type=int, default=50, help="swarm members (default 50)")
    parser.add_argument("--burst", type=int, default=200, help="spawns in the burst (default 200)")
    parser.add_argument("--limit", type=int, default=8, help="read max_concurrent for the burst (default 8)")
    args = parser.parse_args(argv)
    import corral.orchestration.teams  # noqa: F401  (the baseline RSS includes the imports)

    rss_before = _rss_mb()
    gc.collect()
    with data_root(SCRIPT, "corral-bench-teams-swarm-") as root:
        swarm = asyncio.run(_swarm(root, args.swarm))
    gc.collect()
    with data_root(SCRIPT, "corral-bench-teams-spawn-") as root:
        spawn = asyncio.run(_spawn_latency(root, args.spawns, args.warmup))
    gc.collect()
    with data_root(SCRIPT, "corral-bench-teams-burst-") as root:
        burst = asyncio.run(_burst(root, args.burst, args.limit))
    print(
        json.dumps(
            {
                "benchmark": "teams",
                "spawn_latency": spawn,
                "swarm": {**swarm, "rss_before_mb": rss_before},
                "burst": burst,
                **environment("bench_teams.py"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
