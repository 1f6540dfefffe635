"""ACP harness latency: `delegate` → the result delivered, for an ACP agent, and corral's share of it.

A lead on a scripted model delegates to an ACP agent (`harness: acp` / a preset, in-process) whose
task needs one reply and no tool. Per iteration it records the round trip (from calling `delegate`
until the result entry is in the lead's session) and the agent's own time (from corral starting the
agent's process until the agent answers `session/prompt`: its start-up, `initialize`, `session/new`
and its turn). corral's overhead is the round trip minus the agent's time: recording the
delegation, preparing the session, and storing and delivering the result (target ≤ 20 ms).

Subjects: the zero-latency fake ACP agent (`tests/harness/fake_acp_agent.py`), and each real agent
of `tests/harness/real` that is installed (against the scripted fake model; never installed here).
Then `--agents` fake agents at once: the wall time until every result is delivered, and corral's
own RSS (this process; the agents are processes of their own).

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests.harness

from _common import environment, summary_ms
from _orch import data_root, result_arrivals, result_counts, start_host

HERE = Path(__file__).resolve().parent
SCRIPT = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}
FAKE_AGENT = HERE.parent / "tests" / "harness" / "fake_acp_agent.py"


class _AgentClock:
    """When corral started each agent process and when each `session/prompt` was answered."""

    def __init__(self) -> None:
        self.spawned: list[float] = []
        self.answered: list[float] = []
        self.connections: list[Any] = []
        self._originals: Any = None

    def uninstall(self) -> None:
        from corral.harness.acp import _rpc

        start, request_future = self._originals
        _rpc.AcpConnection.start = classmethod(start)  # type: ignore[assignment, method-assign]
        _rpc.AcpConnection.request_future = request_future  # type: ignore[method-assign]

    async def reaped(self) -> None:
        """Wait (bounded) until every agent process corral ended has been reaped, so none outlives
        this event loop."""
        for connection in self.connections:
            await asyncio.wait_for(connection._process.wait(), 10)

    def install(self) -> None:
        from corral.harness.acp import _rpc

        connection = _rpc.AcpConnection
        start = connection.start.__func__  # type: ignore[attr-defined]
        request_future = connection.request_future
        clock = self

        async def timed_start(cls: Any, *args: Any, **kwargs: Any) -> Any:
            clock.spawned.append(time.perf_counter())
            connection = await start(cls, *args, **kwargs)
            clock.connections.append(connection)
            return connection

        def timed_request_future(self: Any, method: str, params: Any) -> Any:
            future = request_future(self, method, params)
            if method == "session/prompt":
                future.add_done_callback(lambda _: clock.answered.append(time.perf_counter()))
            return future

        self._originals = (start, request_future)
        connection.start = classmethod(timed_start)  # type: ignore[assignment, method-assign]
        connection.request_future = timed_request_future  # type: ignore[method-assign]


def _define(root: Path, name: str, front: dict[str, Any]) -> None:
    folder = root / "none"  # `start_host`'s user definitions folder
    folder.mkdir(exist_ok=True)
    body = {"name": name, "description": "benchmarked ACP agent", "runtime": "inprocess", **front}
    (folder / f"{name}.md").write_text(f"---\n{json.dumps(body)}\n---\n")


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _latency(root: Path, definition: str, task: str, iterations: int, warmup: int) -> dict[str, Any]:
    from corral.orchestration.surfaces import DelegateParams

    clock = _AgentClock()
    clock.install()
    host, lead, caller = await start_host(root)
    delivered = result_arrivals(lead)
    round_trip: list[float] = []
    agent: list[float] = []
    try:
        for index in range(warmup + iterations):
            clock.spawned.clear()
            clock.answered.clear()
            begin = time.perf_counter()
            result = await host.controller.delegate(caller, DelegateParams(definition=definition, task=task))
            while result.request_id not in delivered:
                await asyncio.sleep(0.001)
            if index >= warmup and clock.spawned and clock.answered:
                round_trip.append(delivered[result.request_id] - begin)
                agent.append(clock.answered[-1] - clock.spawned[0])
            await host.wait_until_quiet(caller.session_id)
        counts = result_counts(lead)
        exactly_once = len(counts) == warmup + iterations and all(n == 1 for n in counts.values())
        await clock.reaped()
    finally:
        await host.aclose()
        lead.session.close()
        clock.uninstall()
    overhead = [total - own for total, own in zip(round_trip, agent, strict=True)]
    return {
        "delegate_to_result_delivered": summary_ms(round_trip),
        "agent_start_and_turn": summary_ms(agent),
        "corral_overhead": summary_ms(overhead),
        "exactly_once": exactly_once,
    }


async def _fan_out(root: Path, agents: int) -> dict[str, Any]:
    from corral.orchestration.surfaces import DelegateParams

    clock = _AgentClock()
    clock.install()
    host, lead, caller = await start_host(root)
    baseline = _rss_mb()
    peak = baseline
    try:
        begin = time.perf_counter()
        for index in range(agents):
            await host.controller.delegate(caller, DelegateParams(definition="fake", task=f"task {index}"))
        while len(result_counts(lead)) < agents:
            peak = max(peak, _rss_mb())
            await asyncio.sleep(0.01)
        wall = time.perf_counter() - begin
        await host.wait_until_quiet(caller.session_id)
        counts = result_counts(lead)
        await clock.reaped()
    finally:
        await host.aclose()
        lead.session.close()
        clock.uninstall()
    return {
        "agents": agents,
        "wall_s": round(wall, 3),
        "corral_rss_mb": {"before": round(baseline, 1), "peak": round(peak, 1)},
        "exactly_once": len(counts) == agents and all(n == 1 for n in counts.values()),
    }


def _real_agents(wanted: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The installed real agents among `wanted` (`RealAgent` by harness), and why the others are not run."""
    from tests.harness.real._install import REAL_AGENTS

    found: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for name in wanted:
        agent = REAL_AGENTS.get(name)
        if agent is None:
            skipped[name] = "not a tested real agent"
        elif not agent.installed():
            skipped[name] = f"not installed (python -m tests.harness.real._install {name})"
        else:
            found[name] = agent
    return found, skipped


