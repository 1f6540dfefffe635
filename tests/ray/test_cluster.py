"""The Ray test cluster itself: its nodes place work by label, a removed node takes its actors with
it, and `address = "auto"` finds this cluster only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import RayNodes, RayTestCluster, require_ray

ray = require_ray()


@ray.remote(num_cpus=0)
class _Probe:
    def where(self) -> tuple[str, int]:
        return ray.get_runtime_context().get_node_id(), os.getpid()


def _probe_on(label: str, name: str) -> object:
    return _Probe.options(name=name, lifetime="detached", resources={label: 0.01}).remote()


def test_the_session_cluster_has_a_head_and_a_worker_node_each_reachable_by_its_label(
    ray_cluster: RayTestCluster,
) -> None:
    print(f"ray test cluster: head + 1 worker node started in {ray_cluster.started_in_s:.2f} s")
    assert ray_cluster.alive_node_ids() == {ray_cluster.head.node_id, ray_cluster.worker.node_id}
    ray.init(address=ray_cluster.address, namespace="corral-test-cluster", log_to_driver=False)
    for node in (ray_cluster.head, ray_cluster.worker):
        probe = _probe_on(node.label, f"probe-{node.label}")
        node_id, pid = ray.get(probe.where.remote(), timeout=60)
        assert node_id == node.node_id
        assert pid != os.getpid()


def test_a_removed_node_takes_its_actors_with_it_and_the_others_keep_working(
    ray_cluster: RayTestCluster, ray_nodes: RayNodes
) -> None:
    extra = ray_nodes.add()
    assert extra.node_id in ray_cluster.alive_node_ids()
    ray.init(address=ray_cluster.address, namespace="corral-test-cluster", log_to_driver=False)
    doomed = _probe_on(extra.label, "doomed")
    survivor = _probe_on(ray_cluster.worker.label, "survivor")
    assert ray.get(doomed.where.remote(), timeout=60)[0] == extra.node_id
    ray_nodes.remove(extra)  # SIGKILL: a crash, not a goodbye
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(doomed.where.remote(), timeout=60)
    assert extra.node_id not in ray_cluster.alive_node_ids()
    assert ray.get(survivor.where.remote(), timeout=60)[0] == ray_cluster.worker.node_id


def test_address_auto_finds_this_cluster_and_its_files_stay_in_the_private_directory(
    ray_cluster: RayTestCluster,
) -> None:
    assert os.environ["RAY_TMPDIR"] == str(ray_cluster.root)
    ray.init(address="auto", log_to_driver=False)
    assert ray.get_runtime_context().gcs_address == ray_cluster.address
    assert {node["NodeID"] for node in ray.nodes() if node["Alive"]} == ray_cluster.alive_node_ids()
    assert (ray_cluster.root / "ray" / "session_latest").exists()


def test_a_node_added_after_address_auto_with_a_ray_token_at_home_still_takes_work(
    ray_cluster: RayTestCluster, ray_nodes: RayNodes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine where some earlier local `ray.init()` wrote `~/.ray/auth_token`: Ray's
    `address="auto"` would switch token auth on in this process, and a node added afterwards would
    refuse the cluster's token-less requests. The session's `RAY_AUTH_MODE=disabled` keeps it one cluster."""
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("a" * 64)
    monkeypatch.setenv("HOME", str(tmp_path))
    ray.init(address="auto", namespace="corral-test-cluster", log_to_driver=False)
    assert os.environ.get("RAY_AUTH_MODE") == "disabled"
    extra = ray_nodes.add()
    probe = _probe_on(extra.label, "after-auto")
    assert ray.get(probe.where.remote(), timeout=120)[0] == extra.node_id
