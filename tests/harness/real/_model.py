"""The fake model behind the real agents: `FakeProviderServer` (Anthropic Messages, OpenAI Responses,
Chat Completions and Gemini, SSE, `TCP_NODELAY`) answering by trigger words.

Only the model's decisions are scripted, from the last user message of each request (the trigger
that appears last wins, since an agent may merge an interrupted prompt into the next one):

* `RUN_CMD <command> ;;` → a call of the agent's shell tool (a tool that needs the owner's permission);
* after a tool result → `Command done: TOOL_RESULT_SEEN.`;
* `SLOW` → a long reply streamed slowly (it stops when the agent hangs up);
* `HELLO`, or anything else → `Hello from the fake model.`

A request without tools (a title or summary an agent asks for on the side) gets a short text; a
request for JSON (Gemini CLI's model router) gets the routing answer it expects.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from tests.llm.fake_server import FakeProviderServer, FakeReply, FakeToolCall, RecordedRequest

__all__ = ["AFTER_TOOL", "HELLO", "SLOW_TEXT", "ScriptedModel"]

HELLO = "Hello from the fake model."
AFTER_TOOL = "Command done: TOOL_RESULT_SEEN."
SLOW_TEXT = "Working slowly. "
_RUN = re.compile(r"RUN_CMD (.+?) ;;", re.DOTALL)
_SHELL_TOOLS = ("Bash", "bash", "shell", "exec_command", "run_shell_command")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict) and "text" in part
        )
    return ""


def _last_turn(path: str, body: Any) -> tuple[bool, str]:
    """Whether the request ends with a tool result, and the text of its last user message."""
    if not isinstance(body, dict):
        return False, ""
    if isinstance(body.get("contents"), list):  # Gemini
        contents = [c for c in body["contents"] if isinstance(c, dict)]
        parts = contents[-1].get("parts") if contents else None
        if isinstance(parts, list) and any(isinstance(p, dict) and "functionResponse" in p for p in parts):
            return True, ""
        for content in reversed(contents):
            if content.get("role") == "user":
                return False, _text(content.get("parts"))
        return False, ""
    items: list[Any] = body.get("input") if path.endswith("/responses") else body.get("messages")  # type: ignore[assignment]
    if isinstance(items, str):
        return False, items
    items = [item for item in items or [] if isinstance(item, dict)]
    if not items:
        return False, ""
    last = items[-1]
    if last.get("type") == "function_call_output" or last.get("role") == "tool":
        return True, ""
    content = last.get("content")
    if (
        last.get("role") == "user"
        and isinstance(content, list)
        and any(isinstance(p, dict) and p.get("type") == "tool_result" for p in content)
    ):
        return True, ""
    for item in reversed(items):
        if item.get("role") == "user":
            return False, _text(item.get("content"))
    return False, ""


def _tool_names(body: Any) -> list[str]:
    names: list[str] = []
    for tool in body.get("tools") or [] if isinstance(body, dict) else []:
        if isinstance(tool, dict) and isinstance(tool.get("functionDeclarations"), list):  # Gemini
            names += [str(d.get("name")) for d in tool["functionDeclarations"] if isinstance(d, dict)]
        elif isinstance(tool, dict):
            function = tool.get("function")
            name = function.get("name") if isinstance(function, dict) else tool.get("name")
            if isinstance(name, str):
                names.append(name)
    return names


def _shell_call(tools: list[str], command: str) -> FakeToolCall | None:
    for name in tools:
        base = name.rsplit("__", 1)[-1]
        if base in _SHELL_TOOLS:
            if base == "exec_command":
                return FakeToolCall(name, {"cmd": command})
            if base in ("Bash", "bash"):
                return FakeToolCall(name, {"command": command, "description": "Run the command"})
            return FakeToolCall(name, {"command": command})
    return None


class ScriptedModel:
    """A `FakeProviderServer` whose replies follow the trigger words (see the module docstring)."""

    def __init__(self) -> None:
        self.server = FakeProviderServer()
        self.server.models = ["fake-model", "gpt-4o"]
        self.server.responder = self._respond
        self.served: list[str] = []
        """What each model request was answered with (`tool`, `after-tool`, `slow`, `hello`, `side`)."""
        self._lock = threading.Lock()
        self.json_requests: list[RecordedRequest] = []
        """Requests for a JSON answer (Gemini CLI's model router)."""

    def __enter__(self) -> ScriptedModel:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.close()

    def saw(self, kind: str) -> bool:
        with self._lock:
            return kind in self.served

    def _note(self, kind: str) -> None:
        with self._lock:
            self.served.append(kind)

    def _respond(self, request: RecordedRequest) -> FakeReply:
        config = request.body.get("generationConfig") if isinstance(request.body, dict) else None
        if isinstance(config, dict) and ("responseJsonSchema" in config or "responseSchema" in config):
            self._note("json")
            self.json_requests.append(request)
            return FakeReply(text=json.dumps({"reasoning": "fake", "model_choice": "flash"}))
        tools = _tool_names(request.body)
        after_tool, text = _last_turn(request.path, request.body)
        if not tools:
            self._note("side")
            return FakeReply(text="Fake title")
        if after_tool:
            self._note("after-tool")
            return FakeReply(text=[AFTER_TOOL[:8], AFTER_TOOL[8:]])
        found = {m.start(): ("run", m.group(1)) for m in _RUN.finditer(text)}
        if (slow := text.rfind("SLOW")) >= 0:
            found[slow] = ("slow", "")
        if (hello := text.rfind("HELLO")) >= 0:
            found[hello] = ("hello", "")
        if found:
            kind, command = found[max(found)]
            if kind == "run" and (call := _shell_call(tools, command)) is not None:
                self._note("tool")
                return FakeReply(tool_calls=[call])
            if kind == "slow":
                self._note("slow")
                return FakeReply(text=[SLOW_TEXT], repeat_text=2400, chunk_delay=0.05)
        self._note("hello")
        return FakeReply(text=["Hello from ", "the fake model."])

    def describe(self) -> str:
        """The requests so far, for a failure message."""
        return json.dumps(
            [
                {"path": r.path, "tools": _tool_names(r.body), "last": _last_turn(r.path, r.body)}
                for r in self.server.requests
            ]
        )[-4000:]
