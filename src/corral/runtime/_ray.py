"""The Ray runtime: managed agents in detached, named Ray actors on a cluster.

A *worker actor* hosts up to `agents_per_worker` agent sessions (agents spend
most of their time waiting on their model, so one process serves many). Its
name is `corral-<data root digest>-w<n>` in the `[ray] namespace`, and it is
detached: it outlives the host that created it, and a restarted host finds it
again by name. `start` places an agent on the first worker with a free slot
(creating workers as needed, with the per-agent resources times the slots as
the actor's resources) and returns once the worker holds it.

This module knows Ray, not corral's store: the worker class (the code that
runs a `ManagedChild`) comes with the launch (`RemoteLaunch`), and every other
call is `call(handle, method, *args)`, whose plain-data results the host's
pump interprets. Ray is imported on first use only, so `runtime = "ray"` costs
nothing to a process that never uses it.

Presence is what the last call proved: `live` after a successful call,
`lost` once Ray said the actor died (or it no longer exists), `unknown` while
nothing was proven (the cluster unreachable).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.runtime._base import (
    LaunchSpec,
    PresenceVerdict,
    ProcessEvidence,
    RecentOutput,
    RemoteLaunch,
    RuntimeError_,
    RuntimeHandle,
)
from corral.runtime._inprocess import bound_output

if TYPE_CHECKING:
    from corral.runtime._runtimes import Runtimes
    from corral.settings import RaySettings

__all__ = [
    "FORWARDED_ENV",
    "RayConfig",
    "RayRuntime",
    "RayWorkerGone",
    "WorkerPlace",
    "actor_prefix",
    "parse_runtime_id",
    "ray_config",
    "ray_runtime",
]

FORWARDED_ENV = ("CORRAL_HOME", "CORRAL_SCRIPTS", "XDG_CONFIG_HOME")
"""Environment variables every worker gets from the host that creates it."""

_PLACE_ATTEMPTS = 64
_LAUNCH_TIMEOUT_S = 120.0
_PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class RayConfig:
    """Where and how agents run on Ray (the `[ray]` settings, resolved)."""

    address: str = "auto"
    """`auto` (the cluster this machine belongs to), `host:port`, or `ray://host:port` (Ray client)."""
    namespace: str = "corral"
    """The Ray namespace of corral's worker actors."""
    num_cpus: float = 0.25
    """CPUs one agent reserves (a worker reserves this times its slots)."""
    memory: int | None = None
    """Bytes of memory one agent reserves, or `None`."""
    resources: Mapping[str, float] = field(default_factory=dict)
    """Custom resources one agent reserves."""
    agents_per_worker: int = 16
    """Agents one worker actor (one process) hosts."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment of the worker processes (`runtime_env.env_vars`)."""


def ray_config(settings: RaySettings | None) -> RayConfig:
    """The `[ray]` settings resolved: the forwarded environment read from this process's."""
    if settings is None:
        return RayConfig()
    names = (*FORWARDED_ENV, *settings.forward_env)
    return RayConfig(
        address=settings.address,
        namespace=settings.namespace,
        num_cpus=settings.num_cpus,
        memory=settings.memory,
        resources=dict(settings.resources),
        agents_per_worker=settings.agents_per_worker,
        env={name: os.environ[name] for name in names if name in os.environ},
    )


@dataclass(frozen=True, slots=True)
class WorkerPlace:
    """Where a worker actor runs."""

    actor: str
    node_id: str
    node_ip: str
    hostname: str
    pid: int

    def describe(self) -> str:
        """`node <ip> (<hostname>, <node id prefix>)`, for diagnostics."""
        return f"node {self.node_ip} ({self.hostname}, {self.node_id[:12]})"


class RayWorkerGone(RuntimeError_):
    """Ray says the worker actor is dead or does not exist (the agents it hosted are lost)."""


