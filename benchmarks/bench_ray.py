"""The Ray runtime on a local two-node cluster: delegate latency, a 200-agent fan-out, packing vs memory.

A local cluster (`ray.cluster_utils.Cluster`: a head and one more node on this machine, files
in a private `RAY_TMPDIR`, no dashboard) runs corral's worker actors; the host, its store and
the session files stay in this process. Three measurements, each from a fresh data root:

* `latency`: with a warm worker, `--rounds` sequential delegations of a scout that answers at
  once; each sample runs from `delegate` until the host reports the lead quiet (the result
  stored from the worker's facts, delivered into the lead's session, the generation finalized).
  p50/p95 in ms. Target p50 ≤ 150 ms.
* `fanout`: for each `--agents-per-worker` packing (default 25 and 100), one host delegates
  `--agents` scouts at once, each calling `ls` five times (one per turn) and answering, twice:
  `cold` starts the worker processes (none exist yet), `warm` right after reuses them. Each
  round: wall time from the first `delegate` until quiet, exactly-once (one result entry per
  request id in the lead's session, nothing else), and the CPU seconds spent meanwhile (user +
  system, ended children included) by this host process, by corral's worker processes and by the
  rest of the cluster (Ray's daemons and idle workers: all are this process's descendants), with
  `idle_2core_wall_estimate_s` = their sum / 2, the wall time two idle cores would need at best.
  Also the peak RSS per node: the sum of the worker processes' RSS on that node, sampled every
  100 ms (this host process's own peak is reported apart). Targets: ≤ 10 s and ≤ 4 GB in total.
  The lead's scripted model reports a fixed usage, so its token estimate over its growing context
  (work a real model does remotely) is not counted as the host's; corral's modules are compiled
  to bytecode first, as an install does.
* `packing`: `--packing-agents` agents that wait (a 60 s model delay; their workers are killed after the measurement) with `agents_per_worker`
  of 1, 10 and 50: worker processes and their total RSS once all are running, and RSS per agent.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, summary_ms
from _orch import data_root, fan_out, result_counts

_OBJECT_STORE = 80 * 1024 * 1024


def _script(tool_calls: int, delay_ms: int = 0) -> dict[str, object]:
    steps: list[dict[str, object]] = [{"tool_calls": [{"name": "ls", "args": {}}]} for _ in range(tool_calls)]
    final: dict[str, object] = {"text": "ray result"}
    if delay_ms:
        final["delay_ms"] = delay_ms
    steps.append(final)
    # The lead reports a fixed usage: the scripted model's default estimate counts the characters of
    # the lead's whole context at every turn, work of the stand-in model that a real one does remotely.
    lead = {"text": "noted", "usage": {"input": 1000, "output": 10, "cache_read": 0, "cache_write": 0}}
    return {"steps": [lead], "on_exhausted": "repeat_last", "agents": {"*": steps}}


def _compile_corral() -> None:
    """Compile corral's modules to bytecode, as `pip install` does: in an editable checkout under
    `PYTHONDONTWRITEBYTECODE` every new worker process would compile them again (≈ 0.2 s CPU each)."""
    import compileall

    import corral

    compileall.compile_dir(str(Path(corral.__file__).parent), quiet=2, workers=1)


@contextlib.contextmanager
def _cluster() -> Iterator[tuple[Any, str, dict[str, str]]]:
    """A local head + one node; `(cluster, address, {node id: label})`."""
    from ray.cluster_utils import Cluster

    root = Path(tempfile.mkdtemp(prefix="crb-"))
    (root / "ray").mkdir(mode=0o700)
    saved = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = str(root)
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "warning")
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 16,
            "include_dashboard": False,
            "object_store_memory": _OBJECT_STORE,
            "temp_dir": str(root / "ray"),
            "resources": {"head": 1000},
        },
    )
    node = cluster.add_node(num_cpus=16, object_store_memory=_OBJECT_STORE, resources={"node2": 1000})
    cluster.wait_for_nodes()
    labels = {cluster.head_node.node_id: "head", node.node_id: "node2"}
    try:
        yield cluster, str(cluster.address), labels
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
        if saved is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = saved
        shutil.rmtree(root, ignore_errors=True)


async def _host(root: Path, address: str, *, agents_per_worker: int) -> tuple[Any, Any, Any]:
    from corral.agent import AgentSession
    from corral.lead._host import ComposedHost
    from corral.llm import ModelRegistry
    from corral.orchestration import Repositories, load_roster
    from corral.session import SessionManager
    from corral.settings import RaySettings, Settings

    work = root / "work"
    settings = Settings(
        runtime="ray",
        ray=RaySettings(
            address=address,
            namespace=f"bench-{uuid.uuid4().hex[:8]}",
            num_cpus=0.05,
            agents_per_worker=agents_per_worker,
        ),
    )
    registry = ModelRegistry(Settings(), cwd=work)
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
    caller = await host.attach_lead(lead, surfaces=())
    return host, lead, caller


_TICKS = os.sysconf("SC_CLK_TCK")


def _descendants(root: int) -> dict[int, str]:
    """Every live process under `root` (itself included): pid → command name."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
        names[int(entry.name)] = name
    found: dict[int, str] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in names:
            found[pid] = names[pid]
        todo.extend(children.get(pid, []))
    return found


