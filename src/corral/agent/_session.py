"""`AgentSession`: the agent loop over a persisted session, with queues, abort, retry and compaction.

A *run* is one pass of the loop (`agent_start` … `agent_end`, see `_loop`).
`prompt()` starts a *settle cycle*: runs follow each other while the session
has something to do on its own, then `agent_settled` fires once:

* a transient provider error is retried (`auto_retry_*`, waits 2/4/8 s
  through the injected `sleep`; the error message leaves the in-memory
  context but stays in the file);
* a context overflow is compacted and retried once per prompt
  (`compaction_*` with reason `overflow`);
* after a run that was not aborted, the context is compacted when it is above
  the threshold (`threshold`), and before each prompt as well;
* messages still queued (steering, follow-up) start another run.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from corral import _startup, _tracing
from corral.errors import CorralError
from corral.llm import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    Model,
    RetryPolicy,
    StreamOptions,
    ThinkingLevel,
    UserMessage,
    clamp_thinking_level,
    is_retryable_error,
)
from corral.session import (
    CompactionSettings,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens,
    fit_compaction_settings,
    is_context_overflow,
    prepare_compaction,
    should_compact,
)

from ._compaction import summarize_compaction
from ._errors import AgentBusyError, CompactionError
from ._events import (
    AgentEvent,
    AgentSettledEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionReason,
    CompactionResult,
    CompactionStartEvent,
    MessageEndEvent,
    MessageStartEvent,
)
from ._gate import ToolApprover, ToolGate
from ._guard import RequestEstimate, RequestGuard
from ._loop import ABORTED, Aborted, LoopMixin, RunAction, message_text, to_agent_message
from ._stats import ContextUsage, SessionStats, compute_session_stats
from ._system_prompt import build_system_prompt
from ._tool import AgentTool
from ._window import ContextOverhead, estimate_overhead_tokens

if TYPE_CHECKING:
    from corral._tracing._records import Span
    from corral.session import CompactionEntry, SessionManager
    from corral.settings import QueueMode, Settings

__all__ = ["AgentSession", "StreamingBehavior"]

_log = logging.getLogger("corral.agent")

StreamingBehavior = Literal["steer", "followUp"]
"""Which queue a message sent during a run goes to."""

DeliverAs = Literal["steer", "followUp", "nextTurn", "context"]
"""How `send_custom_message` delivers a program's message."""


def _valid_usage(message: AssistantMessage) -> bool:
    return message.stop_reason not in ("aborted", "error") and calculate_context_tokens(message.usage) > 0