def actor_prefix(data_root: Path) -> str:
    """The worker actors' name prefix for a data root: `corral-<12 hex digits>-w`."""
    digest = hashlib.sha256(str(data_root.resolve()).encode()).hexdigest()[:12]
    return f"corral-{digest}-w"


def parse_runtime_id(runtime_id: str) -> tuple[str, str]:
    """`(actor name, node ip)` of a Ray runtime id `ray:<actor>@<node ip>`."""
    body = runtime_id.removeprefix("ray:")
    actor, _, node = body.partition("@")
    return actor, node


class RayRuntime:
    """Runs agents in worker actors on a Ray cluster (see the module docstring)."""

    kind = "ray"

    def __init__(self, config: RayConfig, *, data_root: Path) -> None:
        self.config = config
        self.prefix = actor_prefix(data_root)
        self._ray: Any = None
        self._actors: dict[str, Any] = {}
        self._places: dict[str, WorkerPlace] = {}
        self._presence: dict[str, PresenceVerdict] = {}
        self._evidence: dict[str, tuple[list[str], list[ProcessEvidence]]] = {}
        self._worker_class: Any = None
        self._placed: dict[str, int] = {}
        self._mine: dict[str, str] = {}
        """The worker of each agent this host placed (run id → actor name)."""
        """Agents this host placed on each worker and has not forgotten (a local reservation, so
        concurrent starts spread over workers at once instead of all trying the first)."""

    # --- connection ------------------------------------------------------------------------------

    def connect(self) -> Any:
        """The `ray` module, connected to the configured cluster (once per process).

        Raises:
            RuntimeError_: Ray is not installed or the cluster cannot be reached.
        """
        if self._ray is not None:
            return self._ray
        try:
            import ray
        except ImportError:
            from corral._install import missing_extra

            raise RuntimeError_(missing_extra("ray", "the Ray runtime needs Ray")) from None
        if not ray.is_initialized():
            _probe(self.config.address)
            try:
                ray.init(
                    address=self.config.address,
                    namespace=self.config.namespace,
                    ignore_reinit_error=True,
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                    configure_logging=False,
                )
            except Exception as exc:  # ConnectionError, RuntimeError, ValueError: all mean "not reachable"
                raise RuntimeError_(
                    f"cannot reach the Ray cluster at {self.config.address!r}: {_first_line(exc)}; "
                    "start it (ray start --head) or set [ray] address"
                ) from None
        self._ray = ray
        return ray

    @property
    def connected(self) -> bool:
        """Whether this process is connected to the cluster."""
        return self._ray is not None

    # --- actors ----------------------------------------------------------------------------------------

    def _actor_class(self, worker_class: type) -> Any:
        ray = self.connect()
        if self._worker_class is None:
            self._worker_class = ray.remote(worker_class)
        return self._worker_class

    def _options(self) -> dict[str, Any]:
        slots = self.config.agents_per_worker
        options: dict[str, Any] = {
            "namespace": self.config.namespace,
            "lifetime": "detached",
            "get_if_exists": True,
            "max_concurrency": 1000,
            "num_cpus": self.config.num_cpus * slots,
            "max_restarts": 0,
            "scheduling_strategy": "SPREAD",
        }
        if self.config.memory is not None:
            options["memory"] = self.config.memory * slots
        if self.config.resources:
            options["resources"] = {name: value * slots for name, value in self.config.resources.items()}
        if self.config.env:
            options["runtime_env"] = {"env_vars": dict(self.config.env)}
        return options

    def actor(self, name: str) -> Any:
        """The worker actor `name` (looked up by name once).

        Raises:
            RayWorkerGone: No such actor in the namespace.
            RuntimeError_: The cluster cannot be reached.
        """
        found = self._actors.get(name)
        if found is not None:
            return found
        ray = self.connect()
        try:
            found = ray.get_actor(name, namespace=self.config.namespace)
        except ValueError:
            raise RayWorkerGone(f"Ray worker actor {name} does not exist") from None
        self._actors[name] = found
        return found

    async def worker_names(self) -> list[str]:
        """The live worker actors of this data root (by name)."""
        ray = self.connect()
        names = await asyncio.to_thread(ray.util.list_named_actors, True)
        out = []
        for item in names:
            name = item.get("name") if isinstance(item, dict) else item
            namespace = item.get("namespace") if isinstance(item, dict) else self.config.namespace
            if isinstance(name, str) and name.startswith(self.prefix) and namespace == self.config.namespace:
                out.append(name)
        return sorted(out)

    async def start(self, spec: LaunchSpec) -> RuntimeHandle:
        """Place the agent of `spec.remote` on a worker with a free slot; the handle's id is
        `ray:<actor>@<node ip>`.

        Raises:
            RuntimeError_: The cluster cannot be reached, or no worker took the agent.
        """
        launch = spec.remote
        if not isinstance(launch, RemoteLaunch):
            raise RuntimeError_(f"the Ray runtime needs a remote launch to run agent {spec.label}")
        cls = self._actor_class(launch.worker_class)
        options = self._options()
        slots = self.config.agents_per_worker
        for index in range(_PLACE_ATTEMPTS):
            name = f"{self.prefix}{index}"
            if self._placed.get(name, 0) >= slots:
                continue
            self._placed[name] = self._placed.get(name, 0) + 1  # reserved before the first await
            try:
                actor = cls.options(name=name, **options).remote(slots)
                taken = await asyncio.wait_for(actor.start.remote(launch.payload), _LAUNCH_TIMEOUT_S)
            except TimeoutError:
                self._placed[name] -= 1
                raise RuntimeError_(
                    f"Ray worker {name} did not take agent {spec.label} within {_LAUNCH_TIMEOUT_S:g} s "
                    "(is there a node with the resources [ray] asks for?)"
                ) from None
            except Exception as exc:
                self._placed[name] -= 1
                if _actor_died(self._ray, exc):
                    self._actors.pop(name, None)
                    continue
                raise RuntimeError_(
                    f"Ray worker {name} could not start agent {spec.label}: {_first_line(exc)}"
                ) from None
            if taken is None:
                self._placed[name] = slots  # full with other hosts' agents: skip it from now on
                continue
            if "refused" in taken:  # the node cannot host it (its workspace is not shared there)
                self._placed[name] -= 1
                raise RuntimeError_(str(taken["refused"]))
            place = WorkerPlace(
                actor=name,
                node_id=str(taken["node_id"]),
                node_ip=str(taken["node_ip"]),
                hostname=str(taken["hostname"]),
                pid=int(taken["pid"]),
            )
            self._actors[name] = actor
            handle = RuntimeHandle(runtime_id=f"ray:{name}@{place.node_ip}", kind="ray", run_id=spec.run_id)
            self._places[handle.runtime_id] = place
            self._presence[handle.run_id] = "live"
            self._mine[handle.run_id] = name
            return handle
        raise RuntimeError_(f"no Ray worker took agent {spec.label} ({_PLACE_ATTEMPTS} workers full)")

    async def room(self) -> int:
        """How many more agents the cluster can take now: the free slots of the workers this host
        placed agents on (as the workers count them), plus `agents_per_worker` for each further worker the nodes' free
        resources (`num_cpus`, `memory`, `resources`, each times the slots) can hold.

        Raises:
            RuntimeError_: The cluster cannot be reached.
        """
        self.connect()
        slots = self.config.agents_per_worker
        free = 0
        for name, placed in list(self._placed.items()):
            if placed >= slots:
                continue
            try:  # a run this host let go may still be finishing there: the worker's count decides
                working = int(await self.call_worker(name, "working", timeout=_ROOM_CALL_S))
            except RuntimeError_:
                continue
            free += max(0, slots - max(placed, working))
        need: dict[str, float] = {"CPU": self.config.num_cpus * slots}
        if self.config.memory is not None:
            need["memory"] = float(self.config.memory * slots)
        need.update({name: value * slots for name, value in self.config.resources.items()})
        need = {name: value for name, value in need.items() if value > 0}
        if not need:
            return _ROOM_UNBOUNDED
        from ray._private import state

        try:
            per_node = await asyncio.to_thread(state.available_resources_per_node)
        except Exception as exc:
            raise RuntimeError_(f"cannot read the Ray cluster's free resources: {_first_line(exc)}") from None
        workers = 0
        for available in per_node.values():
            workers += min(int(available.get(name, 0.0) / value + 1e-9) for name, value in need.items())
        return free + workers * slots

    def adopt(self, handle: RuntimeHandle, pid: int | None) -> None:
        """Watch a handle recorded by another host (presence `unknown` until a call proves it)."""
        self._presence.setdefault(handle.run_id, "unknown")

    def place(self, handle: RuntimeHandle) -> WorkerPlace | None:
        """Where the handle's worker runs, when this host saw it."""
        return self._places.get(handle.runtime_id)

    def describe(self, handle: RuntimeHandle) -> str:
        """The handle's worker and node, for diagnostics."""
        actor, node_ip = parse_runtime_id(handle.runtime_id)
        place = self._places.get(handle.runtime_id)
        return f"Ray worker {actor} on {place.describe() if place else f'node {node_ip}'}"

    async def call_worker(self, name: str, method: str, *args: Any, timeout: float = 60.0) -> Any:
        """Call `method` of the worker actor `name` and return its result.

        Raises:
            RayWorkerGone: Ray says the actor died or does not exist.
            RuntimeError_: The call failed otherwise (the cluster unreachable, a timeout).
        """
        try:
            actor = self.actor(name)
            return await asyncio.wait_for(getattr(actor, method).remote(*args), timeout)
        except RuntimeError_:
            raise
        except TimeoutError:
            raise RuntimeError_(f"Ray worker {name} did not answer {method} within {timeout:g} s") from None
        except Exception as exc:
            if _actor_died(self._ray, exc):
                self._actors.pop(name, None)
                raise RayWorkerGone(f"Ray worker {name} died: {_first_line(exc)}") from None
            raise RuntimeError_(f"Ray worker {name} failed in {method}: {_first_line(exc)}") from None

    async def call(self, handle: RuntimeHandle, method: str, *args: Any, timeout: float = 60.0) -> Any:
        """Call `method` of the handle's worker; the outcome sets the handle's presence.

        Raises:
            RayWorkerGone: Ray says the actor died or does not exist (presence `lost`).
            RuntimeError_: The call failed otherwise (presence `unknown`).
        """
        actor_name, _ = parse_runtime_id(handle.runtime_id)
        try:
            result = await self.call_worker(actor_name, method, *args, timeout=timeout)
        except RayWorkerGone:
            self._presence[handle.run_id] = "lost"
            raise
        except RuntimeError_:
            self._presence[handle.run_id] = "unknown"
            raise
        if self._presence.get(handle.run_id) != "lost":
            self._presence[handle.run_id] = "live"
        return result

    def mark(self, handle: RuntimeHandle, verdict: PresenceVerdict) -> None:
        """Record a verdict the host proved otherwise (e.g. the worker no longer holds the run)."""
        self._presence[handle.run_id] = verdict

    # --- the runtime protocol ---------------------------------------------------------------------

    def presence(self, handle: RuntimeHandle) -> PresenceVerdict:
        """What the last call to the worker proved."""
        return self._presence.get(handle.run_id, "unknown")

    async def prepare_evidence(self, handle: RuntimeHandle) -> None:
        """Fetch the agent's recent activity and processes from its worker."""
        lines: list[str] = []
        processes: list[ProcessEvidence] = []
        try:
            found = await self.call(handle, "inspect", handle.run_id, timeout=15.0)
        except RuntimeError_:
            found = None
        if isinstance(found, dict):
            lines = [str(line) for line in found.get("lines", [])]
            processes = [
                ProcessEvidence(pid=int(p[0]), argv0=str(p[1]), cmdline=str(p[2]))
                for p in found.get("processes", [])
            ]
        elif found is None and self.presence(handle) == "live":
            self._presence[handle.run_id] = "lost"  # the worker no longer holds the run
        self._evidence[handle.run_id] = (lines, processes)

    def recent_output(
        self, handle: RuntimeHandle, *, lines: int = 80, max_bytes: int = 16384
    ) -> RecentOutput:
        """The activity fetched by `prepare_evidence`."""
        found, _ = self._evidence.get(handle.run_id, ([], []))
        return bound_output(found, max_lines=lines, max_bytes=max_bytes)

    def process_evidence(self, handle: RuntimeHandle) -> list[ProcessEvidence]:
        """The processes fetched by `prepare_evidence` (pids are the worker node's)."""
        return list(self._evidence.get(handle.run_id, ([], []))[1])

    async def stop(self, handle: RuntimeHandle) -> None:
        """End the agent in its worker (the worker stays for its other agents)."""
        try:
            await self.call(handle, "end", handle.run_id, timeout=30.0)
        except RayWorkerGone:
            pass
        self._presence[handle.run_id] = "lost"

    def forget(self, handle: RuntimeHandle) -> None:
        """Drop bookkeeping of a finished agent (its slot is free again)."""
        self._presence.pop(handle.run_id, None)
        actor = self._mine.pop(handle.run_id, None)
        if actor is not None and self._placed.get(actor, 0) > 0:
            self._placed[actor] -= 1
        self._evidence.pop(handle.run_id, None)

    async def kill_worker(self, name: str) -> None:
        """Kill the worker actor `name` and every agent it hosts (reap)."""
        ray = self.connect()
        try:
            actor = self.actor(name)
        except RayWorkerGone:
            return
        await asyncio.to_thread(ray.kill, actor, no_restart=True)
        self._actors.pop(name, None)


