"""The early `initialize` answer: given before the SDK loads, identical to the SDK's, replayed into it."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types
import pytest
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from corral._mcp._handshake import HANDSHAKE_VERSIONS, MODERN_VERSIONS, EarlyAnswer, early_answer
from corral._mcp._replay import AnswerOnce, EarlyAnswerMismatch, parse_line
from corral._mcp._server import build_server
from corral._mcp._slot import LeadSlot

from .conftest import McpEnv

GUARD_S = 60
"""How long a read may take before the test gives up (a guard, not a measurement)."""


def _initialize(
    version: str = "2025-06-18", request_id: int | str = 1, capabilities: dict[str, Any] | None = None
) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    return (json.dumps(message) + "\n").encode()


def _discover(
    request_id: int | str = 1,
    capabilities: dict[str, Any] | None = None,
    client: dict[str, Any] | None = None,
) -> bytes:
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }
    if client is not None:
        meta["io.modelcontextprotocol/clientInfo"] = client
    message = {"jsonrpc": "2.0", "id": request_id, "method": "server/discover", "params": {"_meta": meta}}
    return (json.dumps(message) + "\n").encode()


@contextlib.asynccontextmanager
async def _no_lead() -> AsyncIterator[Any]:
    raise AssertionError("answering initialize must not open the lead")
    yield  # pragma: no cover


async def _sdk_answer(line: bytes, *, elicit: bool) -> dict[str, Any]:
    """What the SDK's lowlevel server (as `corral mcp` builds it) answers to `line`, on the wire."""
    server = build_server(LeadSlot(_no_lead), elicit=elicit)
    to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](4)
    server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](4)
    async with to_server, from_server, anyio.create_task_group() as group:
        group.start_soon(server.run, server_reads, server_writes, server.create_initialization_options())
        await to_server.send(parse_line(line))
        with anyio.fail_after(GUARD_S):
            answer = await from_server.receive()
        group.cancel_scope.cancel()
    return dict(json.loads(answer.message.model_dump_json(by_alias=True, exclude_unset=True)))


def test_the_protocol_versions_are_the_sdks() -> None:
    assert tuple(HANDSHAKE_PROTOCOL_VERSIONS) == HANDSHAKE_VERSIONS
    assert tuple(MODERN_PROTOCOL_VERSIONS) == MODERN_VERSIONS


@pytest.mark.parametrize("version", [*HANDSHAKE_VERSIONS, "2026-07-28", "1999-01-01"])
@pytest.mark.parametrize(
    ("request_id", "capabilities"),
    [
        (1, {}),
        ("init-1", {"elicitation": {}, "roots": {"listChanged": True}, "sampling": {}, "experimental": {}}),
    ],
)
@pytest.mark.parametrize("elicit", [False, True])
async def test_the_early_answer_is_the_one_the_sdk_gives(
    version: str, request_id: int | str, capabilities: dict[str, Any], elicit: bool
) -> None:
    line = _initialize(version, request_id, capabilities)
    early = early_answer(line)
    assert early is not None
    assert json.loads(early.wire()) == early.response == await _sdk_answer(line, elicit=elicit)


@pytest.mark.parametrize(
    ("request_id", "capabilities", "client"),
    [
        (1, {}, None),
        ("d-1", {"elicitation": {}, "extensions": {}}, {"name": "test", "version": "0", "title": "T"}),
    ],
)
@pytest.mark.parametrize("elicit", [False, True])
async def test_the_early_discover_answer_is_the_one_the_sdk_gives(
    request_id: int | str, capabilities: dict[str, Any], client: dict[str, Any] | None, elicit: bool
) -> None:
    line = _discover(request_id, capabilities, client)
    early = early_answer(line)
    assert early is not None and early.method == "server/discover"
    assert json.loads(early.wire()) == early.response == await _sdk_answer(line, elicit=elicit)


