"""One run of the agent loop: turns of model requests and tool batches.

The order is Pi's (`runLoop`), with the later steering rule: steering messages
are delivered after the whole tool batch has finished, before the next model
request, and no tool call is skipped.

1. `agent_start`, `turn_start`, then start/end for each prompt message.
2. Take steering messages queued meanwhile as pending messages.
3. While the last reply had tool calls or messages are pending: inject the
   pending messages, stream the reply (an `error` or `aborted` reply ends the
   run), run its tool calls, `turn_end`, take queued steering messages.
4. When the loop would stop, take follow-up messages and go on with them;
   otherwise `agent_end`.

Tool calls are prepared in call order (unknown tool, schema validation), run
concurrently, and their results enter the context in call order.

Abort is task cancellation: every awaited step (the model stream, each tool,
a retry wait, a summary request) runs as a task in `_active`; `abort()` sets
`_aborting` and cancels them. A cancelled stream leaves its last partial
message, which is kept with stop reason `aborted`; a cancelled tool gets an
error result (`Command aborted` for bash, `Operation aborted` otherwise) so
every tool call in the transcript has a result.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from corral import _tracing
from corral.llm import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    LlmContext,
    Model,
    RateLimitWait,
    StreamOptions,
    TextContent,
    ThinkingLevel,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
    rate_limit_listener,
)
from corral.session import convert_to_llm

from ._events import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ModelNoticeEvent,
    QueueUpdateEvent,
    RateLimitWaitEvent,
    ToolExecutionEndEvent,
    ToolExecutionResult,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from ._gate import ToolApprover, ToolCheck, ToolGate, ToolVerdict
from ._guard import GO, GuardVerdict, RequestEstimate, RequestGuard
from ._tool import AgentTool, ToolError, ToolResult
from ._validation import ToolArgumentsError, validate_tool_arguments

if TYPE_CHECKING:
    from pathlib import Path

    from corral._tracing._records import AttributeValue, Span
    from corral.session import SessionManager

__all__ = [
    "ABORTED",
    "SEEN_REFERENCE_KEY",
    "Aborted",
    "LoopMixin",
    "RunAction",
    "RunOutcome",
    "message_text",
    "seen_reference",
    "to_agent_message",
]

_log = logging.getLogger("corral.agent")

_T = TypeVar("_T")

RunAction = Literal["retry", "overflow"]
"""What the session does after a run on its own: retry a transient error, or compact and retry."""

ABORTED_REQUEST_MESSAGE = "Request was aborted"


class Aborted:
    """Marker: an awaited step was cancelled by `abort()`."""


ABORTED = Aborted()


@dataclass
class RunOutcome:
    """How one run ended."""

    last_assistant: AssistantMessage | None
    action: RunAction | None


@dataclass
class _StreamState:
    partial: AssistantMessage | None = None
    started: bool = False


def message_text(message: AgentMessage) -> str:
    """The text of a user or custom message (for queue listings)."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


def _aborted_tool_text(tool_name: str, partial: ToolResult | None) -> str:
    notice = "Command aborted" if tool_name == "bash" else "Operation aborted"
    if partial is not None:
        text = "".join(block.text for block in partial.content if isinstance(block, TextContent)).rstrip()
        if text:
            return f"{text}\n\n{notice}"
    return notice


