"""The bash tool with real subprocesses: output, exit codes, truncation, timeout, cancellation."""

from __future__ import annotations

import asyncio
import os
import re
import stat
from pathlib import Path

import pytest

from corral.agent import ToolError, ToolResult
from corral.agent.tools import BashTool, aborted_output

from .conftest import details_of, text_of

WAIT = 10.0


def _alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie counts as dead)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] != "Z"


async def _wait_dead(*pids: int) -> None:
    async def poll() -> None:
        while any(_alive(pid) for pid in pids):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), WAIT)


async def _wait_for_file(path: Path) -> str:
    async def poll() -> str:
        while not path.exists() or not path.read_text().strip():
            await asyncio.sleep(0.02)
        return path.read_text().strip()

    return await asyncio.wait_for(poll(), WAIT)


async def test_output_merges_stderr(tmp_path: Path) -> None:
    result = await BashTool(tmp_path).execute("c", {"command": "echo out; echo err >&2; pwd"})
    assert text_of(result) == f"out\nerr\n{tmp_path}\n"
    assert details_of(result) == {"exitCode": 0}


async def test_empty_output(tmp_path: Path) -> None:
    assert text_of(await BashTool(tmp_path).execute("c", {"command": "true"})) == "(no output)"


async def test_stdin_is_closed(tmp_path: Path) -> None:
    result = await BashTool(tmp_path).execute("c", {"command": "cat; echo done"})
    assert text_of(result) == "done\n"


async def test_nonzero_exit_is_error_with_output(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as info:
        await BashTool(tmp_path).execute("c", {"command": "echo partial; exit 3"})
    assert str(info.value) == "partial\n\n\nCommand exited with code 3"
    assert info.value.details == {"exitCode": 3}


async def test_nonzero_exit_without_output(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"^\(no output\)\n\nCommand exited with code 1$"):
        await BashTool(tmp_path).execute("c", {"command": "false"})


async def test_custom_shell_path_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="Custom shell path not found: /no/such/shell"):
        await BashTool(tmp_path, shell_path="/no/such/shell").execute("c", {"command": "true"})


async def test_custom_shell_is_used(tmp_path: Path) -> None:
    result = await BashTool(tmp_path, shell_path="/bin/sh").execute("c", {"command": "echo $0"})
    assert text_of(result) == "/bin/sh\n"


async def test_line_truncation_keeps_full_log(tmp_path: Path) -> None:
    result = await BashTool(tmp_path).execute("c", {"command": "seq 1 20000"})
    text = text_of(result)
    details = details_of(result)
    log = Path(details["fullOutputPath"])
    try:
        assert re.fullmatch(r"corral-bash-[0-9a-f]{16}\.log", log.name)
        assert text.endswith(f"\n20000\n\n\n[Showing lines 18002-20001 of 20001. Full output: {log}]")
        assert text.startswith("18002\n")
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        assert log.read_text() == "".join(f"{i}\n" for i in range(1, 20001))
        assert details["truncation"]["truncatedBy"] == "lines" and details["exitCode"] == 0
    finally:
        log.unlink()


async def test_byte_truncation_notice(tmp_path: Path) -> None:
    command = "for i in $(seq 1 100); do printf '%01000d\\n' $i; done"
    result = await BashTool(tmp_path).execute("c", {"command": command})
    log = Path(details_of(result)["fullOutputPath"])
    try:
        assert text_of(result).endswith(f"[Showing lines 50-101 of 101 (50.0KB limit). Full output: {log}]")
        assert log.stat().st_size == 100 * 1001
    finally:
        log.unlink()


async def test_single_long_line_notice(tmp_path: Path) -> None:
    result = await BashTool(tmp_path).execute("c", {"command": "head -c 60000 /dev/zero | tr '\\0' x"})
    log = Path(details_of(result)["fullOutputPath"])
    try:
        text = text_of(result)
        assert (
            text == "x" * 51200 + f"\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {log}]"
        )
    finally:
        log.unlink()


async def test_streams_updates_while_running(tmp_path: Path) -> None:
    updates: list[ToolResult] = []
    first_seen = asyncio.Event()

    def on_update(partial: ToolResult) -> None:
        updates.append(partial)
        if "first" in text_of(partial):
            first_seen.set()

    command = "echo first; while [ ! -f go ]; do sleep 0.02; done; echo second"
    task = asyncio.create_task(BashTool(tmp_path).execute("c", {"command": command}, on_update))
    await asyncio.wait_for(first_seen.wait(), WAIT)
    assert not task.done()
    (tmp_path / "go").touch()
    result = await asyncio.wait_for(task, WAIT)
    assert text_of(result) == "first\nsecond\n"
    assert text_of(updates[-1]) == "first\nsecond\n"


async def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    command = "echo $$ > shell.pid; sleep 1000 & echo $! > child.pid; echo started; wait"
    with pytest.raises(ToolError) as info:
        await BashTool(tmp_path).execute("c", {"command": command, "timeout": 1})
    assert str(info.value) == "started\n\n\nCommand timed out after 1 seconds"
    shell_pid = int((tmp_path / "shell.pid").read_text())
    child_pid = int((tmp_path / "child.pid").read_text())
    await _wait_dead(shell_pid, child_pid)


async def test_cancellation_kills_the_process_group(tmp_path: Path) -> None:
    tool = BashTool(tmp_path)
    command = "sleep 1000 & echo $! > child.pid; echo ready; wait"
    ready = asyncio.Event()

    def on_update(partial: ToolResult) -> None:
        if "ready" in text_of(partial):
            ready.set()

    task = asyncio.create_task(tool.execute("call-7", {"command": command}, on_update))
    await asyncio.wait_for(ready.wait(), WAIT)
    (running,) = tool.running_processes()
    assert running.call_id == "call-7" and running.command == command
    assert tool.active_pids == {running.pid}
    child_pid = int(await _wait_for_file(tmp_path / "child.pid"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as info:
        await task
    assert aborted_output(info.value) == "ready\n\n\nCommand aborted"
    await _wait_dead(running.pid, child_pid)
    assert tool.active_pids == frozenset()


async def test_sigterm_ignoring_child_is_killed(tmp_path: Path) -> None:
    command = "(trap '' TERM; echo $BASHPID > child.pid; exec sleep 1000) & wait"
    with pytest.raises(ToolError, match=r"Command timed out after 0\.5 seconds"):
        await BashTool(tmp_path).execute("c", {"command": command, "timeout": 0.5})
    await _wait_dead(int((tmp_path / "child.pid").read_text()))


async def test_background_job_does_not_block_completion(tmp_path: Path) -> None:
    result = await asyncio.wait_for(
        BashTool(tmp_path).execute("c", {"command": "sleep 30 & echo $! > bg.pid; echo done"}), WAIT
    )
    assert text_of(result).startswith("done")
    os.kill(int((tmp_path / "bg.pid").read_text()), 9)
