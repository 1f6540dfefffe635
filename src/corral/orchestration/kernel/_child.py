"""The managed child: one generation's agent session, driven by the core.

`ManagedChild.run` is what a runtime runs. It acknowledges its single `task`
request through the store, prompts the agent with it, and then keeps the
assignment going until it can finish: a pending interrupt replacement or
reply is sent as the next prompt; a pending `ask_owner` question or (for a
delegating agent) unresolved direct agents keep it waiting. When nothing is
left, the result is the latest assistant text (none → `failed` /
`empty_result`; when the last model request failed — a provider error such as a
401, retries exhausted, a scripted template that could not be filled — the
error message says so and quotes the provider), stored durably (the store marks the generation completed in
the same transaction), and the host is told so it can deliver it.

Requests (`steer`, `interrupt`, `reply`) reach the child through
`accept(request)`, which applies them and records the acknowledgement in the
store. Steering is at-least-once at this boundary.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal, Protocol

from corral import _tracing
from corral.agent import (
    AgentEvent,
    AgentSession,
    AgentSettledEvent,
    CompactionStartEvent,
    MessageEndEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from corral.agent.tools import BashTool
from corral.llm import AssistantMessage, CustomMessage
from corral.orchestration.errors import ManagedAgentBusyError, OrchestrationError
from corral.orchestration.kernel import texts
from corral.orchestration.kernel._faults import fault_point
from corral.orchestration.kernel.notices import ContextRetired
from corral.orchestration.kernel.records import AckCode, AskRecord, GenerationRecord, RequestRecord
from corral.orchestration.store._database import StoreError
from corral.runtime import ProcessEvidence

if TYPE_CHECKING:
    from corral.orchestration.kernel._remote import ChildStore  # Ray's port; loaded with the first Ray run

__all__ = ["ASK_OWNER_TOOL", "RETIRED_ENTRY", "ChildHooks", "ManagedChild", "SettleOutcome", "SettlePolicy"]

ASK_OWNER_TOOL = "ask_owner"
RETIRED_ENTRY = "corral-agent-context-retired"
RETIREMENT_TYPE = "corral-agent-retirement"
_ACTIVITY_THROTTLE_MS = 5000
_ACTIVITY_LINES = 200
_LINE_CHARS = 240


WorkDone = Callable[[str, str], Awaitable[str | None]]
"""`on_work_done(run_id, final_text)`: a feature's last step before the result is stored."""

ReplyTaken = Callable[[AskRecord, str], str | None]
"""`on_reply(ask, text)`: a harness takes the owner's reply to its own question (`None`), or says
why the reply answers nothing (the reply is refused `invalid`; the ask stays pending)."""


class ChildHooks(Protocol):
    """How a child tells its host about progress (implemented by the host)."""

    def result_stored(self, run_id: str, request_id: str) -> None:
        """A durable result exists; deliver it."""

    def ask_created(self, run_id: str, ask: AskRecord) -> None:
        """A question is pending; deliver it to the owner."""

    def changed(self) -> None:
        """Something the quiet check depends on changed."""

    def result_failed(self, run_id: str, message: str) -> None:
        """No durable result could be written for the run (the store failed: a full disk); say so."""

    def agent_event(self, run_id: str, event: AgentEvent) -> None:
        """An event of the run's agent session, as it happens (the host hands it to its extensions)."""


SettleOutcome = Literal["result", "again", "closed"]
"""What `SettlePolicy.finish` decides: store the kernel's result (`result`), keep the assignment
going (`again`: a prompt was sent or queued), or end without a result (`closed`: it was stored elsewhere)."""


class SettlePolicy:
    """How a child's assignment may end: the hooks a feature overrides (no-op defaults keep the kernel's rules).

    The kernel's settle loop (`ManagedChild._settle`) keeps the assignment going until it may
    finish; a feature adds its own reasons to wait, its own end (teams: a report instead of a
    plain result), and hears when a run fails or begins to move. Teams supplies one
    (`corral.orchestration.teams._member.TeamSettle`); every other child has the default.
    """

    def resumed(self, child: ManagedChild) -> None:
        """A queued prompt is about to be sent: the run goes on."""

    def closed(self, child: ManagedChild) -> bool:
        """Whether the run already ended elsewhere (no result is stored by the kernel)."""
        return False

    def holds(self, child: ManagedChild) -> bool:
        """Whether the run must keep waiting (for a message, for queued helpers) before it may finish."""
        return False

    async def finish(self, child: ManagedChild) -> SettleOutcome:
        """The run may finish now; `result` lets the kernel store its last assistant text."""
        return "result"

    def run_failed(self, child: ManagedChild, reason: str) -> None:
        """The run raised (after the kernel marked the generation lost)."""

    def handoff_begun(self, child: ManagedChild) -> None:
        """The run begins to move to another runtime (`ManagedChild.begin_handoff`)."""