class LoopMixin:
    """The run engine of `AgentSession` (state is declared here, set up by the session)."""

    _session: SessionManager
    _cwd: Path
    _model: Model
    _thinking_level: ThinkingLevel
    _tools: dict[str, AgentTool]
    _messages: list[AgentMessage]
    _steering: deque[AgentMessage]
    _follow_up: deque[AgentMessage]
    _context_only: set[int]
    _steering_mode: str
    _follow_up_mode: str
    _listeners: list[Callable[[AgentEvent], None]]
    _active: set[asyncio.Task[Any]]
    _aborting: bool
    _batch_terminates: bool = False
    _ending: bool = False
    _rate_limit_wait: RateLimitWaitEvent | None = None
    _tool_definitions_cache: list[ToolDefinition] | None
    _llm_cache: list[AgentMessage]
    _llm_cache_owner: list[AgentMessage] | None
    _llm_cache_count: int
    _llm_unseen: list[tuple[int, str]]
    """Cache positions of messages with a `context_reference` the model has not replied after yet."""
    _agent_name: str | None
    trace_anchor: Span | None
    _turn_span: Span | None = None
    _turn_token: object = None
    _turn_index: int = 0
    _request_guard: RequestGuard | None = None
    _tool_gate: ToolGate | None = None
    _tool_approver: ToolApprover | None = None
    _final_turn: bool = False
    _noticed_models: set[str]
    """The models this session has shown a `ModelNoticeEvent` for (set up by the session)."""
    _reply_cap: int | None = None
    """The next request's reply cap (`max_tokens`), set for a budget's final turn."""

    # --- hooks implemented by the session ---------------------------------

    def _request_estimate(self) -> RequestEstimate:
        """What the next model request is expected to use (for the request guard)."""
        raise NotImplementedError

    def _system_prompt_text(self) -> str:
        raise NotImplementedError

    def _stream_options(self) -> StreamOptions:
        raise NotImplementedError

    def _decide_after_run(self, last: AssistantMessage | None) -> RunAction | None:
        raise NotImplementedError

    def _on_assistant_end(self, message: AssistantMessage) -> None:
        raise NotImplementedError

    def _prompt_misfit(self) -> str | None:
        """Why no request can fit the window (the system prompt and tools alone overflow it), or `None`."""
        raise NotImplementedError

    # --- events -------------------------------------------------------------

    def _emit(self, event: AgentEvent) -> None:
        for listener in tuple(self._listeners):
            try:
                listener(event)
            except Exception:
                _log.exception("agent event listener failed on %s", event.type)

    def _emit_queue_update(self) -> None:
        self._emit(
            QueueUpdateEvent(
                steering=[message_text(m) for m in self._steering],
                follow_up=[message_text(m) for m in self._follow_up],
            )
        )

    def _end_message(self, message: AgentMessage) -> None:
        """Persist a finished message, add it to the context and emit `message_end`."""
        self._session.append_message(message)
        self._messages.append(message)
        if isinstance(message, AssistantMessage):
            self._on_assistant_end(message)
        self._emit(MessageEndEvent(message=message))

    def _add_message(self, message: AgentMessage, added: list[AgentMessage]) -> None:
        self._context_only.discard(id(message))
        self._emit(MessageStartEvent(message=message))
        self._end_message(message)
        added.append(message)

    # --- abortable steps ----------------------------------------------------

    async def _await_step(self, step: Coroutine[Any, Any, _T]) -> _T | Aborted:
        """Run `step` as a task `abort()` can cancel; `ABORTED` when it was.

        Exceptions of the step propagate. If the caller itself is cancelled
        (not by `abort()`), the step is cancelled too and the cancellation
        propagates.
        """
        if self._aborting:
            step.close()
            return ABORTED
        task = asyncio.ensure_future(step)
        self._active.add(task)
        try:
            await asyncio.wait((task,))
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            self._active.discard(task)
        if task.cancelled():
            return ABORTED
        return task.result()

    # --- traces (no-ops while tracing is off) --------------------------------------

    def _trace_agent(self) -> str:
        return self._agent_name or "lead"

    def _turn_started(self) -> None:
        self._emit(TurnStartEvent())
        tracer = _tracing.active
        if tracer is None:
            return
        self._turn_finished(None)
        self._turn_index += 1
        # Under the agent's own span, whichever task runs the loop (a delivery may wake the lead from
        # inside another agent's task).
        self._turn_span = tracer.start(
            "corral.turn",
            {"corral.agent": self._trace_agent(), "corral.turn": self._turn_index},
            self.trace_anchor,
        )
        self._turn_token = tracer.activate(self._turn_span)

    def _turn_finished(self, last: AssistantMessage | None) -> None:
        current = self._turn_span
        if current is None:
            return
        self._turn_span = None
        tracer = _tracing.active
        if tracer is not None:
            tracer.deactivate(self._turn_token)
        if last is not None and last.stop_reason in ("error", "aborted"):
            current.fail(last.error_message or last.stop_reason)
        current.end()

    # --- queues ---------------------------------------------------------------

    def _take(self, queue: deque[AgentMessage], mode: str) -> list[AgentMessage]:
        """The queued messages for the next turn boundary, in queue order.

        `all` takes the whole queue. `one-at-a-time` paces what people typed: it takes at
        most one user message, together with every program message (`CustomMessage`:
        deliveries such as reports and results) queued before the next user message — so
        deliveries that arrived while the agent was busy reach it together, each in full,
        in order, at one boundary instead of costing one turn each.
        """
        if not queue:
            return []
        if mode == "all":
            taken = list(queue)
            queue.clear()
        else:
            taken = []
            typed = False
            while queue and (isinstance(queue[0], CustomMessage) or not typed):
                message = queue.popleft()
                typed = typed or not isinstance(message, CustomMessage)
                taken.append(message)
        self._emit_queue_update()
        return taken

    # --- one run --------------------------------------------------------------

    def _llm_messages(self) -> list[AgentMessage]:
        """The context as sent to the model: `convert_to_llm`, without failed or aborted replies.

        A custom message whose `details` carry a `context_reference` string (`SEEN_REFERENCE_KEY`)
        is sent in full until the model has replied after it once; from then on that string
        stands in its place (the session keeps the full message).

        Converted incrementally: messages are only appended between requests;
        any other change to `_messages` calls `_context_replaced()`.
        """
        cache = self._llm_cache
        unseen = self._llm_unseen
        if self._llm_cache_owner is not self._messages or self._llm_cache_count > len(self._messages):
            cache.clear()
            unseen.clear()
            self._llm_cache_owner = self._messages
            self._llm_cache_count = 0
        fresh = self._messages[self._llm_cache_count :]
        replied = False
        if fresh:
            for source in fresh:
                reference = seen_reference(source)
                for message in convert_to_llm((source,)):
                    if isinstance(message, AssistantMessage):
                        if message.stop_reason in ("error", "aborted"):
                            continue
                        replied = True
                    elif reference is not None:
                        unseen.append((len(cache), reference))
                    cache.append(message)
            self._llm_cache_count = len(self._messages)
        if replied and unseen:
            last = next(i for i in range(len(cache) - 1, -1, -1) if isinstance(cache[i], AssistantMessage))
            for index, reference in [u for u in unseen if u[0] < last]:
                message = cache[index]
                cache[index] = message.model_copy(update={"content": [TextContent(text=reference)]})
            unseen[:] = [u for u in unseen if u[0] >= last]
        return list(cache)

    def _context_replaced(self) -> None:
        """Forget the converted context (after dropping or replacing messages)."""
        self._llm_cache_owner = None

    def _tool_definitions(self) -> list[ToolDefinition]:
        if self._tool_definitions_cache is None:
            self._tool_definitions_cache = [tool.definition() for tool in self._tools.values()]
        return self._tool_definitions_cache

    async def _run_loop(self, prompts: Sequence[AgentMessage]) -> RunOutcome:
        try:
            return await self._run_turns(prompts)
        finally:
            self._turn_finished(None)

    async def _run_turns(self, prompts: Sequence[AgentMessage]) -> RunOutcome:
        added: list[AgentMessage] = []
        last: AssistantMessage | None = None
        self._emit(AgentStartEvent())
        self._turn_started()
        for message in prompts:
            self._add_message(message, added)
        pending = self._take(self._steering, self._steering_mode)
        first_turn = True
        while True:
            more_tool_calls = True
            while more_tool_calls or pending:
                if not first_turn:
                    self._turn_started()
                first_turn = False
                for message in pending:
                    self._add_message(message, added)
                pending = []
                estimate, verdict = self._guard_before()
                if verdict.action == "stop":
                    return self._end_run(added, last)
                if verdict.action in ("notice", "final"):
                    notice = CustomMessage(
                        custom_type=GuardVerdict.NOTICE_TYPE, content=verdict.text, display=True
                    )
                    self._add_message(notice, added)
                    self._final_turn = verdict.action == "final"
                    if self._final_turn:
                        self._reply_cap = verdict.max_output_tokens
                last = await self._stream_reply()
                added.append(last)
                self._guard_after(last, estimate)
                if last.stop_reason in ("error", "aborted"):
                    self._emit(TurnEndEvent(message=last, tool_results=[]))
                    self._turn_finished(last)
                    return self._end_run(added, last)
                calls = last.tool_calls
                more_tool_calls = bool(calls)
                self._batch_terminates = False
                if self._final_turn:
                    # The final turn of an exhausted budget: its tool calls are answered, not run.
                    self._ending = True
                    results = self._refuse_tools(calls) if calls else []
                else:
                    results = await self._execute_tools(calls) if calls else []
                if self._batch_terminates or self._ending:
                    more_tool_calls = False
                added.extend(results)
                self._emit(TurnEndEvent(message=last, tool_results=results))
                self._turn_finished(last)
                if self._aborting or self._ending:
                    return self._end_run(added, last)
                pending = self._take(self._steering, self._steering_mode)
                if not more_tool_calls and pending and all(id(m) in self._context_only for m in pending):
                    for message in pending:  # deliveries that start no request of their own
                        self._add_message(message, added)
                    pending = []
            pending = self._take(self._follow_up, self._follow_up_mode)
            if not pending:
                break
        return self._end_run(added, last)

    def _guard_before(self) -> tuple[RequestEstimate | None, GuardVerdict]:
        """Ask the request guard about the next request (no guard: it goes out)."""
        guard = self._request_guard
        if guard is None:
            return None, GO
        estimate = self._request_estimate()
        try:
            return estimate, guard.before_request(estimate)
        except Exception:
            _log.exception("request guard failed before a request")
            return estimate, GO

    def _guard_after(self, reply: AssistantMessage, estimate: RequestEstimate | None) -> None:
        guard = self._request_guard
        if guard is None or estimate is None:
            return
        try:
            guard.after_reply(reply, estimate)
        except Exception:
            _log.exception("request guard failed after a reply")

    def _refuse_tools(self, calls: list[ToolCall]) -> list[ToolResultMessage]:
        """Error results for tool calls that are not run (the final turn of an exhausted budget)."""
        messages: list[ToolResultMessage] = []
        for call in calls:
            self._emit(
                ToolExecutionStartEvent(tool_call_id=call.id, tool_name=call.name, args=call.arguments)
            )
            result = ToolResult.text(
                f"{call.name} was not run: the budget is exhausted and this final turn has no tools.",
                is_error=True,
            )
            self._emit_tool_end(call, result)
            message = ToolResultMessage(
                tool_call_id=call.id, tool_name=call.name, content=list(result.content), is_error=True
            )
            self._emit(MessageStartEvent(message=message))
            self._end_message(message)
            messages.append(message)
        return messages

    def _end_run(self, added: list[AgentMessage], last: AssistantMessage | None) -> RunOutcome:
        self._final_turn = False
        self._reply_cap = None
        action = None if self._aborting else self._decide_after_run(last)
        self._emit(AgentEndEvent(messages=added, will_retry=action is not None))
        return RunOutcome(last_assistant=last, action=action)

    # --- the model request ----------------------------------------------------

    @property
    def rate_limit_wait(self) -> RateLimitWaitEvent | None:
        """The model request's wait for its endpoint's rate limiter, while it waits (else `None`)."""
        return self._rate_limit_wait

    def _on_rate_limit(self, wait: RateLimitWait) -> None:
        until = None if wait.until is None else int(wait.until * 1000)
        previous = self._rate_limit_wait
        since = previous.since_ms if previous is not None else int(time.time() * 1000)
        event = RateLimitWaitEvent(
            waiting=wait.waiting, endpoint=wait.endpoint, reason=wait.reason, until_ms=until, since_ms=since
        )
        self._rate_limit_wait = event if wait.waiting else None
        self._emit(event)

    async def _consume_stream(
        self, context: LlmContext, options: StreamOptions, state: _StreamState
    ) -> AssistantMessage | None:
        try:
            with rate_limit_listener(self._on_rate_limit):
                return await self._consume_events(context, options, state)
        finally:
            if self._rate_limit_wait is not None:
                self._on_rate_limit(RateLimitWait(False, self._rate_limit_wait.endpoint))

    def _notice_model_once(self) -> None:
        """Emit a `ModelNoticeEvent` the first time this session sends to a deprecated model.

        Called at a request's first event: a deferred provider model (`llm/_deferred.py`) is built by
        then, so its lifecycle includes what the SDK's catalogue says, not only the built-in table.
        """
        lifecycle = self._model.lifecycle
        if lifecycle is None:
            return
        ref = self._model.info.ref
        if ref in self._noticed_models:
            return
        self._noticed_models.add(ref)
        self._emit(ModelNoticeEvent(model=ref, kind=lifecycle.status(), text=lifecycle.notice(ref)))

    async def _consume_events(
        self, context: LlmContext, options: StreamOptions, state: _StreamState
    ) -> AssistantMessage | None:
        first = True
        async for event in self._model.stream(context, options):
            if first:
                first = False
                self._notice_model_once()
            kind = event.type
            if kind == "done":
                return event.message  # type: ignore[union-attr]
            if kind == "error":
                return event.error  # type: ignore[union-attr]
            partial: AssistantMessage = event.partial  # type: ignore[union-attr]
            state.partial = partial
            if not state.started:
                state.started = True
                self._emit(MessageStartEvent(message=partial))
            if kind != "start":
                self._emit(MessageUpdateEvent(message=partial, assistant_message_event=event))
        return None

    def _blank_reply(self, stop_reason: Literal["error", "aborted"], error_message: str) -> AssistantMessage:
        info = self._model.info
        return AssistantMessage(
            api=info.api,
            provider=info.provider,
            model=info.id,
            stop_reason=stop_reason,
            error_message=error_message,
        )

    async def _stream_reply(self) -> AssistantMessage:
        misfit = self._prompt_misfit()
        if misfit is not None:
            # Sending it would only come back as an overflow: fail now, saying why.
            failed = self._blank_reply("error", misfit)
            self._emit(MessageStartEvent(message=failed))
            self._end_message(failed)
            return failed
        context = LlmContext(
            system_prompt=self._system_prompt_text(),
            messages=self._llm_messages(),
            tools=self._tool_definitions(),
        )
        state = _StreamState()
        tracer = _tracing.active
        request: Span | None = None
        token: object = None
        if tracer is not None:
            request = tracer.start(f"chat {self._model.info.id}", self._request_attributes())
            token = tracer.activate(request)  # the stream's task (and pydantic-ai's spans) run under it
        try:
            options = self._stream_options()
            if self._reply_cap is not None:
                options = replace(options, max_tokens=self._reply_cap)
            outcome = await self._await_step(self._consume_stream(context, options, state))
        except Exception as exc:
            _log.exception("model stream raised")
            outcome = self._blank_reply("error", str(exc) or type(exc).__name__)
        finally:
            if tracer is not None:
                tracer.deactivate(token)
        if isinstance(outcome, Aborted):
            if state.partial is not None:
                final = state.partial.model_copy(
                    update={"stop_reason": "aborted", "error_message": ABORTED_REQUEST_MESSAGE}
                )
            else:
                final = self._blank_reply("aborted", ABORTED_REQUEST_MESSAGE)
        elif outcome is None:
            final = self._blank_reply("error", "The model's stream ended without a final message")
        else:
            final = outcome
        if not state.started:
            self._emit(MessageStartEvent(message=final))
        if request is not None:
            _end_request_span(request, final)
        self._end_message(final)
        return final

    def _request_attributes(self) -> dict[str, AttributeValue]:
        info = self._model.info
        return {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": info.provider,
            "gen_ai.request.model": info.id,
            "corral.agent": self._trace_agent(),
        }

    # --- tools ------------------------------------------------------------------

    async def _run_tool(
        self,
        call: ToolCall,
        tool: AgentTool,
        args: dict[str, Any],
        partials: dict[int, ToolResult],
        abort_texts: dict[int, str],
        index: int,
    ) -> ToolResult:
        def on_update(partial: ToolResult) -> None:
            partials[index] = partial
            self._emit(
                ToolExecutionUpdateEvent(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    args=call.arguments,
                    partial_result=ToolExecutionResult(
                        content=list(partial.content), details=partial.details
                    ),
                )
            )

        tracer = _tracing.active
        traced: Span | None = None
        token: object = None
        if tracer is not None:
            traced = tracer.start(
                f"execute_tool {call.name}",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call.name,
                    "gen_ai.tool.call.id": call.id,
                    "corral.agent": self._trace_agent(),
                },
            )
            token = tracer.activate(traced)  # what the tool starts (a delegated agent) runs under it
        gate = self._tool_gate
        check: ToolCheck | None = None
        try:
            context = ""
            if gate is not None:
                check = self._tool_check(call.id, call.name, args)
                verdict = await self._gate_before(gate, check)
                context = verdict.context
                if verdict.decision != "allow":
                    if traced is not None:
                        traced.update({"corral.tool.decision": verdict.decision})
                        traced.fail(verdict.reason[:500] or "denied")
                    result = _with_context(
                        ToolResult.text(f"{call.name} was not run: {verdict.reason}", is_error=True), context
                    )
                    self._emit_tool_end(call, result)
                    return result
            try:
                result = await tool.execute(call.id, args, on_update)
            except asyncio.CancelledError as exc:
                from .tools import aborted_output

                text = aborted_output(exc)
                if text is not None:
                    abort_texts[index] = text
                if traced is not None:
                    traced.fail("aborted")
                raise
            except ToolError as exc:
                result = ToolResult.text(str(exc), details=exc.details, is_error=True)
            except Exception as exc:
                result = ToolResult.text(str(exc) or type(exc).__name__, is_error=True)
            if traced is not None and result.is_error:
                traced.fail(_result_text(result)[:500] or "tool error")
            if gate is not None and check is not None:
                context = _joined(context, await self._gate_after(gate, check, result))
            result = _with_context(result, context)
        finally:
            if traced is not None and tracer is not None:
                tracer.deactivate(token)
                traced.end()
        self._emit_tool_end(call, result)
        return result

    def _tool_check(self, call_id: str, tool_name: str, args: dict[str, Any]) -> ToolCheck:
        return ToolCheck(call_id, tool_name, args, self._session.session_id, self._session.path, self._cwd)

    async def check_tool_call(self, call_id: str, tool_name: str, args: dict[str, Any]) -> ToolVerdict | None:
        """What this agent's tool gate says of a call made on its behalf outside its loop (a program
        calling the lead's tools, `corral.lead.Lead.call`), as the loop asks before each call it runs:
        `None` when it has no gate. A deny's reason is what to tell the caller."""
        gate = self._tool_gate
        return (
            None
            if gate is None
            else await self._gate_before(gate, self._tool_check(call_id, tool_name, args))
        )

    async def _gate_before(self, gate: ToolGate, check: ToolCheck) -> ToolVerdict:
        """The gate's verdict on `check`, with an `ask` answered by the approver (none: denied)."""
        try:
            verdict = await gate.before_tool(check)
        except Exception as exc:
            _log.exception("tool gate failed before %s", check.tool_name)
            return ToolVerdict("deny", f"the tool policy could not be checked ({exc or type(exc).__name__})")
        if verdict.decision != "ask":
            return verdict
        approver = self._tool_approver
        asked = verdict.reason or "the tool policy asks for approval"
        if approver is None:
            return ToolVerdict(
                "deny",
                f"{asked}, and no one can approve it here (no owner or person to ask), so it was denied",
                verdict.context,
            )
        try:
            answer = await approver(check, verdict)
        except Exception as exc:
            _log.exception("tool approver failed on %s", check.tool_name)
            return ToolVerdict(
                "deny", f"{asked}; asking failed ({exc or type(exc).__name__})", verdict.context
            )
        if answer.decision == "allow":
            return ToolVerdict("allow", answer.reason, _joined(verdict.context, answer.context))
        reason = answer.reason or f"{asked}, and it was not approved"
        return ToolVerdict("deny", reason, _joined(verdict.context, answer.context))

    async def _gate_after(self, gate: ToolGate, check: ToolCheck, result: ToolResult) -> str:
        try:
            return await gate.after_tool(check, result) or ""
        except Exception:
            _log.exception("tool gate failed after %s", check.tool_name)
            return ""

    def _emit_tool_end(self, call: ToolCall, result: ToolResult) -> None:
        self._emit(
            ToolExecutionEndEvent(
                tool_call_id=call.id,
                tool_name=call.name,
                result=ToolExecutionResult(content=list(result.content), details=result.details),
                is_error=result.is_error,
            )
        )

    def _prepare_tool(self, call: ToolCall) -> tuple[AgentTool, dict[str, Any]] | ToolResult:
        tool = self._tools.get(call.name)
        if tool is None:
            return ToolResult.text(f"Tool {call.name} not found", is_error=True)
        if call.raw_arguments is not None:
            return ToolResult.text(
                f"The arguments of this {call.name} call are not a valid JSON object, so it did not run. "
                f"Arguments received: {call.raw_arguments}\n"
                "Call the tool again with its arguments as one JSON object matching its schema.",
                is_error=True,
            )
        try:
            return tool, validate_tool_arguments(call.name, tool.parameters, call.arguments)
        except ToolArgumentsError as exc:
            return ToolResult.text(str(exc), is_error=True)

    async def _execute_tools(self, calls: list[ToolCall]) -> list[ToolResultMessage]:
        results: list[ToolResult | None] = [None] * len(calls)
        tasks: dict[int, asyncio.Task[ToolResult]] = {}
        partials: dict[int, ToolResult] = {}
        abort_texts: dict[int, str] = {}
        for index, call in enumerate(calls):
            self._emit(
                ToolExecutionStartEvent(tool_call_id=call.id, tool_name=call.name, args=call.arguments)
            )
            prepared = self._prepare_tool(call)
            if isinstance(prepared, ToolResult):
                results[index] = prepared
                self._emit_tool_end(call, prepared)
            elif not self._aborting:
                tool, args = prepared
                tasks[index] = asyncio.ensure_future(
                    self._run_tool(call, tool, args, partials, abort_texts, index)
                )
        if tasks:
            self._active.update(tasks.values())
            try:
                await asyncio.wait(tasks.values())
            except asyncio.CancelledError:
                for task in tasks.values():
                    task.cancel()
                raise
            finally:
                self._active.difference_update(tasks.values())

        finished = [
            result if result is not None else _done_result(tasks.get(index))
            for index, result in enumerate(results)
        ]
        self._batch_terminates = bool(finished) and all(r is not None and r.terminate for r in finished)
        messages: list[ToolResultMessage] = []
        for index, call in enumerate(calls):
            result = results[index]
            if result is None:
                ran = tasks.get(index)
                if ran is None or ran.cancelled():
                    text = abort_texts.get(index) or _aborted_tool_text(call.name, partials.get(index))
                    result = ToolResult.text(text, is_error=True)
                    self._emit_tool_end(call, result)
                else:
                    result = ran.result()
            fields: dict[str, Any] = {
                "tool_call_id": call.id,
                "tool_name": call.name,
                "content": list(result.content),
                "is_error": result.is_error,
            }
            if result.details is not None:
                fields["details"] = result.details
            message = ToolResultMessage(**fields)
            self._emit(MessageStartEvent(message=message))
            self._end_message(message)
            messages.append(message)
        return messages


