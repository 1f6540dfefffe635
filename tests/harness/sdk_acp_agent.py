"""A model-free ACP agent written with the protocol's Python SDK (`agent-client-protocol`), the
reference implementation: the SDK validates every message corral's client sends against ACP's schema.

Prompt words: `TOOL` (a read tool call and its result), `PERMISSION` (asks; answers with the outcome),
`SLOW` (writes `$SDK_ACP_MARK`, then waits for `session/cancel`); otherwise a thought, a plan and two chunks.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import acp
from acp import helpers
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)


class SdkAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="sdk-fake", version="1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = f"sdk-{len(self.cancelled) + 1}"
        self.cancelled[session_id] = asyncio.Event()
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled[session_id].set()

    async def _send(self, session_id: str, update: Any) -> None:
        await self.conn.session_update(session_id=session_id, update=update)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        cancel = self.cancelled[session_id]
        cancel.clear()
        if "SLOW" in text:
            await self._send(session_id, helpers.update_agent_message_text("working slowly..."))
            mark = os.environ.get("SDK_ACP_MARK")
            if mark:
                Path(mark).write_text("prompted")
            await cancel.wait()
            await self._send(session_id, helpers.update_agent_message_text(" cancelled by the client"))
            return PromptResponse(stop_reason="cancelled")
        if "PERMISSION" in text:
            await self._send(
                session_id,
                helpers.start_tool_call("call-perm", "touch created.txt", kind="execute", status="pending"),
            )
            answer = await self.conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id="call-perm", title="touch created.txt"),
                options=[
                    PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once"),
                    PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
                ],
            )
            outcome = answer.outcome
            chosen = getattr(outcome, "option_id", None) or outcome.outcome
            await self._send(session_id, helpers.update_tool_call("call-perm", status="failed"))
            await self._send(session_id, helpers.update_agent_message_text(f"outcome: {chosen}"))
            return PromptResponse(stop_reason="end_turn")
        if "TOOL" in text:
            await self._send(session_id, helpers.update_agent_message_text("Reading the file."))
            await self._send(
                session_id,
                helpers.start_tool_call(
                    "call-1",
                    "Read notes.txt",
                    kind="read",
                    status="in_progress",
                    raw_input={"path": "notes.txt"},
                ),
            )
            await self._send(
                session_id,
                helpers.update_tool_call(
                    "call-1",
                    status="completed",
                    content=[helpers.tool_content(helpers.text_block("the notes say 42"))],
                ),
            )
            await self._send(session_id, helpers.update_agent_message_text("The notes say 42."))
            return PromptResponse(stop_reason="end_turn")
        await self._send(session_id, helpers.update_agent_thought_text("Let me think."))
        await self._send(session_id, helpers.update_plan([helpers.plan_entry("answer", priority="high")]))
        await self._send(session_id, helpers.update_agent_message_text("Hello from "))
        await self._send(session_id, helpers.update_agent_message_text("the SDK agent."))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(SdkAgent()))
