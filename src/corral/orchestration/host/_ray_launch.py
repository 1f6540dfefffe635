"""The Ray runtime's start step (`RayWorkers`): hand a recorded generation to a Ray worker and record it.

The composition root registers `RayWorkers` as the host's start step of kind `ray`
(`WorkerWatch.register`); the launch pipeline (`_launch.py`) and a handoff call its `place`, then
`ready`. The host hands the agent's session file's bytes to the worker together with the agent's
launch description (`host.protocol.WorkerLaunch`: `LaunchSteps.worker_launch`, the same one a tmux
worker reads from its launch file, or a handoff's) and the host's settings in it; the worker keeps a private copy and streams its appends back
(`_ray_pump.py`), so the host's file stays the real session file. `place` returns once the worker
holds the agent and (a new launch) the agent acknowledged its task; the acknowledgement and the
worker's identity (`ray:<actor>@<node ip>`, its pid) are recorded before it returns. An unreachable
cluster or a worker that cannot take the agent fails with `pane_not_ready` after the launch is
rolled back: nothing durable is left of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from corral import _tracing
from corral.orchestration.errors import OrchestrationError
from corral.orchestration.host.permission_layers import host_layers
from corral.orchestration.kernel._faults import fault_point
from corral.orchestration.kernel.records import GenerationRecord, RequestRecord
from corral.runtime import LaunchSpec, RemoteLaunch

if TYPE_CHECKING:
    from corral._tracing._carrier import TraceCarrier
    from corral.orchestration.host._launch import LaunchWorkers
    from corral.orchestration.host._ray_pump import PumpHost, RayPump
    from corral.orchestration.host.permission_layers import Definitions
    from corral.orchestration.host.ports import Extensions
    from corral.orchestration.host.protocol import WorkerLaunch
    from corral.orchestration.kernel._generations import Generations
    from corral.runtime import RuntimeHandle, Runtimes
    from corral.settings import Settings

__all__ = ["RayLaunch", "RayLaunchHost", "RayWorkers", "place_on_ray", "record_on_ray"]


class RayLaunchHost(Protocol):
    """What the Ray step needs of the host (`Host`)."""

    kernel: Generations
    settings: Settings
    host_id: str

    @property
    def runtime(self) -> Runtimes: ...

    @property
    def workers(self) -> LaunchWorkers: ...

    @property
    def extensions(self) -> Extensions: ...

    def changed(self) -> None: ...

    def roster_loader(self, cwd: Path) -> Definitions: ...


@dataclass(frozen=True, slots=True)
class RayLaunch:
    """What a host sends to a Ray worker to start one agent (pickled by Ray)."""

    generation: GenerationRecord
    task: RequestRecord
    launch_json: str
    """The agent's launch description with the host's settings (`WorkerLaunch.to_json`); the
    worker parses it with the extension parts it knows."""
    session_name: str
    """The session file's name (the worker keeps its copy under this name)."""
    session_bytes: bytes
    """The session file as the host flushed it (header and entries so far)."""
    trace: TraceCarrier | None = None
    """The trace to continue on the worker (the tool call that starts the agent), while tracing is on."""
    pushed: tuple[object, ...] = ()
    """The host extensions' state for the run (e.g. its budget) until the first pull brings newer."""


async def place_on_ray(
    host: RayLaunchHost,
    worker: type,
    generation: GenerationRecord,
    task: RequestRecord,
    *,
    session_path: Path,
    launch: WorkerLaunch,
) -> RuntimeHandle:
    """Hand `generation` to a Ray worker (an actor of class `worker`); its handle.

    Args:
        session_path: The agent's session file, flushed and closed (the host appends what the
            worker streams from here on).
        launch: The agent's description (`LaunchSteps.worker_launch`, or a handoff's); the host's
            settings are added here.

    Raises:
        RuntimeError_: The cluster cannot be reached or no worker took the agent (the launch
            pipeline rolls back and answers `pane_not_ready`).
        OSError: The session file cannot be read.
    """
    from corral.runtime._ray import ray_runtime

    run_id = generation.run_id
    payload = RayLaunch(
        generation=generation,
        task=task,
        launch_json=dataclasses.replace(
            launch, settings=host.settings, permissions=host_layers(host, generation)
        ).to_json(),
        session_name=session_path.name,
        session_bytes=session_path.read_bytes(),
        trace=_tracing.current_carrier(),
        pushed=host.extensions.remote_state(run_id),
    )
    return await ray_runtime(host.runtime).start(
        LaunchSpec(
            run_id,
            generation.label,
            Path(generation.cwd),
            generation.session_id,
            session_path=session_path,
            remote=RemoteLaunch(worker, payload),
        )
    )


