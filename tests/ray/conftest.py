"""A local multi-node Ray cluster for the Ray runtime's tests (`ray.cluster_utils.Cluster`).

One cluster per test session: a head node and one worker node of 2 CPUs each (a laptop's size:
the default `[ray]` sizing, 16 agents × 0.25 CPU, does not fit on one of them), started once (about 6 s on an idle
2-core machine, up to ~30 s under load). Tests add and remove further nodes with `ray_nodes` (a
"node removed mid-run" test removes one of its own, never the head, which the test process's driver
is attached to). Each node has a label resource, `corral-test-head`, `corral-test-node-1`,
`corral-test-node-2`, …, so a test can place work on a node of its choosing with `[ray] resources`.

Isolation from other Ray users of the machine: the cluster's files live in a private directory under
the session's tmp (short enough for Unix socket paths), `RAY_TMPDIR` points there for the session (so
`address = "auto"` in a test finds this cluster, never another one on the machine), token auth is
off whatever `~/.ray` holds (`RAY_AUTH_MODE=disabled`), the dashboard is off, the object store
small, worker pre-start off. After each test the detached actors it left are killed and the test
process's driver is disconnected; at the end of the session every process the cluster started is
gone (checked: a leftover process is killed and fails the session's teardown).

Each fixture skips with the reason when Ray is missing or the cluster cannot start, and fails instead
under `CI=true` (`make test` installs the `ray` extra).
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests._ci import unavailable

_SOCKET_ROOT_MAX = 40  # Ray's sockets live at <root>/ray/session_<date>_<pid>/sockets/<name>: ≤ 107 bytes
_OBJECT_STORE_BYTES = 80 * 1024 * 1024  # Ray's floor is 75 MiB
_SYSTEM_CONFIG = {
    # No idle Python workers started ahead of demand (each costs ~85 MB and a CPU-second).
    "enable_worker_prestart": False,
    "prestart_worker_first_driver": False,
    # A node killed without a goodbye is declared dead within ~3 s, not Ray's default ~30 s.
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_timeout_ms": 1000,
    "health_check_failure_threshold": 4,
}
_LEAK_TIMEOUT_S = 30.0


def require_ray() -> Any:
    """The `ray` module, for a test module that uses it at import: without Ray the module skips
    (fails under `CI=true`, unlike `pytest.importorskip`)."""
    try:
        import ray
    except ImportError:
        unavailable("Ray is not installed (make test installs the ray extra)", module_level=True)
    return ray


@dataclass(slots=True)
class RayNode:
    """One node of the test cluster."""

    label: str
    """Its label resource (`corral-test-node-2`): `resources = {label = 0.01}` places work on it."""
    node_id: str
    """Ray's node id (hex)."""
    handle: Any = field(repr=False)
    """`ray._private.node.Node`, for `Cluster.remove_node`."""


@dataclass(slots=True)
class RayTestCluster:
    """The session's cluster: its address, its nodes, and how to grow and shrink it."""

    cluster: Any = field(repr=False)
    root: Path
    """The private directory of the cluster's files (`RAY_TMPDIR`)."""
    head: RayNode
    worker: RayNode
    started_in_s: float
    """Wall time the head and the first worker node took to start."""
    _labels: Iterator[int] = field(default_factory=lambda: itertools.count(2), repr=False)

    @property
    def address(self) -> str:
        """The GCS address (`host:port`), what `[ray] address` is set to."""
        return str(self.cluster.address)

    def add_node(self, *, num_cpus: float = 2, resources: dict[str, float] | None = None) -> RayNode:
        """Start one more node (labelled `corral-test-node-<n>`) and wait until the cluster lists it."""
        label = f"corral-test-node-{next(self._labels)}"
        handle = self.cluster.add_node(
            num_cpus=num_cpus,
            object_store_memory=_OBJECT_STORE_BYTES,
            resources={label: 1000, **(resources or {})},
        )
        self.cluster.wait_for_nodes()
        return RayNode(label=label, node_id=handle.node_id, handle=handle)

    def remove_node(self, node: RayNode, *, graceful: bool = False) -> None:
        """Take `node` out of the cluster as a crash (SIGKILL of its raylet, its agents and every worker
        process it started, as when the machine dies) or a clean stop, and wait until the GCS
        declares it dead (about 3 s after a crash here); the actors that ran on it die with it.
        """
        if node.node_id in (self.head.node_id, self.worker.node_id):
            raise ValueError("remove only nodes added by the test (the session's nodes are shared)")
        raylets = node.handle.all_processes.get("raylet", [])
        workers = [pid for info in raylets for pid in _descendants(info.process.pid)]
        self.cluster.remove_node(node.handle, allow_graceful=graceful)
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + _LEAK_TIMEOUT_S
        while node.node_id in self.alive_node_ids():
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"Ray still lists node {node.label} as alive {_LEAK_TIMEOUT_S:.0f} s after its removal"
                )
            time.sleep(0.1)

    def alive_node_ids(self) -> set[str]:
        """The ids of the nodes the GCS considers alive."""
        return {str(node_id) for node_id in self.cluster.global_state._live_node_ids()}


