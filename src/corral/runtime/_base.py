"""The runtime protocol: where a generation's agent session runs.

A runtime starts a managed agent from a `LaunchSpec`, answers whether it is
still there (`presence`), shows what it did recently (`recent_output`) and
which processes it runs (`process_evidence`), and stops it. The core talks to
every runtime through this protocol only, so a terminal (tmux) runtime slots
in beside the in-process one without changes to the controller.

A runtime never imports the controller: an in-process launch carries a
`ChildProgram` (an object the core builds) and the runtime only drives it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

__all__ = [
    "ChildProgram",
    "LaunchSpec",
    "PresenceVerdict",
    "ProcessEvidence",
    "ProcessWorkerRuntime",
    "RecentOutput",
    "RemoteLaunch",
    "Runtime",
    "RuntimeError_",
    "RuntimeHandle",
    "WorkerRuntime",
]

PresenceVerdict = Literal["live", "lost", "unknown"]
"""`live`: running; `lost`: proven absent; `unknown`: cannot be told (fail closed)."""


class RuntimeError_(Exception):
    """A runtime could not start, observe or stop an agent."""


@dataclass(frozen=True, slots=True)
class ProcessEvidence:
    """One process an agent is running (advisory evidence for `inspect`)."""

    pid: int
    """Process id (for the bash tool: the shell, also its process group)."""
    argv0: str
    """The program (at most 256 bytes)."""
    cmdline: str
    """The command line (at most 4 KiB)."""


@dataclass(frozen=True, slots=True)
class RecentOutput:
    """Recent activity of an agent rendered as text lines."""

    text: str
    """The last lines, tail-bounded to the byte cap."""
    truncated: bool
    """True only when the byte cap cut something."""


@runtime_checkable
class ChildProgram(Protocol):
    """What an in-process runtime runs: the managed child built by the core."""

    async def run(self) -> None:
        """Run the agent until its assignment ends (or it is cancelled)."""

    def activity_lines(self) -> list[str]:
        """Recent activity as text lines, oldest first."""

    def running_processes(self) -> list[ProcessEvidence]:
        """Processes the agent's tools are running now."""


@dataclass(frozen=True, slots=True)
class RemoteLaunch:
    """What a remote (Ray) launch carries: the worker class, made a remote actor by the runtime,
    and the payload its `start` receives (plain data)."""

    worker_class: type
    """The worker's plain Python class."""
    payload: object
    """Plain data for the worker's `start` (pickled by the runtime)."""


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """What a runtime needs to start one generation."""

    run_id: str
    """The generation's run id."""
    label: str
    """Its label (for names and diagnostics)."""
    cwd: Path
    """Working directory."""
    session_id: str
    """The agent session id."""
    _: KW_ONLY
    session_path: Path | None = None
    """The session file."""
    program: ChildProgram | None = None
    """In-process runtimes: the child to run."""
    argv: tuple[str, ...] = ()
    """Process runtimes: the worker command line."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Process runtimes: extra environment."""
    remote: RemoteLaunch | None = None
    """The Ray runtime: the worker and its launch payload."""


@dataclass(frozen=True, slots=True)
class RuntimeHandle:
    """A started generation as its runtime knows it."""

    runtime_id: str
    """Stable runtime identity (like a pane id); recorded as the generation's `pane_id`."""
    kind: str
    """The runtime kind (`inprocess`, `tmux`, `ray`)."""
    run_id: str
    """The generation it runs."""


class Runtime(Protocol):
    """Where managed agents run."""

    kind: str
    """`inprocess`, `tmux`, …"""

    async def start(self, spec: LaunchSpec) -> RuntimeHandle:
        """Start the agent described by `spec`.

        Raises:
            RuntimeError_: The agent could not be started.
        """

    def presence(self, handle: RuntimeHandle) -> PresenceVerdict:
        """Whether the agent is running, proven gone, or unknown."""

    def recent_output(
        self, handle: RuntimeHandle, *, lines: int = 80, max_bytes: int = 16384
    ) -> RecentOutput:
        """The agent's recent activity: the last `lines` lines, then the last `max_bytes` bytes."""

    def process_evidence(self, handle: RuntimeHandle) -> list[ProcessEvidence]:
        """Processes the agent runs now (best effort)."""

    async def stop(self, handle: RuntimeHandle) -> None:
        """Stop the agent and wait until it is gone."""


class WorkerRuntime(Runtime, Protocol):
    """A runtime whose agents run outside the host's process (tmux panes, Ray actors; others register
    with `Runtimes`). The host watches their runs (`adopt`, `forget`) and captures their evidence
    before `inspect` (`prepare_evidence`); how an agent is started on one is the runtime's own
    start step in the host's launch pipeline."""

    async def prepare_evidence(self, handle: RuntimeHandle) -> None:
        """Capture recent output and processes before `recent_output`/`process_evidence`."""
        ...

    def adopt(self, handle: RuntimeHandle, pid: int | None) -> None:
        """Take over a worker (identity: its handle and its pid, once known)."""
        ...

    def forget(self, handle: RuntimeHandle) -> None:
        """Drop the bookkeeping of a finished worker."""
        ...


@runtime_checkable
class ProcessWorkerRuntime(WorkerRuntime, Protocol):
    """A worker runtime whose agents run as `corral worker` processes (tmux, or one registered).

    The host's launch pipeline writes the worker's launch file under `launch_dir`, starts it with
    the worker's command line (`LaunchSpec.argv`), and waits with `wait_ready` until the worker
    recorded itself in the store.
    """

    @property
    def launch_dir(self) -> Path:
        """The private directory whose `launch/` folder holds the launch files."""
        ...

    def heartbeat_path(self, run_id: str) -> Path:
        """The file the worker of `run_id` touches as its heartbeat."""
        ...

    async def wait_ready(self, handle: RuntimeHandle, ready: Callable[[], bool], *, timeout: float) -> None:
        """Wait until `ready()`; otherwise remove the worker and raise (the runtime's own errors)."""
        ...
