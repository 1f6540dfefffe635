"""Runtimes: where managed agents run, behind one protocol (`Runtime`).

The in-process runtime runs each agent as an asyncio task of the host; a
terminal runtime comes later and implements the same protocol.
"""

from ._base import (
    ChildProgram,
    LaunchSpec,
    PresenceVerdict,
    ProcessEvidence,
    RecentOutput,
    Runtime,
    RuntimeError_,
    RuntimeHandle,
)
from ._inprocess import InProcessRuntime, bound_output

__all__ = [
    "ChildProgram",
    "InProcessRuntime",
    "LaunchSpec",
    "PresenceVerdict",
    "ProcessEvidence",
    "RecentOutput",
    "Runtime",
    "RuntimeError_",
    "RuntimeHandle",
    "bound_output",
]
