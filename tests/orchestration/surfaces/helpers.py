"""A fake controller that records calls, and a minimal caller, for the surface tests.

The surfaces are adapters: these tests pin what they validate, which one
controller method they call, and how they shape results and errors. A fake
controller (instead of the real one) is what lets a test prove that a bad
call reached no controller method at all.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral.llm import AssistantMessage, CustomMessage, ToolCall
from corral.orchestration.agents.results import (
    CloseResult,
    DelegateResult,
    InspectResult,
    ListResult,
    ReplyResult,
    SteerResult,
    TranscriptResult,
)
from corral.orchestration.kernel._caller import Caller

TIMEOUT = 10.0


@dataclass(frozen=True)
class AskOutcome:
    ask_id: str
    assignment_request_id: str


@dataclass
class FakeController:
    """Records `(method, params)` per call; raises `fail` when set."""

    calls: list[tuple[str, Any]] = field(default_factory=list)
    fail: BaseException | None = None
    list_result: ListResult = field(default_factory=lambda: ListResult(agents=[], agent_definitions=[]))
    inspect_output: str | None = "line 1\nline 2"
    transcript_text: str = "user:\nhello\n\nassistant:\nhi"

    def _record(self, method: str, params: Any) -> None:
        self.calls.append((method, params))
        if self.fail is not None:
            raise self.fail

    async def list(self, caller: Caller, params: Any) -> ListResult:
        self._record("list", params)
        return self.list_result

    async def delegate(self, caller: Caller, params: Any) -> DelegateResult:
        self._record("delegate", params)
        return DelegateResult(
            "delegate",
            params.label or params.definition,
            params.definition,
            "owner-1",
            "inproc-1",
            "sess-1",
            "/tmp/s.jsonl",
            "req-1",
        )

    async def continue_(self, caller: Caller, params: Any) -> DelegateResult:
        self._record("continue_", params)
        return DelegateResult(
            "continue", "scout", "scout", "owner-1", "inproc-2", "sess-1", "/tmp/s.jsonl", "req-2"
        )

    async def steer(self, caller: Caller, params: Any) -> SteerResult:
        self._record("steer", params)
        return SteerResult("steer", params.agent, "scout", "req-3", "sess-1", "req-1")

    async def interrupt(self, caller: Caller, params: Any) -> SteerResult:
        self._record("interrupt", params)
        return SteerResult("interrupt", params.agent, "scout", "req-4", "sess-1", "req-1")

    async def reply(self, caller: Caller, params: Any) -> ReplyResult:
        self._record("reply", params)
        return ReplyResult(params.agent, "scout", "req-5", "ask-1", "req-1", "sess-1")

    async def close(self, caller: Caller, params: Any) -> CloseResult:
        self._record("close", params)
        return CloseResult(params.agent, "scout")

    async def inspect(self, caller: Caller, params: Any) -> InspectResult:
        self._record("inspect", params)
        return InspectResult(
            params.agent,
            "scout",
            "sess-1",
            "inproc-1",
            1700000000000,
            False,
            recent_output=self.inspect_output,
            process=[{"pid": 42, "argv0": "sleep", "cmdline": "sleep 30"}],
        )

    async def transcript(self, caller: Caller, params: Any) -> TranscriptResult:
        self._record("transcript", params)
        return TranscriptResult(params.agent, "scout", "sess-1", self.transcript_text, False)

    async def ask_owner(self, agent_ctx: Any, params: Any) -> AskOutcome:
        self._record("ask_owner", params)
        return AskOutcome("ask-9", "req-1")


@dataclass
class FakeAgent:
    """Stands in for an AgentSession where a surface only reads messages and steers."""

    cwd: Path = Path("/tmp")
    messages: list[Any] = field(default_factory=list)
    sent: list[tuple[CustomMessage, str]] = field(default_factory=list)

    def send_custom_message(
        self, message: CustomMessage, *, deliver_as: str = "steer", trigger_turn: bool = False
    ) -> None:
        self.sent.append((message, deliver_as))

    def assistant_with_calls(self, *ids: str, name: str = "agent") -> None:
        self.messages.append(
            AssistantMessage(
                content=[ToolCall(id=i, name=name, arguments={}) for i in ids],
                api="scripted",
                provider="scripted",
                model="m",
                stop_reason="toolUse",
            )
        )


def fake_caller(agent: FakeAgent | None = None) -> Caller:
    return Caller(agent or FakeAgent(), scope="lead")  # type: ignore[arg-type]


async def wait(awaitable: Any) -> Any:
    return await asyncio.wait_for(awaitable, TIMEOUT)