class AgentSession(LoopMixin):
    """An agent: a model, tools and a session file, driven by prompts, steering and follow-ups.

    Args:
        session: The session to append to. A session without entries is new: it
            gets an initial `model_change` and `thinking_level_change`. An existing
            one is continued from `session.build_context()`.
        model: The model to request replies from.
        thinking_level: Requested thinking level (clamped to the model).
        tools: The active tools, in the order they are offered.
        cwd: The working directory (system prompt, scripted model lookup).
        settings: Compaction, retry and queue settings (default: the defaults).
        system_prompt: The system prompt; `None` builds one (`build_system_prompt`).
        agent_name: The managed agent's label or name, passed to the model.
        sleep: Waits between retries (tests inject an instant one).
    """

    def __init__(
        self,
        *,
        session: SessionManager,
        model: Model,
        thinking_level: ThinkingLevel,
        tools: Sequence[AgentTool],
        cwd: Path,
        settings: Settings | None = None,
        system_prompt: str | None = None,
        agent_name: str | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if settings is None:
            from corral.settings import Settings

            settings = Settings()
        self._settings = settings
        self._session = session
        self._model = model
        self._cwd = cwd
        self._agent_name = agent_name
        self._sleep = sleep
        self._tools = {tool.name: tool for tool in tools}
        self._tool_definitions_cache = None
        self._llm_cache = []
        self._llm_cache_owner = None
        self._llm_cache_count = 0
        self._llm_unseen = []
        self._custom_system_prompt = system_prompt
        self._built_system_prompt: str | None = None
        self._listeners = []
        self._steering = deque()
        self._follow_up = deque()
        self._context_only: set[int] = set()
        """Ids of queued steering messages that start no request of their own (`deliver_as="context"`)."""
        self._next_turn: list[AgentMessage] = []
        self._steering_mode = settings.steering_mode
        self._follow_up_mode = settings.follow_up_mode
        self._active = set()
        self._aborting = False
        self._run_task: asyncio.Task[None] | None = None
        self._compacting = False
        self._held: list[tuple[CustomMessage, DeliverAs, bool]] = []
        """Messages sent during a manual compaction: sent again, in order, once it ends (`compact`)."""
        self._idle = asyncio.Event()
        self._idle.set()
        self._retry_attempt = 0
        self._overflow_recovered = False
        self._latest_by_model: dict[tuple[str, str], AssistantMessage] = {}
        self._usage_unknown = False
        self._overhead_tokens: int | None = None
        self._warned_overhead = False
        self._last_reply: AssistantMessage | None = None
        self._retry_wait: asyncio.Task[Any] | None = None
        self._pending_bash: list[BashExecutionMessage] = []
        tracer = _tracing.active
        self.trace_anchor: Span | None = None if tracer is None else tracer.current()
        """The span this agent's turns are recorded under (tracing on): the span current when the session
        was built (a lead's run), or its generation's span (set by the managed child)."""
        self._request_guard: RequestGuard | None = None
        self._tool_gate: ToolGate | None = None
        self._tool_approver: ToolApprover | None = None
        self._noticed_models: set[str] = set()
        self._tool_sources: list[Callable[[], Awaitable[Sequence[AgentTool]]]] = []
        """Tools to resolve before the next run's first model request (`add_tool_source`)."""

        is_new = not session.entries
        context = session.build_context()
        self._messages = list(context.messages)
        info = model.info
        self._thinking_level = clamp_thinking_level(info, thinking_level)
        if is_new:
            session.append_model_change(info.provider, info.id)
            session.append_thinking_level_change(self._thinking_level)
        else:
            selected = context.model
            if selected is None or (selected.provider, selected.model_id) != (info.provider, info.id):
                session.append_model_change(info.provider, info.id)
            if context.thinking_level != self._thinking_level:
                session.append_thinking_level_change(self._thinking_level)
            self._scan_branch()
        # Every long-running command (the app, run, mcp, worker) builds an agent once it has started:
        # the garbage collector paused for its start-up comes back here (see corral._startup).
        _startup.started()

    def _scan_branch(self) -> None:
        """Find each model's newest reply on the branch, and whether usage is known since the last compaction."""
        usage_seen = False
        for entry in reversed(self._session.get_branch()):
            kind = getattr(entry, "type", None)
            if kind == "compaction" and not usage_seen:
                self._usage_unknown = True
                usage_seen = True
            elif kind == "message":
                message = entry.message  # type: ignore[union-attr]
                if isinstance(message, AssistantMessage):
                    self._latest_by_model.setdefault((message.provider, message.model), message)
                    if not usage_seen and _valid_usage(message):
                        usage_seen = True

    # --- properties -------------------------------------------------------------

    @property
    def session(self) -> SessionManager:
        """The session being appended to."""
        return self._session

    @property
    def model(self) -> Model:
        """The current model."""
        return self._model

    @property
    def thinking_level(self) -> ThinkingLevel:
        """The current (clamped) thinking level."""
        return self._thinking_level

    @property
    def tools(self) -> list[AgentTool]:
        """The active tools, in the order they are offered."""
        return list(self._tools.values())

    @property
    def cwd(self) -> Path:
        """The working directory."""
        return self._cwd

    @property
    def system_prompt(self) -> str:
        """The system prompt sent with the next request."""
        return self._system_prompt_text()

    @property
    def is_streaming(self) -> bool:
        """Whether a run (or its retries, compactions and queued continuations) is active."""
        return self._run_task is not None

    @property
    def is_idle(self) -> bool:
        """Whether nothing runs: no run and no compaction."""
        return self._run_task is None and not self._compacting

    @property
    def is_compacting(self) -> bool:
        """Whether a manual compaction (`compact`) is running; an automatic one runs inside a run."""
        return self._compacting

    @property
    def steering_mode(self) -> str:
        """How queued steering is delivered: `one-at-a-time` or `all`."""
        return self._steering_mode

    @property
    def follow_up_mode(self) -> str:
        """How queued follow-ups are delivered: `one-at-a-time` or `all`."""
        return self._follow_up_mode

    @property
    def auto_compaction_enabled(self) -> bool:
        """Whether the session compacts by itself near the context window."""
        return self._settings.compaction.enabled

    @property
    def pending_message_count(self) -> int:
        """Messages queued for steering or follow-up, or held until a manual compaction ends."""
        return len(self._steering) + len(self._follow_up) + len(self._held)

    @property
    def messages(self) -> list[AgentMessage]:
        """The current context (after compaction: the summary and what was kept)."""
        return list(self._messages)

    @property
    def last_reply(self) -> AssistantMessage | None:
        """The newest reply of the latest prompt's runs, even a failed one that the retry or
        overflow handling then dropped from the context; `None` before the first."""
        return self._last_reply

    def last_assistant_text(self) -> str | None:
        """The text of the newest assistant reply (an aborted empty reply is skipped)."""
        for message in reversed(self._messages):
            if isinstance(message, AssistantMessage):
                if message.stop_reason == "aborted" and not message.content:
                    continue
                return message.text
        return None

    # --- events -----------------------------------------------------------------

    def subscribe(self, listener: Callable[[AgentEvent], None]) -> Callable[[], None]:
        """Call `listener` with every event, in order; returns a function that unsubscribes.

        A listener that raises is logged and skipped; the loop goes on.
        """
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    # --- hooks for the loop -------------------------------------------------------

    def _system_prompt_text(self) -> str:
        if self._custom_system_prompt is not None:
            return self._custom_system_prompt
        if self._built_system_prompt is None:
            self._built_system_prompt = build_system_prompt(cwd=self._cwd, tools=list(self._tools.values()))
        return self._built_system_prompt

    def _stream_options(self) -> StreamOptions:
        info = self._model.info
        return StreamOptions(
            thinking=self._thinking_level,
            session_id=self._session.session_id,
            agent_name=self._agent_name,
            cwd=self._cwd,
            previous_response=self._latest_by_model.get((info.provider, info.id)),
        )

    def _on_assistant_end(self, message: AssistantMessage) -> None:
        self._last_reply = message
        self._latest_by_model[(message.provider, message.model)] = message
        if message.stop_reason not in ("error", "aborted"):
            # A server that reports no usage leaves the estimate to the messages themselves.
            self._usage_unknown = False
        if self._retry_attempt > 0 and message.stop_reason not in ("error", "aborted"):
            self._emit(AutoRetryEndEvent(success=True, attempt=self._retry_attempt))
            self._retry_attempt = 0

    def _same_model(self, message: AssistantMessage) -> bool:
        info = self._model.info
        return message.provider == info.provider and message.model == info.id

    def _compaction_settings(self) -> CompactionSettings:
        return fit_compaction_settings(self._settings.compaction, self._model.info.context_window)

    def context_overhead(self) -> ContextOverhead:
        """How much of the window corral's own system prompt and tool schemas take."""
        if self._overhead_tokens is None:
            self._overhead_tokens = estimate_overhead_tokens(
                self._system_prompt_text(), self._tool_definitions()
            )
        info = self._model.info
        return ContextOverhead(
            tokens=self._overhead_tokens,
            context_window=info.context_window,
            model_ref=info.ref,
            tool_count=len(self._tools),
        )

    def overhead_warning_once(self) -> str | None:
        """`context_overhead().warning()` the first time it applies in this session object, then `None`."""
        if self._warned_overhead:
            return None
        warning = self.context_overhead().warning()
        if warning is not None:
            self._warned_overhead = True
        return warning

    def _request_estimate(self) -> RequestEstimate:
        last = self._last_reply
        output = last.usage.output if last is not None else 0
        return RequestEstimate(
            model=self._model.info, input_tokens=self._context_tokens(), output_tokens=output
        )

    def set_request_guard(self, guard: RequestGuard | None) -> None:
        """Ask `guard` before every model request from now on (`None`: no guard; see `RequestGuard`)."""
        self._request_guard = guard

    @property
    def request_guard(self) -> RequestGuard | None:
        """The guard asked before every model request, if any."""
        return self._request_guard

    def set_tool_gate(self, gate: ToolGate | None) -> None:
        """Ask `gate` before every tool call from now on and tell it each result (`None`: every call
        runs; see `ToolGate`)."""
        self._tool_gate = gate

    @property
    def tool_gate(self) -> ToolGate | None:
        """The gate asked before every tool call, if any."""
        return self._tool_gate

    def set_tool_approver(self, approver: ToolApprover | None) -> None:
        """Who answers the gate's `ask` verdicts (`None`: no one, so they are denied; see `ToolGate`)."""
        self._tool_approver = approver

    def _prompt_misfit(self) -> str | None:
        return self.context_overhead().error()

    def _context_tokens(self) -> int:
        """The context estimate: the last reported usage plus what followed it, or, without usage,
        the messages' estimates plus the system prompt and tool schemas."""
        estimate = estimate_context_tokens(self._messages)
        if estimate.last_usage_index is None:
            return estimate.tokens + self.context_overhead().tokens
        return estimate.tokens

    def _retry_policy(self) -> RetryPolicy:
        r = self._settings.retry
        return RetryPolicy(
            max_retries=r.max_retries, base_delay_ms=r.base_delay_ms, max_delay_ms=r.max_delay_ms
        )

    def _is_overflow(self, message: AssistantMessage) -> bool:
        return (
            message.stop_reason == "error"
            and self._same_model(message)
            and is_context_overflow(message, self._model.info.context_window)
        )

    def _decide_after_run(self, last: AssistantMessage | None) -> RunAction | None:
        if last is None or last.stop_reason != "error" or self._prompt_misfit() is not None:
            return None
        if self._is_overflow(last):
            if self._settings.compaction.enabled and not self._overflow_recovered:
                return "overflow"
            return None
        retry = self._settings.retry
        if (
            retry.enabled
            and is_retryable_error(last.error_message)
            and self._retry_attempt < retry.max_retries
        ):
            return "retry"
        return None

    # --- prompts and queues --------------------------------------------------------

    async def prompt(
        self,
        text_or_message: str | UserMessage | CustomMessage,
        *,
        streaming_behavior: StreamingBehavior | None = None,
    ) -> None:
        """Send a prompt and return once the session has settled.

        While a run is active, `streaming_behavior` queues the message as
        steering or follow-up instead (and this returns at once).

        Raises:
            AgentBusyError: a run (or a compaction) is active and no `streaming_behavior` was given.
        """
        message = to_agent_message(text_or_message)
        if not self.is_idle:
            if streaming_behavior is None or self._compacting:
                raise AgentBusyError(
                    "The agent is already processing a prompt; pass streaming_behavior='steer' or "
                    "'followUp' to queue this message, or wait for idle."
                )
            self._queue(message, streaming_behavior)
            return
        prompts = [*self._next_turn, message]
        self._next_turn.clear()
        task = self._start_run(prompts)
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():
                await self.abort()
            raise

    async def prompt_when_idle(self, text_or_message: str | UserMessage | CustomMessage) -> None:
        """Send a prompt once no run is active, and return once the session has settled.

        A run started by something else (a delivered result or question that woke the session, as
        a resumed lead's recovered result does) is waited for, never refused: the prompt starts
        the next run, in the same loop step that saw the session idle.
        """
        while not self.is_idle:
            await self._idle.wait()
        await self.prompt(text_or_message)

    def _queue(self, message: AgentMessage, behavior: StreamingBehavior) -> None:
        (self._steering if behavior == "steer" else self._follow_up).append(message)
        self._emit_queue_update()

    def steer(self, message: str | UserMessage | CustomMessage) -> None:
        """Queue a message delivered after the current tool batch, before the next model request."""
        self._queue(to_agent_message(message), "steer")

    def follow_up(self, message: str | UserMessage | CustomMessage) -> None:
        """Queue a message delivered when the agent would otherwise stop."""
        self._queue(to_agent_message(message), "followUp")

    def clear_queue(self) -> tuple[list[str], list[str]]:
        """Take back what was typed: empty both queues of their user messages and return their
        texts as `(steering, follow_up)`.

        Custom messages stay queued: they are a program's deliveries (a managed agent's result, a
        report), each awaited by its sender, and never turn into text. They reach the context at the
        next turn boundary, or when the run ends at the latest (`_flush_deliveries`).
        """
        steering = [message_text(m) for m in self._steering if not isinstance(m, CustomMessage)]
        follow_up = [message_text(m) for m in self._follow_up if not isinstance(m, CustomMessage)]
        _keep_only(self._steering, deliveries=True)
        _keep_only(self._follow_up, deliveries=True)
        self._emit_queue_update()
        return steering, follow_up

    def send_custom_message(
        self,
        message: CustomMessage,
        *,
        deliver_as: DeliverAs = "steer",
        trigger_turn: bool = False,
    ) -> None:
        """Deliver a program's message.

        * `nextTurn`: held and sent ahead of the next prompt.
        * `context`: never costs a model request of its own. While a run is active it joins the
          next turn boundary's steering messages; when the run ends first, it is appended to the
          session and the context without a further request. Idle: appended at once, no turn
          (`trigger_turn` is ignored).
        * While a run is active: queued as steering or follow-up.
        * Idle with `trigger_turn`: starts a run (returns at once; see `wait_for_idle`).
        * Idle without: appended to the session and the context; no turn.
        * During a manual compaction (`compact`): held, and delivered as above the moment it ends,
          whether it succeeded, failed or was aborted; never part of the context being summarised.
          (An automatic compaction runs inside a run: the message is queued as for any run.)
        """
        if deliver_as == "nextTurn":
            self._next_turn.append(message)
        elif self._compacting:
            self._held.append((message, deliver_as, trigger_turn))
        elif deliver_as == "context":
            if self.is_idle:
                self._append_now(message)
            else:
                self._context_only.add(id(message))
                self._queue(message, "steer")
        elif not self.is_idle:
            self._queue(message, deliver_as)
        elif trigger_turn:
            self._start_run([message])
        else:
            self._append_now(message)

    def _append_now(self, message: AgentMessage) -> None:
        """Append a message to the session and the context outside a model turn."""
        self._context_only.discard(id(message))
        self._emit(MessageStartEvent(message=message))
        self._session.append_message(message)
        self._messages.append(message)
        self._emit(MessageEndEvent(message=message))

    def _flush_deliveries(self) -> None:
        """Append the deliveries still queued when a run ends, without a request of their own:
        `context` ones the run ended before, and custom messages a run left behind when it was
        aborted, told to end after its tools, or stopped on an error (their senders await them)."""
        self._context_only.clear()
        queued = [m for m in (*self._steering, *self._follow_up) if isinstance(m, CustomMessage)]
        if not queued:
            return
        _keep_only(self._steering, deliveries=False)
        _keep_only(self._follow_up, deliveries=False)
        self._emit_queue_update()
        for message in queued:
            self._append_now(message)

    async def wait_for_idle(self) -> None:
        """Return once no run or compaction is active."""
        await self._idle.wait()

    def end_after_tools(self) -> None:
        """End the current run once the running tool batch finished: no further model request.

        Queued user messages are dropped (the caller decided the work is over, e.g. an accepted
        final report); queued deliveries are appended when the run ends. A no-op when idle.
        """
        if self.is_idle:
            return
        self._ending = True
        self.clear_queue()

    async def abort(self) -> None:
        """Cancel the model request, running tools, a retry wait or a compaction, and wait until idle.

        The partial reply is kept with stop reason `aborted`; queued user messages are kept, and
        queued deliveries (custom messages) are appended to the context without a request.
        """
        if self.is_idle:
            return
        self._aborting = True
        for task in tuple(self._active):
            task.cancel()
        await self._idle.wait()

    # --- tools, model, thinking -----------------------------------------------------

    def register_tool(self, tool: AgentTool) -> None:
        """Add (or replace) a tool; it is offered from the next model request on."""
        self._tools[tool.name] = tool
        self._tools_changed()

    def unregister_tool(self, name: str) -> None:
        """Remove a tool (no error if absent); from the next model request on."""
        if self._tools.pop(name, None) is not None:
            self._tools_changed()

    def add_tool_source(self, source: Callable[[], Awaitable[Sequence[AgentTool]]]) -> None:
        """Tools that come from elsewhere (an MCP server): `source` is awaited once, at the start of the
        next run, before its first model request, and the tools it returns are registered. It reports
        its own failures (an empty list); an exception it raises ends that run like a model error would."""
        self._tool_sources.append(source)

    async def _resolve_tool_sources(self) -> None:
        while self._tool_sources:
            # removed only once its tools are in: a run cancelled while a server starts asks again next run
            tools = await self._tool_sources[0]()
            del self._tool_sources[0]
            for tool in tools:
                self.register_tool(tool)

    def _tools_changed(self) -> None:
        self._tool_definitions_cache = None
        self._built_system_prompt = None
        self._overhead_tokens = None

    def set_model(self, model: Model) -> None:
        """Switch the model (from the next request); records a `model_change` and re-clamps thinking."""
        old = self._model.info
        self._model = model
        if (old.provider, old.id) != (model.info.provider, model.info.id):
            self._session.append_model_change(model.info.provider, model.info.id)
        self.set_thinking_level(self._thinking_level)

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        """Set the thinking level (clamped to the model); records a change only when it changes."""
        clamped = clamp_thinking_level(self._model.info, level)
        if clamped != self._thinking_level:
            self._thinking_level = clamped
            self._session.append_thinking_level_change(clamped)

    # --- queue modes, automatic compaction and retry (this session only) -----------------

    def set_steering_mode(self, mode: QueueMode) -> None:
        """How queued steering is delivered from now on: `one-at-a-time` or `all`."""
        self._steering_mode = mode

    def set_follow_up_mode(self, mode: QueueMode) -> None:
        """How queued follow-ups are delivered from now on: `one-at-a-time` or `all`."""
        self._follow_up_mode = mode

    def set_auto_compaction(self, enabled: bool) -> None:
        """Turn compaction near the context window (and on overflow) on or off for this session."""
        compaction = self._settings.compaction.model_copy(update={"enabled": enabled})
        self._settings = self._settings.model_copy(update={"compaction": compaction})

    @property
    def auto_retry_enabled(self) -> bool:
        """Whether transient provider errors are retried automatically."""
        return self._settings.retry.enabled

    def set_auto_retry(self, enabled: bool) -> None:
        """Turn automatic retries of transient provider errors on or off for this session."""
        retry = self._settings.retry.model_copy(update={"enabled": enabled})
        self._settings = self._settings.model_copy(update={"retry": retry})

    @property
    def is_retrying(self) -> bool:
        """Whether the session is waiting to retry a failed request."""
        return self._retry_wait is not None

    def abort_retry(self) -> bool:
        """Cancel a pending retry wait: the run ends with the error. False when none is pending."""
        if self._retry_wait is None:
            return False
        self._retry_wait.cancel()
        return True

    def record_bash_execution(self, message: BashExecutionMessage) -> None:
        """Add a command the user ran (`!cmd`, RPC `bash`) to the session and the context.

        While a run is active it is held and added once the session settles, so a
        tool call and its result are never separated (Pi's rule).
        """
        if self.is_streaming:
            self._pending_bash.append(message)
            return
        self._session.append_message(message)
        self._messages.append(message)

    def _flush_pending_bash(self) -> None:
        pending, self._pending_bash = self._pending_bash, []
        for message in pending:
            self._session.append_message(message)
            self._messages.append(message)

    # --- context usage and stats -------------------------------------------------------

    def context_usage(self) -> ContextUsage | None:
        """How full the context is; `None` when the model's window is unknown.

        `tokens` and `percent` are `None` after a compaction until a reply reports usage.
        """
        window = self._model.info.context_window
        if window <= 0:
            return None
        if self._usage_unknown:
            return ContextUsage(tokens=None, context_window=window, percent=None)
        tokens = self._context_tokens()
        return ContextUsage(tokens=tokens, context_window=window, percent=tokens / window * 100)

    def stats(self) -> SessionStats:
        """Message counts, tokens and cost over the whole session file, plus context usage."""
        path = self._session.path
        return compute_session_stats(
            self._session.entries,
            session_file=str(path) if path is not None else None,
            session_id=self._session.session_id,
            context_usage=self.context_usage(),
        )

    # --- the settle cycle ------------------------------------------------------------

    def _start_run(self, prompts: list[AgentMessage]) -> asyncio.Task[None]:
        self._idle.clear()
        task = asyncio.get_running_loop().create_task(self._drive(prompts))
        self._run_task = task
        task.add_done_callback(_log_failure)
        return task

    def _threshold_exceeded(self) -> bool:
        settings = self._compaction_settings()
        if not settings.enabled or self._usage_unknown:
            return False
        if not should_compact(self._context_tokens(), self._model.info.context_window, settings):
            return False
        # Compact only when there is history beyond what would be kept verbatim: otherwise
        # nothing can be summarised (and a managed agent would be retired for nothing).
        return sum(estimate_tokens(m) for m in self._messages) > settings.keep_recent_tokens

    async def _drive(self, prompts: list[AgentMessage]) -> None:
        self._retry_attempt = 0
        self._overflow_recovered = False
        try:
            if self._tool_sources:
                await self._resolve_tool_sources()
            if self._threshold_exceeded():
                await self._compact("threshold", will_retry=False)
            while True:
                outcome = await self._run_loop(prompts)
                prompts = []
                last = outcome.last_assistant
                if self._aborting:
                    break
                if outcome.action == "retry":
                    if not await self._wait_for_retry(last):
                        break
                    continue
                if self._retry_attempt > 0:
                    final = last.error_message if last is not None else None
                    self._emit(
                        AutoRetryEndEvent(success=False, attempt=self._retry_attempt, final_error=final)
                    )
                    self._retry_attempt = 0
                if outcome.action == "overflow":
                    self._overflow_recovered = True
                    self._drop_last_error()
                    if await self._compact("overflow", will_retry=True) is not None:
                        continue
                    # No room was made: this run ends with its error, but what was queued meanwhile
                    # (a result delivered during the compaction) still gets its turn below.
                if (
                    last is not None
                    and last.stop_reason not in ("error", "aborted")
                    and self._threshold_exceeded()
                ):
                    await self._compact("threshold", will_retry=False)
                if self._aborting or self._ending:
                    break
                prompts = self._take(self._steering, self._steering_mode)
                while prompts and all(id(m) in self._context_only for m in prompts):
                    for message in prompts:  # deliveries that start no request of their own
                        self._append_now(message)
                    prompts = self._take(self._steering, self._steering_mode)
                prompts = prompts or self._take(self._follow_up, self._follow_up_mode)
                if not prompts:
                    break
        finally:
            if self._retry_attempt > 0:
                self._emit(
                    AutoRetryEndEvent(
                        success=False, attempt=self._retry_attempt, final_error="Retry cancelled"
                    )
                )
                self._retry_attempt = 0
            self._aborting = False
            self._ending = False
            self._flush_pending_bash()
            self._flush_deliveries()
            self._run_task = None
            self._idle.set()
            self._emit(AgentSettledEvent())

    def _drop_last_error(self) -> None:
        if self._messages:
            last = self._messages[-1]
            if isinstance(last, AssistantMessage) and last.stop_reason == "error":
                self._messages.pop()
                self._context_replaced()

    async def _wait_for_retry(self, last: AssistantMessage | None) -> bool:
        """Announce and wait for the next retry; False when aborted meanwhile."""
        self._retry_attempt += 1
        policy = self._retry_policy()
        delay_ms = policy.jittered_delay_ms(self._retry_attempt)
        self._emit(
            AutoRetryStartEvent(
                attempt=self._retry_attempt,
                max_attempts=policy.max_retries,
                delay_ms=delay_ms,
                error_message=(last.error_message if last is not None else None) or "",
            )
        )
        self._drop_last_error()

        async def wait() -> None:
            self._retry_wait = asyncio.current_task()
            try:
                await self._sleep(delay_ms / 1000)
            finally:
                self._retry_wait = None

        return await self._await_step(wait()) is not ABORTED

    # --- compaction -----------------------------------------------------------------

    async def compact(self, custom_instructions: str | None = None) -> CompactionEntry:
        """Summarise the older history now.

        Raises:
            AgentBusyError: a run is active (abort it or wait for idle first).
            CompactionError: nothing to compact, the summary request failed, or it was aborted.
        """
        if not self.is_idle:
            raise AgentBusyError("Cannot compact while the agent is running; abort or wait for idle first.")
        self._compacting = True
        self._idle.clear()
        try:
            entry = await self._compact(
                "manual", will_retry=False, custom_instructions=custom_instructions, strict=True
            )
        finally:
            self._compacting = False
            self._aborting = False
            try:
                self._release_held()
            finally:
                if self._run_task is None:  # a held delivery may have started a run
                    self._idle.set()
        assert entry is not None
        return entry

    def _release_held(self) -> None:
        """Deliver the messages sent during the manual compaction that just ended, in order, as if
        sent now: the first that asks for a turn starts a run, which takes the later ones."""
        held, self._held = self._held, []
        for message, deliver_as, trigger_turn in held:
            self.send_custom_message(message, deliver_as=deliver_as, trigger_turn=trigger_turn)

    async def _compact(
        self,
        reason: CompactionReason,
        *,
        will_retry: bool,
        custom_instructions: str | None = None,
        strict: bool = False,
    ) -> CompactionEntry | None:
        self._emit(CompactionStartEvent(reason=reason))
        settings = self._compaction_settings()

        def fail(message: str, *, aborted: bool = False) -> None:
            self._emit(
                CompactionEndEvent(
                    reason=reason,
                    aborted=aborted,
                    will_retry=False,
                    error_message=None if aborted else message,
                )
            )
            if strict:
                raise CompactionError(message)

        preparation = prepare_compaction(self._session.get_branch(), settings)
        if preparation is None or not (preparation.messages_to_summarize or preparation.turn_prefix_messages):
            fail("Nothing to compact (the session is too short or was just compacted)")
            return None
        try:
            summary = await self._await_step(
                summarize_compaction(
                    self._model,
                    preparation,
                    reserve_tokens=settings.reserve_tokens,
                    custom_instructions=custom_instructions,
                    options=self._stream_options(),
                )
            )
        except CompactionError as exc:
            fail(str(exc))
            return None
        except Exception as exc:
            _log.exception("compaction failed")
            fail(f"Compaction failed: {exc}")
            return None
        if isinstance(summary, Aborted):
            fail("Compaction aborted", aborted=True)
            return None
        entry = self._session.append_compaction(
            summary.summary,
            preparation.first_kept_entry_id,
            preparation.tokens_before,
            details=summary.details,
            usage=summary.usage,
        )
        for response in summary.responses:
            self._latest_by_model[(response.provider, response.model)] = response
        self._messages = list(self._session.build_context().messages)
        self._context_replaced()
        self._usage_unknown = True
        result = CompactionResult(
            summary=summary.summary,
            first_kept_entry_id=preparation.first_kept_entry_id,
            tokens_before=preparation.tokens_before,
            details=summary.details,
            usage=summary.usage,
        )
        self._emit(CompactionEndEvent(reason=reason, result=result, will_retry=will_retry))
        return entry


def _keep_only(queue: deque[AgentMessage], *, deliveries: bool) -> None:
    """Keep in `queue` only its deliveries (custom messages), or only what is not one."""
    kept = [m for m in queue if isinstance(m, CustomMessage) == deliveries]
    queue.clear()
    queue.extend(kept)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        return
    exc = task.exception()
    if isinstance(exc, CorralError):
        # An expected failure (a full disk, a locked session): its message says what to do.
        _log.error("agent run failed: %s", exc)
    elif exc is not None:
        _log.error("agent run failed", exc_info=exc)
