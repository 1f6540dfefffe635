"""A model-free ACP agent for the tests: JSON-RPC over stdio, scripted by words in the prompt.

* (default) a thought, a plan, two message chunks, usage (1,234 tokens in context, the session's cost
  growing by $0.25 a turn); `end_turn`. The other turns report no usage.
* `TOOL`: a read tool call and its result, then the answer.
* `PERMISSION`: an execute tool call that asks permission (Allow once / Reject); the answer says
  which option was selected (`permitted: <id>`, `denied: <outcome>`).
* `RUN <command>` (to the end of the prompt): an execute tool call of that command (`rawInput`
  `{"command": …}`, the title the command) that asks permission (Allow once / Always allow /
  Reject), then runs the command in its cwd when allowed (`ran: <id>`, else `denied: <outcome>`).
* `SLOW`: one chunk, then waits for `session/cancel` (answers `cancelled`).
* `SPAWN <file>`: like `SLOW`, after starting a `sleep` child whose pid it writes to `<file>`.

* `CONFIG`: answers `model=<value> thought=<value>`, its session's config options (offered with
  `session/new` and `session/load`: `model` — `fake-small` (current) or `fake/fake-large`, named
  `Large`, in a group — and `thought_level` — `low`, `medium` (current), `high`; set with
  `session/set_config_option`, which refuses `high`).
* `READ <path>` / `WRITE <path> <text>`: asks the client (`fs/read_text_file`, from line 2 when
  the prompt says `LINE2`; `fs/write_text_file`) for the path made absolute against its cwd; answers
  `read: <content>` / `wrote`, or `refused: <the error's message>`. `TERMINAL`: asks for
  `terminal/create`, answers the same way. `CAPS` answers the client's capabilities.
* `RECALL`: answers `I remember: <the session's first prompt>` (its history: see below).
* `WAIT <file>`: one chunk, then waits until `<file>` exists; answers `waited`.

With `$FAKE_ACP_SESSIONS` (a directory) set it offers `loadSession`: each session's history (its
prompts and answers) is kept in `<dir>/<sessionId>.json`, and `session/load` replays it as
`session/update`s (an unknown id is refused). With `$FAKE_ACP_MCP_HTTP` set its `initialize` answer
says it takes HTTP MCP servers (`mcpCapabilities.http`). Every message it receives is appended to
`$FAKE_ACP_LOG` (one JSON line each) when that is set. With `$FAKE_ACP_STAY` set it does not exit
when its input closes (as Gemini CLI does not): only a signal ends it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

LOG = os.environ.get("FAKE_ACP_LOG")
STAY = bool(os.environ.get("FAKE_ACP_STAY"))
SESSIONS = os.environ.get("FAKE_ACP_SESSIONS")


class Agent:
    def __init__(self) -> None:
        self.next_id = 0
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.cancelled: dict[str, asyncio.Event] = {}
        self.children: list[subprocess.Popen[bytes]] = []
        self.said: dict[str, list[str]] = {}
        self.cost: dict[str, float] = {}
        self.config: dict[str, dict[str, str]] = {}
        self.raw: set[int] = set()
        self.client_caps: dict[str, Any] = {}
        self.histories: dict[str, list[dict[str, str]]] = {}

    def send(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        sys.stdout.flush()

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send({"method": "session/update", "params": {"sessionId": session_id, "update": update}})

    def chunk(self, session_id: str, text: str, kind: str = "agent_message_chunk") -> None:
        self.update(session_id, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})
        if kind == "agent_message_chunk":
            self.said.setdefault(session_id, []).append(text)

    async def client_request(self, sid: str, word: str, text: str) -> dict[str, Any]:
        args = text.split(word, 1)[1].split(maxsplit=1)
        if word == "TERMINAL":
            method, params = "terminal/create", {"sessionId": sid, "command": "true"}
        else:
            path = os.path.abspath(args[0])
            method = "fs/read_text_file" if word == "READ" else "fs/write_text_file"
            params = {"sessionId": sid, "path": path}
            if word == "WRITE":
                params["content"] = args[1] if len(args) > 1 else ""
            elif "LINE2" in text:
                params.update(line=2, limit=1)
        answer = await self.request_raw(method, params)
        if "error" in answer:
            self.chunk(sid, f"refused: {answer['error'].get('message')}")
        elif word == "READ":
            self.chunk(sid, f"read: {answer['result']['content']}")
        else:
            self.chunk(sid, "wrote" if word == "WRITE" else "terminal")
        return {"stopReason": "end_turn"}

    def config_options(self, sid: str) -> list[dict[str, Any]]:
        values = self.config.setdefault(sid, {"model": "fake-small", "thought_level": "medium"})
        return [
            {
                "id": "model",
                "name": "Model",
                "category": "model",
                "type": "select",
                "currentValue": values["model"],
                "options": [
                    {"value": "fake-small", "name": "Small"},
                    {
                        "group": "big",
                        "name": "Big ones",
                        "options": [{"value": "fake/fake-large", "name": "Large"}],
                    },
                ],
            },
            {
                "id": "thought_level",
                "name": "Thinking",
                "category": "thought_level",
                "type": "select",
                "currentValue": values["thought_level"],
                "options": [{"value": v, "name": v.title()} for v in ("low", "medium", "high")],
            },
        ]

    def history(self, session_id: str) -> list[dict[str, str]]:
        if SESSIONS is None:
            return self.histories.setdefault(session_id, [])
        path = os.path.join(SESSIONS, f"{session_id}.json")
        if not os.path.exists(path):
            return []
        with open(path) as saved:
            return list(json.load(saved))

    def remember(self, session_id: str, prompt: str, answer: str) -> None:
        turns = [
            *self.history(session_id),
            {"prompt": prompt, "answer": answer, "cost": self.cost.get(session_id, 0.0)},
        ]
        self.histories[session_id] = turns
        if SESSIONS is not None:
            with open(os.path.join(SESSIONS, f"{session_id}.json"), "w") as out:
                json.dump(turns, out)

    async def request_raw(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The client's whole answer (`result` or `error`)."""
        self.next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        self.raw.add(self.next_id)
        self.send({"id": self.next_id, "method": method, "params": params})
        return dict(await future)

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
                if message["id"] in self.raw:
                    future.set_result(message)
                else:
                    future.set_result(message.get("result", message.get("error")))
            return
        if method == "session/cancel":
            self.cancelled.setdefault(params["sessionId"], asyncio.Event()).set()
            return
        if method == "initialize":
            self.client_caps = params.get("clientCapabilities") or {}
            result: Any = {
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": SESSIONS is not None,
                    "mcpCapabilities": {"http": bool(os.environ.get("FAKE_ACP_MCP_HTTP"))},
                },
                "agentInfo": {"name": "fake-acp-agent", "version": "1"},
                "authMethods": [],
            }
        elif method == "session/new":
            session_id = f"fake-{os.getpid()}-{len(self.cancelled)}"
            self.cancelled[session_id] = asyncio.Event()
            self.remember(session_id, "", "")  # the session exists (session/load finds it)
            result = {"sessionId": session_id, "configOptions": self.config_options(session_id)}
        elif method == "session/set_config_option":
            if params["value"] == "high":
                self.send(
                    {"id": message["id"], "error": {"code": -32602, "message": "high is not available"}}
                )
                return
            self.config_options(params["sessionId"])
            self.config[params["sessionId"]][params["configId"]] = params["value"]
            result = {"configOptions": self.config_options(params["sessionId"])}
        elif method == "session/load":
            sid = params["sessionId"]
            turns = [t for t in self.history(sid) if t["prompt"]]
            if SESSIONS is None or not os.path.exists(os.path.join(SESSIONS, f"{sid}.json")):
                self.send({"id": message["id"], "error": {"code": -32002, "message": f"no session {sid}"}})
                return
            for turn in turns:
                for kind, text in (
                    ("user_message_chunk", turn["prompt"]),
                    ("agent_message_chunk", turn["answer"]),
                ):
                    self.update(sid, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})
            self.cancelled.setdefault(sid, asyncio.Event())
            self.cost[sid] = float(self.history(sid)[-1].get("cost", 0.0))  # the session's cost so far
            result = {"configOptions": self.config_options(sid)}
        elif method == "session/prompt":
            sid = params["sessionId"]
            text = "".join(b.get("text", "") for b in params["prompt"])
            self.said[sid] = []
            result = await self.prompt(sid, text)
            self.remember(sid, text, "".join(self.said[sid]))
        else:
            self.send(
                {"id": message["id"], "error": {"code": -32601, "message": f"Method not found: {method}"}}
            )
            return
        self.send({"id": message["id"], "result": result})

    async def run(self, sid: str, command: str) -> dict[str, Any]:
        call = {
            "toolCallId": "call-run",
            "title": command,
            "kind": "execute",
            "rawInput": {"command": command},
        }
        self.update(sid, {"sessionUpdate": "tool_call", "status": "pending", **call})
        answer = await self.request(
            "session/request_permission",
            {
                "sessionId": sid,
                "toolCall": call,
                "options": [
                    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
                    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
                ],
            },
        )
        outcome = (answer or {}).get("outcome", {})
        if outcome.get("outcome") == "selected" and str(outcome.get("optionId")).startswith("allow"):
            done = subprocess.run(command, shell=True, capture_output=True, text=True, check=False)
            self.update(
                sid,
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "call-run",
                    "status": "completed" if done.returncode == 0 else "failed",
                    "content": [{"type": "content", "content": {"type": "text", "text": done.stdout}}],
                },
            )
            self.chunk(sid, f"ran: {outcome['optionId']}")
        else:
            self.update(
                sid, {"sessionUpdate": "tool_call_update", "toolCallId": "call-run", "status": "failed"}
            )
            self.chunk(sid, f"denied: {outcome.get('optionId') or outcome.get('outcome')}")
        return {"stopReason": "end_turn"}

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
        if "CONFIG" in text:
            values = self.config_options(sid)
            self.chunk(sid, f"model={values[0]['currentValue']} thought={values[1]['currentValue']}")
            return {"stopReason": "end_turn"}
        for word in ("READ", "WRITE", "TERMINAL"):
            if word in text:
                return await self.client_request(sid, word, text)
        if "CAPS" in text:
            self.chunk(sid, json.dumps(self.client_caps, sort_keys=True))
            return {"stopReason": "end_turn"}
        if "RECALL" in text:
            first = next((t["prompt"] for t in self.history(sid) if t["prompt"]), text)
            self.chunk(sid, f"I remember: {first}")
            return {"stopReason": "end_turn"}
        if "WAIT" in text:
            path = text.split("WAIT", 1)[1].split()[0]
            self.chunk(sid, "waiting...")
            while not os.path.exists(path) and not cancel.is_set():
                await asyncio.sleep(0.05)
            if cancel.is_set():
                return {"stopReason": "cancelled"}
            self.chunk(sid, " waited")
            return {"stopReason": "end_turn"}
        if "RUN " in text:
            return await self.run(sid, text.split("RUN ", 1)[1].strip())
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
        self.cost[sid] = self.cost.get(sid, 0.0) + 0.25  # the session's cost so far
        self.update(
            sid,
            {
                "sessionUpdate": "usage_update",
                "used": 1234,
                "size": 200000,
                "cost": {"amount": self.cost[sid], "currency": "USD"},
            },
        )
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
    if STAY:
        await asyncio.Event().wait()
    for child in agent.children:
        child.kill()


if __name__ == "__main__":
    asyncio.run(main())
