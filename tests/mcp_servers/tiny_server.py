"""A tiny stdio MCP server for the MCP-client tests and `bench_mcp_client.py`: the standard library
only (it starts in a fraction of a second), the `initialize` handshake era (it answers
`server/discover` with "method not found", as a server of that era does).

`python tiny_server.py [MODE]`:

* `ok` (default): tools `add` and `echo` (read-only), `note` (appends to `$TINY_NOTES`; not
  read-only), `crash` (exits the process mid-call), `slow` (sleeps `seconds`), `pid` (its process id),
  `image` (a 1×1 PNG), `fail` (an `isError` result);
* `exit-at-start`: writes a line on stderr and exits before answering anything;
* `hang-at-start`: never answers, and exits when its stdin closes (a server that does not start in time).

`$TINY_EXTRA_TOOLS=N` adds N read-only `lookup_<topic>_<n>` tools (a large server, for tool search),
each answering `looked up <topic> <n>: <query>`.

With `$TINY_STARTED` set, it first appends its process id to that file.
"""

from __future__ import annotations

import json
import os
import sys
import time

_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
_READ_ONLY = {"readOnlyHint": True}


def _tool(name: str, description: str, properties: dict[str, object], *, read_only: bool = True) -> dict:
    tool: dict[str, object] = {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": sorted(properties)},
    }
    if read_only:
        tool["annotations"] = _READ_ONLY
    return tool


TOOLS = [
    _tool("add", "Add two numbers.", {"a": {"type": "integer"}, "b": {"type": "integer"}}),
    _tool("echo", "Echo the message back.", {"message": {"type": "string"}}),
    _tool("note", "Append a note to the notes file.", {"text": {"type": "string"}}, read_only=False),
    _tool("crash", "Exit the server mid-call.", {}),
    _tool("slow", "Sleep, then answer.", {"seconds": {"type": "number"}}),
    _tool("pid", "This server's process id.", {}),
    _tool("image", "A tiny image.", {}),
    _tool("fail", "Always fails.", {}),
]


_TOPICS = ("weather", "invoice", "calendar", "ticket", "deployment", "customer", "repository", "metric")


def _extra_tools(count: int) -> list[dict]:
    tools = []
    for n in range(count):
        topic = _TOPICS[n % len(_TOPICS)]
        description = (
            f"Look up {topic} records (set {n}) by a free-text query. Returns the matching {topic} "
            f"entries with their identifiers, owners, timestamps and status, newest first."
        )
        properties = {
            "query": {"type": "string", "description": f"What to look for among the {topic} records."},
            "limit": {"type": "integer", "description": "At most this many entries (default 10)."},
        }
        tools.append(_tool(f"lookup_{topic}_{n}", description, properties))
    return tools


TOOLS += _extra_tools(int(os.environ.get("TINY_EXTRA_TOOLS", "0")))


def _text(text: str, *, error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def _call(name: str, args: dict) -> dict:
    if name == "add":
        total = int(args["a"]) + int(args["b"])
        return {**_text(str(total)), "structuredContent": {"sum": total}}
    if name == "echo":
        return _text(f"Echo: {args['message']}")
    if name == "note":
        with open(os.environ["TINY_NOTES"], "a", encoding="utf-8") as handle:
            handle.write(f"{args['text']}\n")
        return _text("noted")
    if name == "crash":
        print("tiny: crashing on purpose", file=sys.stderr, flush=True)
        os._exit(1)
    if name == "slow":
        time.sleep(float(args["seconds"]))
        return _text("slept")
    if name == "pid":
        return _text(str(os.getpid()))
    if name == "image":
        return {"content": [{"type": "image", "data": _PNG, "mimeType": "image/png"}]}
    if name == "fail":
        return _text("the tool failed on purpose", error=True)
    if name.startswith("lookup_") and any(tool["name"] == name for tool in TOOLS):
        _, topic, n = name.split("_")
        return _text(f"looked up {topic} {n}: {args.get('query', '')}")
    raise KeyError(name)


def _answer(message: dict) -> dict | None:
    method, ident, params = message.get("method"), message.get("id"), message.get("params") or {}
    if ident is None:  # a notification
        return None
    if method == "initialize":
        result: dict = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tiny", "version": "1.0"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        try:
            result = _call(params["name"], params.get("arguments") or {})
        except KeyError as exc:
            return {
                "jsonrpc": "2.0",
                "id": ident,
                "error": {"code": -32602, "message": f"unknown tool {exc}"},
            }
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    started = os.environ.get("TINY_STARTED")
    if started:  # the tests' evidence that corral started this server
        with open(started, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
    if mode == "exit-at-start":
        print("tiny: cannot open my database /nonexistent/db", file=sys.stderr, flush=True)
        sys.exit(3)
    if mode == "hang-at-start":
        for _ in sys.stdin:  # read what the client sends, answer nothing, end when it closes
            pass
        return
    for line in sys.stdin:
        if not line.strip():
            continue
        answer = _answer(json.loads(line))
        if answer is not None:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
