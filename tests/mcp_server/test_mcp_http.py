"""`corral mcp --http`: streamable HTTP on loopback, driven by the official MCP SDK client."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .conftest import CORRAL, WAIT_MS, McpEnv, run_corral, run_mcp_answering_initialize


@dataclass
class Served:
    url: str
    token: str | None
    """The generated token the server printed (`None` when it printed none)."""
    process: subprocess.Popen[str]
    stderr: str

    def client(self) -> httpx2.AsyncClient:
        headers = {} if self.token is None else {"Authorization": f"Bearer {self.token}"}
        return httpx2.AsyncClient(headers=headers)


@contextmanager
def _served(env: McpEnv, *args: str) -> Iterator[Served]:
    """Start `corral mcp --http 127.0.0.1:0 ARGS`; yield its URL and token (read from its stderr)."""
    process = subprocess.Popen(
        [CORRAL, "mcp", "--cwd", str(env.work), "--http", "127.0.0.1:0", *args],
        env=env.vars,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        seen = ""
        while (line := process.stderr.readline()) and not (
            found := re.search(r"serving (http://127\.0\.0\.1:\d+/mcp)", line)
        ):
            seen += line
        assert line and found, seen
        token = re.search(r"bearer token (\S+)", seen)
        yield Served(found.group(1), token.group(1) if token else None, process, seen)
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()


async def test_delegate_and_wait_over_streamable_http(mcp_env: McpEnv) -> None:
    with _served(mcp_env) as served:
        async with (
            served.client() as authed,
            Client(streamable_http_client(served.url, http_client=authed)) as client,  # type: ignore[arg-type]
        ):
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names[0] == "agent_list" and names[-1] == "wait"
            started = await client.call_tool(
                "agent_delegate", {"definition": "scout", "task": "x", "label": "h1"}
            )
            assert not started.is_error
            waited = await client.call_tool("wait", {"timeoutMs": WAIT_MS})
            assert waited.structured_content is not None
            assert [item["kind"] for item in waited.structured_content["items"]] == ["result"]
            bad = await client.call_tool("agent_close", {"agent": "nobody"})
            assert bad.is_error and "target_not_found" in bad.content[0].text  # type: ignore[union-attr]


async def test_a_token_is_required_on_every_request_when_set(mcp_env: McpEnv) -> None:
    with _served(mcp_env, "--token", "s3cret") as served:
        url = served.url
        assert served.token is None and "s3cret" not in served.stderr  # a given token is not printed
        async with httpx2.AsyncClient() as plain:
            refused = await plain.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        async with (
            httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"}) as authed,
            Client(streamable_http_client(url, http_client=authed)) as client,  # type: ignore[arg-type]
        ):
            assert [tool.name for tool in (await client.list_tools()).tools][-1] == "wait"


async def test_without_token_one_is_generated_printed_and_required(mcp_env: McpEnv) -> None:
    with _served(mcp_env) as served:
        assert served.token is not None and len(served.token) >= 32
        async with httpx2.AsyncClient() as plain:
            refused = await plain.post(served.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            wrong = await plain.post(
                served.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"Authorization": "Bearer not-the-token"},
            )
        assert refused.status_code == 401 and wrong.status_code == 401
        async with (
            served.client() as authed,
            Client(streamable_http_client(served.url, http_client=authed)) as client,  # type: ignore[arg-type]
        ):
            assert [tool.name for tool in (await client.list_tools()).tools][-1] == "wait"
    with _served(mcp_env) as again:
        assert again.token is not None and again.token != served.token  # a new one each start


async def test_no_token_is_an_explicit_opt_out(mcp_env: McpEnv) -> None:
    with _served(mcp_env, "--no-token") as served:
        assert served.token is None and "any process on this machine" in served.stderr
        async with Client(served.url) as client:  # no Authorization header at all
            assert [tool.name for tool in (await client.list_tools()).tools][-1] == "wait"


def test_the_printed_address_accepts_connections_at_once(mcp_env: McpEnv) -> None:
    """The socket listens before its address is printed: a client that connects the moment it
    reads the line is queued, even while the server cannot run (stopped with SIGSTOP)."""
    with _served(mcp_env) as served:
        served.process.send_signal(signal.SIGSTOP)
        try:
            host, port = served.url.removeprefix("http://").removesuffix("/mcp").split(":")
            with socket.create_connection((host, int(port)), timeout=30):
                pass  # connected: the kernel completed the handshake from the listen queue
        finally:
            served.process.send_signal(signal.SIGCONT)


def test_non_loopback_binds_are_refused(mcp_env: McpEnv) -> None:
    for args, expected in (
        (["--http", "0.0.0.0:8765"], "refusing to serve beyond this machine"),
        (["--http", "0.0.0.0:8765", "--allow-remote"], "needs a bearer token"),
        (["--http", "0.0.0.0:8765", "--allow-remote", "--no-token"], "always needs a token"),
        (["--http", "127.0.0.1:0", "--no-token", "--token", "x"], "contradict each other"),
        (["--no-token"], "--no-token is for --http"),
        (["--http", "nonsense"], "give HOST:PORT"),
    ):
        done = run_corral(mcp_env, "mcp", "--cwd", str(mcp_env.work), *args)
        assert done.returncode == 2, done.stderr
        assert expected in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (mcp_env.home / "sessions").exists()  # refused before anything was written


def test_a_lead_that_cannot_be_opened_ends_the_server_with_a_one_line_error(mcp_env: McpEnv) -> None:
    done = run_mcp_answering_initialize(mcp_env, "--session", "no-such-session")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("corral: error:") and "no-such-session" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_cli_imports_neither_the_sdk_nor_the_api_until_mcp_runs(mcp_env: McpEnv) -> None:
    code = (
        "import sys\n"
        "from corral.cli import main\n"
        "main(['--help'])\n"
        "print(sorted(m for m in ('mcp', 'corral.lead', 'corral._mcp') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=mcp_env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
