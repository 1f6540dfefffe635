"""`wait`'s cursor across kills and concurrent calls (issue 27, items 3 and 4).

The durable cursor moves only when the client shows it has an answer: its next `wait` (with or
without `after`). So a server killed after it collected items but before the client read them
gives them again after `--continue`; and two `wait` calls in flight never get the same item.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import signal
import subprocess
import termios
from typing import Any

from .conftest import CORRAL, WAIT_MS, McpEnv, initialize_request
from .conftest import items as _items

GUARD_S = 60.0
"""How long a wait on the server's state may take before the test gives up (a guard, not a measurement)."""


async def test_a_server_killed_before_the_answer_is_written_gives_the_item_again(mcp_env: McpEnv) -> None:
    """SIGKILL between the collect and the write of the answer (the `mcp_wait_answer` fault point)."""
    request_id = None
    with contextlib.suppress(Exception):  # the server dies under the client: the wait fails
        async with mcp_env.client(env={"CORRAL_FAULTS": "mcp_wait_answer"}) as client:
            started = await client.call_tool(
                "agent_delegate", {"definition": "scout", "task": "x", "label": "k1"}
            )
            request_id = started.structured_content["request_id"]  # type: ignore[index]
            await client.call_tool("wait", {"timeoutMs": WAIT_MS})  # collected, then killed
    assert request_id is not None
    async with mcp_env.client("--continue") as client:
        again = _items(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))
        assert [item["details"]["request_id"] for item in again] == [request_id]
        assert _items(await client.call_tool("wait", {"timeoutMs": 0})) == []  # acknowledged now
    async with mcp_env.client("--continue") as client:
        assert _items(await client.call_tool("wait", {"timeoutMs": 0})) == []  # and durably so


def _send(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()


def _answer(process: subprocess.Popen[bytes], request_id: int) -> dict[str, Any]:
    assert process.stdout is not None
    while line := process.stdout.readline():
        message = json.loads(line)
        if message.get("id") == request_id:
            return dict(message)
    raise AssertionError(f"the server ended before answering request {request_id}")


def _queued(fd: int) -> int:
    buffer = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buffer)
    return int.from_bytes(buffer, "little")


async def test_a_server_killed_while_its_answer_is_stuck_in_a_full_pipe_gives_the_item_again(
    mcp_env: McpEnv,
) -> None:
    """The client does not read: the server's write of the `wait` answer blocks on a full pipe."""
    big = "x" * 400_000  # more than any pipe holds
    mcp_env.script({"*": [{"text": big}]})
    process = subprocess.Popen(
        [CORRAL, "mcp", "--cwd", str(mcp_env.work)],
        env=mcp_env.vars,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        _send(process, initialize_request("full-pipe"))
        _answer(process, 1)
        _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "agent_delegate", "arguments": {"definition": "scout", "task": "x", "label": "p1"}}
        _send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        started = _answer(process, 2)
        request_id = started["result"]["structuredContent"]["request_id"]
        wait = {"name": "wait", "arguments": {"timeoutMs": WAIT_MS}}
        _send(process, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": wait})
        assert process.stdout is not None
        fd = process.stdout.fileno()
        capacity = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)  # the pipe is full once it holds this much
        loop = asyncio.get_running_loop()
        deadline = loop.time() + GUARD_S
        while _queued(fd) < capacity:  # host state: the pipe fills as the server writes
            assert loop.time() < deadline, f"the pipe never filled ({_queued(fd)} of {capacity} bytes)"
            assert process.poll() is None
            await asyncio.sleep(0.02)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=GUARD_S)
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
    async with mcp_env.client("--continue") as client:
        again = _items(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))
        assert [item["details"]["request_id"] for item in again] == [request_id]
        assert big[:1000] in again[0]["text"]


async def test_two_waits_in_flight_never_get_the_same_item(mcp_env: McpEnv) -> None:
    gate = mcp_env.work / "go"
    hold = f"while [ ! -f {gate} ]; do sleep 0.01; done; echo ok"
    mcp_env.script({"*": [{"tool_calls": [{"name": "bash", "args": {"command": hold}}]}, {"text": "done"}]})
    async with mcp_env.client() as client:
        for label in ("c1", "c2"):
            started = await client.call_tool(
                "agent_delegate", {"definition": "implementer", "task": "x", "label": label}
            )
            assert not started.is_error, started.content
        running = [asyncio.Event(), asyncio.Event()]

        def reporter(index: int) -> Any:
            async def progress(value: float, total: float | None, message: str | None) -> None:
                running[index].set()

            return progress

        first = asyncio.create_task(
            client.call_tool("wait", {"timeoutMs": WAIT_MS}, progress_callback=reporter(0))
        )
        second = asyncio.create_task(
            client.call_tool("wait", {"timeoutMs": WAIT_MS}, progress_callback=reporter(1))
        )
        for event in running:  # both calls are in the server (each reported progress) ...
            await asyncio.wait_for(event.wait(), GUARD_S)
        gate.write_text("")  # ... before any item exists
        got = _items(await first) + _items(await second)
        ids = [item["entry_id"] for item in got]
        assert len(ids) == len(set(ids)), ids
        while len(got) < 2:  # the second result may come in a later answer, never twice
            got += _items(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))
        labels = sorted(item["details"]["agent"] for item in got)
        assert labels == ["c1", "c2"], labels


