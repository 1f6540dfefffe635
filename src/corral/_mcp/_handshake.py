"""The early first answer: `corral mcp` over stdio answers the client's opening before it loads the SDK.

Importing the `mcp` SDK (pydantic models for every protocol version, its client, its HTTP stack)
takes most of the server's start-up, and MCP clients count that time against the server: they
show it as "connecting" and give up after a timeout. So the stdio server reads the client's first
line itself (plain `json`, nothing else loaded), and when it is a handshake-era `initialize` — or
a 2026-07-28 client's `server/discover` — answers it at once with the result the SDK would send.
Then it imports the SDK and replays that line into the SDK's session (`_replay.py`), which so goes
through the same handshake (and picks the same protocol era), and drops the SDK's own answer after
checking it matches the one already sent; a test pins the two against each other for every
protocol version.

Anything else as the first line (a malformed line, another method, parameters that do not look
right) gets no early answer: the SDK answers it, as if this module did not exist. Nothing here
may import the SDK, pydantic or the rest of corral.
"""

from __future__ import annotations

import copy
import errno
import json
import os
import select
from dataclasses import dataclass
from typing import Any

from corral._version import __version__

__all__ = [
    "HANDSHAKE_VERSIONS",
    "LEAD_PROMPT",
    "MODERN_VERSIONS",
    "SERVER_NAME",
    "EarlyAnswer",
    "discover_result",
    "early_answer",
    "initialize_result",
    "read_line",
    "write_all",
]

SERVER_NAME = "corral"

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The protocol versions the SDK negotiates through `initialize`, oldest first (its
`HANDSHAKE_PROTOCOL_VERSIONS`; tests/mcp_server pins the two together). A client asking for
another version is offered the newest of these, as the SDK does."""

MODERN_VERSIONS = ("2026-07-28",)
"""The per-request-envelope protocol versions the SDK serves (its `MODERN_PROTOCOL_VERSIONS`)."""

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

LEAD_PROMPT = """\
You lead a corral team through the tools of the `corral` MCP server.

- Start work with `agent_delegate` (a definition from `agent_list`, a self-contained task, a short label).
  Delegate independent tasks in parallel.
- Then call `wait`: it blocks until something arrives and returns each result, question, report or message
  once. Do not poll `agent_list` or `agent_inspect` to see whether an agent is done.
- An item of kind `ask` is an agent's question: answer it with `agent_reply` (agent = its label), then `wait`
  again. Use `agent_steer` to add guidance to a working agent, `agent_interrupt` to redirect it.
- A delivered result is final. Use `agent_continue` with the agent's session to give it follow-up work, and
  `agent_close` for an agent you no longer need (for example one left waiting on a question).
- Results can be long: read them fully before you answer the user.
"""
"""The `lead` prompt, also the server's `instructions` in its `initialize` answer."""

CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": True},
    "tools": {"listChanged": False},
}
"""What the SDK derives from the handlers `build_server` registers (tools, resources with
subscriptions, prompts; no logging, no completions), in its handshake-era wire form."""

MODERN_CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
    "tools": {"listChanged": True},
}
"""The same at 2026-07-28, where change notifications come over `subscriptions/listen` (served)."""


CLIENT_CAPABILITIES = ("experimental", "sampling", "elicitation", "roots", "extensions", "tasks")
"""The client capabilities the SDK knows, each an object when given (it validates them further)."""


def initialize_result(protocol_version: str) -> dict[str, Any]:
    """The `InitializeResult` (wire form) for a client asking for `protocol_version`."""
    negotiated = protocol_version if protocol_version in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    return {
        "capabilities": copy.deepcopy(CAPABILITIES),
        "instructions": LEAD_PROMPT,
        "protocolVersion": negotiated,
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }


