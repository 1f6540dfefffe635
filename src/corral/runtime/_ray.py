"""The Ray runtime: managed agents in detached, named Ray actors on a cluster.

A *worker actor* hosts up to `agents_per_worker` agent sessions (agents spend
most of their time waiting on their model, so one process serves many). Its
name is `corral-<data root digest>-w<n>` in the `[ray] namespace`, and it is
detached: it outlives the host that created it, and a restarted host finds it
again by name. `start` places an agent on the first worker with a free slot
(creating workers as needed, with the per-agent resources times the slots as
the actor's resources; the slots are `agents_per_worker` or, when no node can
hold that many agents, as many as the largest node can: `size_worker`) and
returns once the worker holds it. An ask no node can hold fails at once
(`RayInfeasible`), before a worker is made or while it is still unplaced.

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
import contextlib
import dataclasses
import hashlib
import logging
import os
import socket
from collections.abc import Mapping, Sequence
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
    "RayInfeasible",
    "RayRuntime",
    "RayWorkerGone",
    "WorkerPlace",
    "WorkerSizing",
    "actor_prefix",
    "parse_runtime_id",
    "ray_config",
    "ray_runtime",
    "size_worker",
]

FORWARDED_ENV = ("CORRAL_HOME", "CORRAL_SCRIPTS", "XDG_CONFIG_HOME")
"""Environment variables every worker gets from the host that creates it."""

_PLACE_ATTEMPTS = 64
_LAUNCH_TIMEOUT_S = 120.0
_PROBE_TIMEOUT_S = 5.0
_PENDING_CHECK_S = 1.0
"""How often a start whose worker is not placed yet re-reads the cluster's nodes (a node that could
hold it may leave; Ray gives no signal for "infeasible")."""


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


class RayInfeasible(RuntimeError_):
    """No node of the cluster can ever hold one agent's (or one worker's) ask: its message names the
    ask and the largest node's resources."""


_SETTING = {"CPU": "num_cpus", "memory": "memory"}


def _amount(name: str, value: float) -> str:
    if name == "memory":
        return f"{value / 2**30:.3g} GiB" if value >= 2**27 else f"{value:.0f} bytes"
    return f"{value:g}"


def _describe(resources: Mapping[str, float]) -> str:
    return ", ".join(f"{name} {_amount(name, value)}" for name, value in resources.items()) or "nothing"


@dataclass(frozen=True, slots=True)
class WorkerSizing:
    """How many agents one worker actor hosts on this cluster, and what it asks Ray for.

    A worker reserves one agent's resources (`[ray] num_cpus`, `memory`, `resources`) times its
    slots. `agents_per_worker` is the most slots a worker gets: when that many agents' resources
    do not fit on any node, the worker gets as many slots as the node that holds the most agents
    can hold (`size_worker`), so a 2-CPU laptop hosts 8 agents of `num_cpus = 0.25` in one worker
    instead of asking for 4 CPUs that no node has.
    """

    per_agent: Mapping[str, float]
    """One agent's ask, in Ray's resource names (`CPU`, `memory`, custom names); zero asks left out."""
    slots: int
    """Agents one worker hosts here (1 ≤ slots ≤ `agents_per_worker`)."""
    configured: int
    """`[ray] agents_per_worker`."""
    largest: Mapping[str, float]
    """The totals of the asked resources on the node that holds the most agents."""
    nodes: int
    """Alive nodes counted."""

    @property
    def ask(self) -> dict[str, float]:
        """What one worker asks Ray for (one agent's ask times the slots)."""
        return {name: value * self.slots for name, value in self.per_agent.items()}

    @property
    def sized_down(self) -> bool:
        """Whether a worker hosts fewer agents than `agents_per_worker` on this cluster."""
        return self.slots < self.configured

    def describe(self) -> str:
        """One line with the numbers, for `corral doctor` and diagnostics."""
        per = _describe(self.per_agent) if self.per_agent else "no resources"
        largest = _describe(self.largest)
        if not self.sized_down:
            return (
                f"a worker hosts {self.slots} agents and asks for {_describe(self.ask) or 'no resources'} "
                f"(one agent asks for {per}); the largest of {self.nodes} node(s) has {largest}"
            )
        full = {name: value * self.configured for name, value in self.per_agent.items()}
        return (
            f"a worker hosts {self.slots} agents, not agents_per_worker = {self.configured}: "
            f"{self.configured} agents would ask for {_describe(full)} and the largest of {self.nodes} "
            f"node(s) has {largest}; so it asks for {_describe(self.ask)} (one agent asks for {per})"
        )


def _per_agent(config: RayConfig) -> dict[str, float]:
    need: dict[str, float] = {"CPU": config.num_cpus}
    if config.memory is not None:
        need["memory"] = float(config.memory)
    need.update({name: float(value) for name, value in config.resources.items()})
    return {name: value for name, value in need.items() if value > 0}


