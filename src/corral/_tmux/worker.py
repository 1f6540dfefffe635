"""`corral worker`: the process in a tmux pane that runs one generation's agent.

It opens the shared store, loads its generation and task, builds the agent
exactly as the in-process path does (`build_managed_agent` from the launch
file the host wrote: a `host.protocol.WorkerLaunch`) and its child as every
worker does (`corral/_compose.py`, at this worker's `tmux_place`), and records its readiness (its pid and `$TMUX_PANE`)
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
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from corral import _tracing
from corral._compose import PolicyExtension, WorkerChild, WorkerHooks, WorkerPlace, WorktreeBranch, compose
from corral.agent import (
    AgentSettledEvent,
    MessageEndEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
)
from corral.llm import AssistantMessage, ModelRegistry
from corral.orchestration import FileLimits, Host, Repositories
from corral.orchestration.agents._controller import OwnerQuestions
from corral.orchestration.budgets import attach_worker_guard
from corral.orchestration.errors import OrchestrationError
from corral.orchestration.host._worker import read_launch_file
from corral.orchestration.host.protocol import (
    CORRAL_HARNESS,
    LaunchError,
    LaunchPart,
    WorkerLaunch,
)
from corral.orchestration.kernel.records import GenerationRecord, RequestRecord
from corral.orchestration.ratelimits import RateLimitsExtension
from corral.orchestration.teams.launch import MemberLaunch
from corral.orchestration.workspaces.records import WorkspaceLaunch
from corral.session import SessionManager
from corral.settings import Settings

if TYPE_CHECKING:
    from corral._compose import MemberPort
    from corral.mcp_servers import McpReport, McpServers
    from corral.orchestration.teams.roster.records import TeamMemberRecord

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
        mcp_servers = None
        if settings.mcp_servers:  # this worker's own sessions of the agent's MCP servers
            from corral.mcp_servers import McpServers

            mcp_servers = McpServers.from_settings(settings, cwd=cwd)
        try:
            composed, inbox = await _child(
                launch, store, generation, task, session, registry, settings, view, mcp_servers
            )
            if composed.mcp is not None:
                _show_mcp(view, composed.mcp)
            composed.child.agent.subscribe(view.on_event)
            heartbeat = Path(launch.heartbeat) if launch.heartbeat else None
            store.kernel.record_started(run_id, pid=os.getpid(), pane_id=os.environ.get("TMUX_PANE") or None)
            return await _serve(store, composed, view, heartbeat, inbox)
        finally:
            if mcp_servers is not None:
                await mcp_servers.aclose()
            session.close()
    finally:
        store.close()


def _show_mcp(view: _View, report: McpReport) -> None:
    """The pane's lines for the agent's MCP servers: what it got, and each server it did not get."""
    from corral.mcp_servers.texts import failed_servers, report_text

    details = report.to_details()
    view.line(report_text(details) or "MCP servers: none")
    for line in failed_servers(details):
        print(f"corral worker: {line}", file=sys.stderr)


async def _child(
    launch: WorkerLaunch,
    store: Repositories,
    generation: GenerationRecord,
    task: RequestRecord,
    session: SessionManager,
    registry: ModelRegistry,
    settings: Settings,
    view: _View,
    mcp_servers: McpServers | None = None,
) -> tuple[WorkerChild, Callable[[], None] | None]:
    """The agent as its host described it and its child, composed at this worker's place
    (`tmux_place`); a teams member's inbox poller (messages sent to it arrive in its store inbox,
    the poller brings them into the session)."""
    place = tmux_place(store, generation, registry, settings, mcp_servers)
    try:
        composed = await compose(place).child(
            launch,
            generation=generation,
            task=task,
            session=session,
            registry=registry,
            settings=settings,
            cwd=Path(generation.cwd),
            mcp_servers=mcp_servers,
        )
    except ValueError as exc:  # fail closed: a read agent never continues without its sandbox
        raise WorkerError(str(exc)) from None
    member, port = composed.member, composed.port
    if member is None or port is None:
        return composed, None
    from corral.orchestration.teams import texts
    from corral.orchestration.teams.notices import MessageArrived

    inbox = store.teams.messages
    lead, name = member.member.lead_session_id, member.member.name

    def poll_inbox() -> None:
        if not member.messages_open or member.ended:
            return
        if not inbox.read_team_inbox(lead, name, unread_only=True, mark_as_read=False):
            return
        for message in inbox.read_team_inbox(lead, name, unread_only=True, mark_as_read=True):
            view.line(f"⇐ message from {message.sender}: {_brief(message.content)}")
            fact = MessageArrived(message.sender, message.summary, message.content)
            member.inject(texts.member_message(fact))

    return composed, poll_inbox


def tmux_place(
    store: Repositories,
    generation: GenerationRecord,
    registry: ModelRegistry,
    settings: Settings,
    mcp_servers: McpServers | None = None,
) -> WorkerPlace:
    """Where a tmux worker's agent runs: on the lead's machine, over the shared store.

    Rate-limit waits are stored for the lead's status views; a question is recorded in the store; a
    teams member works over a `Teams` of a worker-local host on the same store (reports and messages
    are stored and the owner's host, polling the store, delivers them); an isolated writer commits
    its work on its worktree branch; the budget is the row the host opened. `mcp_servers`: this
    worker's sessions of the MCP servers, which the member's nested helpers share.
    """
    rate_limits = RateLimitsExtension(store.db)

    def member_port(part: MemberLaunch, hooks: WorkerHooks) -> tuple[MemberPort, TeamMemberRecord]:
        from corral.orchestration.teams._teams import Teams

        member = store.teams.roster.team_member(generation.run_id)
        if member is None:
            raise WorkerError(f"generation {generation.run_id} is not a teams agent")

        class _WorkerHost(Host):
            """Reports and messages are stored; the owner's host delivers them (it polls the store) and
            saves a checkpointed report's checkpoint first."""

            def result_stored(self, run_id: str, request_id: str) -> None:
                hooks.changed()

        # the worker's own MCP sessions: the nested helpers it starts get the member's servers, no more
        local = _WorkerHost(
            kernel=store.kernel, registry=registry, settings=settings, mcp_servers=mcp_servers
        )
        local.extensions.add(PolicyExtension(local))  # the nested helpers it starts here are bound too
        return Teams(local).members, member

    work_done = None
    if store.worktrees.has_worktrees():  # an isolated writer commits its work on its branch at the end
        from corral.orchestration.worktrees._worktrees import Worktrees

        work_done = Worktrees(store.worktrees, home=store.db.path.parent).work_done

    def result_failed(run_id: str, message: str) -> None:
        print(f"corral worker: run {run_id} ended without a stored result: {message}", file=sys.stderr)

    return WorkerPlace(
        kind="tmux",
        store=store.kernel,
        rate_limit_waits=rate_limits.agent_event,
        member_port=member_port,
        questions=OwnerQuestions(store.kernel, FileLimits()),
        brings_back=WorktreeBranch(work_done),
        budget_guard=lambda child: attach_worker_guard(store.db, child),
        result_failed=result_failed,
    )


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
        os.utime(path)


async def _serve(
    store: Repositories,
    composed: WorkerChild,
    view: _View,
    heartbeat: Path | None,
    inbox: Callable[[], None] | None = None,
) -> int:
    child = composed.child
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
