"""`Runtimes`: the one place a runtime kind maps to a runtime; a further worker runtime registers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from corral.runtime import (
    InProcessRuntime,
    LaunchSpec,
    PresenceVerdict,
    ProcessEvidence,
    ProcessWorkerRuntime,
    RecentOutput,
    RuntimeError_,
    RuntimeHandle,
    Runtimes,
    WorkerRuntime,
)


class FarRuntime:
    """A worker runtime of another kind (as a distributed runtime would be), recording its calls."""

    kind = "far"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.calls: list[str] = []

    @property
    def launch_dir(self) -> Path:
        return self.root

    def heartbeat_path(self, run_id: str) -> Path:
        return self.root / "heartbeat" / run_id

    async def start(self, spec: LaunchSpec) -> RuntimeHandle:
        self.calls.append(f"start {spec.run_id}")
        return RuntimeHandle(runtime_id=f"far-{spec.run_id}", kind=self.kind, run_id=spec.run_id)

    async def wait_ready(self, handle: RuntimeHandle, ready: Callable[[], bool], *, timeout: float) -> None:
        self.calls.append(f"wait {handle.runtime_id}")

    def adopt(self, handle: RuntimeHandle, pid: int | None) -> None:
        self.calls.append(f"adopt {handle.runtime_id} {pid}")

    async def prepare_evidence(self, handle: RuntimeHandle) -> None:
        self.calls.append(f"evidence {handle.runtime_id}")

    def forget(self, handle: RuntimeHandle) -> None:
        self.calls.append(f"forget {handle.runtime_id}")

    def presence(self, handle: RuntimeHandle) -> PresenceVerdict:
        self.calls.append(f"presence {handle.runtime_id}")
        return "live"

    def recent_output(
        self, handle: RuntimeHandle, *, lines: int = 80, max_bytes: int = 16384
    ) -> RecentOutput:
        return RecentOutput(text="far away", truncated=False)

    def process_evidence(self, handle: RuntimeHandle) -> list[ProcessEvidence]:
        return []

    async def stop(self, handle: RuntimeHandle) -> None:
        self.calls.append(f"stop {handle.runtime_id}")


async def test_a_registered_worker_runtime_gets_its_kind_and_its_handles(tmp_path: Path) -> None:
    runtimes = Runtimes(InProcessRuntime(), tmp_path / "tmux" / "socket")
    far = FarRuntime(tmp_path)
    checked: ProcessWorkerRuntime = far  # it satisfies the protocol the launch pipeline uses
    runtimes.register(checked)
    assert runtimes.worker("far") is far
    handle = await far.start(LaunchSpec("r1", "probe", tmp_path, "sid"))
    assert runtimes.presence(handle) == "live"
    assert runtimes.recent_output(handle).text == "far away"
    await runtimes.stop(handle)
    runtimes.forget(handle)
    assert far.calls == ["start r1", "presence far-r1", "stop far-r1", "forget far-r1"]
    assert runtimes.worker("tmux") is runtimes.tmux  # the built-in worker runtime


def test_an_unknown_or_taken_kind_is_refused(tmp_path: Path) -> None:
    runtimes = Runtimes(InProcessRuntime(), tmp_path / "tmux" / "socket")
    with pytest.raises(RuntimeError_, match="no 'far' runtime"):
        runtimes.worker("far")
    runtimes.register(FarRuntime(tmp_path))
    with pytest.raises(ValueError, match="already there"):
        runtimes.register(FarRuntime(tmp_path))
    tmux_kind = FarRuntime(tmp_path)
    tmux_kind.kind = "tmux"
    with pytest.raises(ValueError, match="already there"):
        runtimes.register(tmux_kind)


async def test_a_lazily_registered_runtime_is_made_once_on_first_use(tmp_path: Path) -> None:
    runtimes = Runtimes(InProcessRuntime(), tmp_path / "tmux" / "socket")
    made: list[FarRuntime] = []

    def make() -> WorkerRuntime:
        made.append(FarRuntime(tmp_path))
        return made[-1]

    runtimes.register_lazy("far", make)
    assert runtimes.offers("far") and runtimes.made("far") is None and made == []
    handle = RuntimeHandle(runtime_id="far-r1", kind="far", run_id="r1")
    runtimes.adopt(handle, 42)
    await runtimes.prepare_evidence(handle)
    assert runtimes.worker("far") is made[0] and len(made) == 1
    assert made[0].calls == ["adopt far-r1 42", "evidence far-r1"]
    with pytest.raises(ValueError, match="already there"):
        runtimes.register_lazy("far", make)
    foreign = RuntimeHandle(runtime_id="x", kind="elsewhere", run_id="r2")
    assert runtimes.presence(foreign) == "unknown"  # a kind not offered here proves nothing
