"""The launch pipeline's Ray step: hand a recorded generation to a Ray worker and record it.

`Launcher` (`_launch.py`) calls `place_on_ray`, then `record_on_ray`, for a generation of kind `ray` after its record
step. The host flushes the agent's new session file and hands its bytes to the worker together
with the feature's worker description (`LaunchSteps.worker_launch`, the same one a tmux worker
reads from its launch file); the worker keeps a private copy and streams its appends back
(`_ray_pump.py`), so the host's file stays the real session file. It returns once the worker holds
the agent and the agent acknowledged its task; the acknowledgement and the worker's identity
(`ray:<actor>@<node ip>`, its pid) are recorded before it returns. An unreachable cluster or a
worker that cannot take the agent fails with `pane_not_ready` after the launch is rolled back:
nothing durable is left of it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from corral import _tracing
from corral.orchestration.errors import InternalFailureError, OrchestrationError
from corral.orchestration.kernel._faults import fault_point
from corral.orchestration.kernel.records import GenerationRecord, RequestRecord
from corral.runtime import LaunchSpec, RemoteLaunch

if TYPE_CHECKING:
    from corral._tracing import TraceCarrier
    from corral.orchestration.kernel._generations import Generations
    from corral.runtime import RuntimeHandle, Runtimes
    from corral.session import SessionManager
    from corral.settings import Settings

__all__ = ["RayLaunch", "RayLaunchHost", "place_on_ray", "record_on_ray"]


class RayLaunchHost(Protocol):
    """What the Ray step needs of the host (`Host`)."""

    kernel: Generations
    settings: Settings
    runtime: Runtimes
    host_id: str
    remote_worker: Callable[[], type] | None

    def track_tmux(self, run_id: str, handle: RuntimeHandle, *, pid: int | None) -> None: ...

    def changed(self) -> None: ...

    def remote_state(self, run_id: str) -> tuple[object, ...]: ...


@dataclass(frozen=True, slots=True)
class RayLaunch:
    """What a host sends to a Ray worker to start one agent (pickled by Ray)."""

    generation: GenerationRecord
    task: RequestRecord
    launch_json: str
    """The feature's worker description (`LaunchSteps.worker_launch`: the agent's spec, …) as JSON."""
    settings_json: str
    """The host's settings (`Settings.model_dump_json`)."""
    session_name: str
    """The session file's name (the worker keeps its copy under this name)."""
    session_bytes: bytes
    """The session file as the host flushed it (header and entries so far)."""
    trace: TraceCarrier | None = None
    """The trace to continue on the worker (the tool call that starts the agent), while tracing is on."""
    pushed: tuple[object, ...] = ()
    """The host extensions' state for the run (e.g. its budget) until the first pull brings newer."""

    @property
    def launch(self) -> Mapping[str, object]:
        """The worker description."""
        data = json.loads(self.launch_json)
        assert isinstance(data, dict)
        return data


async def place_on_ray(
    host: RayLaunchHost,
    generation: GenerationRecord,
    task: RequestRecord,
    session: SessionManager,
    *,
    describe: Callable[[], Mapping[str, object]],
) -> tuple[RuntimeHandle, Path]:
    """Hand `generation` to a Ray worker; its handle and the session file the host keeps.

    Args:
        describe: The feature's worker description of the agent (`LaunchSteps.worker_launch`).

    Raises:
        RuntimeError_: The cluster cannot be reached or no worker took the agent (the launch
            pipeline rolls back and answers `pane_not_ready`).
    """
    run_id = generation.run_id
    launch = describe()
    if host.remote_worker is None:
        raise InternalFailureError("this host has no Ray worker class; build it with ComposedHost")
    worker = host.remote_worker()
    session.flush()
    path = session.path
    if path is None:
        raise InternalFailureError(f"Agent {generation.label} has no session file to hand to its worker.")
    data = path.read_bytes()
    session.close()  # the worker owns the session from here on; the host appends what it streams
    payload = RayLaunch(
        generation=generation,
        task=task,
        launch_json=json.dumps(dict(launch)),
        settings_json=host.settings.model_dump_json(),
        session_name=path.name,
        session_bytes=data,
        trace=_tracing.current_carrier(),
        pushed=host.remote_state(run_id),
    )
    handle = await host.runtime.start(
        LaunchSpec(
            run_id,
            generation.label,
            Path(generation.cwd),
            generation.session_id,
            session_path=path,
            remote=RemoteLaunch(worker, payload),
        )
    )
    return handle, path


def record_on_ray(
    host: RayLaunchHost, generation: GenerationRecord, task: RequestRecord, handle: RuntimeHandle, path: Path
) -> GenerationRecord:
    """Record a placed generation's worker and its acknowledged task, and watch it."""
    run_id = generation.run_id
    fault_point("before_pane_recorded")
    place = host.runtime.ray.place(handle)
    pid = None if place is None else place.pid
    with contextlib.suppress(OrchestrationError):
        host.kernel.record_started(
            run_id, session_path=str(path), host_id=host.host_id, pid=pid, pane_id=handle.runtime_id
        )
    # The worker returned once the task was acknowledged; record it now (the pump's copy of the
    # same ack is then a no-op), so the launch returns an active agent as on the other runtimes.
    with contextlib.suppress(OrchestrationError):
        host.kernel.record_ack(run_id, task.request_id, accepted=True)
    host.track_tmux(run_id, handle, pid=pid)
    host.changed()
    current = host.kernel.get_generation(run_id)
    return generation if current is None else current
