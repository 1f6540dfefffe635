"""Errors raised by the agent loop.

CorralError
└── AgentError
    ├── AgentBusyError      a run is active and the call needs an idle session
    └── CompactionError     there was nothing to compact, or the summary request failed
"""

from __future__ import annotations

from corral.errors import CorralError

__all__ = ["AgentBusyError", "AgentError", "CompactionError"]


class AgentError(CorralError):
    """Base of the errors raised by `AgentSession`."""


class AgentBusyError(AgentError):
    """The session is running and the call cannot be queued (pass `streaming_behavior`, or wait)."""


class CompactionError(AgentError):
    """A compaction could not be made (nothing to summarise, or the summary request failed)."""