@pytest.mark.parametrize(
    "line",
    [
        b"not json\n",
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        b'{"jsonrpc":"2.0","id":true,"method":"initialize","params":{}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}\n',
        _initialize(capabilities={"sampling": 5}),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{'
            b'"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}\n'
        ),
        _discover().replace(b"2026-07-28", b"2025-11-25"),
        _discover(client={"name": "no version"}),
        _discover().replace(b'"params": {', b'"params": {"cursor": "x", '),
    ],
)
def test_first_lines_the_sdk_must_answer_get_no_early_answer(line: bytes) -> None:
    assert early_answer(line) is None


GATED_SERVER = """\
import importlib.abc, sys

class Gate(importlib.abc.MetaPathFinder):
    # Holds the first import of the SDK's types until the test writes a byte into the FIFO.
    def find_spec(self, name, path=None, target=None):
        if name == "mcp_types":
            sys.meta_path.remove(self)
            with open(gate, "rb") as fifo:
                fifo.read(1)
        return None

gate = sys.argv[1]
sys.meta_path.insert(0, Gate())
sys.argv = ["corral", *sys.argv[2:]]
from corral.cli import console_main
console_main()
"""


def _read_line(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], GUARD_S)
    assert ready, "no answer from corral mcp"
    return dict(json.loads(process.stdout.readline()))  # unbuffered: reads no byte past the line


def _end(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def test_initialize_is_answered_before_the_sdk_is_loaded(mcp_env: McpEnv, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    holder = os.open(gate, os.O_RDWR)  # a writer from the start: the server's open never blocks
    process = subprocess.Popen(
        [sys.executable, "-c", GATED_SERVER, str(gate), "mcp", "--cwd", str(mcp_env.work)],
        env=mcp_env.vars,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,  # unbuffered: `select` sees every line not yet read
    )
    assert process.stdin is not None
    try:
        process.stdin.write(_initialize(request_id=7))
        answer = _read_line(process)  # while the SDK's import is held at the gate
        assert answer["id"] == 7 and answer["result"]["serverInfo"]["name"] == "corral"
        os.write(holder, b"go")
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        process.stdin.write(b'{"jsonrpc":"2.0","id":8,"method":"tools/list"}\n')
        listed = _read_line(process)  # the SDK's session took the replayed handshake: no second answer to 7
        assert listed["id"] == 8 and "wait" in [tool["name"] for tool in listed["result"]["tools"]]
        process.stdin.close()
        assert process.wait(timeout=GUARD_S) == 0
    finally:
        os.close(holder)
        _end(process)


def _raw_server(mcp_env: McpEnv, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("corral")), "mcp", "--cwd", str(mcp_env.work), *args],
        env=mcp_env.vars,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,  # unbuffered: `select` sees every line not yet read
    )


def test_a_first_line_that_is_not_an_initialize_goes_to_the_sdk(mcp_env: McpEnv) -> None:
    process = _raw_server(mcp_env)
    assert process.stdin is not None
    try:
        process.stdin.write(b"not json\n" + _initialize(request_id=3))
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        process.stdin.write(b'{"jsonrpc":"2.0","id":4,"method":"prompts/list"}\n')
        refused = _read_line(process)  # the malformed line gets its JSON-RPC error
        assert refused["id"] is None and refused["error"]["code"] == -32700
        answered = _read_line(process)
        assert answered["id"] == 3 and answered["result"]["serverInfo"]["name"] == "corral"
        listed = _read_line(process)
        assert listed["id"] == 4 and [prompt["name"] for prompt in listed["result"]["prompts"]] == ["lead"]
        process.stdin.close()
        assert process.wait(timeout=GUARD_S) == 0
    finally:
        _end(process)


def test_an_initialize_the_sdk_refuses_after_the_early_answer_ends_the_server(mcp_env: McpEnv) -> None:
    process = _raw_server(mcp_env)
    assert process.stdin is not None and process.stderr is not None
    try:
        process.stdin.write(
            _initialize(capabilities={"sampling": {"tools": "yes"}})
        )  # deeper than the pre-check
        assert "result" in _read_line(process)
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')  # as clients go on
        assert process.wait(timeout=GUARD_S) == 2  # with stdin still open: the server ended itself
        stderr = process.stderr.readall().decode()
        assert stderr.startswith("corral: error: the MCP SDK refused the client's initialize"), stderr
        assert len(stderr.strip().splitlines()) == 1, stderr
    finally:
        _end(process)


