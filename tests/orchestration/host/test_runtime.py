"""The in-process runtime: presence, bounded recent output, process evidence, real cancellation."""

from __future__ import annotations

import asyncio

from corral.runtime import InProcessRuntime, LaunchSpec, ProcessEvidence, RuntimeHandle, bound_output


class _Program:
    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    async def run(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise

    def activity_lines(self) -> list[str]:
        return [f"line {i}" for i in range(200)]

    def running_processes(self) -> list[ProcessEvidence]:
        return [ProcessEvidence(pid=1, argv0="bash", cmdline="sleep 1")]


async def test_start_presence_stop() -> None:
    runtime = InProcessRuntime(host_tag="abcd")
    program = _Program()
    handle = await runtime.start(
        LaunchSpec("run-1", "scout", __import__("pathlib").Path("."), "s", program=program)
    )
    assert handle.runtime_id.startswith("inproc-abcd-") and handle.kind == "inprocess"
    await asyncio.wait_for(program.started.wait(), 5)
    assert runtime.presence(handle) == "live"
    assert runtime.process_evidence(handle)[0].cmdline == "sleep 1"
    output = runtime.recent_output(handle, lines=80)
    assert output.text.splitlines()[0] == "line 120" and output.truncated is False
    await runtime.stop(handle)
    assert program.cancelled and runtime.presence(handle) == "lost"
    assert runtime.process_evidence(handle) == []
    foreign = RuntimeHandle(runtime_id="inproc-other-1", kind="inprocess", run_id="x")
    assert runtime.presence(foreign) == "unknown"


def test_bound_output_flags_only_the_byte_cap() -> None:
    assert bound_output(["a"] * 100, max_lines=80, max_bytes=16384).truncated is False
    cut = bound_output(["é" * 100] * 80, max_lines=80, max_bytes=1000)
    assert cut.truncated is True and len(cut.text.encode()) <= 1000
    cut.text.encode("utf-8")
