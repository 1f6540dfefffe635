"""Ray on a small cluster: a worker is sized to what a node can hold, and an ask no node can hold
fails at once with the numbers (issue 27, item 9).

The session cluster's nodes have 2 CPUs each, as a laptop's `ray start --head --num-cpus 2`: the
default `[ray]` settings (16 agents × 0.25 CPU = 4 CPUs a worker) fit on none of them.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from corral.orchestration import PaneNotReadyError
from corral.orchestration.surfaces import DelegateParams
from corral.runtime._ray import RayConfig, RayInfeasible, ray_runtime, size_worker
from corral.settings import RaySettings, Settings
from tests.orchestration._host_helpers import WAIT, prepare_env, team, write_script
from tests.ray.conftest import RayNodes, RayTestCluster, require_ray

ray = require_ray()

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}
FAIL_FAST_S = 60.0
"""A bound on a start that must not wait for the 120 s launch timeout (never reached when it works)."""
COLD_START_S = 240.0
"""A delegate that starts a cold worker (the success path), on a loaded machine."""


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    prepare_env(tmp_path, monkeypatch)
    return tmp_path


def _settings(cluster: RayTestCluster, **extra: object) -> Settings:
    options: dict[str, object] = {
        "address": cluster.address,
        "namespace": f"t-{uuid.uuid4().hex[:8]}",
        **extra,
    }
    return Settings(runtime="ray", ray=RaySettings(**options))  # type: ignore[arg-type]


def _no_generation_left(t: object) -> bool:
    kernel = t.host.kernel  # type: ignore[attr-defined]
    return all(g.phase == "finalized" for g in kernel.generations(include_finalized=True))


# --- the sizing rule, without a cluster ------------------------------------------------------------


def test_a_worker_gets_as_many_slots_as_the_largest_node_holds() -> None:
    laptop = [{"CPU": 2.0, "memory": 8e9}]
    sizing = size_worker(RayConfig(), laptop)
    assert (sizing.slots, sizing.ask, sizing.sized_down) == (8, {"CPU": 2.0}, True)
    assert "hosts 8 agents, not agents_per_worker = 16" in sizing.describe()
    assert "CPU 4" in sizing.describe() and "CPU 2" in sizing.describe()
    # The node that holds the most agents decides; a big enough one keeps agents_per_worker.
    assert size_worker(RayConfig(), [{"CPU": 2.0}, {"CPU": 3.0}]).slots == 12
    assert size_worker(RayConfig(), [{"CPU": 2.0}, {"CPU": 64.0}]).slots == 16
    # Every asked resource counts, on the same node.
    config = RayConfig(num_cpus=0.1, resources={"gpu-box": 1})
    assert size_worker(config, [{"CPU": 64.0}, {"CPU": 1.0, "gpu-box": 3.0}]).slots == 3
    # An ask of nothing fits anywhere.
    assert size_worker(RayConfig(num_cpus=0), [{"CPU": 1.0}]).slots == 16


def test_an_ask_no_node_can_hold_is_refused_with_the_numbers() -> None:
    with pytest.raises(RayInfeasible) as big:
        size_worker(RayConfig(num_cpus=3), [{"CPU": 2.0}, {"CPU": 2.0}])
    assert "asks for CPU 3 ([ray] num_cpus)" in str(big.value)
    assert "the largest of 2 node(s) has CPU 2" in str(big.value)
    with pytest.raises(RayInfeasible) as missing:
        size_worker(RayConfig(resources={"tpu": 1}), [{"CPU": 8.0}])
    assert "no node has the resource 'tpu'" in str(missing.value)
    assert "[ray] resources.tpu" in str(missing.value)
    with pytest.raises(RayInfeasible, match="no alive node"):
        size_worker(RayConfig(), [])


# --- on the 2-CPU cluster -----------------------------------------------------------------------------


async def test_default_settings_on_2_cpu_nodes_size_the_worker_down_and_the_first_delegate_works(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "done on a small cluster"}]}})
    settings = _settings(ray_cluster)  # [ray] num_cpus 0.25, agents_per_worker 16: the defaults
    assert (settings.ray.num_cpus, settings.ray.agents_per_worker) == (0.25, 16)
    async with team(env, "team", settings=settings) as t:
        # A success path with a cold worker: bounded by a worker's start-up on a loaded machine (beside a
        # CPU hog of 4 processes a cold Ray worker took longer than the fail-fast bound).
        started = await asyncio.wait_for(
            t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Look")), COLD_START_S
        )
        assert started.pane_id is not None and started.pane_id.startswith("ray:corral-")
        runtime = ray_runtime(t.host.runtime)
        actor = started.pane_id.removeprefix("ray:").partition("@")[0]
        where = await runtime.call_worker(actor, "where")
        assert where["slots"] == 8  # 2 CPUs / 0.25 per agent
        await t.quiet()
        results = t.lead_entries("corral-agent-result")
        assert len(results) == 1 and "done on a small cluster" in str(results[0]["content"])


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"num_cpus": 3.0, "agents_per_worker": 1}, ["CPU 3", "[ray] num_cpus", "CPU 2"]),
        (
            {"resources": {"corral-test-none": 1.0}},
            ["'corral-test-none'", "[ray] resources.corral-test-none"],
        ),
    ],
    ids=["more-cpus-than-any-node", "a-resource-no-node-has"],
)
async def test_an_ask_no_node_can_hold_fails_delegate_at_once_naming_the_numbers(
    env: Path, ray_cluster: RayTestCluster, extra: dict[str, object], named: list[str]
) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "never"}]}})
    async with team(env, "team", settings=_settings(ray_cluster, **extra)) as t:
        with pytest.raises(PaneNotReadyError) as failed:
            await asyncio.wait_for(
                t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x")), FAIL_FAST_S
            )
        message = str(failed.value)
        assert "no Ray node can hold one agent" in message, message
        assert all(part in message for part in named), message
        assert "within 120 s" not in message
        assert _no_generation_left(t)
        assert await ray_runtime(t.host.runtime).worker_names() == []  # no worker was left pending


async def test_a_pending_worker_fails_at_once_when_the_only_node_that_could_hold_it_leaves(
    env: Path, ray_cluster: RayTestCluster, ray_nodes: RayNodes
) -> None:
    node = ray_nodes.add(num_cpus=2)
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "never"}]}})
    settings = _settings(ray_cluster, num_cpus=0.5, agents_per_worker=4, resources={node.label: 1.0})
    async with team(env, "team", settings=settings) as t:
        runtime = ray_runtime(t.host.runtime)
        runtime.connect()
        # Something else holds the node's CPUs: the worker (2 CPUs) waits for them, pending.
        hog = ray.remote(num_cpus=2)(_Hog).options(resources={node.label: 0.01}).remote()
        await asyncio.wait_for(hog.ping.remote(), WAIT)
        delegating = asyncio.ensure_future(
            t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x"))
        )
        await _until_pending(runtime.prefix)
        assert not delegating.done()
        ray_nodes.remove(node)
        with pytest.raises(PaneNotReadyError) as failed:
            await asyncio.wait_for(delegating, FAIL_FAST_S)
        message = str(failed.value)
        assert "cannot be placed" in message and f"'{node.label}'" in message, message
        assert _no_generation_left(t)
        assert await runtime.worker_names() == []  # the pending worker was killed


class _Hog:
    def ping(self) -> str:
        return "pong"


async def _until_pending(prefix: str) -> None:
    """Wait (bounded) until a worker actor named `<prefix>…` is in Ray's GCS as pending creation."""
    from ray._private import state

    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while loop.time() < deadline:
        actors = await asyncio.to_thread(state.actors)
        if any(
            str(a.get("Name")).startswith(prefix) and a.get("State") == "PENDING_CREATION"
            for a in actors.values()
        ):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no worker {prefix}… became pending within {WAIT} s: {actors}")
