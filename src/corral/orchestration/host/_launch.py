"""The one launch pipeline: every generation starts here (delegate, continue, teams spawn, handoff).

A launch is **prepare → record → start → roll back on failure** (`Launcher.launch`):

1. *Prepare* (`LaunchStage.enter`, in order): work before anything durable. An isolated writer's
   worktree (`corral.orchestration.worktrees._extension.IsolationStage`) chooses the cwd and the run id. Each
   stage entered is undone (`LaunchStage.undo`, in reverse order) when a later step fails, also
   after a rollback.
2. *Record* (`LaunchSteps.record`): the feature's one store transaction (the generation, its task and
   whatever rides on it, such as a teams member row) and the agent's session.
3. *Start* on the generation's runtime kind. `Runtimes` is the one place that maps a kind to a
   runtime. In-process: `LaunchSteps.build` makes the `ManagedChild` (including a feature's own
   steps: the teams session context, checkpoints, the read sandbox); the host gives it its tools,
   registers a delegating child as an owner, runs it and records it started. It then waits for
   the task's acknowledgement when the plan asks for that. On a worker runtime, the session is
   flushed and handed over with the feature's description of the agent
   (`LaunchSteps.worker_launch`) to that runtime's *start step* (`WorkerStart`, from
   `host.workers.of(kind)`): `place` starts the worker, records where it runs and watches it;
   `ready` waits until it runs the agent. A `corral worker` process (tmux, or a registered
   process runtime: `ProcessWorkers`) reads the description from a private launch file and
   records its readiness in the store; on Ray (`_ray_launch.RayWorkers`, registered by the
   composition root) the description and the session file's bytes go to a worker actor, which
   returns once the agent acknowledged its task.
   `Launcher.launch_many` launches several generations at once (a teams swarm's admission): each
   is prepared, then all record steps run in **one** store transaction (`LaunchSteps.record_in`;
   `fault_point("swarm_admission")` after each member's rows), so a crash leaves none of them
   admitted or all; then each starts as above. When one member's record fails the transaction
   rolls back and each member records in its own (the bad one fails alone).
4. *Roll back*: the feature's undo first (`LaunchSteps.rolled_back`; teams hands the capacity slot
   back to its caller), then the kernel's: stop what runs, finalize the generation, release it,
   stop watching it. An `OrchestrationError` raised by the launch says `rollback_occurred`.

Handoff (`host/_handoff.py`) moves a generation that already runs, so it uses only the start step
(`WorkerStart.place`, `WorkerStart.ready`) of its target runtime. Its failures cannot roll back (the
in-process run is gone). It handles them itself and marks the generation lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from corral.orchestration.errors import (
    InternalFailureError,
    OrchestrationError,
    PaneNotReadyError,
    RollbackFailureError,
)
from corral.orchestration.host import _heap
from corral.orchestration.host._worker import worker_argv, worker_env, write_launch_file
from corral.orchestration.host.permission_layers import host_layers
from corral.orchestration.kernel._faults import fault_point
from corral.runtime import (
    LaunchSpec,
    PaneNotReady,
    ProcessWorkerRuntime,
    RollbackFailed,
    RuntimeError_,
    RuntimeHandle,
    TmuxRuntime,
)

if TYPE_CHECKING:
    from corral.agent import AgentSession
    from corral.orchestration.host._live import LiveRuns
    from corral.orchestration.host.permission_layers import Definitions
    from corral.orchestration.host.protocol import WorkerLaunch
    from corral.orchestration.kernel._child import ManagedChild
    from corral.orchestration.kernel._generations import Generations
    from corral.orchestration.kernel.records import GenerationRecord, RequestRecord
    from corral.orchestration.store import Tx
    from corral.runtime import Runtimes
    from corral.session import SessionManager
    from corral.settings import Settings

__all__ = [
    "DEFAULT_STARTUP_S",
    "LaunchDraft",
    "LaunchHost",
    "LaunchPlan",
    "LaunchStage",
    "LaunchSteps",
    "Launcher",
    "ProcessWorkers",
    "Recorded",
    "WorkerStart",
]

DEFAULT_STARTUP_S = 302.0
"""How long a worker may take to become ready when the plan names no budget (seconds)."""


@dataclass(slots=True)
class LaunchDraft:
    """What the prepare stages decide before anything is recorded."""

    cwd: Path
    """Where the agent runs (an isolated writer: its worktree)."""
    run_id: str | None = None
    """The run id chosen up front (an isolated writer's branch names it), else `None` (the store picks)."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """A generation the record step wrote, with its task and the agent's session."""

    generation: GenerationRecord
    task: RequestRecord
    """Its `task` request (the payload the child is prompted with)."""
    session: SessionManager
    """The agent's session (a worker runtime gets its file; the session is closed before it starts)."""


class LaunchStage(Protocol):
    """A step before the record step that a failed launch undoes (for example, an isolated worktree)."""

    async def enter(self, draft: LaunchDraft) -> None:
        """Do the step. It may choose `draft.cwd` and `draft.run_id`."""
        ...

    async def undo(self) -> None:
        """Undo the step after the launch failed (best effort; errors are ignored)."""
        ...


class LaunchSteps:
    """A feature's part of one launch. `record` is required; every other hook has a default."""

    def record(self, draft: LaunchDraft) -> Recorded:
        """Write the generation (one store transaction) and open or create the agent's session.

        Raises:
            OrchestrationError: Nothing was recorded (the session is closed again).
        """
        raise NotImplementedError

    def record_in(self, tx: Tx, draft: LaunchDraft) -> Recorded:
        """`record` inside `tx`, the transaction `Launcher.launch_many` holds for all its launches.

        A feature that launches in batches implements it (teams); its session is closed again
        when it raises or when the transaction rolls back (`closed_unrecorded`).

        Raises:
            OrchestrationError: This launch cannot be recorded (the whole transaction rolls back).
        """
        raise InternalFailureError("This launch cannot be recorded with others.")

    def closed_unrecorded(self, recorded: Recorded) -> None:
        """`record_in` succeeded but its transaction rolled back: close the session it opened."""
        recorded.session.close()

    async def build(self, recorded: Recorded) -> ManagedChild:
        """The in-process program: the agent session and its `ManagedChild` (not started yet)."""
        raise InternalFailureError(f"Agent {recorded.generation.label} cannot run in-process.")

    def attach(self, child: ManagedChild) -> None:
        """Called after the host gave `child` its tools and before it starts (for example, a controller's surfaces)."""

    async def before_worker(self, recorded: Recorded) -> None:
        """On a worker runtime: the feature's steps before the start that `build` does in-process
        (for example, teams' group slot and mission); `worker_launch` follows."""

    def worker_launch(self, recorded: Recorded) -> WorkerLaunch:
        """A worker runtime's description of the agent (`host.protocol.WorkerLaunch`; the start step
        adds the settings and, for tmux, the heartbeat)."""
        raise InternalFailureError(
            f"Agent {recorded.generation.label} cannot run on the {recorded.generation.runtime_kind} runtime."
        )

    def rolled_back(self, recorded: Recorded) -> None:
        """The launch failed after the record step; undo the feature's in-memory parts first."""


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """How to launch one generation: where, what to prepare, how long to wait."""

    operation: str
    """The public operation (`delegate`, `continue`, `spawn_agent`, …), used by errors."""
    cwd: Path
    """The working directory the prepare stages start from."""
    _: KW_ONLY
    stages: Sequence[LaunchStage] = ()
    """Prepare stages, entered in order before the record step."""
    startup_s: float | None = None
    """In-process: how long to wait for the task's acknowledgement (`None`: do not wait). Worker
    runtimes: how long to wait for readiness (`None`: `DEFAULT_STARTUP_S`)."""


def _raise_start_failure(exc: BaseException, label: str, where: str) -> NoReturn:
    """Raise what a worker start that failed (and was rolled back) answers: an orchestration error
    as it is, marked rolled back; a runtime failure as `pane_not_ready`; anything else unchanged."""
    if isinstance(exc, OrchestrationError):
        exc.rollback_occurred = True
        raise exc
    if isinstance(exc, RuntimeError_):
        raise PaneNotReadyError(
            f"Agent {label} could not be started {where}: {exc}",
            rollback_occurred=True,
            ids={"label": label},
        ) from None
    raise exc


class LaunchHost(Protocol):
    """What a launch needs from the host (`Host` implements it)."""

    kernel: Generations
    settings: Settings
    runtime: Runtimes
    pid: int
    host_id: str
    runs: LiveRuns[ManagedChild, Any]
    placing: set[str]

    def install_child_tools(self, child: ManagedChild) -> None: ...

    def register_owner(self, agent: AgentSession) -> None: ...

    async def start_child(
        self, child: ManagedChild, *, cwd: Path, session_path: Path | None
    ) -> RuntimeHandle: ...

    def placing_run(self, run_id: str) -> contextlib.AbstractContextManager[None]: ...

    @property
    def workers(self) -> LaunchWorkers: ...

    def release(self, run_id: str) -> None: ...

    def changed(self) -> None: ...

    def roster_loader(self, cwd: Path) -> Definitions: ...

    def warn(self, text: str) -> None: ...


class LaunchWorkers(Protocol):
    """The host's worker runtimes as a launch uses them (`Host.workers`, a `WorkerWatch`)."""

    def of(self, kind: str) -> WorkerStart:
        """The start step of the worker runtime `kind`."""
        ...

    def track(self, run_id: str, handle: RuntimeHandle, *, pid: int | None) -> None:
        """Watch `run_id` on the worker of `handle` from now on."""

    def untrack(self, run_id: str) -> None:
        """Stop watching `run_id`."""


class WorkerStart(Protocol):
    """A worker runtime's part of the host: its start step in the launch pipeline (and a handoff's),
    what the host does while it watches its runs, and how recovery settles a run whose host died
    before it recorded the worker. `host.workers.of(kind)` gives the one of a kind: `ProcessWorkers`
    unless the composition root registered another (Ray)."""

    def unavailable(self) -> str | None:
        """Why this runtime cannot start a worker on this machine now (its program or package is
        missing), else `None`. Cheap and read-only (a handoff asks before its safe point)."""
        ...

    async def place(
        self,
        generation: GenerationRecord,
        task: RequestRecord,
        *,
        session_path: Path,
        launch: WorkerLaunch,
    ) -> RuntimeHandle:
        """Start `generation`'s agent on a worker, record where it runs and watch it (`WorkerWatch.track`).

        Run it under `placing_run`. The session file at `session_path` is flushed and closed (the
        worker owns it from here on); `launch` is the description of the agent
        (`LaunchSteps.worker_launch`, or a handoff's, which has a `resume_prompt`).

        Raises:
            RuntimeError_: The runtime could not start the worker (the cluster cannot be reached, …).
            OrchestrationError: The worker could not be recorded (a started worker is stopped).
            OSError: A file the start needs could not be written.
        """
        ...

    async def ready(
        self, generation: GenerationRecord, handle: RuntimeHandle, *, timeout: float
    ) -> GenerationRecord | None:
        """Wait until the placed worker runs the agent; the generation as it is then (`None`: gone).

        Raises:
            PaneNotReady: Not ready in time; the worker was removed.
            RollbackFailed: Not ready, and the worker could not be removed.
        """
        ...

    def watch(self, run_id: str, handle: RuntimeHandle, generation: GenerationRecord | None) -> None:
        """The host watches `run_id` on this runtime from now on (`WorkerWatch.track`)."""
        ...

    def unwatch(self, run_id: str) -> None:
        """The host stopped watching `run_id` (`WorkerWatch.untrack`)."""
        ...

    async def settle_unplaced(self, generations: Sequence[GenerationRecord]) -> None:
        """Settle generations of this kind whose host died before it recorded their worker: adopt
        the worker that runs one, mark one lost when none does, leave it when nothing is proven."""
        ...

    async def aclose(self) -> None:
        """The host closes (the agents keep running in their workers)."""
        ...


class Launcher:
    """The host's one launch pipeline (see the module docstring).

    Args:
        host: The host whose runtimes run the generation.
    """

    def __init__(self, host: LaunchHost) -> None:
        self.host = host

    async def launch(self, plan: LaunchPlan, steps: LaunchSteps) -> GenerationRecord:
        """Prepare, record and start one generation; roll back everything on failure.

        Returns:
            The started generation, as recorded after its start.

        Raises:
            OrchestrationError: The launch failed. Anything already recorded was rolled back
                (`rollback_occurred`), and the prepare stages were undone.
        """
        draft = LaunchDraft(cwd=plan.cwd)
        entered: list[LaunchStage] = []
        try:
            await self._prepare(plan, draft, entered)
            return await self._start(plan, steps, steps.record(draft))
        except BaseException:
            await _undo(entered)
            raise

    async def launch_many(
        self, launches: Sequence[tuple[LaunchPlan, LaunchSteps]]
    ) -> list[GenerationRecord | OrchestrationError]:
        """Launch several generations whose record steps share one store transaction (a swarm).

        Each launch is prepared, then every prepared one is recorded in one transaction
        (`LaunchSteps.record_in`), then each is started in order, exactly as `launch` does. A
        launch that fails is rolled back and undone alone; its error takes its place in the answer.
        When one record step raises, the shared transaction rolls back and every launch records in
        its own transaction instead (`LaunchSteps.record`), so one bad launch fails alone.

        Returns:
            Per launch, in order: the started generation, or the `OrchestrationError` it failed with.

        Raises:
            BaseException: Anything but an `OrchestrationError` (a cancellation): every launch not
                started yet is rolled back and undone first; the ones started keep running.
        """
        entered: list[list[LaunchStage]] = [[] for _ in launches]
        drafts: list[LaunchDraft | None] = [None] * len(launches)
        recorded: list[Recorded | None] = [None] * len(launches)
        outcomes: list[GenerationRecord | OrchestrationError | None] = [None] * len(launches)
        try:
            for index, (plan, _steps) in enumerate(launches):
                draft = LaunchDraft(cwd=plan.cwd)
                try:
                    await self._prepare(plan, draft, entered[index])
                except OrchestrationError as exc:
                    await _undo(entered[index])
                    outcomes[index] = exc
                else:
                    drafts[index] = draft
            self._record_many(launches, drafts, recorded, outcomes)
            for index, (plan, steps) in enumerate(launches):
                done, recorded[index] = recorded[index], None
                if done is None:  # not prepared or not recorded
                    await _undo(entered[index])
                    continue
                try:
                    outcomes[index] = await self._start(plan, steps, done)
                except OrchestrationError as exc:
                    await _undo(entered[index])
                    outcomes[index] = exc
        except BaseException:
            for index, (_plan, steps) in enumerate(launches):
                done = recorded[index]
                if done is not None:
                    with contextlib.suppress(Exception):
                        await self.rollback(done, steps)
                outcome = outcomes[index]
                if outcome is None or isinstance(outcome, OrchestrationError):  # not started
                    await _undo(entered[index])
            raise
        answer: list[GenerationRecord | OrchestrationError] = []
        for outcome in outcomes:
            assert outcome is not None
            answer.append(outcome)
        return answer

    def _record_many(
        self,
        launches: Sequence[tuple[LaunchPlan, LaunchSteps]],
        drafts: Sequence[LaunchDraft | None],
        recorded: list[Recorded | None],
        outcomes: list[GenerationRecord | OrchestrationError | None],
    ) -> None:
        """Record the prepared launches (`drafts`) in one transaction; one by one when that fails."""
        ready = [(index, draft) for index, draft in enumerate(drafts) if draft is not None]
        if not ready:
            return
        batch: list[tuple[int, Recorded]] = []
        try:
            with self.host.kernel.db.write() as tx:
                for index, draft in ready:
                    batch.append((index, launches[index][1].record_in(tx, draft)))
                    fault_point("swarm_admission")
        except BaseException as exc:
            for index, done in batch:
                launches[index][1].closed_unrecorded(done)
            if not isinstance(exc, OrchestrationError):
                raise
            batch = []
        if batch:
            for index, done in batch:
                recorded[index] = done
            fault_point("after_swarm_admission")
            return
        for index, draft in ready:  # one bad launch: each in its own transaction, failing alone
            try:
                recorded[index] = launches[index][1].record(draft)
            except OrchestrationError as exc:
                outcomes[index] = exc

    async def _prepare(self, plan: LaunchPlan, draft: LaunchDraft, entered: list[LaunchStage]) -> None:
        for stage in plan.stages:
            await stage.enter(draft)
            entered.append(stage)

    async def _start(self, plan: LaunchPlan, steps: LaunchSteps, recorded: Recorded) -> GenerationRecord:
        if recorded.generation.runtime_kind == "inprocess":
            return await self._start_inprocess(plan, steps, recorded)
        return await self._start_on_worker(plan, steps, recorded)

    async def _start_inprocess(
        self, plan: LaunchPlan, steps: LaunchSteps, recorded: Recorded
    ) -> GenerationRecord:
        host = self.host
        generation, session = recorded.generation, recorded.session
        try:
            child = await steps.build(recorded)
            session.flush()
            host.install_child_tools(child)
            if child.delegating:
                host.register_owner(child.agent)
            steps.attach(child)
            handle = await host.start_child(child, cwd=Path(generation.cwd), session_path=session.path)
            generation = host.kernel.record_started(
                generation.run_id,
                session_path=None if session.path is None else str(session.path),
                pid=host.pid,
                host_id=host.host_id,
                pane_id=handle.runtime_id,
            )
        except BaseException as exc:
            await self.rollback(recorded, steps)
            if isinstance(exc, OrchestrationError):
                exc.rollback_occurred = True
            raise
        if plan.startup_s is not None:
            ack = asyncio.ensure_future(child.acknowledged.wait())
            ended = asyncio.ensure_future(child.finished.wait())
            await asyncio.wait({ack, ended}, timeout=plan.startup_s, return_when=asyncio.FIRST_COMPLETED)
            for waiter in (ack, ended):
                waiter.cancel()
            if not child.acknowledged.is_set():
                await self.rollback(recorded, steps)
                raise PaneNotReadyError(
                    f"Agent {generation.label} did not acknowledge its task within {plan.startup_s:g} s.",
                    rollback_occurred=True,
                    ids={"label": generation.label},
                )
        _heap.settled(host.runs.child_count())  # the agent's session, tools and model live as long as it runs
        host.changed()
        return generation

    async def _start_on_worker(
        self, plan: LaunchPlan, steps: LaunchSteps, recorded: Recorded
    ) -> GenerationRecord:
        host = self.host
        generation, session = recorded.generation, recorded.session
        kind = generation.runtime_kind
        with host.placing_run(generation.run_id):  # no worker recorded yet: no recovery may settle it
            try:
                workers = host.workers.of(kind)
                await steps.before_worker(recorded)
                launch = steps.worker_launch(recorded)
                session.flush()
                session_path = session.path
                session.close()  # the worker owns the session file from here on
                if session_path is None:
                    raise InternalFailureError(
                        f"Agent {generation.label} has no session file to hand to its worker."
                    )
                handle = await workers.place(
                    generation, recorded.task, session_path=session_path, launch=launch
                )
            except BaseException as exc:
                await self.rollback(recorded, steps)
                _raise_start_failure(exc, generation.label, f"on the {kind} runtime")
            budget = DEFAULT_STARTUP_S if plan.startup_s is None else plan.startup_s
            try:
                current = await workers.ready(generation, handle, timeout=budget)
            except (PaneNotReady, RollbackFailed) as exc:
                host.workers.untrack(generation.run_id)
                with contextlib.suppress(OrchestrationError):
                    host.kernel.finalize_generation(
                        generation.run_id, owner_session_id=generation.owner_session_id
                    )
                cause = exc.primary if isinstance(exc, RollbackFailed) else exc
                diagnostic = cause.diagnostic if isinstance(cause, PaneNotReady) else ""
                primary = PaneNotReadyError(
                    f"Agent {generation.label} did not become ready in its {kind} pane: {cause}",
                    rollback_occurred=True,
                    ids={"label": generation.label, "paneId": handle.runtime_id},
                    details={"startupDiagnostic": diagnostic},
                )
                if isinstance(exc, RollbackFailed):
                    raise RollbackFailureError.from_failures(
                        primary, exc.cleanup, operation=plan.operation
                    ) from None
                raise primary from None
        host.changed()
        return generation if current is None else current

    async def rollback(self, recorded: Recorded, steps: LaunchSteps) -> None:
        """Undo a launch after its record step: the feature's part, then stop, finalize and release."""
        host = self.host
        run_id = recorded.generation.run_id
        steps.rolled_back(recorded)
        handle = host.runs.runtime_handle(run_id)
        if handle is not None:
            with contextlib.suppress(RuntimeError_):
                await host.runtime.stop(handle)
        with contextlib.suppress(OrchestrationError):
            host.kernel.finalize_generation(run_id, owner_session_id=recorded.generation.owner_session_id)
        host.release(run_id)
        host.workers.untrack(run_id)


async def _undo(entered: list[LaunchStage]) -> None:
    """Undo the prepare stages entered, in reverse order (best effort)."""
    for stage in reversed(entered):
        with contextlib.suppress(Exception):
            await stage.undo()
    entered.clear()


class ProcessWorkers:
    """The start step of a process worker runtime (tmux, or one registered with `Runtimes.register`):
    the agent runs as a `corral worker` process that reads a private launch file and records itself
    in the store.

    Args:
        host: The host whose runtimes run the worker.
        kind: The runtime kind (`tmux`, …).
    """

    def __init__(self, host: LaunchHost, kind: str) -> None:
        self.host = host
        self.kind = kind

    def unavailable(self) -> str | None:
        """tmux not installed (another process runtime: always available)."""
        runtime = self.host.runtime.worker(self.kind)
        if isinstance(runtime, TmuxRuntime) and shutil.which(runtime.tmux) is None:
            return f"tmux ({runtime.tmux}) is not installed"
        return None

    def _runtime(self) -> ProcessWorkerRuntime:
        runtime = self.host.runtime.worker(self.kind)
        if not isinstance(runtime, ProcessWorkerRuntime):
            raise RuntimeError_(f"the {self.kind} runtime does not run corral worker processes")
        return runtime

    async def place(
        self,
        generation: GenerationRecord,
        task: RequestRecord,
        *,
        session_path: Path,
        launch: WorkerLaunch,
    ) -> RuntimeHandle:
        """Write the launch file (`launch` with the host's settings and the worker's heartbeat file),
        start the worker, watch it and record its pane.

        Raises:
            RuntimeError_: The runtime could not start the worker.
            OrchestrationError: The pane could not be recorded (the started worker is stopped).
            OSError: The launch file could not be written.
        """
        host = self.host
        runtime = self._runtime()
        run_id = generation.run_id
        path = write_launch_file(
            runtime.launch_dir,
            run_id,
            dataclasses.replace(
                launch,
                settings=host.settings,
                permissions=host_layers(host, generation),
                heartbeat=str(runtime.heartbeat_path(run_id)),
            ),
        )
        started = await runtime.start(
            LaunchSpec(
                run_id,
                generation.label,
                Path(generation.cwd),
                generation.session_id,
                session_path=session_path,
                argv=worker_argv(run_id, host.kernel.db.path, path),
                env=worker_env(),
            )
        )
        try:
            fault_point("before_pane_recorded")
            host.workers.track(run_id, started, pid=None)
            host.kernel.record_started(
                run_id, session_path=str(session_path), host_id=host.host_id, pane_id=started.runtime_id
            )
        except BaseException:
            host.workers.untrack(run_id)
            with contextlib.suppress(RuntimeError_):
                await runtime.stop(started)
            raise
        return started

    async def ready(
        self, generation: GenerationRecord, handle: RuntimeHandle, *, timeout: float
    ) -> GenerationRecord | None:
        """Wait until the worker recorded its pid (and left `starting`), then adopt its process.

        Raises:
            PaneNotReady: Not ready in time; its pane was removed.
            RollbackFailed: Not ready, and its pane could not be removed.
        """
        kernel = self.host.kernel
        runtime = self._runtime()
        run_id = generation.run_id

        def is_ready() -> bool:
            current = kernel.get_generation(run_id)
            return current is not None and current.pid is not None and current.phase != "starting"

        await runtime.wait_ready(handle, is_ready, timeout=timeout)
        current = kernel.get_generation(run_id)
        runtime.adopt(handle, None if current is None else current.pid)
        return current

    def watch(self, run_id: str, handle: RuntimeHandle, generation: GenerationRecord | None) -> None:
        """Nothing more: the worker records its facts in the store, which the host polls."""

    def unwatch(self, run_id: str) -> None:
        """Nothing more."""

    async def settle_unplaced(self, generations: Sequence[GenerationRecord]) -> None:
        """The pane inventory decides: a pane whose worker runs a generation is adopted (recorded and
        watched like any worker); no such pane proves the worker never started, and the generation
        is marked `lost` so it can be closed. When the panes cannot be listed nothing is proven and
        nothing changes (a warning says so)."""
        host = self.host
        runtime = host.runtime.worker(self.kind)
        labels = ", ".join(g.label for g in generations)
        if not isinstance(runtime, TmuxRuntime):
            host.warn(f"Agents {labels}: their {self.kind} workers were never recorded; left as they are.")
            return
        panes = await runtime.panes()
        if panes is None:
            host.warn(
                f"Agents {labels}: their tmux panes were never recorded and the panes of the tmux server "
                f"at {runtime.socket} cannot be listed; left as they are."
            )
            return
        for generation in generations:
            run_id = generation.run_id
            if run_id in host.placing:
                continue  # a start of this host got there meanwhile
            pane = runtime.pane_running(panes, ("--run-id", run_id))
            with contextlib.suppress(OrchestrationError):
                if pane is None:
                    host.kernel.mark_presence(
                        run_id,
                        "lost",
                        diagnostic="its host stopped while starting it in tmux, and no pane runs its worker",
                    )
                    continue
                host.kernel.record_started(run_id, host_id=host.host_id, pane_id=pane.pane_id)
                handle = RuntimeHandle(runtime_id=pane.pane_id, kind="tmux", run_id=run_id)
                host.workers.track(run_id, handle, pid=pane.pid)

    async def aclose(self) -> None:
        """Nothing to close."""
