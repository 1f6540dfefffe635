"""The host: one per process; it owns the store, the runtime, the live sessions and delivery.

The host knows which agent sessions are *owners* (the lead and live delegating agents:
sessions that can receive deliveries) and which children run here: both sit in its one registry
of live runs, `Host.runs` (`LiveRuns`, `_live.py`). It knows no feature and no tool surface:
features ride on its generations through `HostExtension`s and tools come from its `ToolProvider`
(`host.ports`); the composition root (`corral.lead`) builds it with both. It implements the child
hooks: a stored result is delivered into its owner's session exactly once (`Deliveries`) and the
generation is finalized after the delivery is proven; a question is delivered the same way.

`attach_lead` registers the lead and runs **restart recovery** for it (`Recovery`, `_recovery.py`):
in-process generations of its tree whose host process is gone are marked
`lost`; undelivered results are delivered once; delivered but unfinalized
generations are finalized. Nothing is guessed: a generation whose host may
still be running stays as it is (its presence is `unknown` here).

The host's parts: `runs` (`LiveRuns`, `_live.py`: what runs, owns and leads here), `deliveries`
(`Deliveries`, below), `workers` (`WorkerWatch`, `_watch.py`: worker runtimes and their watch),
`recovery` (`Recovery`, `_recovery.py`) and `launcher` (`Launcher`, `_launch.py`).

`wait_until_quiet(owner)` returns once the owner is idle and nothing more can
arrive for it: no generation of its tree is starting, working or settling
(delivery or cleanup in flight). `blocked_or_lost(owner)` names what was left
waiting on a question or lost.

The host id is a UUID per process plus the pid; both are recorded on every
generation (`host_id`, `pid`) so a later host can prove the first one died.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import uuid
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from corral.agent import AgentEvent, AgentSession, AgentSettledEvent, TurnEndEvent
from corral.orchestration.definitions._roster import ModelNames, Roster, load_roster, model_names
from corral.orchestration.errors import OrchestrationError
from corral.orchestration.host import _heap
from corral.orchestration.host._launch import Launcher
from corral.orchestration.host._live import LiveRuns
from corral.orchestration.host._recovery import Recovery
from corral.orchestration.host._watch import WorkerWatch
from corral.orchestration.host.ports import Extensions, HostExtension, ToolProvider
from corral.orchestration.kernel._caller import Caller
from corral.orchestration.kernel._child import RETIRED_ENTRY, ManagedChild
from corral.orchestration.kernel._delivery import deliver_ask, deliver_result
from corral.orchestration.kernel._faults import fault_point
from corral.orchestration.kernel._files import FileLimits
from corral.orchestration.kernel._generations import Generations
from corral.orchestration.kernel._lifecycle import Observation, RuntimeLifecycle
from corral.orchestration.kernel.records import AskRecord, GenerationRecord
from corral.orchestration.store._database import ForeignWrites, StoreError
from corral.runtime import (
    InProcessRuntime,
    LaunchSpec,
    RuntimeHandle,
    Runtimes,
    pid_alive,
)
from corral.session import SessionError, SessionManager, SessionWriteError

if TYPE_CHECKING:
    from corral.llm import ModelRegistry
    from corral.mcp_servers import McpServers
    from corral.settings import Settings

__all__ = ["RETIRED_ENTRY", "Deliveries", "Host", "Runtimes"]

_T = TypeVar("_T")

_ONE_ROSTER: contextvars.ContextVar[dict[Path, Roster] | None] = contextvars.ContextVar(
    "corral_one_roster", default=None
)
"""The rosters read so far by the launch this task runs (`Host.one_roster`), by cwd."""

_FINALIZE_ATTEMPTS = 50


class Host:
    """One process's orchestration host.

    Args:
        kernel: The kernel's repository over the orchestration database (the host closes the
            database in `aclose`); open it with `corral.orchestration.Repositories`.
        registry: Model registry for children's models.
        settings: Settings for children's sessions (`None`: defaults).
        sessions_root: Where managed sessions are written (default: corral's sessions root).
        roster_loader: Loads the roster for a cwd (default `load_roster(cwd)`).
        runtime: The in-process runtime (default a new one).
        context_retirement: Honour `contextRetirement` (retired sessions are not continued/forked).
        file_limits: Limits for `files`.
        tmux_socket: The tmux runtime's server socket (default under the data root).
        extensions: The features that ride on its generations (hooks called in order).
        tools: Where controllers' and children's tools come from (`None`: no tools are given).
    """

    def __init__(
        self,
        *,
        kernel: Generations,
        registry: ModelRegistry,
        settings: Settings | None = None,
        sessions_root: Path | None = None,
        roster_loader: Callable[[Path], Roster] | None = None,
        runtime: InProcessRuntime | None = None,
        context_retirement: bool = True,
        file_limits: FileLimits | None = None,
        tmux_socket: Path | None = None,
        extensions: Sequence[HostExtension] = (),
        tools: ToolProvider | None = None,
        mcp_servers: McpServers | None = None,
    ) -> None:
        self.kernel = kernel
        """Generations, requests, asks and results: the kernel's repository (its `db` is the database)."""
        self.extensions: Extensions = Extensions(extensions, warn=self.warn)
        """The features riding on this host's generations, fanned out in order (`extensions.add` adds one later)."""
        self.tools = tools
        self.registry = registry
        if settings is None:
            from corral.settings import Settings as _Settings

            settings = _Settings()
        self.settings: Settings = settings
        self.sessions_root = sessions_root
        self._mcp_servers = mcp_servers
        self._read_roster = roster_loader or (lambda cwd: load_roster(cwd, models=self.model_names()))
        self.host_id = f"{uuid.uuid4()}"
        self.pid = os.getpid()
        self.runtime = Runtimes(runtime or InProcessRuntime(host_tag=self.host_id[:8]), tmux_socket)
        self.context_retirement = context_retirement
        self.file_limits = file_limits or FileLimits()
        self.runs: LiveRuns[ManagedChild, Caller] = LiveRuns()
        """What runs, owns and leads in this host now: its live runs, owners and leads (`host._live`)."""
        self.deliveries: Deliveries = Deliveries(self)
        """Delivery of stored results and questions into their owners' sessions, then teardown."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._change = asyncio.Event()
        self._closed = False
        self.placing: set[str] = set()
        """Worker generations this host is starting or moving right now (no worker recorded yet)."""
        self.on_background_error: Callable[[BaseException], None] | None = None
        self.warnings: list[str] = []
        """Warnings for the person at the front end (e.g. an unconfirmed wake after a restart)."""
        self.unstored_results: set[str] = set()
        """Runs whose result could not be stored (a failed write, e.g. a full disk): never settled."""
        self.on_warning: Callable[[str], None] | None = None
        self.launcher: Launcher = Launcher(self)
        """The one launch pipeline (`host._launch`): delegate, continue, teams spawn and handoff start here."""
        self.workers: WorkerWatch = WorkerWatch(self, lambda: ForeignWrites(self.kernel.db))
        """The worker runtimes' start steps and the watch over their runs (`host._watch`)."""
        self.recovery: Recovery = Recovery(self)
        """Restart recovery of an owner's generations (`host._recovery`)."""

    @property
    def closed(self) -> bool:
        """Whether `aclose` ran."""
        return self._closed

    # --- owners ------------------------------------------------------------------------------

    def model_names(self) -> ModelNames:
        """What Claude Code and Pi definition files' `model` may name: `[model_aliases]` and the
        models that have credentials here."""
        return model_names(self.settings.model_aliases, self.registry)

    def register_owner(self, agent: AgentSession) -> None:
        """Make `agent` a live owner (deliveries for its session id can be made)."""

        def on_event(event: object) -> None:
            if isinstance(event, AgentSettledEvent):
                self.changed()

        self.runs.add_owner(agent, lambda owner: owner.subscribe(on_event))

    def unregister_owner(self, session_id: str) -> None:
        """Forget a live owner."""
        self.runs.remove_owner(session_id)

    async def attach_lead(
        self, agent: AgentSession, *, surfaces: Iterable[str] = ("agent",), no_model: str | None = None
    ) -> Caller:
        """Register the lead, give it its tool surfaces, and recover its generations.

        Args:
            agent: The lead's agent session.
            surfaces: Its tool surfaces.
            no_model: The lead has no model its agents can inherit: what a delegation needing one
                is refused with (`Caller.no_model`).

        Returns:
            The lead's `Caller`.
        """
        caller = Caller.lead(agent, no_model=no_model)
        self.register_owner(agent)
        self.runs.add_lead(caller)
        self.install_surfaces(agent, caller, surfaces)
        self.recovery.recover(caller.session_id)
        await self.recovery.unplaced(caller.session_id)
        for extension in self.extensions:
            for note in await extension.lead_attached(caller.session_id):
                self.warn(note)
        _heap.settled(self.runs.child_count())  # start-up is done: no collection walks its objects again
        return caller

    async def work_done(self, run_id: str, summary: str) -> str | None:
        """`ManagedChild.on_work_done`: every extension's last step before the result is stored.

        Returns the lines they add to the result (e.g. an isolated writer's branch), or `None`.
        """
        notes = [note for e in self.extensions if (note := await e.work_done(run_id, summary))]
        return "\n".join([*notes, *self.extensions.result_notes(run_id)]) or None

    def install_surfaces(self, agent: AgentSession, caller: Caller, surfaces: Iterable[str]) -> None:
        """Register the tools of `surfaces` (`agent` and/or `teams`) on `agent` for `caller`."""
        wanted = tuple(surfaces)
        if not wanted or self.tools is None:
            return
        for tool in self.tools.lead_tools(caller, wanted):
            agent.register_tool(tool)

    def install_child_tools(self, child: ManagedChild) -> None:
        """Register a managed child's own tools (`ask_owner`; a feature's tools) on its agent."""
        if self.tools is None:
            return
        for tool in self.tools.child_tools(child):
            child.agent.register_tool(tool)

    def roster_loader(self, cwd: Path) -> Roster:
        """The agent definitions for `cwd`, read from their files (so a changed definition shows at
        the next call) — once per launch inside `one_roster`."""
        seen = _ONE_ROSTER.get()
        if seen is None:
            return self._read_roster(cwd)
        roster = seen.get(cwd)
        if roster is None:
            roster = seen[cwd] = self._read_roster(cwd)
        return roster

    @contextlib.contextmanager
    def one_roster(self) -> Iterator[None]:
        """Within it (one delegate or continue, one teams spawn or swarm — its queued members'
        later launches included —, its launch and the features' hooks on it), every
        roster read of the same cwd returns the roster read first: the definitions are read once
        per launch, not by each step that looks at them."""
        if _ONE_ROSTER.get() is not None:
            yield
            return
        token = _ONE_ROSTER.set({})
        try:
            yield
        finally:
            _ONE_ROSTER.reset(token)

    # --- live runs ------------------------------------------------------------------------------

    async def start_child(
        self, child: ManagedChild, *, cwd: Path, session_path: Path | None
    ) -> RuntimeHandle:
        """Run `child` on the in-process runtime as one of this host's live runs; returns its handle.

        The child is registered before it starts (its first hooks find it), its handle once started.
        """
        generation = child.generation
        for extension in self.extensions:
            extension.run_starting(generation, child)
        self.runs.add_child(child)
        handle = await self.runtime.start(
            LaunchSpec(
                generation.run_id,
                generation.label,
                cwd,
                generation.session_id,
                session_path=session_path,
                program=child,
            )
        )
        self.runs.started(generation.run_id, handle)
        return handle

    def detach_child(self, run_id: str) -> None:
        """Forget the in-process run of `run_id`, which goes on elsewhere (a handoff); its generation stays."""
        dropped = self.runs.drop(run_id)
        if dropped is not None and dropped.runtime_handle is not None:
            self.runtime.forget(dropped.runtime_handle)

    @contextlib.contextmanager
    def placing_run(self, run_id: str) -> Iterator[None]:
        """While a worker start or move of `run_id` has no worker recorded yet (recovery leaves it alone)."""
        self.placing.add(run_id)
        try:
            generation = self.kernel.get_generation(run_id)
            if generation is not None:
                for extension in self.extensions:
                    extension.run_starting(generation, None)
            yield
        finally:
            self.placing.discard(run_id)

    # --- change notification ---------------------------------------------------------------

    def changed(self) -> None:
        """Wake everything that waits for a state change: `wait_for` and quiet checks, and the children
        that wait for one (`ManagedChild.waiting`: an open question, running sub-agents, a feature's
        hold). A child that is working is not woken: it re-checks at its next settle anyway, so a
        change costs the waiters it concerns, not every live child."""
        self._change.set()
        self._change = asyncio.Event()
        for child in self.runs.waiting():
            child.wake()

    async def wait_for_change(self) -> None:
        """Return at the next state change (a delivery, a settle, a child's progress); for front ends."""
        await self._change.wait()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> None:
        """Return once `predicate()` holds, checking it now and again at each state change (`changed`).

        For host state only (generations, results, deliveries, live runs): the predicate is
        re-checked when the host signals a change, never on a timer.

        Raises:
            TimeoutError: `predicate()` still did not hold after `timeout` seconds.
        """
        async with asyncio.timeout(timeout):
            while not predicate():
                await self._change.wait()

    # --- child hooks -------------------------------------------------------------------------------

    def result_stored(self, run_id: str, request_id: str) -> None:
        """Child hook: deliver the durable result of `request_id`."""
        self.spawn_background(self.deliveries.result(request_id))
        self.changed()

    def ask_created(self, run_id: str, ask: AskRecord) -> None:
        """Child hook: deliver the question to the owner."""
        self.spawn_background(self.deliveries.ask(run_id, ask.ask_id))
        self.changed()

    def agent_event(self, run_id: str, event: AgentEvent) -> None:
        """Child hook: hand the agent's event to every extension."""
        for extension in self.extensions:
            extension.agent_event(run_id, event)
        if isinstance(event, TurnEndEvent):
            _heap.settled(self.runs.child_count())  # what the turn added lives as long as the agent

    def result_failed(self, run_id: str, message: str) -> None:
        """Child hook: the run's result could not be stored; warn (the run is then left unsettled)."""
        self.unstored_results.add(run_id)
        child = self.runs.child(run_id)
        who = f"agent {child.label}" if child is not None else f"agent run {run_id}"
        self.warn(f"{who} ended without a stored result: {message}")

    def warn(self, text: str) -> None:
        """Record a warning for the front end (and tell `on_warning`, when set)."""
        self.warnings.append(text)
        if self.on_warning is not None:
            self.on_warning(text)

    def spawn_background(self, coro: Coroutine[Any, Any, _T]) -> asyncio.Task[_T]:
        """Run `coro` as a tracked background task (errors go to `on_background_error`; quiet waits for it)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)

        def done(t: asyncio.Task[_T]) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None and self.on_background_error is not None:
                self.on_background_error(t.exception())  # type: ignore[arg-type]
            self.changed()

        task.add_done_callback(done)
        return task

    def release(self, run_id: str) -> None:
        """Drop the in-memory parts of a finished generation (closing its session file)."""
        dropped = self.runs.drop(run_id)
        child = None if dropped is None else dropped.child
        if dropped is not None and dropped.runtime_handle is not None:
            self.runtime.forget(dropped.runtime_handle)
        for extension in self.extensions:
            extension.released(run_id)
        if child is not None:
            self.unregister_owner(child.agent.session.session_id)
            if not child.agent.session.is_persisted:
                with contextlib.suppress(Exception):
                    child.agent.session.flush()
            child.agent.session.close()
            _heap.released(self.runs.child_count())

    # --- recovery ------------------------------------------------------------------------------------

    def tree(self, owner_session_id: str) -> list[GenerationRecord]:
        """Live generations owned by `owner_session_id`, transitively (by session id)."""
        live = self.kernel.generations()
        owned: dict[str, list[GenerationRecord]] = {}
        for generation in live:
            owned.setdefault(generation.owner_session_id, []).append(generation)
        reached: set[str] = set()
        owners = [owner_session_id]
        seen = {owner_session_id}
        while owners:
            for generation in owned.get(owners.pop(), ()):
                reached.add(generation.run_id)
                if generation.session_id not in seen:
                    seen.add(generation.session_id)
                    owners.append(generation.session_id)
        return [generation for generation in live if generation.run_id in reached]

    def host_gone(self, generation: GenerationRecord) -> bool:
        """Whether the in-process host that ran `generation` is proven gone."""
        if generation.runtime_kind != "inprocess" or self.runs.child(generation.run_id) is not None:
            return False
        if generation.host_id == self.host_id:
            return True  # ours, but no longer running here
        if generation.host_id is None or generation.pid is None:
            return generation.phase == "starting" and generation.pid is None and generation.host_id is None
        return generation.pid == self.pid or not pid_alive(generation.pid)

    # --- observation ----------------------------------------------------------------------------------

    def observe(self, generation: GenerationRecord) -> Observation:
        """Runtime evidence for the lifecycle projection."""
        path = generation.session_path
        ready = False
        if path:
            with contextlib.suppress(OSError):
                stat = Path(path).stat()
                ready = stat.st_size > 0 and Path(path).is_file()
        run = self.runs.get(generation.run_id)
        child = None if run is None else run.child
        handle = None if run is None else run.runtime_handle
        if run is not None and run.on_worker and handle is not None:
            return self._observe_worker(generation, handle, ready)
        if child is not None and handle is not None:
            presence = self.runtime.presence(handle)
            if presence == "lost" and generation.phase in ("completed", "finalized"):
                presence = "live"  # finished normally; cleanup is converging
            lifecycle: RuntimeLifecycle = "working" if child.busy else "idle"
            if generation.phase == "starting":
                lifecycle = "working"
            return Observation(presence=presence, lifecycle=lifecycle, transcript_ready=ready)
        if generation.presence == "lost" or self.host_gone(generation):
            return Observation(presence="lost", lifecycle="unknown", transcript_ready=ready)
        return Observation(presence="unknown", lifecycle="unknown", transcript_ready=ready)

    def _observe_worker(
        self, generation: GenerationRecord, handle: RuntimeHandle, ready: bool
    ) -> Observation:
        presence = self.runtime.presence(handle)
        if presence == "lost" and generation.phase in ("completed", "finalized"):
            presence = "live"  # finished normally; cleanup is converging
        lifecycle: RuntimeLifecycle = "working"
        if generation.phase == "completed":
            lifecycle = "done"
        elif generation.phase == "active" and self.kernel.pending_ask(generation.run_id) is not None:
            lifecycle = "idle"
        return Observation(presence=presence, lifecycle=lifecycle, transcript_ready=ready)

    # --- quiet --------------------------------------------------------------------------------------------

    def _quiet(self, owner_session_id: str) -> bool:
        owner = self.runs.owner(owner_session_id)
        if owner is not None and not owner.is_idle:
            return False
        if self._tasks:
            return False
        if any(extension.busy(owner_session_id) for extension in self.extensions):
            return False
        for generation in self.tree(owner_session_id):
            child = self.runs.child(generation.run_id)
            if self.runs.on_worker(generation.run_id) and generation.presence != "lost":
                if generation.phase in ("starting", "completed"):
                    return False
                if generation.phase == "active":
                    ask = self.kernel.pending_ask(generation.run_id)
                    if ask is None:
                        return False  # working
                    if ask.delivered_entry_id is None and self.runs.is_owner(generation.owner_session_id):
                        return False  # its question is still to be delivered
                continue
            if (
                generation.phase == "completed"
                and generation.completed_request_id in self.deliveries.undeliverable
            ):
                continue  # its delivery failed on a write error: due again on resume
            if generation.presence == "lost" or child is None:
                if generation.phase == "completed" and self.runs.is_owner(generation.owner_session_id):
                    return False  # delivery to a live owner is still due
                continue
            if child.finished.is_set() and generation.phase in ("starting", "active"):
                continue  # ended without a result: lost
            if generation.phase == "starting":
                return False
            if generation.phase == "active" and (child.busy or not child.waiting):
                return False
            if generation.phase == "completed":
                return False
        return True

    def has_live_agents(self, owner_session_id: str) -> bool:
        """Whether the owner's tree has an agent still running here or on a worker (waiting ones included)."""
        for generation in self.tree(owner_session_id):
            child = self.runs.child(generation.run_id)
            if child is not None and not child.finished.is_set():
                return True
            if (
                self.runs.on_worker(generation.run_id)
                and generation.presence != "lost"
                and generation.phase in ("starting", "active", "completed")
            ):
                return True
        return False

    def can_detach(self, owner_session_id: str) -> bool:
        """Whether the lead can leave its session now: quiet, and no agent of its tree still runs."""
        return self._quiet(owner_session_id) and not self.has_live_agents(owner_session_id)

    def detach_lead(self, owner_session_id: str) -> None:
        """Forget a lead that moves to another session (see `can_detach`); its records stay in the store."""
        self.unregister_owner(owner_session_id)
        self.runs.remove_lead(owner_session_id)

    async def wait_until_quiet(self, owner_session_id: str) -> None:
        """Return once the owner is settled and nothing more can arrive for it."""
        while True:
            change = self._change
            if self._quiet(owner_session_id):
                return
            await change.wait()

    def blocked_or_lost(self, owner_session_id: str) -> list[GenerationRecord]:
        """Generations of the owner's tree left waiting on a question or lost."""
        out: list[GenerationRecord] = []
        for generation in self.tree(owner_session_id):
            if (
                generation.presence == "lost"
                or self.host_gone(generation)
                or self.kernel.pending_ask(generation.run_id) is not None
            ):
                out.append(generation)
        return out

    # --- shutdown -------------------------------------------------------------------------------------------

    @property
    def mcp_servers(self) -> McpServers | None:
        """This process's MCP servers (`[mcp_servers]`; made on first use), or `None` when none is
        configured."""
        if self._mcp_servers is None and self.settings.mcp_servers:
            from corral.mcp_servers import McpServers

            self._mcp_servers = McpServers.from_settings(self.settings)
        return self._mcp_servers

    async def aclose(self) -> None:
        """Stop every child and background task, release sessions, close the store."""
        if self._closed:
            return
        self._closed = True
        await self.workers.aclose()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        stopping = [child.run_id for child in self.runs.children()]
        await self.runtime.stop_all()
        # Agents this host ran that had not finished die with it: record that now, so none is
        # left `working`/`live` (best effort: on a full disk, resuming the owner records it).
        for run_id in stopping:
            with contextlib.suppress(OrchestrationError):
                generation = self.kernel.get_generation(run_id)
                if generation is not None and generation.phase in ("starting", "active"):
                    self.kernel.mark_presence(
                        run_id, "lost", diagnostic=f"its host process {self.pid} stopped before it finished"
                    )
        for child in self.runs.children():
            self.release(child.run_id)
        if self._mcp_servers is not None:
            await self._mcp_servers.aclose()
        self.kernel.db.close()


class Deliveries:
    """A stored result or question goes into its owner's session exactly once.

    A result is delivered by the first extension that claims it, else as the kernel's result
    message (`kernel/_delivery.py`); then its generation is finalized and released. A question is
    delivered the same way and stays pending until it is answered. Each runs as one host
    background task per request or ask (a second trigger while one is in flight does nothing), and
    only into a live owner (`LiveRuns.owner`): for an owner that is not attached, the result stays
    stored and pending, and restart recovery delivers it once the owner is attached again. A
    delivery that fails on a write error (a full disk) is kept in `undeliverable` and waits for the
    same recovery.
    """

    def __init__(self, host: Host) -> None:
        self.host = host
        self._delivering: set[str] = set()
        self._asking: set[str] = set()
        self.undeliverable: dict[str, str] = {}
        """Results whose delivery failed on a write error (a full disk), by request id: the reason.

        They stay stored (`pending`) and are delivered once when the owner is attached again."""

    def delivering(self, request_id: str) -> bool:
        """Whether the result of `request_id` is being delivered now."""
        return request_id in self._delivering

    def asking(self, ask_id: str) -> bool:
        """Whether the question `ask_id` is being delivered now."""
        return ask_id in self._asking

    async def result(self, request_id: str) -> None:
        """Deliver the stored result of `request_id` once, then finalize and release its generation."""
        host = self.host
        if request_id in self._delivering:
            return
        self._delivering.add(request_id)
        try:
            await self._result_once(request_id)
        except (SessionWriteError, StoreError) as exc:
            # A write failed (no space, I/O error): the result stays stored and pending, and is
            # delivered when the owner is attached again; nothing waits for it meanwhile.
            self.undeliverable[request_id] = str(exc)
            host.warn(
                f"a result could not be delivered now ({exc}); it stays stored until the session resumes"
            )
        finally:
            self._delivering.discard(request_id)

    async def _result_once(self, request_id: str) -> None:
        host = self.host
        result = host.kernel.get_result(request_id)
        if result is None:
            return
        generation = host.kernel.get_generation(result.run_id)
        if generation is None:
            return
        if result.delivery == "pending":
            owner = host.runs.owner(result.owner_session_id)
            if owner is None:
                return  # delivered when the owner is attached again
            child = host.runs.child(generation.run_id)
            ended = child is None or child.finished.is_set()  # then delivered and finalized in one commit
            for extension in host.extensions:
                if await extension.deliver(generation, result, owner, finalize=ended):
                    break
            else:
                await deliver_result(
                    host.kernel,
                    owner,
                    generation,
                    result,
                    retired=self.is_retired(generation),
                    extra=await host.extensions.result_details(generation.run_id),
                    finalize=ended,
                )
        fault_point("before_cleanup")
        await self._finalize(generation)

    async def _finalize(self, generation: GenerationRecord) -> None:
        """Tear down a generation whose result was delivered (retried while children finish)."""
        host = self.host
        child = host.runs.child(generation.run_id)
        if child is not None:
            await child.finished.wait()
        for _attempt in range(_FINALIZE_ATTEMPTS):
            current = host.kernel.get_generation(generation.run_id)
            if current is None or current.phase == "finalized":
                break
            try:
                host.kernel.finalize_generation(
                    generation.run_id, owner_session_id=generation.owner_session_id
                )
                break
            except OrchestrationError:
                await host.wait_for_change()
        host.release(generation.run_id)

    async def ask(self, run_id: str, ask_id: str) -> None:
        """Deliver the pending question `ask_id` of `run_id` to its owner once (when it is live)."""
        host = self.host
        if ask_id in self._asking:
            return
        self._asking.add(ask_id)
        try:
            ask = host.kernel.get_ask(ask_id)
            generation = host.kernel.get_generation(run_id)
            if ask is None or generation is None or ask.state != "pending" or ask.delivered_entry_id:
                return
            owner = host.runs.owner(generation.owner_session_id)
            if owner is not None:
                await deliver_ask(host.kernel, owner, generation, ask)
        finally:
            self._asking.discard(ask_id)

    def is_retired(self, generation: GenerationRecord) -> bool:
        """Whether the generation's session was retired after context pressure (and retirement is on)."""
        host = self.host
        if not host.context_retirement:
            return False
        child = host.runs.child(generation.run_id)
        if child is not None:
            entries = child.agent.session.entries
        elif generation.session_path and Path(generation.session_path).is_file():
            try:
                with SessionManager.open(Path(generation.session_path), read_only=True) as saved:
                    entries = saved.entries
            except SessionError:
                return False
        else:
            return False
        return any(getattr(entry, "custom_type", None) == RETIRED_ENTRY for entry in entries)