def discover_result() -> dict[str, Any]:
    """The `DiscoverResult` (wire form) the SDK sends a 2026-07-28 client, cache hint and stamp included."""
    return {
        "cacheScope": "private",
        "capabilities": copy.deepcopy(MODERN_CAPABILITIES),
        "instructions": LEAD_PROMPT,
        "resultType": "complete",
        "supportedVersions": list(MODERN_VERSIONS),
        "ttlMs": 0,
        "_meta": {SERVER_INFO_KEY: {"name": SERVER_NAME, "version": __version__}},
    }


@dataclass(frozen=True)
class EarlyAnswer:
    """The client's opening request, answered before the SDK was loaded."""

    method: str
    """`initialize` or `server/discover`."""
    request_id: int | str
    response: dict[str, Any]
    """The JSON-RPC response that was (or is to be) written."""

    @property
    def decisive(self) -> str:
        """The result field the client acts on: the version it now speaks, or may speak."""
        return "protocolVersion" if self.method == "initialize" else "supportedVersions"

    def wire(self) -> bytes:
        """The response as one line, as the SDK's stdio transport frames it."""
        return (json.dumps(self.response, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def _capabilities_ok(capabilities: object) -> bool:
    return isinstance(capabilities, dict) and all(
        isinstance(capabilities.get(name, {}), dict | None) for name in CLIENT_CAPABILITIES
    )


def _implementation_ok(info: object) -> bool:
    return (
        isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)
    )


def _initialize(params: dict[str, Any]) -> dict[str, Any] | None:
    meta = params.get("_meta")
    if (
        not isinstance(params.get("protocolVersion"), str)
        or not _capabilities_ok(params.get("capabilities"))
        or not _implementation_ok(params.get("clientInfo"))
        or (meta is not None and not isinstance(meta, dict))
    ):
        return None
    return initialize_result(params["protocolVersion"])


def _discover(params: dict[str, Any]) -> dict[str, Any] | None:
    meta = params.get("_meta")
    if set(params) != {"_meta"} or not isinstance(meta, dict):
        return None
    info = meta.get(CLIENT_INFO_KEY)
    if (
        meta.get(PROTOCOL_VERSION_KEY) not in MODERN_VERSIONS
        or not _capabilities_ok(meta.get(CLIENT_CAPABILITIES_KEY))
        or (info is not None and not _implementation_ok(info))
    ):
        return None
    return discover_result()


def early_answer(line: bytes) -> EarlyAnswer | None:
    """The early answer to the client's first line, or `None` when the SDK must answer it.

    Answered early: a well-formed JSON-RPC `initialize` request whose parameters carry what the
    SDK requires (a protocol version, a capabilities object, a client name and version), and a
    `server/discover` carrying a complete 2026-07-28 envelope (a version the SDK serves, the
    client's capabilities; its name and version if given). The SDK validates the rest when the
    line is replayed.
    """
    try:
        message = json.loads(line.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):  # the SDK's turn: the line is answered with an error
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    method, request_id, params = message.get("method"), message.get("id"), message.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str) or not isinstance(params, dict):
        return None
    if method == "initialize":
        result = _initialize(params)
    elif method == "server/discover":
        result = _discover(params)
    else:
        return None
    if result is None:
        return None
    return EarlyAnswer(method, request_id, {"jsonrpc": "2.0", "id": request_id, "result": result})


def read_line(fd: int) -> bytes | None:
    """One line from `fd`, newline included, reading no byte beyond it; `None` at end of input.

    Reads a byte at a time, so the SDK's transport, which takes the descriptor over next, starts
    exactly at the following message. A last line without a newline is returned as it is.
    """
    data = bytearray()
    while True:
        try:
            byte = os.read(fd, 1)
        except BlockingIOError:
            select.select([fd], [], [])
            continue
        if not byte:
            return bytes(data) if data else None
        data += byte
        if byte == b"\n":
            return bytes(data)


def write_all(fd: int, data: bytes) -> bool:
    """Write all of `data` to `fd`; `False` when the reader is gone."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        except OSError as exc:
            if exc.errno in (errno.EPIPE, errno.ECONNRESET):
                return False
            raise
        view = view[written:]
    return True