def _run_real(name: str, agent: Any, iterations: int) -> dict[str, Any]:
    from tests.harness.real._install import provider_environment
    from tests.harness.real._model import ScriptedModel

    saved = dict(os.environ)
    try:
        with ScriptedModel() as model, data_root(SCRIPT, f"corral-bench-harness-{name}-") as root:
            provider = provider_environment(name, model.server, root)
            os.environ.update(provider)
            os.environ["PATH"] = agent.search_path()
            os.environ["HOME"] = str(root / "agent-home")
            _define(root, "real", {"harness": name})
            out = asyncio.run(_latency(root, "real", "Say HELLO", iterations, 0))
            out["version"] = agent.version
            if "CODEX_HOME" in provider:  # outside the temp root (Codex refuses /tmp)
                shutil.rmtree(provider["CODEX_HOME"], ignore_errors=True)
            return out
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=50, help="fake-agent delegations measured")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--real-iterations", type=int, default=3, help="per installed real agent")
    parser.add_argument(
        "--real", default="claude-code,goose,opencode,codex,gemini", help="real agents to try ('' for none)"
    )
    parser.add_argument("--agents", type=int, default=20, help="fake agents at once")
    args = parser.parse_args(argv)
    gc.collect()
    fake_front = {"harness": "acp", "command": [sys.executable, str(FAKE_AGENT)]}
    with data_root(SCRIPT, "corral-bench-harness-") as root:
        _define(root, "fake", fake_front)
        fake = asyncio.run(_latency(root, "fake", "answer", args.iterations, args.warmup))
    with data_root(SCRIPT, "corral-bench-harness-fan-") as root:
        _define(root, "fake", fake_front)
        fan_out = asyncio.run(_fan_out(root, args.agents))
    real, skipped = _real_agents([name for name in args.real.split(",") if name])
    real_results = {name: _run_real(name, agent, args.real_iterations) for name, agent in real.items()}
    print(
        json.dumps(
            {
                "benchmark": "harness_latency",
                "fake_agent": fake,
                "real_agents": real_results,
                "real_agents_missing": skipped,
                "fan_out": fan_out,
                "target_corral_overhead_p50_ms": 20.0,
                **environment("bench_harness.py"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
