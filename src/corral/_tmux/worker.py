"""`corral worker`: the process in a tmux pane that runs one generation's agent.

It opens the shared store, loads its generation and task, builds the agent
exactly as the in-process path does (`build_managed_agent` from the launch
file the host wrote: a `host.protocol.WorkerLaunch`), and records its readiness (its pid and `$TMUX_PANE`)
before running the assignment through the same `ManagedChild`. In resume
mode (a launch with a `resume_prompt`, written by a handoff) it continues a
generation moved out of its host: the agent is rebuilt from the host's exact
system prompt, model and tools, a teams agent gets its member tools over a
worker-local `Teams`, and the run prompts the handoff note once instead of
acknowledging the task. Requests
(`steer`, `interrupt`, `reply`) arrive through the store: it polls every
`POLL_S` seconds and acknowledges each one through `ManagedChild.accept`. A
heartbeat file is touched about once a second. The terminal shows a live
view: streamed assistant text, tool calls and results in brief, and a state
line. The worker exits once its generation is finalized (delivered and torn
down by a host, or closed), or when its agent ended without a result (lost).

Run as `python -m corral._tmux.worker --run-id … --store … --launch …`
(what the pane runs: no CLI imports) or `corral worker …`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from corral import _tracing
from corral.agent import (
    AgentEvent,
    AgentSettledEvent,
    MessageEndEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
)
from corral.llm import AssistantMessage, ModelRegistry
from corral.orchestration._repositories import Repositories
from corral.orchestration.agents._controller import OwnerQuestions
from corral.orchestration.agents._delegation import build_launched_agent
from corral.orchestration.budgets import attach_worker_guard
from corral.orchestration.errors import OrchestrationError
from corral.orchestration.host._worker import read_launch_file
from corral.orchestration.host.protocol import (
    CORRAL_HARNESS,
    LaunchError,
    LaunchPart,
    WorkerLaunch,
)
from corral.orchestration.kernel._child import ManagedChild
from corral.orchestration.kernel._files import FileLimits
from corral.orchestration.kernel.records import AskRecord, GenerationRecord, RequestRecord
from corral.orchestration.ratelimits import RateLimitsExtension
from corral.orchestration.surfaces import AskOwnerTool
from corral.orchestration.teams.launch import MemberLaunch
from corral.orchestration.workspaces.records import WorkspaceLaunch
from corral.session import SessionManager
from corral.settings import Settings

__all__ = ["POLL_S", "main", "run_worker"]

POLL_S = 0.05
"""How often the worker reads its requests and generation from the store."""
_HEARTBEAT_S = 1.0
_BRIEF = 160


class WorkerError(Exception):
    """The worker cannot run its generation (bad arguments, no such generation)."""


def _brief(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _BRIEF else flat[: _BRIEF - 1] + "…"


class _Hooks:
    """Child hooks in a worker: the host discovers results and asks through the store."""

    def __init__(self, rate_limits: RateLimitsExtension) -> None:
        self.child: ManagedChild | None = None
        self.rate_limits = rate_limits

    def agent_event(self, run_id: str, event: AgentEvent) -> None:
        """Keep the run's rate-limit wait in the store, for the lead's status views."""
        self.rate_limits.agent_event(run_id, event)

    def result_stored(self, run_id: str, request_id: str) -> None:
        """Nothing to do: the host polls for durable results."""

    def ask_created(self, run_id: str, ask: AskRecord) -> None:
        """Nothing to do: the host polls for pending asks."""

    def changed(self) -> None:
        """Let the child re-check whether it can finish."""
        if self.child is not None:
            self.child.wake()

    def result_failed(self, run_id: str, message: str) -> None:
        """Say in the pane why the run ends without a result (the host sees an unsettled run)."""
        print(f"corral worker: run {run_id} ended without a stored result: {message}", file=sys.stderr)


class _View:
    """The pane's live view: streamed text, tools in brief, a state line."""

    def __init__(self, out: TextIO, label: str) -> None:
        self.out = out
        self.label = label
        self._streaming = False

    def line(self, text: str) -> None:
        if self._streaming:
            self.out.write("\n")
            self._streaming = False
        self.out.write(text + "\n")
        self.out.flush()

    def state(self, text: str) -> None:
        self.line(f"── {self.label}: {text} ──")

    def on_event(self, event: object) -> None:
        if isinstance(event, MessageUpdateEvent):
            delta = getattr(event.assistant_message_event, "delta", None)
            if getattr(event.assistant_message_event, "type", "") == "text_delta" and isinstance(delta, str):
                self.out.write(delta)
                self.out.flush()
                self._streaming = True
        elif isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            if self._streaming:
                self.line("")
        elif isinstance(event, ToolExecutionStartEvent):
            self.line(f"→ {event.tool_name} {_brief(json.dumps(event.args, ensure_ascii=False))}")
        elif isinstance(event, ToolExecutionEndEvent):
            text = " ".join(getattr(part, "text", "") for part in event.result.content)
            marker = " [error]" if event.is_error else ""
            self.line(f"← {event.tool_name}{marker}: {_brief(text)}")
        elif isinstance(event, AgentSettledEvent):
            self.state("idle")