_DEFAULT_SETTLE = SettlePolicy()


def _brief(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _LINE_CHARS else flat[: _LINE_CHARS - 1] + "…"


class ManagedChild:
    """One generation's agent session and its assignment loop (a runtime `ChildProgram`).

    Args:
        store: Its store port: the store's repositories (in-process, tmux) or a remote worker's
            `RemoteStore` (Ray), which forwards its writes to the host.
        agent: The agent session (its tools already include `ask_owner`).
        generation: The generation row.
        task: Its single `task` request.
        hooks: The host's callbacks.
        delegating: Whether it may delegate (the children gate applies).
        context_retirement: Honour `contextRetirement` (threshold compaction retires the session).
        settle: A feature's settle policy (`None`: the kernel's own rules).
    """

    def __init__(
        self,
        *,
        store: ChildStore,
        agent: AgentSession,
        generation: GenerationRecord,
        task: RequestRecord,
        hooks: ChildHooks,
        delegating: bool = False,
        context_retirement: bool = False,
        settle: SettlePolicy | None = None,
    ) -> None:
        self.store = store
        self.settle = settle or _DEFAULT_SETTLE
        """How the assignment may end (`SettlePolicy`)."""
        self.context_retirement = context_retirement
        self.agent = agent
        self.generation = generation
        self.task = task
        self.hooks = hooks
        self.delegating = delegating
        self.acknowledged = asyncio.Event()
        self.finished = asyncio.Event()
        self._wake = asyncio.Event()
        self._waiting = False
        self.on_waiting: Callable[[ManagedChild], None] | None = None
        """Called when `waiting` changes (the host keeps the children it must wake at a change)."""
        self._queued: list[str] = []
        self._replacement: str | None = None
        self._lines: collections.deque[str] = collections.deque(maxlen=_ACTIVITY_LINES)
        self._last_activity_ms = 0
        self._unsubscribe = agent.subscribe(self._on_event)
        self.handing_off = False
        """Being moved to another runtime (`_handoff`): the run ends at its next settle, storing nothing."""
        self.resume_prompt: str | None = None
        """Set for a moved run (the tmux worker): `run` prompts this instead of acknowledging the task."""
        self.on_work_done: WorkDone | None = None
        """A port a feature sets: called once the assignment may finish, with the run id and the
        agent's final text, before the result is stored; the line it returns (e.g. an isolated
        writer's branch) is appended to the result."""
        self._asking_mid_turn = False
        self.on_ended: Callable[[], Awaitable[None] | None] | None = None
        """A port a harness sets: called once when the run ended, whichever way (result, close,
        failure, cancellation), to release what the agent holds outside corral (an ACP agent's
        process tree). The call itself is synchronous, so the release happens on a cancelled run
        too; what it returns, if anything, is awaited after it (the release's clean-up, e.g.
        reaping the killed process and closing its pipes)."""
        self.on_reply: ReplyTaken | None = None
        """A port a harness sets whose agent asks the owner itself (an ACP agent's permission
        request): a reply to the pending ask goes to it instead of becoming the next prompt."""

    @property
    def run_id(self) -> str:
        """The generation's run id."""
        return self.generation.run_id

    @property
    def label(self) -> str:
        """The generation's label."""
        return self.generation.label

    @property
    def waiting(self) -> bool:
        """Idle and waiting for a reply or for direct agents (re-checked after every settle): the
        only state in which a change elsewhere (`wake`) can let the assignment move on."""
        return self._waiting

    @waiting.setter
    def waiting(self, value: bool) -> None:
        if value != self._waiting:
            self._waiting = value
            if self.on_waiting is not None:
                self.on_waiting(self)

    @property
    def busy(self) -> bool:
        """Whether the agent is running a turn or has a prompt to send (a turn held by the owner's
        question, `record_ask(mid_turn=True)`, is not busy: it waits)."""
        if self._asking_mid_turn:
            return False
        return not self.agent.is_idle or bool(self._queued) or self._replacement is not None

    def wake(self) -> None:
        """Re-check whether the assignment can finish (after a change elsewhere)."""
        self._wake.set()

    def begin_handoff(self) -> None:
        """Stop at the next settle without a result (the run moves elsewhere); see `take_pending`."""
        self.handing_off = True
        self._wake.set()
        self.settle.handoff_begun(self)

    def queue_prompt(self, text: str) -> None:
        """Make `text` a prompt the agent gets once it is idle (after any queued before it)."""
        self._queued.append(text)
        self._wake.set()

    def take_pending(self) -> list[str]:
        """Remove and return prompts not yet sent (an interrupt replacement, queued steers and replies)."""
        pending = [] if self._replacement is None else [self._replacement]
        pending += self._queued
        self._replacement = None
        self._queued = []
        return pending

    # --- the runtime program -----------------------------------------------------------------

    async def run(self) -> None:
        """Acknowledge the task, work on it, and store its result.

        A moved run (`resume_prompt` set) does not acknowledge or resend the task: it prompts
        `resume_prompt` once and goes on like any run. A run that raises is reported to the
        settle policy (`SettlePolicy.run_failed`) once it has ended.
        """
        try:
            await self._traced_run()
        finally:
            if self.on_ended is not None:
                cleanup = self.on_ended()
                if cleanup is not None:
                    await cleanup

    async def _traced_run(self) -> None:
        tracer = _tracing.active
        if tracer is None:
            await self._run()
            return
        # The generation's span: under the tool call that delegated or spawned it (the context the
        # runtime started this task in), or under the host's trace context in a worker process.
        generation = tracer.start(
            f"invoke_agent {self.label}",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": self.label,
                "corral.agent": self.label,
                "corral.run_id": self.run_id,
                "corral.definition": self.generation.definition,
                "corral.runtime": self.generation.runtime_kind,
            },
        )
        token = tracer.activate(generation)
        self.agent.trace_anchor = generation
        try:
            await self._run()
        except BaseException as exc:
            generation.fail(type(exc).__name__ if isinstance(exc, asyncio.CancelledError) else str(exc))
            raise
        finally:
            tracer.deactivate(token)
            generation.end()

    async def _run(self) -> None:
        try:
            await self._assignment()
        except Exception as exc:
            self.settle.run_failed(self, f"the agent's run failed: {type(exc).__name__}: {exc}")
            raise

    async def _assignment(self) -> None:
        try:
            if self.resume_prompt is None:
                self.store.record_ack(self.run_id, self.task.request_id, accepted=True)
            self.acknowledged.set()
            self.hooks.changed()
            fault_point("after_task_ack")
            await self.agent.prompt(self.resume_prompt or self.task.payload, streaming_behavior="steer")
            if await self._settle():
                note = None
                if self.on_work_done is not None:
                    note = await self.on_work_done(
                        self.run_id, (self.agent.last_assistant_text() or "").strip()
                    )
                self._finish(note)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.agent.abort())
            raise
        except Exception as exc:
            # The agent's execution ended without a durable result: that is loss, never completion.
            with contextlib.suppress(OrchestrationError):
                self.store.mark_presence(
                    self.run_id, "lost", diagnostic=f"agent task failed: {type(exc).__name__}: {exc}"
                )
            raise
        finally:
            self._unsubscribe()
            self.finished.set()
            self.hooks.changed()

    async def _settle(self) -> bool:
        """Keep the assignment going until it may finish; `False` if it ended elsewhere (closed).

        The settle policy adds a feature's reasons to wait and decides how a finished run ends.
        """
        while True:
            await self.agent.wait_for_idle()
            if self.handing_off:
                return False
            if self._replacement is not None:
                self.waiting = False
                text, self._replacement = self._replacement, None
                await self.agent.prompt(text, streaming_behavior="steer")
                continue
            if self._queued:
                self.waiting = False
                self.settle.resumed(self)
                await self.agent.prompt(self._queued.pop(0), streaming_behavior="steer")
                continue
            generation = self.store.get_generation(self.run_id)
            if generation is None or generation.phase != "active" or self.settle.closed(self):
                return False
            if (
                self.store.pending_ask(self.run_id) is not None
                or self._children_unresolved()
                or self.settle.holds(self)
            ):
                if not self.waiting:
                    self.waiting = True
                    self.hooks.changed()
                self._wake.clear()
                await self._wake.wait()
                continue
            outcome = await self.settle.finish(self)
            if outcome == "again":
                continue
            return outcome == "result"

    def _children_unresolved(self) -> bool:
        if not self.delegating:
            return False
        for child in self.store.generations(parent_run_id=self.run_id):
            if child.phase in ("starting", "active", "result_error"):
                return True
            if child.completed_request_id is not None:
                result = self.store.get_result(child.completed_request_id)
                if result is not None and result.delivery == "pending":
                    return True
        return False

    def last_assistant(self) -> AssistantMessage | None:
        """The agent's latest assistant message, if any."""
        for message in reversed(self.agent.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    def _empty_result_message(self) -> str:
        """Why there is no text: the provider's error when the last model request failed."""
        last = self.last_assistant()
        if last is not None and last.stop_reason == "error":
            return f"Agent {self.label} failed: the model request ended with an error: {last.error_message or 'unknown error'}"
        return "Agent produced no assistant text"

    def _finish(self, note: str | None = None) -> None:
        request_id = self.task.request_id
        last = self.last_assistant()
        text = (
            ""
            if last is not None and last.stop_reason == "error"
            else (self.agent.last_assistant_text() or "").strip()
        )
        if text and note:
            text = f"{text}\n\n{note}"
        usage = self.agent.context_usage()
        tokens = usage.tokens if usage is not None else None
        try:
            if text:
                self.store.store_result(
                    self.run_id, request_id, status="completed", text=text, context_tokens=tokens
                )
            else:
                self.store.store_result(
                    self.run_id,
                    request_id,
                    status="failed",
                    error_code="empty_result",
                    # A feature's note still reaches the owner (e.g. `budget_exhausted: …`).
                    error_message="\n".join(filter(None, (self._empty_result_message(), note))),
                    context_tokens=tokens,
                )
        except OrchestrationError as exc:
            with contextlib.suppress(OrchestrationError):
                self.store.record_result_error(self.run_id, request_id, message=str(exc))
            if isinstance(exc, StoreError):  # the database itself failed: nobody else will say it
                self.hooks.result_failed(self.run_id, str(exc))
            self.hooks.changed()
            return
        fault_point("after_result_row")
        self.hooks.result_stored(self.run_id, request_id)

    # --- requests --------------------------------------------------------------------------------

    def accept(self, request: RequestRecord) -> RequestRecord:
        """Apply a `steer`, `interrupt` or `reply` and record the acknowledgement."""
        code, message = self._apply(request)
        if code is None:
            return self.store.record_ack(self.run_id, request.request_id, accepted=True)
        return self.store.record_ack(
            self.run_id, request.request_id, accepted=False, code=code, message=message
        )

    def _apply(self, request: RequestRecord) -> tuple[AckCode | None, str | None]:
        generation = self.store.get_generation(self.run_id)
        if generation is None or generation.phase != "active" or self.finished.is_set():
            return "idle", f"Agent {self.label} has no active assignment."
        if self.handing_off:
            return "busy", f"Agent {self.label} is moving to a terminal pane; retry in a moment."
        ask = self.store.pending_ask(self.run_id)
        if request.kind == "reply":
            if ask is None or ask.ask_id != request.ask_id:
                return "identity", f"Agent {self.label} ask identity did not match."
            if self.on_reply is not None:
                refused = self.on_reply(ask, request.payload)
                if refused is not None:
                    return "invalid", refused
                self.end_mid_turn_ask()
                return None, None
            self.queue_prompt(
                f"Owner reply:\n{request.payload}\n\nContinue the original assignment using this answer."
            )
            return None, None
        if ask is not None:
            return "busy", f"Agent {self.label} is waiting for an owner reply; use reply."
        if self._replacement is not None:
            return "busy", f"Agent {self.label} is still settling a previous interrupt."
        if request.kind == "steer":
            if not self.agent.is_idle:
                self.agent.steer(request.payload)
            else:
                self.queue_prompt(request.payload)
            return None, None
        if request.kind == "interrupt":
            if self.agent.is_idle:
                return "idle", f"Agent {self.label} has no interruptible active operation."
            self._replacement = (
                f"Owner interrupt:\n{request.payload}\n\n"
                "The previous in-flight operation was intentionally aborted by the owner; "
                "continue the original assignment with this instruction."
            )
            self.agent.clear_queue()
            task = asyncio.get_running_loop().create_task(self.agent.abort())
            task.add_done_callback(lambda t: None if t.cancelled() else t.exception())
            return None, None
        return "invalid", f"A {request.kind} request cannot be applied to a running agent."

    # --- ask_owner --------------------------------------------------------------------------------

    def record_ask(self, question: str, *, mid_turn: bool = False) -> AskRecord:
        """Record a prepared question for the active assignment and have the host deliver it.

        With `mid_turn`, the agent's turn itself waits for the answer (a harness's question: an ACP
        agent's permission request, answered through `on_reply`): the child counts as waiting, not
        busy, until `end_mid_turn_ask`.

        Raises:
            ManagedAgentBusyError: No active assignment, an ask is already pending, a control
                request is unacknowledged, or direct agent work is still active.
        """
        active = self.store.get_generation(self.run_id)
        if active is None or active.active_request_id is None or self.finished.is_set():
            raise ManagedAgentBusyError("no active assignment.", operation="ask_owner")
        ask = self.store.create_ask(self.run_id, request_id=active.active_request_id, question=question)
        if mid_turn:
            self._asking_mid_turn = True
            self.waiting = True
        self.hooks.ask_created(self.run_id, ask)
        return ask

    def end_mid_turn_ask(self) -> None:
        """The turn that waited on its question goes on (answered or given up)."""
        if self._asking_mid_turn:
            self._asking_mid_turn = False
            self.waiting = False
            self.hooks.changed()

    # --- evidence -----------------------------------------------------------------------------------

    def activity_lines(self) -> list[str]:
        """Recent activity: assistant text, tool calls and results in brief."""
        return list(self._lines)

    def running_processes(self) -> list[ProcessEvidence]:
        """Commands the agent's bash tools are running now."""
        found: list[ProcessEvidence] = []
        for tool in self.agent.tools:
            if isinstance(tool, BashTool):
                for process in tool.running_processes():
                    argv0 = (tool.shell_path or "bash").encode()[:256].decode(errors="ignore")
                    cmdline = process.command.encode()[:4096].decode(errors="ignore")
                    found.append(ProcessEvidence(pid=process.pid, argv0=argv0, cmdline=cmdline))
        return found

    def _on_event(self, event: AgentEvent) -> None:
        self.hooks.agent_event(self.run_id, event)
        if isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            message = event.message
            if message.text.strip():
                self._lines.extend(
                    f"assistant: {_brief(line)}" for line in message.text.strip().splitlines()[-20:]
                )
            for call in message.tool_calls:
                self._lines.append(f"→ {call.name} {_brief(json.dumps(call.arguments, ensure_ascii=False))}")
        elif isinstance(event, ToolExecutionEndEvent):
            text = " ".join(getattr(part, "text", "") for part in event.result.content)
            marker = " [error]" if event.is_error else ""
            self._lines.append(f"← {event.tool_name}{marker}: {_brief(text)}")
        elif isinstance(event, AgentSettledEvent):
            self.waiting = False
            self._wake.set()
        elif isinstance(event, CompactionStartEvent) and event.reason == "threshold":
            self._retire()
        if isinstance(event, TurnStartEvent | TurnEndEvent | ToolExecutionStartEvent | ToolExecutionEndEvent):
            self._touch()

    def _retire(self) -> None:
        """Threshold compaction of an active assignment retires the session (once) and asks for a handoff."""
        if not self.context_retirement or self.finished.is_set():
            return
        session = self.agent.session
        if any(getattr(entry, "custom_type", None) == RETIRED_ENTRY for entry in session.entries):
            return
        session.append_custom(RETIRED_ENTRY, {"sessionId": session.session_id})
        text = texts.context_retired(ContextRetired(run_id=self.run_id, session_id=session.session_id))
        self.agent.steer(CustomMessage(custom_type=RETIREMENT_TYPE, content=text, display=False))

    def _touch(self) -> None:
        now = int(time.time() * 1000)
        if now - self._last_activity_ms < _ACTIVITY_THROTTLE_MS:
            return
        self._last_activity_ms = now
        with contextlib.suppress(OrchestrationError):
            self.store.record_activity(self.run_id, at=now)
