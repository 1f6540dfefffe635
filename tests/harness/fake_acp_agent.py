"""A model-free ACP agent for the tests: JSON-RPC over stdio, scripted by words in the prompt.

* (default) a thought, a plan, two message chunks, usage; `end_turn`.
* `TOOL`: a read tool call and its result, then the answer.
* `PERMISSION`: an execute tool call that asks permission (Allow once / Reject); the answer says
  which option was selected (`permitted: <id>`, `denied: <outcome>`).
* `SLOW`: one chunk, then waits for `session/cancel` (answers `cancelled`).
* `SPAWN <file>`: like `SLOW`, after starting a `sleep` child whose pid it writes to `<file>`.

Every message it receives is appended to `$FAKE_ACP_LOG` (one JSON line each) when that is set.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

LOG = os.environ.get("FAKE_ACP_LOG")


class Agent:
    def __init__(self) -> None:
        self.next_id = 0
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.cancelled: dict[str, asyncio.Event] = {}
        self.children: list[subprocess.Popen[bytes]] = []

    def send(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        sys.stdout.flush()

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send({"method": "session/update", "params": {"sessionId": session_id, "update": update}})

    def chunk(self, session_id: str, text: str, kind: str = "agent_message_chunk") -> None:
        self.update(session_id, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        self.send({"id": self.next_id, "method": method, "params": params})
        return await future

    async def handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params") or {}
        if method is None:
            future = self.pending.pop(message["id"], None)
            if future is not None and not future.done():
                future.set_result(message.get("result", message.get("error")))
            return
        if method == "session/cancel":
            self.cancelled.setdefault(params["sessionId"], asyncio.Event()).set()
            return
        if method == "initialize":
            result: Any = {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False},
                "agentInfo": {"name": "fake-acp-agent", "version": "1"},
                "authMethods": [],
            }
        elif method == "session/new":
            session_id = f"fake-{os.getpid()}-{len(self.cancelled)}"
            self.cancelled[session_id] = asyncio.Event()
            result = {"sessionId": session_id}
        elif method == "session/prompt":
            result = await self.prompt(
                params["sessionId"], "".join(b.get("text", "") for b in params["prompt"])
            )
        else:
            self.send(
                {"id": message["id"], "error": {"code": -32601, "message": f"Method not found: {method}"}}
            )
            return
        self.send({"id": message["id"], "result": result})

    async def prompt(self, sid: str, text: str) -> dict[str, Any]:
        cancel = self.cancelled.setdefault(sid, asyncio.Event())
        cancel.clear()
        if "SPAWN" in text or "SLOW" in text:
            if "SPAWN" in text:
                path = text.split("SPAWN", 1)[1].split()[0]
                child = subprocess.Popen(["sleep", "300"])
                self.children.append(child)
                with open(path, "w") as out:
                    out.write(f"{os.getpid()} {child.pid}")
            self.chunk(sid, "working slowly...")
            try:
                await asyncio.wait_for(cancel.wait(), 300)
            except TimeoutError:
                pass
            return {"stopReason": "cancelled"}
        if "PERMISSION" in text:
            self.update(
                sid,
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "call-perm",
                    "title": "touch created.txt",
                    "kind": "execute",
                    "status": "pending",
                    "rawInput": {"command": "touch created.txt"},
                },
            )
            answer = await self.request(
                "session/request_permission",
                {
                    "sessionId": sid,
                    "toolCall": {"toolCallId": "call-perm", "title": "touch created.txt", "kind": "execute"},
                    "options": [
                        {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                        {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
                    ],
                },
            )
            outcome = (answer or {}).get("outcome", {})
            if outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow-once":
                self.update(
                    sid,
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": "call-perm",
                        "status": "completed",
                        "content": [{"type": "content", "content": {"type": "text", "text": "created"}}],
                    },
                )
                self.chunk(sid, f"permitted: {outcome['optionId']}")
            else:
                self.update(
                    sid, {"sessionUpdate": "tool_call_update", "toolCallId": "call-perm", "status": "failed"}
                )
                self.chunk(sid, f"denied: {outcome.get('optionId') or outcome.get('outcome')}")
            return {"stopReason": "end_turn"}
        if "TOOL" in text:
            self.chunk(sid, "Reading the file.")
            self.update(
                sid,
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "call-1",
                    "title": "Read notes.txt",
                    "kind": "read",
                    "status": "in_progress",
                    "rawInput": {"path": "notes.txt"},
                },
            )
            self.update(
                sid,
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "call-1",
                    "status": "completed",
                    "content": [{"type": "content", "content": {"type": "text", "text": "the notes say 42"}}],
                },
            )
            self.chunk(sid, "The notes say 42.")
            return {"stopReason": "end_turn"}
        self.chunk(sid, "Let me think.", "agent_thought_chunk")
        self.update(
            sid,
            {
                "sessionUpdate": "plan",
                "entries": [{"content": "answer", "priority": "high", "status": "in_progress"}],
            },
        )
        self.chunk(sid, "Hello from ")
        self.chunk(sid, "the fake agent.")
        self.update(sid, {"sessionUpdate": "usage_update", "used": 1234, "size": 200000})
        return {"stopReason": "end_turn"}


async def main() -> None:
    agent = Agent()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks: set[asyncio.Task[None]] = set()
    while True:
        line = await reader.readline()
        if not line:
            break
        message = json.loads(line)
        if LOG:
            with open(LOG, "a") as out:
                out.write(json.dumps(message) + "\n")
        task = asyncio.ensure_future(agent.handle(message))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    for child in agent.children:
        child.kill()


if __name__ == "__main__":
    asyncio.run(main())
