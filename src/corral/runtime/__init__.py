"""Runtimes: where managed agents run, behind one protocol (`Runtime`).

The in-process runtime runs each agent as an asyncio task of the host; the
tmux runtime runs it as a `corral worker` in a pane of a private tmux server; the Ray runtime
(`corral.runtime._ray`, imported on first use) in a worker actor on a Ray cluster.
"""

from corral._process import pid_alive

from ._base import (
    ChildProgram,
    LaunchSpec,
    PresenceVerdict,
    ProcessEvidence,
    ProcessWorkerRuntime,
    RecentOutput,
    RemoteLaunch,
    Runtime,
    RuntimeError_,
    RuntimeHandle,
    WorkerRuntime,
)
from ._inprocess import InProcessRuntime, bound_output
from ._runtimes import Runtimes
from ._tmux import (
    HEARTBEAT_STALE_S,
    PaneInfo,
    PaneNotReady,
    RollbackFailed,
    TmuxRuntime,
    default_socket,
)

__all__ = [
    "HEARTBEAT_STALE_S",
    "ChildProgram",
    "InProcessRuntime",
    "LaunchSpec",
    "PaneInfo",
    "PaneNotReady",
    "PresenceVerdict",
    "ProcessEvidence",
    "ProcessWorkerRuntime",
    "RecentOutput",
    "RemoteLaunch",
    "RollbackFailed",
    "Runtime",
    "RuntimeError_",
    "RuntimeHandle",
    "Runtimes",
    "TmuxRuntime",
    "WorkerRuntime",
    "bound_output",
    "default_socket",
    "pid_alive",
]
