"""`corral acp` driven by the ACP SDK's own client: a private data root, scripts, the server command."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests._ci import unavailable

if importlib.util.find_spec("acp") is None:
    unavailable("the agent-client-protocol test extra is not installed", module_level=True)

import acp
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    DeniedOutcome,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
)

CORRAL = str(Path(sys.executable).with_name("corral"))
WAIT = 60.0
"""Seconds a test waits for an update (a process start-up and a scripted team under load)."""


@dataclass
class Recorder:
    """The editor: records every `session/update`, answers permission requests with `answer`."""

    updates: list[tuple[str, Any]] = field(default_factory=list)
    asked: list[Any] = field(default_factory=list)
    answer: str | None = "allow"
    """The option to choose (`None`: dismiss the request, ACP's `cancelled` outcome; `hang`: never answer)."""
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self._changed.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        self._changed.set()
        if self.answer == "hang":  # a headless client that never answers
            await asyncio.Event().wait()
        if self.answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    def on_connect(self, conn: Any) -> None:
        pass

    async def until(self, check: Any, timeout: float = WAIT) -> None:
        """Wait on recorded updates until `check()` is true (bounded)."""
        async with asyncio.timeout(timeout):
            while not check():
                self._changed.clear()
                if check():
                    return
                await self._changed.wait()

    # --- views ----------------------------------------------------------------------------------

    def of(self, session_id: str) -> list[Any]:
        return [update for sid, update in self.updates if sid == session_id]

    def text(self, session_id: str) -> str:
        return "".join(
            u.content.text
            for u in self.of(session_id)
            if isinstance(u, AgentMessageChunk) and hasattr(u.content, "text")
        )

    def agent_statuses(self, session_id: str) -> list[object]:
        """The status of each agent's tool call (kind `think`) as the editor shows it now."""
        return [c.get("status") for c in self.tool_calls(session_id).values() if c.get("kind") == "think"]

    def tool_calls(self, session_id: str) -> dict[str, dict[str, Any]]:
        """Each tool call as the editor would show it: its start merged with its updates."""
        calls: dict[str, dict[str, Any]] = {}
        for update in self.of(session_id):
            if isinstance(update, ToolCallStart | ToolCallProgress):
                call = calls.setdefault(update.tool_call_id, {"updates": 0})
                call["updates"] += 1
                for key in ("title", "kind", "status", "raw_output"):
                    value = getattr(update, key, None)
                    if value is not None:
                        call[key] = value
                if update.content is not None:
                    call["text"] = "\n".join(
                        getattr(getattr(c, "content", None), "text", "") for c in update.content
                    )
        return calls


@dataclass
class AcpEnv:
    root: Path
    work: Path
    home: Path
    vars: dict[str, str]

    def script(self, name: str, script: dict[str, Any]) -> None:
        """Write `scripted/<name>`."""
        (self.root / "scripts" / f"{name}.yaml").write_text(yaml.safe_dump(script))

    @asynccontextmanager
    async def server(
        self,
        *args: str,
        recorder: Recorder | None = None,
        model: str = "scripted/team",
        env: dict[str, str] | None = None,
    ) -> AsyncIterator[tuple[Any, Any, Recorder]]:
        """`corral acp --cwd <work> --model MODEL ARGS` with an SDK client connected: (conn, process, recorder)."""
        recorder = recorder or Recorder()
        stderr = (self.root / "acp-stderr.txt").open("ab")
        try:
            async with acp.spawn_agent_process(
                recorder,
                CORRAL,
                "acp",
                "--cwd",
                str(self.work),
                "--model",
                model,
                *args,
                env=self.vars if env is None else env,
                transport_kwargs={"stderr": stderr.fileno(), "shutdown_timeout": 20.0},
            ) as (conn, process):
                yield conn, process, recorder
        finally:
            stderr.close()

    def stderr(self) -> str:
        path = self.root / "acp-stderr.txt"
        return path.read_text(errors="replace") if path.exists() else ""


@pytest.fixture
def acp_env(tmp_path: Path) -> AcpEnv:
    for folder in ("work", "scripts", "config/corral"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "work" / "README.md").write_text("# Sample\n\nA sample project for corral acp.\n")
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CORRAL_", "XDG_"))
    }
    base.update(
        CORRAL_HOME=str(tmp_path / "home"),
        CORRAL_SCRIPTS=str(tmp_path / "scripts"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    return AcpEnv(tmp_path, tmp_path / "work", tmp_path / "home", base)


def text_block(text: str) -> Any:
    return acp.text_block(text)


LATER = {
    "steps": [
        {
            "text": "Delegating to reader.",
            "tool_calls": [
                {
                    "name": "agent",
                    "args": {
                        "action": "delegate",
                        "definition": "generalist",
                        "label": "reader",
                        "task": "Wait for the gate, then say so.",
                    },
                }
            ],
        },
        {
            "expect": {"context_contains": ["Agent result · agent=reader"]},
            "text": "Reader reported back.",
            "otherwise": {"text": "Reader is working; its result comes back by itself."},
        },
    ],
    "on_exhausted": "repeat_last",
    "agents": {
        "reader": [
            {
                "text": "Waiting for the gate.",
                "tool_calls": [
                    {
                        "name": "bash",
                        "args": {"command": "while [ ! -e go ]; do sleep 0.05; done; echo released"},
                    }
                ],
            },
            {"text": "The gate opened."},
        ]
    },
}
"""`scripted/later`: the lead delegates `reader`, which waits until the file `go` exists in the work
directory, and ends its turn; the result arrives after it and wakes the lead."""

SLOW = {
    "steps": [
        {"text": "Working on it.", "tool_calls": [{"name": "ls", "args": {"path": "."}}]},
        {"delay_ms": 600_000, "text": "never"},
    ],
    "on_exhausted": "repeat_last",
}
"""`scripted/slow`: one tool call, then a model request that takes ten minutes unless cancelled."""


def shown_results(recorder: Recorder, session_id: str) -> int:
    """How many updates carried an item (a result, a report) to the editor."""
    count = 0
    for update in recorder.of(session_id):
        raw = getattr(update, "raw_output", None)
        if isinstance(raw, dict) and raw.get("kind") in ("result", "report"):
            count += 1
    return count


ASKING = {
    "steps": [
        {
            "text": "Asking the scout to check with you first.",
            "tool_calls": [
                {
                    "name": "agent",
                    "args": {
                        "action": "delegate",
                        "definition": "scout",
                        "label": "asker",
                        "task": "Ask first.",
                    },
                }
            ],
        },
        {"text": "Waiting on asker."},
    ],
    "on_exhausted": "repeat_last",
    "agents": {
        "asker": [
            {"tool_calls": [{"name": "ask_owner", "args": {"question": "May I read README.md?"}}]},
            {"expect": {"last_user_contains": "Yes."}, "text": "allowed", "otherwise": {"text": "refused"}},
        ]
    },
}
"""`scripted/asking`: the lead delegates `asker`, which asks its owner before it answers."""


SPAWNING = {
    "steps": [
        {
            "text": "Spawning a reviewer.",
            "tool_calls": [
                {
                    "name": "spawn_agent",
                    "args": {"name": "lister", "model_slot": "read-review", "prompt": "List the directory."},
                }
            ],
        },
        {
            "expect": {"context_contains": ["lister"], "last_user_contains": "Report"},
            "text": "The lister reported.",
            "otherwise": {"text": "The lister is working."},
        },
    ],
    "on_exhausted": "repeat_last",
    "agents": {
        "lister": [
            {"text": "Looking.", "tool_calls": [{"name": "ls", "args": {"path": "."}}]},
            {
                "text": "Reporting.",
                "tool_calls": [
                    {
                        "name": "report_and_exit",
                        "args": {
                            "content": "The directory holds README.md.",
                            "summary": "listed",
                            "outcome": "succeeded",
                        },
                    }
                ],
            },
        ]
    },
}
"""`scripted/spawning`: a teams lead spawns `lister`, whose report completes its tool call."""
