"""`corral doctor` and `corral agents reap` with the Ray runtime (issue 27 item 9, issue 28 group 5):
the worker sizing checked against the cluster's nodes, a warm idle worker is `ok`, an unreachable
cluster is quiet when `runtime` is not `ray`, and a worker Ray never placed is listed at once.
"""

from __future__ import annotations

import io
import socket
import uuid
from pathlib import Path

import pytest

from corral._cli._doctor import Check, run_checks
from corral._cli._reap import reap
from corral._ray_worker import RayWorker
from corral.orchestration.surfaces import DelegateParams
from corral.settings import RaySettings, Settings
from tests.orchestration._host_helpers import prepare_env, team, write_script
from tests.ray.conftest import RayTestCluster, require_ray

ray = require_ray()

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    prepare_env(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path


def _write_settings(env: Path, text: str) -> None:
    path = env / "config" / "corral" / "settings.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _one(checks: list[Check], name: str) -> Check:
    found = [c for c in checks if c.name == name]
    assert len(found) == 1, checks
    return found[0]


def _unreachable() -> str:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{unused.getsockname()[1]}"


async def _run_one_agent(env: Path, cluster: RayTestCluster, namespace: str) -> str:
    """Delegate one agent on Ray and wait for its result; the name of the (now idle) worker."""
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "done"}]}})
    settings = Settings(
        runtime="ray",
        ray=RaySettings(address=cluster.address, namespace=namespace, num_cpus=0.1, agents_per_worker=4),
    )
    async with team(env, "team", settings=settings) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x"))
        await t.quiet()
        assert started.pane_id is not None
        return started.pane_id.removeprefix("ray:").partition("@")[0]


async def test_doctor_reports_the_worker_sizing_on_2_cpu_nodes(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    _write_settings(env, f'runtime = "ray"\n[ray]\naddress = "{ray_cluster.address}"\n')

    check = _one(await run_checks(env / "work"), "ray")

    assert check.status == "ok", check
    assert "a worker hosts 8 agents, not agents_per_worker = 16" in check.message, check
    assert "CPU 4" in check.message and "CPU 2" in check.message, check


async def test_doctor_fails_the_ray_check_when_no_node_can_hold_one_agent(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    _write_settings(env, f'runtime = "ray"\n[ray]\naddress = "{ray_cluster.address}"\nnum_cpus = 3\n')

    check = _one(await run_checks(env / "work"), "ray")

    assert check.status == "fail", check
    assert "asks for CPU 3 ([ray] num_cpus)" in check.message and "CPU 2" in check.message, check


async def test_a_warm_idle_worker_is_ok_with_how_to_reap_it(env: Path, ray_cluster: RayTestCluster) -> None:
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    worker = await _run_one_agent(env, ray_cluster, namespace)
    _write_settings(
        env, f'runtime = "ray"\n[ray]\naddress = "{ray_cluster.address}"\nnamespace = "{namespace}"\n'
    )

    check = _one(await run_checks(env / "work"), "ray_workers")

    assert check.status == "ok", check
    assert "1 warm Ray worker(s)" in check.message and worker in check.message, check
    assert "corral agents reap" in check.message, check


async def test_an_unreachable_cluster_is_not_a_warning_when_runtime_is_not_ray(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    await _run_one_agent(env, ray_cluster, f"t-{uuid.uuid4().hex[:8]}")
    ray.shutdown()  # this process is no longer attached to the cluster
    address = _unreachable()
    _write_settings(env, f'[ray]\naddress = "{address}"\n')

    check = _one(await run_checks(env / "work"), "ray_workers")

    assert check.status == "ok", check
    assert "not reachable" in check.message and "runtime is not ray" in check.message, check
    assert all(c.name != "ray" for c in await run_checks(env / "work"))  # no sizing check without ray
    # With runtime = "ray" the same unreachable cluster is a warning in both checks.
    _write_settings(env, f'runtime = "ray"\n[ray]\naddress = "{address}"\n')
    checks = await run_checks(env / "work")
    assert _one(checks, "ray_workers").status == "warn"
    assert _one(checks, "ray").status == "warn" and "cannot reach" in _one(checks, "ray").message


async def test_reap_dry_run_lists_a_worker_ray_never_placed_without_asking_it(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    warm = await _run_one_agent(env, ray_cluster, namespace)
    prefix = warm.rpartition("-w")[0] + "-w"
    # A worker that waits for a resource no node has (as one a failed launch used to leave behind).
    ray.remote(RayWorker).options(
        name=f"{prefix}9",
        namespace=namespace,
        lifetime="detached",
        num_cpus=0,
        resources={"corral-test-none": 1},
    ).remote(1)
    _write_settings(
        env, f'runtime = "ray"\n[ray]\naddress = "{ray_cluster.address}"\nnamespace = "{namespace}"\n'
    )

    out = io.StringIO()
    assert await reap(out=out, dry_run=True, cwd=env / "work") == 0
    lines = out.getvalue().splitlines()
    assert f"orphan Ray worker {prefix}9 on no node (Ray never placed it): unplaced" in lines, lines
    assert any(
        line.startswith(f"orphan Ray worker {warm} on node") and line.endswith(": finalized")
        for line in lines
    )
    assert "2 orphan Ray worker(s)" in lines
    check = _one(await run_checks(env / "work"), "ray_workers")
    assert check.status == "warn" and f"{prefix}9 (unplaced)" in check.message, check
    assert "1 more warm and idle" in check.message, check
    # reap kills both (the unplaced one too).
    out = io.StringIO()
    assert await reap(out=out, cwd=env / "work") == 0
    assert "2 orphan Ray worker(s) reaped" in out.getvalue()
    assert await ray_runtime_names(ray_cluster, namespace, env) == []


async def ray_runtime_names(cluster: RayTestCluster, namespace: str, env: Path) -> list[str]:
    from corral.runtime._ray import RayRuntime, ray_config

    runtime = RayRuntime(
        ray_config(RaySettings(address=cluster.address, namespace=namespace)), data_root=env / "home"
    )
    return await runtime.worker_names()


async def test_auto_with_a_cluster_that_is_gone_fails_fast_naming_the_address(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `auto` resolves as Ray resolves it (here `RAY_ADDRESS`; on a laptop, the address file a
    # killed `ray start` left behind): nothing listens there, and `ray.init` would retry it for
    # minutes. The probe answers at once.
    address = _unreachable()
    monkeypatch.setenv("RAY_ADDRESS", address)
    _write_settings(env, 'runtime = "ray"\n[ray]\naddress = "auto"\n')

    check = _one(await run_checks(env / "work"), "ray")

    assert check.status == "warn", check
    assert f"cannot reach the Ray cluster at 'auto' ({address})" in check.message, check