WORKER_PARTS: tuple[type[LaunchPart], ...] = (MemberLaunch, WorkspaceLaunch)
"""The extension parts of a launch a `corral worker` reads (a workspace part it needs not: it runs on
the lead's machine)."""


async def run_worker(run_id: str, store_path: Path, launch_path: Path, *, out: TextIO = sys.stdout) -> int:
    """Run generation `run_id` until it is finalized; the exit code (0: done, 1: lost).

    A launch with a `resume_prompt` (written by a handoff) continues a moved generation:
    the task is neither acknowledged nor sent again; the agent gets the handoff prompt once.

    Raises:
        WorkerError: The launch file or the generation cannot be loaded, or the launch names a
            harness this worker does not run.
    """
    try:
        launch = read_launch_file(launch_path, parts=WORKER_PARTS)
    except (OSError, LaunchError) as exc:
        raise WorkerError(f"cannot read launch file {launch_path}: {exc}") from None
    try:
        launch.require_harness(CORRAL_HARNESS)
    except LaunchError as exc:
        raise WorkerError(f"cannot run the agent of launch file {launch_path}: {exc}") from None
    settings = launch.settings if launch.settings is not None else Settings()
    store = Repositories.open(store_path)
    try:
        generation = store.kernel.get_generation(run_id)
        if generation is None or generation.session_path is None:
            raise WorkerError(f"no live generation {run_id} with a session file in {store_path}")
        task = next((r for r in store.kernel.requests(run_id) if r.kind == "task"), None)
        if task is None:
            raise WorkerError(f"generation {run_id} has no task request")
        view = _View(out, generation.label)
        mode = "resuming" if launch.resume_prompt is not None else "starting"
        view.state(f"{mode} (run {run_id[:8]}, pane {os.environ.get('TMUX_PANE', '?')})")
        cwd = Path(generation.cwd)
        registry = ModelRegistry(settings, cwd=cwd)
        session = SessionManager.open(Path(generation.session_path))
        try:
            hooks = _Hooks(RateLimitsExtension(store.db))
            child, inbox = await _child(
                launch, store, generation, task, session, registry, settings, hooks, view
            )
            hooks.child = child
            if (
                store.worktrees.has_worktrees()
            ):  # an isolated writer commits its work on its branch at the end
                from corral.orchestration.worktrees._worktrees import Worktrees

                child.on_work_done = Worktrees(store.worktrees, home=store.db.path.parent).work_done
            attach_worker_guard(store.db, child)  # its budget, when the host opened one for it
            child.agent.subscribe(view.on_event)
            heartbeat = Path(launch.heartbeat) if launch.heartbeat else None
            store.kernel.record_started(run_id, pid=os.getpid(), pane_id=os.environ.get("TMUX_PANE") or None)
            return await _serve(store, child, view, heartbeat, inbox)
        finally:
            session.close()
    finally:
        store.close()


async def _child(
    launch: WorkerLaunch,
    store: Repositories,
    generation: GenerationRecord,
    task: RequestRecord,
    session: SessionManager,
    registry: ModelRegistry,
    settings: Settings,
    hooks: _Hooks,
    view: _View,
) -> tuple[ManagedChild, Callable[[], None] | None]:
    """The agent as its host described it (built from its definition's spec, or rebuilt from its
    exact parts) and its child: a teams member's (`MemberLaunch`) or a managed agent's.

    A teams agent gets its member tools from the same code as in-process (`team_member_tools`),
    over a `Teams` of a worker-local host on the same store; messages sent to it arrive in its
    store inbox and the returned poller brings them into the session. A moved agent (a
    `resume_prompt`) prompts it once instead of acknowledging its task.
    """
    cwd = Path(generation.cwd)
    described = launch.agent
    try:
        agent = await build_launched_agent(
            described, session=session, registry=registry, settings=settings, cwd=cwd, label=generation.label
        )
    except ValueError as exc:  # fail closed: a read agent never continues without its sandbox
        raise WorkerError(str(exc)) from None
    child: ManagedChild
    inbox: Callable[[], None] | None = None
    teams_part = launch.part(MemberLaunch)
    if teams_part is not None:
        from corral.orchestration.host._host import Host
        from corral.orchestration.surfaces.teams import team_member_tools
        from corral.orchestration.teams import texts
        from corral.orchestration.teams._member import TeamChild
        from corral.orchestration.teams._teams import Teams
        from corral.orchestration.teams.notices import MessageArrived

        member = store.teams.roster.team_member(generation.run_id)
        if member is None:
            raise WorkerError(f"generation {generation.run_id} is not a teams agent")

        class _WorkerHost(Host):
            """Reports and messages are stored; the owner's host delivers them (it polls the store) and
            saves a checkpointed report's checkpoint first."""

            def result_stored(self, run_id: str, request_id: str) -> None:
                hooks.changed()

        local = _WorkerHost(kernel=store.kernel, registry=registry, settings=settings)
        teams = Teams(local)
        mission = teams_part.mission
        team_child = TeamChild(
            store=store.kernel,
            agent=agent,
            generation=generation,
            task=task if mission is None else dataclasses.replace(task, payload=mission),
            hooks=hooks,
            member=member,
            teams=teams,
        )
        for tool in team_member_tools(teams, team_child):
            agent.register_tool(tool)
        child = team_child.child

        def poll_inbox() -> None:
            if not team_child.messages_open or team_child.ended:
                return
            lead, name = member.lead_session_id, member.name
            if not store.teams.roster.read_team_inbox(lead, name, unread_only=True, mark_as_read=False):
                return
            for message in store.teams.roster.read_team_inbox(
                lead, name, unread_only=True, mark_as_read=True
            ):
                view.line(f"⇐ message from {message.sender}: {_brief(message.content)}")
                fact = MessageArrived(message.sender, message.summary, message.content)
                team_child.inject(texts.member_message(fact))

        inbox = poll_inbox
    else:
        child = ManagedChild(
            store=store.kernel, agent=agent, generation=generation, task=task, hooks=hooks, delegating=False
        )
        if described.ask_owner:
            agent.register_tool(AskOwnerTool(OwnerQuestions(store.kernel, FileLimits()), child, agent))
    child.context_retirement = launch.context_retirement
    child.resume_prompt = launch.resume_prompt
    return child, inbox


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
        os.utime(path)


