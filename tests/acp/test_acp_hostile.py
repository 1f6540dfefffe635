"""Hostile ACP lines get JSON-RPC errors of their kind, and the server keeps serving."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from .conftest import CORRAL, WAIT, AcpEnv

HOSTILE: list[tuple[bytes, int, object]] = [
    (b"{not json", -32700, None),
    (b"\xff\xfe\x00garbage", -32700, None),
    (b"[" * 100_000 + b"]" * 100_000, -32700, None),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"n": NaN}}', -32700, None),
    (b"[1, 2, 3]", -32600, None),
    (b'{"id": 2, "method": "initialize", "params": {"protocolVersion": 1}}', -32600, 2),
    (b'{"jsonrpc": "2.0", "id": {"nested": true}, "method": "initialize"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 3, "method": 42}', -32600, 3),
    (b'{"jsonrpc": "2.0", "id": 4, "method": "session/fly", "params": {}}', -32601, 4),
    (b'{"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": "one"}', -32602, 5),
    (b'{"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": {"protocolVersion": "one"}}', -32602, 6),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "session/new", "params": {"cwd": "relative/dir"}}', -32602, 7),
    (
        b'{"jsonrpc": "2.0", "id": 8, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": []}}',
        -32002,
        8,
    ),
    (
        b'{"jsonrpc": "2.0", "id": 9, "method": "session/load", "params": {"sessionId": "no-such-session", "cwd": "/"}}',
        -32002,
        9,
    ),
]


async def _answer(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    async with asyncio.timeout(WAIT):
        line = await process.stdout.readline()
    assert line, "the server closed its output"
    return dict(json.loads(line))


async def test_each_hostile_line_gets_its_error_and_the_server_keeps_serving(acp_env: AcpEnv) -> None:
    process = await asyncio.create_subprocess_exec(
        CORRAL,
        "acp",
        "--cwd",
        str(acp_env.work),
        "--model",
        "scripted/team",
        env=acp_env.vars,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=1 << 20,
    )
    assert process.stdin is not None
    try:
        for line, code, ident in HOSTILE:
            process.stdin.write(line + b"\n")
            await process.stdin.drain()
            answer = await _answer(process)
            assert answer["jsonrpc"] == "2.0"
            assert answer["error"]["code"] == code, (line[:80], answer)
            assert answer["id"] == ident
            assert answer["error"]["message"]
        # A notification with an unknown method gets no answer; the next request is answered.
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "session/whatever", "params": {}}\n')
        process.stdin.write(
            b'{"jsonrpc": "2.0", "id": "ok", "method": "initialize", "params": {"protocolVersion": 1}}\n'
        )
        await process.stdin.drain()
        answer = await _answer(process)
        assert answer["id"] == "ok" and answer["result"]["protocolVersion"] == 1
    finally:
        process.stdin.close()
        async with asyncio.timeout(WAIT):
            code = await process.wait()
    assert code == 0