def _descendants(pid: int) -> list[int]:
    """Pids of every live descendant of `pid` (from /proc: a worker process's parent is its raylet)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _our_processes(root: Path) -> list[int]:
    """Pids of processes started for this cluster: they carry `RAY_TMPDIR=<root>` in their environment."""
    marker = f"RAY_TMPDIR={root}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _wait_until_gone(root: Path) -> list[int]:
    """Wait up to `_LEAK_TIMEOUT_S` for the cluster's processes to exit; the pids still running."""
    deadline = time.monotonic() + _LEAK_TIMEOUT_S
    left = _our_processes(root)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _our_processes(root)
    return left


@pytest.fixture(scope="session")
def _ray_session_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayTestCluster]:
    try:
        import ray
        from ray.cluster_utils import Cluster
    except ImportError:
        unavailable("Ray is not installed (make test installs the ray extra)")
    root = tmp_path_factory.mktemp("ray")
    private: str | None = None
    if len(str(root)) > _SOCKET_ROOT_MAX:
        private = tempfile.mkdtemp(prefix="corral-ray-")
        root = Path(private)
    (root / "ray").mkdir(mode=0o700)
    # RAY_TMPDIR: the cluster's files and its address file (`address = "auto"`) are private to it.
    # RAY_BACKEND_LOG_LEVEL: the raylets' info lines stay out of the captured output.
    # RAY_AUTH_MODE: unset, Ray turns token auth on in a process once ~/.ray/auth_token exists (any
    # earlier local `ray.init()` on the machine writes it) and a `ray.init(address="auto")` is made:
    # nodes added after that would require a token the cluster's first nodes never send.
    session_env = {"RAY_TMPDIR": str(root), "RAY_BACKEND_LOG_LEVEL": "warning", "RAY_AUTH_MODE": "disabled"}
    previous = {name: os.environ.get(name) for name in session_env}
    os.environ.update(session_env)
    cluster: Any = None
    try:
        started = time.perf_counter()
        try:
            cluster = Cluster(
                initialize_head=True,
                head_node_args={
                    "num_cpus": 2,
                    "include_dashboard": False,
                    "object_store_memory": _OBJECT_STORE_BYTES,
                    "temp_dir": str(root / "ray"),
                    "resources": {"corral-test-head": 1000},
                    "_system_config": _SYSTEM_CONFIG,
                },
            )
            head = cluster.head_node
            worker = cluster.add_node(
                num_cpus=2,
                object_store_memory=_OBJECT_STORE_BYTES,
                resources={"corral-test-node-1": 1000},
            )
            cluster.wait_for_nodes()
        except Exception as exc:  # any failure to start means "Ray cannot run here"
            unavailable(f"a local Ray cluster cannot start here: {type(exc).__name__}: {exc}")
        yield RayTestCluster(
            cluster=cluster,
            root=root,
            head=RayNode("corral-test-head", head.node_id, head),
            worker=RayNode("corral-test-node-1", worker.node_id, worker),
            started_in_s=time.perf_counter() - started,
        )
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        left = _wait_until_gone(root)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)
        if left:
            pytest.fail(f"the Ray test cluster left processes running after shutdown (killed): {left}")


def _kill_detached_actors(cluster: RayTestCluster) -> None:
    """Kill every live named actor (workers a test left behind must not serve the next test)."""
    import ray

    alive = [
        actor
        for actor in cluster.cluster.global_state.actor_table(None).values()
        if actor.get("State") != "DEAD" and actor.get("Name")
    ]
    if not alive:
        return
    if not ray.is_initialized():
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    for actor in alive:
        try:
            ray.kill(ray.get_actor(actor["Name"], namespace=actor.get("RayNamespace")), no_restart=True)
        except ValueError:
            continue  # died in between


@pytest.fixture
def ray_cluster(_ray_session_cluster: RayTestCluster) -> Iterator[RayTestCluster]:
    """The session's local cluster (head + one worker node); cleaned of this test's actors afterwards."""
    import ray

    try:
        yield _ray_session_cluster
    finally:
        _kill_detached_actors(_ray_session_cluster)
        if ray.is_initialized():
            ray.shutdown()


@dataclass(slots=True)
class RayNodes:
    """Adds nodes for one test and removes those still there when it ends."""

    cluster: RayTestCluster
    added: list[RayNode] = field(default_factory=list)

    def add(self, *, num_cpus: float = 2, resources: dict[str, float] | None = None) -> RayNode:
        node = self.cluster.add_node(num_cpus=num_cpus, resources=resources)
        self.added.append(node)
        return node

    def remove(self, node: RayNode, *, graceful: bool = False) -> None:
        self.added.remove(node)
        self.cluster.remove_node(node, graceful=graceful)


@pytest.fixture
def ray_nodes(ray_cluster: RayTestCluster) -> Iterator[RayNodes]:
    """Extra nodes for this test (`ray_nodes.add()`, `ray_nodes.remove(node)`), removed at its end."""
    nodes = RayNodes(ray_cluster)
    try:
        yield nodes
    finally:
        for node in list(nodes.added):
            nodes.remove(node)