async def test_a_wait_the_client_cancels_after_the_collect_gives_its_items_again(mcp_env: McpEnv) -> None:
    """Cancelled while its answer is still being built (here: `--elicit` asking the human): the SDK never
    sends that answer, so neither the next `wait` nor a restarted server may treat its items as held."""
    from mcp.types import ElicitResult

    mcp_env.script({"*": [{"tool_calls": [{"name": "ask_owner", "args": {"question": "Which file?"}}]}]})
    asking = asyncio.Event()
    asked = 0

    async def held_then_declined(context: Any, params: Any) -> ElicitResult:
        nonlocal asked
        asked += 1
        if asked == 1:  # the human has not answered yet when the client cancels the wait
            asking.set()
            await asyncio.Event().wait()
        return ElicitResult(action="decline")

    async with mcp_env.client("--elicit", mode="legacy", elicitation_callback=held_then_declined) as client:
        await client.call_tool("agent_delegate", {"definition": "scout", "task": "q", "label": "asker"})
        waiting = asyncio.create_task(client.call_tool("wait", {"timeoutMs": WAIT_MS}))
        await asyncio.wait_for(asking.wait(), GUARD_S)  # collected: the server is eliciting its answer
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        again = _items(await client.call_tool("wait", {"timeoutMs": WAIT_MS}))
        assert [(item["kind"], item["details"]["agent"]) for item in again] == [("ask", "asker")]
        assert "elicited_answer" not in again[0]["details"]
        assert _items(await client.call_tool("wait", {"timeoutMs": 0})) == []  # acknowledges that answer
    async with mcp_env.client("--continue") as client:  # ... durably
        assert _items(await client.call_tool("wait", {"timeoutMs": 0})) == []


class _SavedCursor:
    """The two `Lead` methods `WaitCursor` uses, with the saves recorded."""

    def __init__(self) -> None:
        self.saved: list[str | None] = []

    def saved_cursor(self) -> str | None:
        return self.saved[-1] if self.saved else None

    def save_cursor(self, entry_id: str | None) -> None:
        self.saved.append(entry_id)


def test_answers_are_acknowledged_in_the_order_they_were_handed_out() -> None:
    from corral._mcp._cursor import WaitCursor

    lead = _SavedCursor()
    cursor = WaitCursor(lead)  # type: ignore[arg-type]
    first = cursor.hand(cursor.start(cursor.arrive(), after=None), "e1")
    second = cursor.hand(cursor.start(cursor.arrive(), after=None), "e2")
    cursor.left(second)  # the later answer leaves first: the earlier one is still being built
    assert cursor.start(cursor.arrive(), after=None) == "e2" and lead.saved == []
    cursor.left(first)
    cursor.start(cursor.arrive(), after=None)
    assert lead.saved == ["e2"]


def test_a_withdrawn_answer_gives_its_items_back_or_holds_the_durable_cursor() -> None:
    from corral._mcp._cursor import WaitCursor

    lead = _SavedCursor()
    cursor = WaitCursor(lead)  # type: ignore[arg-type]
    withdrawn = cursor.hand(cursor.start(cursor.arrive(), after=None), "e1")
    cursor.withdraw(withdrawn)  # nothing handed out after it: the next wait gets its items again
    assert cursor.start(cursor.arrive(), after=None) is None and lead.saved == []
    stuck = cursor.hand(None, "e1")
    later = cursor.hand("e1", "e2")
    cursor.withdraw(stuck)  # later items went out already: they are not handed out again ...
    cursor.left(later)
    assert cursor.start(cursor.arrive(), after=None) == "e2"
    assert lead.saved == []  # ... but the durable cursor stays before the withdrawn answer's items


class _FullDisk(_SavedCursor):
    """A lead whose session cannot be written: the cursor's save fails as on a full disk."""

    def save_cursor(self, entry_id: str | None) -> None:
        from corral.session import SessionWriteError

        raise SessionWriteError("cannot append to the session file: [Errno 28] No space left on device")


class _Context:
    """The part of the SDK's request context `wait` uses: progress reports go nowhere."""

    class session:  # the attribute's name in the SDK
        @staticmethod
        async def report_progress(*_: object) -> None:
            return None


async def test_a_wait_whose_cursor_cannot_be_written_is_an_internal_failure_that_moves_nothing() -> None:
    """A full disk is not the caller's mistake: `internal_failure`, what to do, and the items stay due."""
    from corral._mcp._cursor import WaitCursor
    from corral._mcp._server import _wait

    lead = _FullDisk()
    lead.saved.append("e0")  # an earlier wait acknowledged up to e0
    cursor = WaitCursor(lead)  # type: ignore[arg-type]
    answered = cursor.hand(cursor.start(cursor.arrive(), after=None), "e1")
    cursor.left(answered)  # e1 was answered: this call acknowledges it, which writes the cursor
    answer = await _wait(cursor, {"timeoutMs": 0}, _Context())  # type: ignore[arg-type]
    error = (answer.structured_content or {})["error"]
    assert answer.is_error and error["category"] == "internal_failure"
    assert "No space left on device" in error["message"] and error["nextAction"].startswith("Free space")
    assert cursor.acknowledged() == "e0" and lead.saved == ["e0"]  # the durable cursor did not move
