"""One contract for every runtime: start, presence, recent output, processes, stop.

`InProcessRuntime` runs a small `ChildProgram`; `TmuxRuntime` runs a shell in a
pane of this test's private tmux server. Runtime-specific checks follow.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from corral.runtime import (
    InProcessRuntime,
    LaunchSpec,
    PaneNotReady,
    ProcessEvidence,
    RollbackFailed,
    RuntimeError_,
    RuntimeHandle,
    TmuxRuntime,
)

WAIT = 20.0
MARK = "hello-from-the-agent"


class _Program:
    def __init__(self) -> None:
        self.lines: list[str] = []

    async def run(self) -> None:
        self.lines.append(MARK)
        await asyncio.Event().wait()

    def activity_lines(self) -> list[str]:
        return list(self.lines)

    def running_processes(self) -> list[ProcessEvidence]:
        return [ProcessEvidence(pid=os.getpid(), argv0="python", cmdline="python agent")]


@dataclass
class Backend:
    runtime: Any
    cwd: Path

    def spec(self, run_id: str, label: str) -> LaunchSpec:
        if isinstance(self.runtime, InProcessRuntime):
            return LaunchSpec(run_id, label, self.cwd, "sid", program=_Program())
        return LaunchSpec(run_id, label, self.cwd, "sid", argv=("sh", "-c", f"echo {MARK}; exec sleep 60"))

    async def observe(self, handle: RuntimeHandle) -> None:
        if isinstance(self.runtime, TmuxRuntime):
            await self.runtime.prepare_evidence(handle)
        else:
            await asyncio.sleep(0)


@pytest.fixture(params=["inprocess", "tmux"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param == "inprocess":
        runtime: Any = InProcessRuntime(host_tag="test")
        try:
            yield Backend(runtime, tmp_path)
        finally:
            await runtime.stop_all()
        return
    socket = request.getfixturevalue("tmux_socket")
    yield Backend(TmuxRuntime(socket=socket), tmp_path)


class TestRuntimeContract:
    async def test_start_is_live_and_shows_recent_output(self, backend: Backend) -> None:
        handle = await backend.runtime.start(backend.spec("run-1", "scout"))
        assert handle.kind == backend.runtime.kind and handle.run_id == "run-1"

        async def shown() -> None:
            while True:
                await backend.observe(handle)
                if MARK in backend.runtime.recent_output(handle).text:
                    return

        await asyncio.wait_for(shown(), WAIT)
        assert backend.runtime.presence(handle) == "live"
        output = backend.runtime.recent_output(handle, lines=80, max_bytes=5)
        assert output.truncated and len(output.text.encode()) <= 5
        assert backend.runtime.process_evidence(handle), "a live agent shows at least one process"

    async def test_stop_makes_it_lost(self, backend: Backend) -> None:
        handle = await backend.runtime.start(backend.spec("run-2", "worker"))
        await backend.observe(handle)
        assert backend.runtime.presence(handle) == "live"
        await asyncio.wait_for(backend.runtime.stop(handle), WAIT)
        await backend.observe(handle)
        assert backend.runtime.presence(handle) == "lost"

    async def test_two_agents_have_distinct_handles(self, backend: Backend) -> None:
        first = await backend.runtime.start(backend.spec("run-a", "a"))
        second = await backend.runtime.start(backend.spec("run-b", "b"))
        assert first.runtime_id != second.runtime_id
        await backend.runtime.stop(first)
        await backend.observe(second)
        assert backend.runtime.presence(second) == "live"


# --- tmux specifics --------------------------------------------------------------------------------------


def _tmux(socket: Path, *args: str) -> str:
    """Run tmux on the private server; empty output when the server has exited (no panes left)."""
    return subprocess.run(
        ["tmux", "-S", str(socket), *args], capture_output=True, text=True, check=False, timeout=10
    ).stdout


async def test_tmux_pane_is_titled_with_the_label_in_a_private_socket_dir(
    tmux_socket: Path, tmp_path: Path
) -> None:
    runtime = TmuxRuntime(socket=tmux_socket)
    handle = await runtime.start(LaunchSpec("r", "scout", tmp_path, "sid", argv=("sleep", "60")))
    panes = _tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id} #{pane_title} #{window_name}")
    assert f"{handle.runtime_id} scout scout" in panes
    assert tmux_socket.parent.stat().st_mode & 0o777 == 0o700


async def test_tmux_presence_is_unknown_before_any_inventory_and_lost_after_exit(
    tmux_socket: Path, tmp_path: Path
) -> None:
    runtime = TmuxRuntime(socket=tmux_socket)
    handle = await runtime.start(LaunchSpec("r", "quick", tmp_path, "sid", argv=("sh", "-c", "exit 0")))
    fresh = TmuxRuntime(socket=tmux_socket)
    assert fresh.presence(handle) == "unknown"  # no inventory: never proves loss

    async def gone() -> None:
        while True:
            await runtime.refresh()
            if runtime.presence(handle) == "lost":
                return
            await asyncio.sleep(0.02)

    await asyncio.wait_for(gone(), WAIT)


async def test_tmux_failed_inventory_is_unknown_not_lost(tmp_path: Path, tmux_socket: Path) -> None:
    runtime = TmuxRuntime(socket=tmux_socket)
    handle = await runtime.start(LaunchSpec("r", "a", tmp_path, "sid", argv=("sleep", "60")))
    await runtime.refresh()
    assert runtime.presence(handle) == "live"
    runtime.tmux = str(tmp_path / "no-such-tmux")
    assert not await runtime.refresh()
    assert runtime.presence(handle) == "unknown"


async def test_tmux_readiness_timeout_rolls_back_with_a_diagnostic(tmux_socket: Path, tmp_path: Path) -> None:
    runtime = TmuxRuntime(socket=tmux_socket)
    argv = ("sh", "-c", "for i in $(seq 1 60); do echo boot-line-$i; done; echo still-booting; exec sleep 60")
    handle = await runtime.start(LaunchSpec("r", "slow", tmp_path, "sid", argv=argv))
    await asyncio.sleep(0)
    with pytest.raises(PaneNotReady) as caught:
        await runtime.wait_ready(handle, lambda: False, timeout=1.0)
    diagnostic = caught.value.diagnostic
    assert "still-booting" in diagnostic
    assert len(diagnostic.splitlines()) <= 40 and len(diagnostic.encode()) <= 4096
    await runtime.refresh()
    assert runtime.presence(handle) == "lost"
    assert handle.runtime_id not in _tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split()


async def test_tmux_early_exit_fails_readiness_with_its_output(tmux_socket: Path, tmp_path: Path) -> None:
    runtime = TmuxRuntime(socket=tmux_socket)
    argv = ("sh", "-c", "echo worker-crashed-badly; sleep 0.3; exit 3")  # a worker takes a moment
    handle = await runtime.start(LaunchSpec("r", "crash", tmp_path, "sid", argv=argv))
    with pytest.raises(PaneNotReady) as caught:
        await runtime.wait_ready(handle, lambda: False, timeout=WAIT)
    assert "exited before it was ready" in str(caught.value)
    assert "worker-crashed-badly" in caught.value.diagnostic


async def test_tmux_never_kills_a_pane_whose_process_does_not_match(
    tmux_socket: Path, tmp_path: Path
) -> None:
    runtime = TmuxRuntime(socket=tmux_socket)
    handle = await runtime.start(LaunchSpec("r", "a", tmp_path, "sid", argv=("sleep", "60")))
    runtime.adopt(handle, pid=1)  # identity that does not match the pane's process
    with pytest.raises(RuntimeError_, match="not killing it"):
        await runtime.stop(handle)
    assert handle.runtime_id in _tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split()
    with pytest.raises(RollbackFailed) as caught:
        await runtime.wait_ready(handle, lambda: False, timeout=0.2)
    assert isinstance(caught.value.primary, PaneNotReady)
    assert "not killing it" in str(caught.value.cleanup)


async def test_tmux_inspect_evidence_lists_the_pane_processes(tmux_socket: Path, tmp_path: Path) -> None:
    runtime = TmuxRuntime(socket=tmux_socket)
    argv = ("sh", "-c", "sleep 61 & echo started; wait")
    handle = await runtime.start(LaunchSpec("r", "a", tmp_path, "sid", argv=argv))

    async def both() -> None:
        while True:
            await runtime.prepare_evidence(handle)
            if any("sleep 61" in p.cmdline for p in runtime.process_evidence(handle)):
                return
            await asyncio.sleep(0.02)

    await asyncio.wait_for(both(), WAIT)
    processes = runtime.process_evidence(handle)
    assert processes[0].pid == runtime.expected_pid(handle) and processes[0].argv0 == "sh"
    assert len(processes) <= 8