def test_a_lead_that_cannot_be_opened_ends_the_server_while_the_client_waits(mcp_env: McpEnv) -> None:
    process = _raw_server(mcp_env, "--session", "no-such-session")
    assert process.stdin is not None and process.stderr is not None
    try:
        process.stdin.write(_initialize())
        assert "result" in _read_line(process)
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        process.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')  # and waits, stdin open
        assert process.wait(timeout=GUARD_S) == 2
        stderr = process.stderr.readall().decode()
        assert stderr.startswith("corral: error:") and "no-such-session" in stderr, stderr
    finally:
        _end(process)


def test_without_the_sdk_the_server_says_how_to_install_it_and_answers_nothing(mcp_env: McpEnv) -> None:
    code = (
        "import sys\n"
        "sys.modules['mcp'] = None  # as if the extra were not installed\n"
        "sys.argv = ['corral', *sys.argv[1:]]\n"
        "from corral.cli import console_main\n"
        "console_main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "mcp", "--cwd", str(mcp_env.work)],
        env=mcp_env.vars,
        input=_initialize(),
        capture_output=True,
        timeout=GUARD_S,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == b"", done.stdout
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        "corral: error: corral mcp needs the MCP SDK: install corral with its mcp extra"
    )
    # It says how, in ways that work (corral is not on a package registry), naming the extra's packages.
    assert "make install" in lines[0] and "uv tool install --force '.[mcp]'" in lines[0]
    assert "pip install 'corral" not in lines[0] and "'mcp" in lines[0]


class _Sink:
    def __init__(self) -> None:
        self.sent: list[SessionMessage] = []

    async def send(self, item: SessionMessage) -> None:
        self.sent.append(item)

    async def aclose(self) -> None:
        pass


async def _answer_once(
    early: EarlyAnswer, answer: mcp_types.JSONRPCResponse | mcp_types.JSONRPCError
) -> tuple[_Sink, list[BaseException], list[str], bool]:
    opened: list[bool] = []

    @contextlib.asynccontextmanager
    async def opener() -> AsyncIterator[Any]:
        opened.append(True)
        yield cast(Any, object())

    slot = LeadSlot(opener)
    sink, failures, warnings = _Sink(), list[BaseException](), list[str]()
    writer = AnswerOnce(sink, slot, early=early, failed=failures.append, warn=warnings.append)
    await writer.send(SessionMessage(answer))
    if slot.started:
        with anyio.fail_after(GUARD_S):
            await slot.when_started()
    await slot.aclose()
    return sink, failures, warnings, bool(opened)


def _response(early: EarlyAnswer, **changes: Any) -> mcp_types.JSONRPCResponse:
    result = {**early.response["result"], **changes}
    return mcp_types.JSONRPCResponse(jsonrpc="2.0", id=early.request_id, result=result)


async def test_the_sdks_matching_answer_is_dropped_and_the_lead_opens() -> None:
    early = early_answer(_initialize())
    assert early is not None
    sink, failures, warnings, opened = await _answer_once(early, _response(early))
    assert (sink.sent, failures, warnings, opened) == ([], [], [], True)


async def test_a_different_sdk_answer_is_a_warning() -> None:
    early = early_answer(_initialize())
    assert early is not None
    sink, failures, warnings, _ = await _answer_once(early, _response(early, instructions="other"))
    assert sink.sent == [] and failures == []
    assert len(warnings) == 1 and "differs from the one corral sent in instructions" in warnings[0]


async def test_another_protocol_version_from_the_sdk_is_a_failure() -> None:
    early = early_answer(_initialize("2025-06-18"))
    assert early is not None
    sink, failures, _, opened = await _answer_once(early, _response(early, protocolVersion="2025-11-25"))
    assert sink.sent == [] and not opened
    assert len(failures) == 1 and isinstance(failures[0], EarlyAnswerMismatch)
    assert "with protocolVersion 2025-11-25 where corral had answered 2025-06-18" in str(failures[0])