def size_worker(config: RayConfig, nodes: Sequence[Mapping[str, float]]) -> WorkerSizing:
    """Size a worker for a cluster whose alive nodes have the total resources `nodes`.

    A worker gets `agents_per_worker` slots, or fewer: as many agents as the node that holds the
    most of them can hold (by its total resources, not what is free now).

    Raises:
        RayInfeasible: No node can hold even one agent (no nodes, a custom resource no node has,
            `num_cpus` or `memory` above every node's); the message names the numbers.
    """
    per_agent = _per_agent(config)
    best = 0
    largest: dict[str, float] = {}
    for totals in nodes:
        fits = min(
            (int(totals.get(name, 0.0) / value + 1e-9) for name, value in per_agent.items()),
            default=config.agents_per_worker,
        )
        if fits > best or not largest:
            best, largest = fits, {name: float(totals.get(name, 0.0)) for name in per_agent}
    if best < 1:
        settings = ", ".join(f"[ray] {_SETTING.get(name, f'resources.{name}')}" for name in per_agent)
        if not nodes:
            raise RayInfeasible("the Ray cluster has no alive node; start one (ray start --head)")
        missing = [name for name in per_agent if not any(t.get(name, 0.0) > 0 for t in nodes)]
        why = (
            f"no node has the resource {', '.join(repr(m) for m in missing)}"
            if missing
            else f"the largest of {len(nodes)} node(s) has {_describe(largest)}"
        )
        raise RayInfeasible(
            f"no Ray node can hold one agent: it asks for {_describe(per_agent)} ({settings}) and {why}; "
            "lower the ask or add a node that has it"
        )
    return WorkerSizing(
        per_agent=per_agent,
        slots=min(best, config.agents_per_worker),
        configured=config.agents_per_worker,
        largest=largest,
        nodes=len(nodes),
    )


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

    async def sizing(self) -> WorkerSizing:
        """How a worker is sized on the cluster as it is now (`size_worker` over the alive nodes'
        total resources, read from Ray's GCS).

        Raises:
            RayInfeasible: No node can hold one agent.
            RuntimeError_: The cluster cannot be reached or its nodes cannot be read.
        """
        return size_worker(self.config, await self.node_totals())

    async def node_totals(self) -> list[dict[str, float]]:
        """The total resources of each alive node.

        Raises:
            RuntimeError_: The cluster cannot be reached or its nodes cannot be read.
        """
        ray = self.connect()
        try:
            nodes = await asyncio.to_thread(ray.nodes)
        except Exception as exc:
            raise RuntimeError_(f"cannot read the Ray cluster's nodes: {_first_line(exc)}") from None
        return [
            {str(name): float(value) for name, value in dict(node.get("Resources") or {}).items()}
            for node in nodes
            if node.get("Alive")
        ]

    def _options(self, sizing: WorkerSizing) -> dict[str, Any]:
        options: dict[str, Any] = {
            "namespace": self.config.namespace,
            "lifetime": "detached",
            "get_if_exists": True,
            "max_concurrency": 1000,
            "num_cpus": sizing.ask.get("CPU", 0.0),
            "max_restarts": 0,
            "scheduling_strategy": "SPREAD",
        }
        custom = {name: value for name, value in sizing.ask.items() if name not in ("CPU", "memory")}
        if "memory" in sizing.ask:
            options["memory"] = int(sizing.ask["memory"])
        if custom:
            options["resources"] = custom
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
        sizing = await self.sizing()
        options = self._options(sizing)
        slots = sizing.slots
        for index in range(_PLACE_ATTEMPTS):
            name = f"{self.prefix}{index}"
            if self._placed.get(name, 0) >= slots:
                continue
            self._placed[name] = self._placed.get(name, 0) + 1  # reserved before the first await
            try:
                actor = cls.options(name=name, **options).remote(slots)
                taken = await self._taken(actor, name, launch.payload, spec.label, sizing)
            except RuntimeError_:
                self._placed[name] -= 1
                raise
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

    async def _taken(self, actor: Any, name: str, payload: Any, label: str, sizing: WorkerSizing) -> Any:
        """The worker's answer to `start`, waited for at most `_LAUNCH_TIMEOUT_S`; while the worker
        is not placed yet, the cluster's nodes are read every `_PENDING_CHECK_S`, and the start
        fails at once when none of them can hold the worker any more.

        Raises:
            RayInfeasible: No alive node can hold the worker (it is killed while still pending).
            RuntimeError_: The worker took no answer within the timeout (a worker still pending
                then is killed, so it does not take a node's resources later).
            Exception: Ray's own error of the call.
        """
        call = asyncio.ensure_future(actor.start.remote(payload))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _LAUNCH_TIMEOUT_S
        try:
            while True:
                left = deadline - loop.time()
                if left <= 0:
                    pending = await self._pending(actor)
                    if pending:
                        await self._kill_pending(actor, name)
                    raise RuntimeError_(
                        f"Ray worker {name} did not take agent {label} within {_LAUNCH_TIMEOUT_S:g} s"
                        + (
                            f": Ray could not place it ({sizing.describe()}; free now: "
                            f"{await self._free_text(sizing)}); wait for agents to finish or add a node"
                            if pending
                            else ""
                        )
                    )
                done, _ = await asyncio.wait({call}, timeout=min(_PENDING_CHECK_S, left))
                if done:
                    return call.result()
                if not await self._pending(actor):
                    continue
                try:
                    fits = size_worker(
                        dataclasses.replace(self.config, agents_per_worker=sizing.slots),
                        await self.node_totals(),
                    )
                except RayInfeasible as exc:
                    await self._kill_pending(actor, name)
                    raise RayInfeasible(f"Ray worker {name} cannot be placed: {exc}") from None
                if fits.slots < sizing.slots:
                    await self._kill_pending(actor, name)
                    raise RayInfeasible(
                        f"Ray worker {name} cannot be placed: it asks for {_describe(sizing.ask)} and no "
                        f"alive node has that much any more ({fits.describe()})"
                    )
        finally:
            if not call.done():
                call.cancel()

    async def unplaced(self, name: str) -> bool:
        """Whether the worker actor `name` exists but Ray has not placed it (no process to ask).

        Raises:
            RuntimeError_: The cluster cannot be reached.
        """
        try:
            actor = self.actor(name)
        except RayWorkerGone:
            return False
        return await self._pending(actor)

    async def _pending(self, actor: Any) -> bool:
        """Whether Ray has not placed the worker actor yet (its GCS state is pending)."""
        from ray._private import state

        try:
            info = await asyncio.to_thread(state.actors, actor._actor_id.hex())
        except Exception:  # the GCS did not answer: nothing proven
            return False
        return isinstance(info, dict) and info.get("State") in ("PENDING_CREATION", "DEPENDENCIES_UNREADY")

    async def _kill_pending(self, actor: Any, name: str) -> None:
        """Kill a worker Ray never placed (detached, it would wait for resources forever)."""
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self._ray.kill, actor, no_restart=True)
        self._actors.pop(name, None)

    async def _free_per_node(self) -> dict[str, dict[str, float]]:
        """The free resources of each alive node (node id → resource → amount), from Ray's GCS.

        Raises:
            RuntimeError_: They cannot be read.
        """
        from ray._private import state

        try:
            return await asyncio.to_thread(state.available_resources_per_node)
        except Exception as exc:
            raise RuntimeError_(f"cannot read the Ray cluster's free resources: {_first_line(exc)}") from None

    async def _free_text(self, sizing: WorkerSizing) -> str:
        try:
            per_node = await self._free_per_node()
        except RuntimeError_:
            return "unknown"
        names = list(sizing.per_agent)
        return (
            "; ".join(
                f"node {node[:12]}: {_describe({n: float(free.get(n, 0.0)) for n in names})}"
                for node, free in per_node.items()
            )
            or "no node"
        )

    async def room(self) -> int:
        """How many more agents the cluster can take now: the free slots of the workers this host
        placed agents on (as the workers count them), plus a worker's slots (`sizing`) for each
        further worker the nodes' free resources (`num_cpus`, `memory`, `resources`, each times the
        slots) can hold.

        Raises:
            RayInfeasible: No node can ever hold one agent (a launch fails with the same message).
            RuntimeError_: The cluster cannot be reached.
        """
        sizing = await self.sizing()
        slots = sizing.slots
        free = 0
        for name, placed in list(self._placed.items()):
            if placed >= slots:
                continue
            try:  # a run this host let go may still be finishing there: the worker's count decides
                working = int(await self.call_worker(name, "working", timeout=_ROOM_CALL_S))
            except RuntimeError_:
                continue
            free += max(0, slots - max(placed, working))
        need = sizing.ask
        if not need:
            return _ROOM_UNBOUNDED
        workers = 0
        for available in (await self._free_per_node()).values():
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
    """Fail fast when a `host:port` (or `ray://host:port`) address, or the one `auto` resolves to,
    does not accept connections (Ray itself retries for minutes).

    Raises:
        RuntimeError_: Nothing listens there.
    """
    if address == "local":
        return
    shown = repr(address)
    if address in ("", "auto"):
        # Ray's own lookup (`RAY_ADDRESS`, the last `ray start`'s address file, running GCS
        # processes); a cluster that died without `ray stop` leaves its address file behind, and
        # `ray.init` would retry that address for minutes.
        try:
            from ray._private.services import get_ray_address_from_environment

            found = get_ray_address_from_environment("auto", None)
        except Exception as exc:  # ConnectionError: no running cluster found
            raise RuntimeError_(
                f"cannot reach the Ray cluster at 'auto': {_first_line(exc)}; "
                "start it (ray start --head) or set [ray] address"
            ) from None
        if not isinstance(found, str) or found in ("", "auto", "local"):
            return
        address, shown = found, f"'auto' ({found})"
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise RuntimeError_(f"[ray] address {address!r} is not auto, host:port or ray://host:port")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=_PROBE_TIMEOUT_S):
            pass
    except OSError as exc:
        raise RuntimeError_(
            f"cannot reach the Ray cluster at {shown}: {exc.strerror or exc}; "
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