def _joined(*texts: str) -> str:
    return "\n\n".join(text for text in texts if text)


def _with_context(result: ToolResult, context: str) -> ToolResult:
    """`result` with the gate's `context` (hooks' `additionalContext`) as one more text block, set
    apart by a blank line (providers join a result's text blocks)."""
    if not context:
        return result
    return replace(result, content=[*result.content, TextContent(text=f"\n\n{context}")])


def _result_text(result: ToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def _end_request_span(span: Span, final: AssistantMessage) -> None:
    """Record a model request's outcome on its span (GenAI semantic-convention attributes)."""
    usage = final.usage
    outcome: dict[str, AttributeValue] = {
        "gen_ai.response.model": final.model,
        "gen_ai.usage.input_tokens": usage.input + usage.cache_read + usage.cache_write,
        "gen_ai.usage.output_tokens": usage.output,
        "corral.cost_usd": usage.cost.total,
        "corral.stop_reason": final.stop_reason,
    }
    if usage.cache_read:
        outcome["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read
    span.update(outcome)  # one call: the OpenTelemetry SDK takes its span lock once
    if final.stop_reason in ("error", "aborted"):
        span.fail(final.error_message or final.stop_reason)
    span.end()


def _done_result(task: asyncio.Task[ToolResult] | None) -> ToolResult | None:
    if task is None or task.cancelled() or task.exception() is not None:
        return None
    return task.result()


def to_agent_message(value: str | AgentMessage) -> AgentMessage:
    """A prompt, steering or follow-up value as a message (text becomes a user message)."""
    if isinstance(value, str):
        # An array of blocks, as Pi writes a prompt.
        return UserMessage(content=[TextContent(text=value)])
    return value


SEEN_REFERENCE_KEY = "context_reference"
"""The `details` key of a custom message's short stand-in, sent instead of it once the model replied after it."""


def seen_reference(message: AgentMessage) -> str | None:
    """A custom message's `context_reference`, when it has one."""
    if isinstance(message, CustomMessage) and isinstance(message.details, dict):
        reference = message.details.get(SEEN_REFERENCE_KEY)
        if isinstance(reference, str):
            return reference
    return None
