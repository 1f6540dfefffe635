"""A model-free ACP agent written with the protocol's Python SDK (`agent-client-protocol`), the
reference implementation: the SDK validates every message corral's client sends against ACP's schema.

Prompt words: `TOOL` (a read tool call and its result), `PERMISSION` (asks; answers with the outcome),
`SLOW` (writes `$SDK_ACP_MARK`, then waits for `session/cancel`), `READ <path>` / `WRITE <path> <text>`
(the client's `fs/read_text_file` / `fs/write_text_file`), `WHO` (the session's id, whether it was
loaded, its `model` config option), `MCP` (the MCP servers its session was given, as the SDK parsed
them: `<class>:<name>:<command or url>` each, `;`-joined); otherwise a thought, a plan and two chunks. It offers
`loadSession` (any id it gave out before is loaded) and a `model` config option.
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
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SetSessionConfigOptionResponse,
    ToolCallUpdate,
)


class SdkAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.cancelled: dict[str, asyncio.Event] = {}
        self.loaded: set[str] = set()
        self.model: dict[str, str] = {}
        self.mcp: dict[str, list[Any]] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True, mcp_capabilities=McpCapabilities(http=True)
            ),
            agent_info=Implementation(name="sdk-fake", version="1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = f"sdk-{os.getpid()}-{len(self.cancelled) + 1}"
        self.cancelled[session_id] = asyncio.Event()
        self.mcp[session_id] = list(kwargs.get("mcp_servers") or [])
        return NewSessionResponse(session_id=session_id, config_options=self._options(session_id))

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        self.cancelled[session_id] = asyncio.Event()
        self.loaded.add(session_id)
        self.mcp[session_id] = list(kwargs.get("mcp_servers") or [])
        return LoadSessionResponse(config_options=self._options(session_id))

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        self.model[session_id] = str(value)
        return SetSessionConfigOptionResponse(config_options=self._options(session_id))

    def _options(self, session_id: str) -> list[Any]:
        return [
            SessionConfigOptionSelect(
                id="model",
                name="Model",
                category="model",
                type="select",
                current_value=self.model.setdefault(session_id, "sdk-small"),
                options=[
                    SessionConfigSelectOption(value="sdk-small", name="Small"),
                    SessionConfigSelectOption(value="sdk-large", name="Large"),
                ],
            )
        ]

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled[session_id].set()

    async def _send(self, session_id: str, update: Any) -> None:
        await self.conn.session_update(session_id=session_id, update=update)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        cancel = self.cancelled[session_id]
        cancel.clear()
        if "MCP" in text:
            listed = ";".join(
                f"{type(server).__name__}:{server.name}:{getattr(server, 'command', None) or getattr(server, 'url', '')}"
                for server in self.mcp.get(session_id, [])
            )
            await self._send(session_id, helpers.update_agent_message_text(listed or "none"))
            return PromptResponse(stop_reason="end_turn")
        if "SLOW" in text:
            await self._send(session_id, helpers.update_agent_message_text("working slowly..."))
            mark = os.environ.get("SDK_ACP_MARK")
            if mark:
                Path(mark).write_text("prompted")
            await cancel.wait()
            await self._send(session_id, helpers.update_agent_message_text(" cancelled by the client"))
            return PromptResponse(stop_reason="cancelled")
        if "WHO" in text:
            who = f"{session_id} loaded={session_id in self.loaded} model={self.model[session_id]}"
            await self._send(session_id, helpers.update_agent_message_text(who))
            return PromptResponse(stop_reason="end_turn")
        if "READ" in text or "WRITE" in text:
            _, _, rest = text.partition("READ" if "READ" in text else "WRITE")
            path, _, content = rest.strip().partition(" ")
            if "READ" in text:
                read = await self.conn.read_text_file(session_id=session_id, path=path)
                said = f"read: {read.content}"
            else:
                await self.conn.write_text_file(session_id=session_id, path=path, content=content)
                said = "wrote"
            await self._send(session_id, helpers.update_agent_message_text(said))
            return PromptResponse(stop_reason="end_turn")
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
