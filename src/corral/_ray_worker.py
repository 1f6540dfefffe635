"""The Ray worker: the actor that runs managed agents on a Ray node.

`RayWorker` is a plain class; the Ray runtime makes it a detached, named async
actor (`corral.runtime._ray`). One worker hosts up to `slots` agents, each an
asyncio task on the actor's event loop running the same `ManagedChild` and
`AgentSession` code as in-process and tmux agents, built by the same
`build_managed_agent` from the same plain-data spec and composed as the tmux
worker's are (`corral/_compose.py`, at this worker's `ray_place`).

The worker never opens the store: its children record through a `RemoteStore`
(`kernel/_remote.py`), whose facts the host pulls and confirms. It keeps each
agent's session file as a private local copy (under a `0700` directory of the
node's temp dir) whose bytes the host streams to the real file on the lead's
machine. A run stays in the worker until the host ends it (`end`: its
generation was finalized, or it was closed); a finished run's result is held
until the host confirmed it.

Each agent comes as a `host.protocol.WorkerLaunch` (in its `RayLaunch`). One
with a `resume_prompt` (a handoff) continues a live agent its host moved here:
it is rebuilt from its exact parts and prompts the handoff note once instead of
acknowledging its task. A launch the worker cannot run (written by a newer
corral, or for another harness) is refused with a `LaunchError`.

Every method takes and returns plain data (dataclasses, records); the actor
answers Ray calls from hosts on any machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import socket
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral import _tracing
from corral._compose import WorkDone, WorkerHooks, WorkerPlace, WorkspacePatch, compose
from corral.agent import AgentEvent, RateLimitWaitEvent
from corral.llm import EndpointKey, ModelRegistry, current_rate_limiter
from corral.orchestration import FileLimits, prepare_files
from corral.orchestration.budgets._remote import attach_ray_guard
from corral.orchestration.errors import OrchestrationError
from corral.orchestration.host._ray_launch import RayLaunch
from corral.orchestration.host.protocol import (
    CORRAL_HARNESS,
    LaunchPart,
    WorkerLaunch,
)
from corral.orchestration.kernel._child import ManagedChild
from corral.orchestration.kernel._remote import HostView, Pulled, RemoteStore
from corral.orchestration.kernel.records import RequestRecord
from corral.orchestration.ratelimits.records import SharedWindow, SharedWindows
from corral.orchestration.teams.launch import MemberLaunch
from corral.orchestration.workspaces._extension import PATCH_ENTRY, patch_entry_data
from corral.orchestration.workspaces._remote import (
    NodeWorkspace,
    SnapshotNeeded,
    WorkspacePlan,
    close_workspace,
    open_workspace,
)
from corral.orchestration.workspaces._snapshot import WorkspaceNotSharedError, check_shared, discard
from corral.orchestration.workspaces.records import WorkspaceLaunch
from corral.session import SessionManager
from corral.settings import Settings

if TYPE_CHECKING:
    from corral._compose import MemberPort
    from corral.mcp_servers import McpServers
    from corral.orchestration.teams.checks._checks import CheckExecution
    from corral.orchestration.teams.remote import RemoteTeams
    from corral.orchestration.teams.roster.records import TeamMemberRecord

__all__ = ["RAY_WORKER_PARTS", "RayWorker"]

RAY_WORKER_PARTS: tuple[type[LaunchPart], ...] = (MemberLaunch, WorkspaceLaunch)
"""The extension parts of a launch a Ray worker reads."""

_ACK_WAIT_S = 120.0
_CHECK_OUTPUT_MAX = 4 * 1024 * 1024


class _Questions:
    """`ask_owner` in a worker: the question's files come from the agent's cwd on this node."""

    def __init__(self, limits: FileLimits, cwd: Path) -> None:
        self.limits = limits
        self.cwd = cwd
        """Where the agent works on this node (its snapshot's copy, when it works on one)."""

    async def ask_owner(self, agent_ctx: ManagedChild, params: Any) -> Any:
        from corral.orchestration.agents._controller import AskOutcome

        prepared = prepare_files(
            None if params.files is None else list(params.files),
            cwd=self.cwd,
            limits=self.limits,
            resolve_result_ref=lambda _request_id: None,
        )
        ask = agent_ctx.record_ask(prepared.render("Question", params.question).text)
        return AskOutcome(ask.ask_id, ask.request_id)


@dataclass
class _Run:
    child: ManagedChild
    store: RemoteStore
    session: SessionManager
    task: asyncio.Task[None]
    workspace: NodeWorkspace | None = None
    port: RemoteTeams | None = None
    """A teams member's port to the lead's `Teams`."""
    cwd: Path | None = None
    """Where the agent works on this node."""
    shell_path: str | None = None
    """The settings' shell (its check commands run with it)."""


class RayWorker:
    """Hosts up to `slots` working managed agents in this actor process (see the module docstring)."""

    def __init__(self, slots: int) -> None:
        self.slots = max(1, slots)
        self.runs: dict[str, _Run] = {}
        self.folder = Path(tempfile.mkdtemp(prefix="corral-ray-"))
        os.chmod(self.folder, 0o700)
        self._checks: dict[str, asyncio.Event] = {}
        """The cancel events of check commands running here, by the host's token."""
        self._windows: dict[EndpointKey, float] = {}
        """The end of each endpoint's `Retry-After` window the host knows (pushed or reported)."""
        self._mcp: dict[str, McpServers] = {}
        """This worker process's MCP sessions, by the `[mcp_servers]` settings they were made from."""

    # --- placement -------------------------------------------------------------------------------

    def _place(self) -> dict[str, Any]:
        import ray

        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "node_ip": ray.util.get_node_ip_address(),  # type: ignore[no-untyped-call]
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
        }

    def working(self) -> int:
        """The runs that still occupy a slot: a finished run held until its host ends it (its
        result confirmed, its generation finalized) frees its slot at once, so a lead that delegates
        again right after its results arrived is not sent to a new worker process."""
        return sum(1 for run in self.runs.values() if not run.task.done())

    async def where(self) -> dict[str, Any]:
        """Where this worker runs: node id and address, host name, pid; its runs and its slots."""
        return {**self._place(), "runs": sorted(self.runs), "slots": self.slots}

    async def start(self, launch: RayLaunch) -> dict[str, Any] | None:
        """Start one agent and return once it acknowledged its task (`None`: no free slot;
        `{"refused": why}`: this node does not share the agent's workspace).

        Starting a run it already holds returns its place again (a retried launch).

        Raises:
            LaunchError: The launch is not one this worker runs (a newer corral's, another harness).
        """
        run_id = launch.generation.run_id
        if run_id in self.runs:
            return self._place()
        if self.working() >= self.slots:
            return None
        described = WorkerLaunch.from_json(launch.launch_json, parts=RAY_WORKER_PARTS)
        described.require_harness(CORRAL_HARNESS)
        settings = described.settings if described.settings is not None else Settings()
        workspace_part = described.part(WorkspaceLaunch)
        workspace = None if workspace_part is None else await self._open_workspace(workspace_part)
        if isinstance(workspace, str):
            return {"refused": workspace}
        cwd = Path(launch.generation.cwd) if workspace is None else workspace.cwd
        path = self.folder / f"{run_id}-{launch.session_name}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(launch.session_bytes)
        session = SessionManager.open(path)
        try:
            registry = ModelRegistry(settings, cwd=cwd)
            store = RemoteStore(launch.generation, launch.task, path)
            store.view(HostView(launch.generation.phase, None, launch.pushed))
            work_done = None
            if workspace is not None and not workspace.shared:
                assert workspace_part is not None
                work_done = self._patch_back(workspace, session, str(workspace_part.identity.top))
            place = ray_place(store, cwd, work_done)
            composed = await compose(place).child(
                described,
                generation=launch.generation,
                task=launch.task,
                session=session,
                registry=registry,
                settings=settings,
                cwd=cwd,
                mcp_servers=self._mcp_servers(settings, cwd),
            )
            child, port = composed.child, None
            if composed.member is not None:  # a teams member: its port answers for its run
                from corral.orchestration.teams.remote import RemoteTeams

                assert isinstance(composed.port, RemoteTeams)
                port, port.child = composed.port, composed.member
        except BaseException:
            session.close()
            if workspace is not None:
                await asyncio.to_thread(close_workspace, dataclasses.replace(workspace, writes=False))
            raise
        _tracing.setup_for(launch.trace)
        with _tracing.under_carrier(launch.trace):  # the agent's spans continue the host's trace
            task = asyncio.get_running_loop().create_task(child.run(), name=f"corral-agent-{child.label}")
        task.add_done_callback(lambda t: None if t.cancelled() else t.exception())
        self.runs[run_id] = _Run(child, store, session, task, workspace, port, cwd, settings.shell_path)
        acked = asyncio.ensure_future(child.acknowledged.wait())
        ended = asyncio.ensure_future(child.finished.wait())
        await asyncio.wait({acked, ended}, timeout=_ACK_WAIT_S, return_when=asyncio.FIRST_COMPLETED)
        for waiter in (acked, ended):
            waiter.cancel()
        return self._place()

    async def _open_workspace(self, part: WorkspaceLaunch) -> NodeWorkspace | str:
        """The agent's workspace on this node (workspaces' part of its launch), or why not.

        `[ray] workspace = "shared"`: the node must share the lead's workspace; `auto`: in place where
        it does, else the launch's snapshot; `snapshot`: always the snapshot.
        """
        plan = WorkspacePlan(
            identity=part.identity, mode=part.mode, writes=part.writes, snapshot=part.snapshot
        )
        try:
            opened = await asyncio.to_thread(open_workspace, plan, self.folder / "workspaces")
        except WorkspaceNotSharedError:
            check = await asyncio.to_thread(check_shared, plan.identity)
            return (
                f"the agent's workspace is not shared with node {socket.gethostname()}: {check.reason}; "
                'mount it at the same path with the same checkout on the Ray nodes, or set [ray] workspace = "auto"'
            )
        if isinstance(opened, SnapshotNeeded):
            return f"the agent's workspace is not shared with node {socket.gethostname()} ({opened.reason}) and no snapshot came with it"
        return opened

    def _patch_back(
        self, workspace: NodeWorkspace, session: SessionManager, lead_top: str
    ) -> Callable[[str, str], Awaitable[str | None]]:
        """`on_work_done` of an agent on a snapshot: a write agent's patch into its session (streamed
        to the lead ahead of the result; the lead's host lands it), then the snapshot is removed."""

        async def work_done(run_id: str, summary: str) -> str | None:
            patch = await asyncio.to_thread(close_workspace, workspace)
            if patch is not None:
                session.append_custom(PATCH_ENTRY, patch_entry_data(patch, lead_top))
            return None

        return work_done

    # --- the host's port ---------------------------------------------------------------------------

    async def pull(self, run_id: str, offset: int, view: HostView) -> Pulled | None:
        """Session bytes from `offset` and the unconfirmed facts of `run_id` (`None`: not here)."""
        run = self.runs.get(run_id)
        if run is None:
            return None
        run.store.view(view)
        self._share_windows(run, view)
        if run.port is not None:  # a teams member: the host's answers and its messages
            run.port.take(view.pushed)
        run.child.wake()
        pulled = run.store.pull(offset)
        return Pulled(pulled.session, pulled.session_end, pulled.facts, run.task.done())

    def _share_windows(self, run: _Run, view: HostView) -> None:
        """Take the host's endpoint windows into this process's limiter, and report the windows this
        process learnt (a 429 with `Retry-After`) as a fact of the pulled run."""
        limiter = current_rate_limiter()
        for state in view.pushed:
            if isinstance(state, SharedWindows):
                for window in state.windows:
                    key = EndpointKey(window.endpoint, window.key_id)
                    limiter.open_window_until(key, window.until)
                    self._windows[key] = max(self._windows.get(key, 0.0), window.until)
        for key, until in limiter.windows():
            if until > self._windows.get(key, 0.0) + 0.001:
                run.store.emit_extension(SharedWindow(key.endpoint, key.key_id, until))
                self._windows[key] = until

    async def pull_many(self, wanted: list[tuple[str, int, HostView]]) -> dict[str, Pulled | None]:
        """`pull` for several runs in one call (the host batches per worker)."""
        return {run_id: await self.pull(run_id, offset, view) for run_id, offset, view in wanted}

    async def confirm_many(self, confirmed: list[tuple[str, int]]) -> None:
        """`confirm` for several runs in one call."""
        for run_id, seq in confirmed:
            await self.confirm(run_id, seq)

    async def confirm(self, run_id: str, seq: int) -> bool:
        """The host holds the facts of `run_id` up to `seq` durably (a held result is released)."""
        run = self.runs.get(run_id)
        if run is None:
            return False
        run.store.confirm(seq)
        return True

    async def accept(self, run_id: str, request: RequestRecord, view: HostView) -> RequestRecord | None:
        """Apply a `steer`, `interrupt` or `reply` once and return its acknowledgement (`None`: not here).

        A resent request (the host crashed before recording the ack) gets the same
        acknowledgement again without being applied twice.
        """
        run = self.runs.get(run_id)
        if run is None:
            return None
        run.store.view(view)
        known = run.store.known(request)
        if known is not None:
            return known
        try:
            return run.child.accept(request)
        except OrchestrationError as exc:
            return run.store.record_ack(
                run_id, request.request_id, accepted=False, code="invalid", message=str(exc)
            )

    async def inspect(self, run_id: str) -> dict[str, Any] | None:
        """Recent activity lines and running processes of `run_id` (`None`: not here)."""
        run = self.runs.get(run_id)
        if run is None:
            return None
        return {
            "lines": run.child.activity_lines(),
            "processes": [(p.pid, p.argv0, p.cmdline) for p in run.child.running_processes()],
        }

    async def run_check(
        self, run_id: str, token: str, command: str, timeout_seconds: float
    ) -> tuple[CheckExecution, bytes] | None:
        """Run a teams member's check command here, in its workspace on this node (`None`: not here).

        The same local shell handling as on the lead's machine (a new process group, killed on
        timeout or cancel); returns how it ended and its output (the last `_CHECK_OUTPUT_MAX` bytes).
        """
        from corral.orchestration.teams.checks._checks import LocalShellExecutor

        run = self.runs.get(run_id)
        if run is None or run.cwd is None:
            return None
        cancel = self._checks[token] = asyncio.Event()
        fd, name = tempfile.mkstemp(prefix="check-", dir=self.folder)
        try:
            execution = await LocalShellExecutor(run.shell_path).execute(
                command, cwd=str(run.cwd), log_fd=fd, timeout_seconds=timeout_seconds, cancel=cancel
            )
            size = os.fstat(fd).st_size
            with open(name, "rb") as handle:
                handle.seek(max(0, size - _CHECK_OUTPUT_MAX))
                output = handle.read()
        finally:
            self._checks.pop(token, None)
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(name)
        return execution, output

    async def cancel_check(self, run_id: str, token: str) -> bool:
        """Kill the check command the host started with `token` (`False`: not running)."""
        cancel = self._checks.get(token)
        if cancel is None:
            return False
        cancel.set()
        return True

    async def end(self, run_id: str) -> bool:
        """Stop `run_id` (if still running) and drop it with its local session copy."""
        run = self.runs.pop(run_id, None)
        if run is None:
            return False
        if not run.task.done():
            run.task.cancel()
            with contextlib.suppress(BaseException):
                await run.task
        if run.workspace is not None and run.workspace.unpacked is not None:
            await asyncio.to_thread(discard, run.workspace.unpacked)
        path = run.session.path
        run.session.close()
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()
        return True

    async def runs_held(self) -> list[str]:
        """The run ids this worker holds."""
        return sorted(self.runs)

    def _mcp_servers(self, settings: Settings, cwd: Path) -> McpServers | None:
        """The MCP sessions of this worker process for `settings` in `cwd` (made on first use), or
        `None`. Keyed by the directory too: a server without its own `cwd` runs in the agent's, and
        two agents on a node may work in different ones (their workspace snapshots)."""
        if not settings.mcp_servers:
            return None
        import json

        key = json.dumps(
            {
                "cwd": str(cwd),
                "servers": {
                    name: server.model_dump(mode="json") for name, server in settings.mcp_servers.items()
                },
            },
            sort_keys=True,
        )
        servers = self._mcp.get(key)
        if servers is None:
            from corral.mcp_servers import McpServers

            servers = self._mcp[key] = McpServers.from_settings(settings, cwd=cwd)
        return servers

    async def shutdown(self) -> None:
        """End every run and remove the local folder (before the actor is killed)."""
        for run_id in list(self.runs):
            await self.end(run_id)
        for servers in self._mcp.values():
            await servers.aclose()
        shutil.rmtree(self.folder, ignore_errors=True)


def ray_place(store: RemoteStore, cwd: Path, work_done: WorkDone | None) -> WorkerPlace:
    """Where a Ray worker's agent runs: on a node, recording through its run's `RemoteStore`.

    A rate-limit wait becomes a fact (the host's extensions store it); a question's files come from the
    agent's cwd on this node (`cwd`); a teams member's tools reach the lead's `Teams` as facts over a
    `RemoteTeams` port; an agent on a snapshot sends its patch back (`work_done`); the budget is the
    one the host pushed.
    """

    def rate_limit_waits(run_id: str, event: AgentEvent) -> None:
        if isinstance(event, RateLimitWaitEvent):
            store.emit_event(event)

    def member_port(part: MemberLaunch, hooks: WorkerHooks) -> tuple[MemberPort, TeamMemberRecord]:
        from corral.orchestration.teams.remote import RemoteTeams

        return RemoteTeams(store), part.member

    return WorkerPlace(
        kind="ray",
        store=store,
        rate_limit_waits=rate_limit_waits,
        member_port=member_port,
        questions=_Questions(FileLimits(), cwd),
        brings_back=WorkspacePatch(work_done),
        budget_guard=lambda child: attach_ray_guard(store, child),
    )
