"""`benchmarks/bench_ray.py` still runs: tiny, as its own process, on the session's Ray cluster.

The companion of tests/benchmarks/test_bench_smoke.py for the one benchmark that needs a cluster:
pointed at this one with `--address` (starting its own would cost more than the run), it must take
all three of its measurements (latency, the cold and warm fan-outs, packing), print their keys, and deliver every
result exactly once.
"""

from __future__ import annotations

import pytest

from tests.benchmarks.test_bench_smoke import check_output, run_bench

from .conftest import RayTestCluster, require_ray

require_ray()


# The first test of tests/ray/ by name, so it also waits for the session cluster to start (20-80 s on
# the loaded 2-core machine), then the run itself (30-45 s there).
@pytest.mark.timeout(600)
def test_bench_ray_runs_tiny_on_the_test_cluster(ray_cluster: RayTestCluster) -> None:
    out = run_bench(
        "bench_ray",
        (
            *("--rounds", "2", "--agents", "3", "--agents-per-worker", "2"),
            *("--packing-agents", "2", "--address", ray_cluster.address),
        ),
        timeout_s=450,  # beside a CPU hog of 4 processes the run took over 200 s
    )
    check_output("bench_ray", out, frozenset({"latency", "fanout", "packing", "host_peak_rss_mb"}))
    assert out["latency"]["delegate_to_result_n"] == 2, out["latency"]
    [fanout] = out["fanout"]
    assert fanout["agents"] == 3 and fanout["agents_per_worker"] == 2, fanout
    assert sum(fanout["workers_per_node"].values()) == 2, fanout  # 3 agents, 2 per worker
    for phase in ("cold", "warm"):
        assert fanout[phase]["exactly_once"] is True and "idle_2core_wall_estimate_s" in fanout[phase], fanout
    assert [p["agents_per_worker"] for p in out["packing"]] == [1, 10, 50], out["packing"]
    assert [p["workers"] for p in out["packing"]] == [2, 1, 1], out["packing"]
