"""Malformed lines over stdio (issue 27, item 13): each gets a JSON-RPC error, and the server goes on.

Driven with raw lines: no SDK client sends malformed JSON.
"""

from __future__ import annotations

import json
import select
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from .conftest import CORRAL, McpEnv, initialize_request, run_corral

GUARD_S = 60.0
"""How long an answer may take before the test gives up (a guard, not a measurement)."""
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INITIALIZE = initialize_request(request_id="init")


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


class Wire:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.stderr = b""

    def send(self, line: str | dict[str, Any]) -> None:
        text = line if isinstance(line, str) else json.dumps(line)
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode() + b"\n")
        self.process.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], GUARD_S)
        assert ready, f"no answer within {GUARD_S} s"
        line = self.process.stdout.readline()
        assert line, "the server ended without an answer"
        return dict(json.loads(line))


@contextmanager
def _server(env: McpEnv) -> Iterator[Wire]:
    process = subprocess.Popen(
        [CORRAL, "mcp", "--cwd", str(env.work)],
        env=env.vars,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wire = Wire(process)
    try:
        yield wire
    finally:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=GUARD_S)
        if process.stderr is not None:
            wire.stderr = process.stderr.read()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def _error(answer: dict[str, Any], code: int, request_id: object = None) -> None:
    assert answer.get("jsonrpc") == "2.0" and "result" not in answer, answer
    assert answer["error"]["code"] == code, answer
    assert answer["id"] == request_id, answer
    assert answer["error"]["message"], answer


@pytest.mark.parametrize("depth", [200, 100_000])
def test_a_deeply_nested_first_line_gets_a_parse_error_and_the_server_goes_on(
    mcp_env: McpEnv, depth: int
) -> None:
    with _server(mcp_env) as wire:
        wire.send(_nested(depth))
        _error(wire.read(), PARSE_ERROR if depth > 1000 else INVALID_REQUEST)
        wire.send(INITIALIZE)
        assert wire.read()["id"] == "init"
    assert wire.process.returncode == 0
    assert b"Traceback" not in wire.stderr, wire.stderr


MALFORMED: list[tuple[str, int, object]] = [
    ("not json", PARSE_ERROR, None),
    ("{", PARSE_ERROR, None),
    ('{"jsonrpc": "2.0", "id": 1, "method": "ping"', PARSE_ERROR, None),
    ("\x00\x01", PARSE_ERROR, None),
    ("null", INVALID_REQUEST, None),
    ("5", INVALID_REQUEST, None),
    ('"ping"', INVALID_REQUEST, None),
    ("[]", INVALID_REQUEST, None),
    ('[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]', INVALID_REQUEST, None),
    ("{}", INVALID_REQUEST, None),
    ('{"jsonrpc": "2.0", "id": 3}', INVALID_REQUEST, 3),
    ('{"jsonrpc": "1.0", "id": 4, "method": "ping"}', INVALID_REQUEST, 4),
    ('{"id": 5, "method": "ping"}', INVALID_REQUEST, 5),
    ('{"jsonrpc": "2.0", "id": 6, "method": 7}', INVALID_REQUEST, 6),
    ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST, None),
    ('{"jsonrpc": "2.0", "id": [1], "method": "ping"}', INVALID_REQUEST, None),
    ('{"jsonrpc": "2.0", "id": "s8", "method": "ping", "params": 5}', INVALID_REQUEST, "s8"),
    ('{"jsonrpc": "2.0", "id": 9, "result": {}, "error": {"code": 1, "message": "x"}}', INVALID_REQUEST, 9),
    ('{"jsonrpc": "2.0", "method": 10}', INVALID_REQUEST, None),
    (
        '{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "agent_list", "arguments": '
        + _nested(200)
        + "}}",
        INVALID_REQUEST,
        11,
    ),
    ('{"jsonrpc": "2.0", "id": 12, "method": "ping"}' + "x", PARSE_ERROR, None),
]


def test_every_malformed_line_gets_a_json_rpc_error_and_the_server_goes_on(mcp_env: McpEnv) -> None:
    with _server(mcp_env) as wire:
        wire.send(INITIALIZE)
        assert wire.read()["id"] == "init"
        wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for line, code, request_id in MALFORMED:
            wire.send(line)
            answer = wire.read()
            assert answer.get("error", {}).get("code") == code and answer.get("id") == request_id, (
                line,
                answer,
            )
        deep = {"name": "agent_list", "arguments": {"x": json.loads(_nested(150))}}
        wire.send({"jsonrpc": "2.0", "id": "deep-ok", "method": "tools/call", "params": deep})
        answered = wire.read()
        assert answered["id"] == "deep-ok", answered  # answered (an error of the tool), not dropped
        wire.send({"jsonrpc": "2.0", "id": "last", "method": "ping"})
        assert wire.read() == {"jsonrpc": "2.0", "id": "last", "result": {}}
    assert wire.process.returncode == 0


def test_corral_trace_refuses_a_deeply_nested_file_in_one_line(mcp_env: McpEnv) -> None:
    trace = mcp_env.root / "deep.jsonl"
    trace.write_text(_nested(100_000) + "\n")
    done = run_corral(mcp_env, "trace", str(trace))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("corral: error:") and "line 1" in lines[0], done.stderr