async def _serve(
    store: Repositories,
    child: ManagedChild,
    view: _View,
    heartbeat: Path | None,
    inbox: Callable[[], None] | None = None,
) -> int:
    run_id = child.run_id
    running = asyncio.get_running_loop().create_task(child.run())
    seen: set[str] = set()
    last_beat = 0.0
    shown = ""
    try:
        while True:
            now = time.monotonic()
            if heartbeat is not None and now - last_beat >= _HEARTBEAT_S:
                _touch(heartbeat)
                last_beat = now
            generation = store.kernel.get_generation(run_id)
            if generation is None or generation.phase == "finalized":
                view.state("finalized; exiting")
                return 0
            if running.done() and generation.phase in ("starting", "active"):
                view.state("ended without a result (lost)")
                return 1
            if generation.phase == "active":
                if inbox is not None:
                    inbox()
                for request in store.kernel.requests(run_id):
                    if request.kind == "task" or request.acknowledged or request.request_id in seen:
                        continue
                    seen.add(request.request_id)
                    view.line(f"⇐ {request.kind}: {_brief(request.payload)}")
                    with contextlib.suppress(OrchestrationError):
                        child.accept(request)
            state: str = generation.phase
            if generation.phase == "active" and store.kernel.pending_ask(run_id) is not None:
                state = "waiting for the owner's reply"
            elif generation.phase == "completed":
                state = "result stored; waiting for delivery"
            if state != shown:
                shown = state
                view.state(state)
            child.wake()
            await asyncio.sleep(POLL_S)
    finally:
        if not running.done():
            running.cancel()
            with contextlib.suppress(BaseException):
                await running


def _close_own_pane() -> None:
    """Remove this worker's pane after a clean exit.

    tmux's `remain-on-exit failed` keeps a pane whose exit status it has not
    read yet when the terminal closes first; closing the pane explicitly leaves
    no dead pane behind. Kept panes are the failed workers' diagnostics.
    """
    pane = os.environ.get("TMUX_PANE")
    socket = os.environ.get("TMUX", "").split(",")[0]
    if not pane or not socket:
        return
    import subprocess

    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            ["tmux", "-S", socket, "kill-pane", "-t", pane],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )


def main(argv: list[str] | None = None) -> int:
    """Parse the worker's arguments and run it; the process exit code."""
    parser = argparse.ArgumentParser(
        prog="corral worker", description="Run one managed agent (in a tmux pane)."
    )
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--store", required=True, type=Path)
    parser.add_argument("--launch", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        _resume_trace()
        try:
            code = asyncio.run(run_worker(args.run_id, args.store, args.launch))
        finally:
            _tracing.shutdown()  # flush the spans before the pane goes
        if code == 0:
            _close_own_pane()
        return code
    except WorkerError as exc:
        print(f"corral worker: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _resume_trace() -> None:
    """Continue the host's trace when it passed one (`TRACEPARENT` in the pane's environment)."""
    from corral._tracing._carrier import TraceCarrier

    carrier = TraceCarrier.from_env(os.environ)
    if carrier is None:
        return
    try:
        _tracing.resume(carrier)
    except (OSError, ImportError, ValueError) as exc:  # the agent runs untraced rather than not at all
        print(f"corral worker: tracing is off: {exc}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
