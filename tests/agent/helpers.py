"""Helpers for the agent-loop tests: a planned model, small tools, an event recorder.

`PlannedModel` answers each request with the next planned step (a reply, an
error, or a stream that hangs after a partial text until cancelled) and
records what it was sent, so tests assert on what the model received.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral.agent import AgentEvent, AgentSession, AgentTool, ToolResult, ToolUpdate
from corral.llm import (
    AgentMessage,
    AssistantMessage,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    LlmContext,
    Model,
    ModelInfo,
    StartEvent,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ToolCall,
    ToolCallEndEvent,
    ToolCallStartEvent,
    Usage,
)
from corral.session import SessionManager
from corral.settings import Settings

TIMEOUT = 10.0
"""Bound for every wait in these tests."""


@dataclass
class Reply:
    """A complete reply: text and/or tool calls `(name, args)`."""

    text: str = ""
    calls: Sequence[tuple[str, dict[str, Any]]] = ()
    usage: Usage | None = None


@dataclass
class Fail:
    """A provider error with this message."""

    message: str


@dataclass
class Hang:
    """Stream a partial text, then wait until cancelled."""

    text: str = "partial"


@dataclass
class Gated:
    """Wait for `release` (setting `started` first), then answer with `step`."""

    step: Reply | Fail
    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Request:
    """What one request sent."""

    context: LlmContext
    options: StreamOptions
    messages: list[AgentMessage] = field(default_factory=list)

    def texts(self) -> list[str]:
        """Each message's text (user content, assistant text, tool result text)."""
        out: list[str] = []
        for message in self.messages:
            content = getattr(message, "content", "")
            if isinstance(content, str):
                out.append(content)
            else:
                out.append("".join(b.text for b in content if isinstance(b, TextContent)))
        return out


class PlannedModel(Model):
    """A model answering from a list of planned steps."""

    def __init__(
        self,
        plan: Sequence[Reply | Fail | Hang | Gated] = (),
        *,
        provider: str = "test",
        model_id: str = "planned",
        context_window: int = 200_000,
        reasoning: bool = False,
    ) -> None:
        super().__init__(
            ModelInfo(provider, model_id, "scripted", context_window=context_window, reasoning=reasoning)
        )
        self.plan: list[Reply | Fail | Hang | Gated] = list(plan)
        self.requests: list[Request] = []
        self.request_started = asyncio.Event()
        self._ids = 0

    def _message(self, **fields: Any) -> AssistantMessage:
        return AssistantMessage(api="scripted", provider=self.info.provider, model=self.info.id, **fields)

    async def stream(
        self, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.requests.append(Request(context, options, list(context.messages)))
        self.request_started.set()
        step = self.plan.pop(0) if self.plan else Reply("(plan exhausted)")
        if isinstance(step, Gated):
            step.started.set()
            await step.release.wait()
            step = step.step
        partial = self._message()
        yield StartEvent(partial=partial)
        if isinstance(step, Fail):
            yield ErrorEvent(
                reason="error", error=self._message(stop_reason="error", error_message=step.message)
            )
            return
        if isinstance(step, Hang):
            partial = self._message(content=[TextContent(text=step.text)])
            yield TextStartEvent(partial=partial, content_index=0)
            yield TextDeltaEvent(partial=partial, content_index=0, delta=step.text)
            await asyncio.Event().wait()
            return
        content: list[Any] = []
        if step.text:
            content.append(TextContent(text=step.text))
            partial = self._message(content=list(content))
            yield TextStartEvent(partial=partial, content_index=0)
            yield TextDeltaEvent(partial=partial, content_index=0, delta=step.text)
            yield TextEndEvent(partial=partial, content_index=0, content=step.text)
        for name, args in step.calls:
            self._ids += 1
            call = ToolCall(id=f"call-{self._ids}", name=name, arguments=args)
            content.append(call)
            partial = self._message(content=list(content))
            yield ToolCallStartEvent(partial=partial, content_index=len(content) - 1)
            yield ToolCallEndEvent(partial=partial, content_index=len(content) - 1, tool_call=call)
        usage = step.usage or Usage(input=100, output=10, total_tokens=110)
        final = self._message(content=content, usage=usage, stop_reason="toolUse" if step.calls else "stop")
        yield DoneEvent(reason="toolUse" if step.calls else "stop", message=final)


class EchoTool(AgentTool):
    """Returns its `text` argument."""

    name = "echo"
    description = "Echo the text back."
    prompt_snippet = "Echo text back"
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"text": {"type": "string"}, "times": {"type": "integer"}},
        "required": ["text"],
        "additionalProperties": False,
    }

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        return ToolResult.text(
            params["text"] * int(params.get("times", 1)), details={"echoed": params["text"]}
        )


class GateTool(AgentTool):
    """Waits for its gate; records when it started and finished."""

    description = "Wait for a gate."
    parameters = {"type": "object", "properties": {}}  # noqa: RUF012

    def __init__(self, name: str = "gate") -> None:
        self.name = name
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = False

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return ToolResult.text(f"{self.name} done")


class FailingTool(AgentTool):
    """Raises the given exception."""

    name = "fail"
    description = "Always fails."
    parameters = {"type": "object", "properties": {}}  # noqa: RUF012

    def __init__(self, exc: Exception, name: str = "fail") -> None:
        self.exc = exc
        self.name = name

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        raise self.exc


class Recorder:
    """Collects every event of a session."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


@dataclass
class Harness:
    """A session factory bound to a temp dir."""

    tmp_path: Path

    @property
    def cwd(self) -> Path:
        path = self.tmp_path / "project"
        path.mkdir(exist_ok=True)
        return path

    @property
    def sessions_root(self) -> Path:
        return self.tmp_path / "sessions"

    def new_session(self) -> SessionManager:
        return SessionManager.create(self.cwd, sessions_root=self.sessions_root)

    def agent(
        self,
        model: Model,
        *,
        tools: Sequence[AgentTool] = (),
        session: SessionManager | None = None,
        settings: Settings | None = None,
        sleep: Callable[[float], Any] | None = None,
        system_prompt: str | None = "You are a test agent.",
    ) -> tuple[AgentSession, Recorder]:
        kwargs: dict[str, Any] = {}
        if sleep is not None:
            kwargs["sleep"] = sleep
        agent = AgentSession(
            session=session or self.new_session(),
            model=model,
            thinking_level="off",
            tools=tools,
            cwd=self.cwd,
            settings=settings,
            system_prompt=system_prompt,
            **kwargs,
        )
        recorder = Recorder()
        agent.subscribe(recorder)
        return agent, recorder


async def wait(awaitable: Any) -> Any:
    """Await with the suite's bound."""
    return await asyncio.wait_for(awaitable, TIMEOUT)


class SleepRecorder:
    """An instant sleep that records the requested delays."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
