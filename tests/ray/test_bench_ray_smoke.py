"""`benchmarks/bench_ray.py` still runs: tiny, as its own process, on the session's Ray cluster.

The companion of tests/benchmarks/test_bench_smoke.py for the one benchmark that needs a cluster:
pointed at this one with `--address` (starting its own would cost more than the run), it must take
all three of its measurements (latency, fan-out, packing), print their keys, and deliver every
result exactly once.
"""

from __future__ import annotations

import pytest

from tests.benchmarks.test_bench_smoke import check_output, run_bench

from .conftest import RayTestCluster

pytest.importorskip("ray", reason="Ray is not installed (pip install 'corral[ray]')")


def test_bench_ray_runs_tiny_on_the_test_cluster(ray_cluster: RayTestCluster) -> None:
    out = run_bench(
        "bench_ray",
        ("--rounds", "2", "--agents", "3", "--packing-agents", "2", "--address", ray_cluster.address),
    )
    check_output("bench_ray", out, frozenset({"latency", "fanout", "packing", "host_peak_rss_mb"}))
    assert out["latency"]["delegate_to_result_n"] == 2, out["latency"]
    assert out["fanout"]["agents"] == 3 and sum(out["fanout"]["workers_per_node"].values()) >= 1, out[
        "fanout"
    ]
    assert [p["agents_per_worker"] for p in out["packing"]] == [1, 10, 50], out["packing"]
    assert all(p["workers"] >= 1 for p in out["packing"]), out["packing"]