def ray_runtime(runtimes: Runtimes) -> RayRuntime:
    """The host's Ray runtime (`Runtimes.worker("ray")`, made on first use).

    Raises:
        RuntimeError_: No Ray runtime is registered with these runtimes.
    """
    runtime = runtimes.worker("ray")
    if not isinstance(runtime, RayRuntime):
        raise RuntimeError_(f"the 'ray' runtime here is not the Ray runtime ({type(runtime).__name__})")
    return runtime


_ROOM_CALL_S = 10.0
"""How long `room` waits for a worker's count of its working agents."""
_ROOM_UNBOUNDED = 1_000_000
"""`room` when the workers ask for no resources at all."""


def _probe(address: str) -> None:
    """Fail fast when a `host:port` (or `ray://host:port`) address does not accept connections
    (Ray itself retries for minutes).

    Raises:
        RuntimeError_: Nothing listens there.
    """
    if address in ("", "auto", "local"):
        return
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise RuntimeError_(f"[ray] address {address!r} is not auto, host:port or ray://host:port")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=_PROBE_TIMEOUT_S):
            pass
    except OSError as exc:
        raise RuntimeError_(
            f"cannot reach the Ray cluster at {address!r}: {exc.strerror or exc}; "
            "start it (ray start --head) or set [ray] address"
        ) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _actor_died(ray: Any, exc: BaseException) -> bool:
    if ray is None:
        return False
    errors = ray.exceptions
    dead = tuple(
        cls
        for cls in (getattr(errors, "ActorDiedError", None), getattr(errors, "RayActorError", None))
        if isinstance(cls, type)
    )
    return (
        bool(dead)
        and isinstance(exc, dead)
        and not isinstance(exc, getattr(errors, "ActorUnavailableError", ()))
    )