def _cpu_s(pid: int) -> float:
    """CPU seconds of one process and of its children that ended (utime, stime, cutime, cstime:
    a worker's tool calls run in child processes); 0 when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return sum(int(f) for f in fields[11:15]) / _TICKS


def _cpu_snapshot() -> dict[int, float]:
    """CPU seconds so far of this process and every process under it (the cluster's raylets, GCS,
    workers: `ray.cluster_utils.Cluster` starts them as this process's descendants)."""
    return {pid: _cpu_s(pid) for pid in _descendants(os.getpid())}


def _cpu_split(before: dict[int, float], after: dict[int, float], workers: set[int]) -> dict[str, float]:
    """CPU seconds spent between two snapshots: this host process, corral's worker processes, and
    the rest of the cluster (Ray's own daemons and idle workers)."""
    spent = {pid: cpu - before.get(pid, 0.0) for pid, cpu in after.items()}
    host = spent.pop(os.getpid(), 0.0)
    worker = sum(cpu for pid, cpu in spent.items() if pid in workers)
    rest = sum(cpu for pid, cpu in spent.items() if pid not in workers)
    total = host + worker + rest
    return {
        "host_cpu_s": round(host, 2),
        "worker_cpu_s": round(worker, 2),
        "ray_other_cpu_s": round(rest, 2),
        "total_cpu_s": round(total, 2),
        "idle_2core_wall_estimate_s": round(total / 2, 2),
    }


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


async def _workers(host: Any) -> list[dict[str, Any]]:
    from corral.runtime._ray import ray_runtime

    ray = ray_runtime(host.runtime)
    return [await ray.call_worker(name, "where") for name in await ray.worker_names()]


async def _kill_workers(host: Any) -> None:
    from corral.runtime._ray import ray_runtime

    ray = ray_runtime(host.runtime)
    for name in await ray.worker_names():
        await ray.kill_worker(name)


async def _latency(address: str, rounds: int) -> dict[str, object]:
    from corral.orchestration.surfaces import DelegateParams

    with data_root(_script(0), "corral-bench-ray-") as root:
        host, lead, caller = await _host(root, address, agents_per_worker=16)
        try:
            samples: list[float] = []
            for i in range(rounds + 2):
                begin = time.perf_counter()
                await host.controller.delegate(caller, DelegateParams(definition="scout", task=f"t{i}"))
                await host.wait_until_quiet(caller.session_id)
                if i >= 2:  # the first two warm the worker process and the connection
                    samples.append(time.perf_counter() - begin)
            counts = result_counts(lead)
            once = len(counts) == rounds + 2 and all(n == 1 for n in counts.values())
            await _kill_workers(host)
        finally:
            await host.aclose()
            lead.session.close()
    return {
        "rounds": rounds,
        **{f"delegate_to_result_{k}": v for k, v in summary_ms(samples).items()},
        "exactly_once": once,
    }


def _workers_per_node(workers: list[dict[str, Any]], labels: dict[str, str]) -> dict[str, int]:
    """Worker processes per node: every labelled node (0 if none ran there), others by id prefix."""
    per_node = dict.fromkeys(labels.values(), 0)
    for worker in workers:
        node = labels.get(str(worker["node_id"]), str(worker["node_id"])[:8])
        per_node[node] = per_node.get(node, 0) + 1
    return per_node


async def _fanout(address: str, agents: int, labels: dict[str, str], per_worker: int) -> dict[str, object]:
    """Two fan-outs by one host: `cold` starts its worker processes, `warm` reuses them."""
    with data_root(_script(5), "corral-bench-ray-") as root:
        host, lead, caller = await _host(root, address, agents_per_worker=per_worker)
        peaks: dict[str, int] = {}
        stop = asyncio.Event()

        async def sample() -> None:
            while not stop.is_set():
                with contextlib.suppress(Exception):
                    per_node: dict[str, int] = {}
                    for worker in await _workers(host):
                        node = labels.get(str(worker["node_id"]), str(worker["node_id"])[:8])
                        per_node[node] = per_node.get(node, 0) + _rss_kb(int(worker["pid"]))
                    for node, kb in per_node.items():
                        peaks[node] = max(peaks.get(node, 0), kb)
                await asyncio.sleep(0.1)

        rounds: dict[str, dict[str, object]] = {}
        sampler = asyncio.get_running_loop().create_task(sample())
        try:
            for phase in ("cold", "warm"):
                before = _cpu_snapshot()
                run = await fan_out(host, lead, caller, agents, prefix=phase[0])
                after = _cpu_snapshot()
                workers = await _workers(host)
                rounds[phase] = {
                    "delegate_all_s": run.delegate_all_s,
                    "wall_s": run.wall_s,
                    "exactly_once": run.exactly_once,
                    **_cpu_split(before, after, {int(w["pid"]) for w in workers}),
                }
            stop.set()
            await sampler
            await _kill_workers(host)
        finally:
            stop.set()
            await host.aclose()
            lead.session.close()
    return {
        "agents": agents,
        "tool_calls_per_agent": 5,
        "agents_per_worker": per_worker,
        "workers": len(workers),
        "workers_per_node": _workers_per_node(workers, labels),
        **rounds,
        "peak_worker_rss_mb_per_node": {node: round(kb / 1024, 1) for node, kb in sorted(peaks.items())},
        "peak_worker_rss_mb_total": round(sum(peaks.values()) / 1024, 1),
    }


async def _packing(address: str, agents: int, per_worker: int) -> dict[str, object]:
    from corral.orchestration.surfaces import DelegateParams

    with data_root(_script(0, delay_ms=60000), "corral-bench-ray-") as root:
        host, lead, caller = await _host(root, address, agents_per_worker=per_worker)
        try:
            for i in range(agents):  # one after another: this measures memory, not start-up
                await host.controller.delegate(
                    caller, DelegateParams(definition="scout", task=f"t{i}", label=f"p{i}")
                )
            workers = await _workers(host)
            rss_kb = sum(_rss_kb(int(w["pid"])) for w in workers)
            await _kill_workers(host)
        finally:
            await host.aclose()
            lead.session.close()
    return {
        "agents_per_worker": per_worker,
        "agents": agents,
        "workers": len(workers),
        "worker_rss_mb_total": round(rss_kb / 1024, 1),
        "worker_rss_mb_per_agent": round(rss_kb / 1024 / agents, 2),
    }


async def _measure(address: str, labels: dict[str, str], args: argparse.Namespace) -> dict[str, object]:
    figures: dict[str, object] = {}
    if "latency" in args.only:
        figures["latency"] = await _latency(address, args.rounds)
    if "fanout" in args.only:
        figures["fanout"] = [await _fanout(address, args.agents, labels, n) for n in args.agents_per_worker]
    if "packing" in args.only:
        figures["packing"] = [await _packing(address, args.packing_agents, n) for n in (1, 10, 50)]
    return figures


async def _main(args: argparse.Namespace) -> dict[str, object]:
    if args.address:
        # Someone else's cluster (the Ray tests' session cluster): nodes go by their id's prefix.
        return await _measure(args.address, {}, args)
    with _cluster() as (_cluster_handle, address, labels):
        return await _measure(address, labels, args)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--packing-agents", type=int, default=50)
    parser.add_argument(
        "--agents-per-worker", type=int, nargs="+", default=[25, 100], help="packings of the fan-out"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=("latency", "fanout", "packing"),
        default=["latency", "fanout", "packing"],
    )
    parser.add_argument(
        "--address",
        help="measure on this running cluster (its GCS host:port, with RAY_TMPDIR as the cluster's) "
        "instead of a fresh local one; its daemons are not this process's children, so their CPU "
        "is not counted (the smoke test's mode, tests/ray/test_bench_ray_smoke.py)",
    )
    args = parser.parse_args(argv)
    try:
        import ray  # noqa: F401
    except ImportError:
        print(json.dumps({"benchmark": "ray", "skipped": "Ray is not installed (pip install 'corral[ray]')"}))
        return 0
    _compile_corral()
    figures = asyncio.run(_main(args))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "benchmark": "ray",
                **figures,
                "host_peak_rss_mb": round(peak_mb, 1),
                "target_p50_ms": 150,
                "target_fanout_wall_s": 10.0,
                "target_fanout_rss_mb": 4096,
                **environment("bench_ray.py"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