def record_on_ray(
    host: RayLaunchHost, generation: GenerationRecord, task: RequestRecord, handle: RuntimeHandle, path: Path
) -> GenerationRecord:
    """Record a placed generation's worker and its acknowledged task (a new launch), and watch it."""
    from corral.runtime._ray import ray_runtime

    run_id = generation.run_id
    fault_point("before_pane_recorded")
    place = ray_runtime(host.runtime).place(handle)
    pid = None if place is None else place.pid
    with contextlib.suppress(OrchestrationError):
        host.kernel.record_started(
            run_id, session_path=str(path), host_id=host.host_id, pid=pid, pane_id=handle.runtime_id
        )
    if not task.acknowledged:
        # The worker returned once the task was acknowledged; record it now (the pump's copy of the
        # same ack is then a no-op), so the launch returns an active agent as on the other runtimes.
        # A moved agent's task was acknowledged long ago.
        with contextlib.suppress(OrchestrationError):
            host.kernel.record_ack(run_id, task.request_id, accepted=True)
    host.workers.track(run_id, handle, pid=pid)
    host.changed()
    current = host.kernel.get_generation(run_id)
    return generation if current is None else current


class RayWorkers:
    """The Ray runtime's start step (`WorkerStart`) and watch: the `RayPump` pulls its runs' facts.

    Args:
        host: The host (`Host`).
        worker_class: Loads the worker actor's class (`corral._ray_worker.RayWorker`).
    """

    def __init__(self, host: PumpHost, worker_class: Callable[[], type]) -> None:
        self.host = host
        self.worker_class = worker_class
        self.pump: RayPump | None = None

    def unavailable(self) -> str | None:
        """Ray not installed (whether the cluster answers is known only when `place` connects)."""
        if importlib.util.find_spec("ray") is None:
            from corral._install import missing_extra

            return missing_extra("ray", "Ray is not installed")
        return None

    async def place(
        self,
        generation: GenerationRecord,
        task: RequestRecord,
        *,
        session_path: Path,
        launch: WorkerLaunch,
    ) -> RuntimeHandle:
        """Hand the agent to a worker actor (`place_on_ray`), then record and watch it (`record_on_ray`)."""
        handle = await place_on_ray(
            self.host, self.worker_class(), generation, task, session_path=session_path, launch=launch
        )
        record_on_ray(self.host, generation, task, handle, session_path)
        return handle

    async def ready(
        self, generation: GenerationRecord, handle: RuntimeHandle, *, timeout: float
    ) -> GenerationRecord | None:
        """Nothing to wait for: `place` returned once the worker held the agent."""
        return self.host.kernel.get_generation(generation.run_id)

    def watch(self, run_id: str, handle: RuntimeHandle, generation: GenerationRecord | None) -> None:
        """Pull the run's facts and session bytes into the store (the pump is made with the first run)."""
        if self.pump is None:
            from corral.orchestration.host._ray_pump import RayPump
            from corral.runtime._ray import ray_runtime

            self.pump = RayPump(self.host, ray_runtime(self.host.runtime))
        self.pump.track(run_id, handle, generation)

    def unwatch(self, run_id: str) -> None:
        """Stop pulling the run (its worker drops it)."""
        if self.pump is not None:
            self.pump.untrack(run_id)

    async def settle_unplaced(self, generations: Sequence[GenerationRecord]) -> None:
        """Ask the workers (`settle_unplaced_on_ray`)."""
        from corral.orchestration.host._ray_pump import settle_unplaced_on_ray

        await settle_unplaced_on_ray(self.host, list(generations))

    async def aclose(self) -> None:
        """Stop pulling (the agents keep running in their workers)."""
        if self.pump is not None:
            await self.pump.aclose()
