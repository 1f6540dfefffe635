"""Typed results of the controller's actions; `to_details()` gives the tool's `details` object.

Where the original reports Herdr identity (`pane_id`), corral reports the
runtime's identity evidence: `pane_id` is the runtime id of the generation
(`inproc-<host>-<n>` for the in-process runtime, a tmux pane id later), and
`workspace_id` is the host identity that ran it.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from corral.mcp_servers import McpReport

__all__ = [
    "CloseResult",
    "DelegateResult",
    "InspectResult",
    "ListResult",
    "ReplyResult",
    "SteerResult",
    "TranscriptResult",
]


@dataclass(frozen=True)
class DelegateResult:
    """`delegate` / `continue`: the generation was recorded and its task acknowledged."""

    action: Literal["delegate", "continue"]
    agent: str
    definition: str
    owner_session_id: str
    pane_id: str | None
    session_id: str
    session_path: str | None
    request_id: str
    _: KW_ONLY
    run_id: str = ""
    """Kept for callers; not part of `details`."""
    skills: tuple[str, ...] = ()
    """The skills the agent got, by name (docs/skills.md); in `details` only when there are any."""
    mcp: McpReport | None = None
    """What the agent got of its MCP servers (`None`: none is configured)."""

    def to_details(self) -> dict[str, Any]:
        """`{ok, action, agent, definition, owner_session_id, pane_id, session_id, session_path, request_id}`,
        plus `skills` when the agent got any and `mcp` (`McpReport.to_details`) when it was given MCP
        servers."""
        details: dict[str, Any] = {
            "ok": True,
            "action": self.action,
            "agent": self.agent,
            "definition": self.definition,
            "owner_session_id": self.owner_session_id,
            "pane_id": self.pane_id,
            "session_id": self.session_id,
            "session_path": self.session_path,
            "request_id": self.request_id,
        }
        if self.skills:
            details["skills"] = list(self.skills)
        if self.mcp is not None and self.mcp.servers:
            details["mcp"] = self.mcp.to_details()
        return details


@dataclass(frozen=True)
class ListResult:
    """`list`: visible agent records and the definition roster."""

    agents: list[dict[str, Any]]
    agent_definitions: list[dict[str, Any]]
    invalid_definitions: list[dict[str, str]] = field(default_factory=list)
    """`{path, problem}` of each definition file that could not be used (the lead's view only)."""

    def to_details(self) -> dict[str, Any]:
        """`{ok, action: "list", agents, agent_definitions}`, plus `invalid_definitions` when any."""
        details: dict[str, Any] = {
            "ok": True,
            "action": "list",
            "agents": self.agents,
            "agent_definitions": self.agent_definitions,
        }
        if self.invalid_definitions:
            details["invalid_definitions"] = self.invalid_definitions
        return details


@dataclass(frozen=True)
class SteerResult:
    """`steer` / `interrupt`: the request was acknowledged by the agent."""

    action: Literal["steer", "interrupt"]
    agent: str
    presentation_agent_definition: str
    request_id: str
    session_id: str
    assignment_request_id: str

    def to_details(self) -> dict[str, Any]:
        """`{ok, action, agent, presentation_agent_definition, request_id, session_id, assignment_request_id}`."""
        return {
            "ok": True,
            "action": self.action,
            "agent": self.agent,
            "presentation_agent_definition": self.presentation_agent_definition,
            "request_id": self.request_id,
            "session_id": self.session_id,
            "assignment_request_id": self.assignment_request_id,
        }


@dataclass(frozen=True)
class ReplyResult:
    """`reply`: the answer was acknowledged; the assignment continues."""

    agent: str
    presentation_agent_definition: str
    request_id: str
    ask_id: str
    assignment_request_id: str
    session_id: str

    def to_details(self) -> dict[str, Any]:
        """`{ok, action: "reply", agent, presentation_agent_definition, request_id, ask_id, assignment_request_id, session_id}`."""
        return {
            "ok": True,
            "action": "reply",
            "agent": self.agent,
            "presentation_agent_definition": self.presentation_agent_definition,
            "request_id": self.request_id,
            "ask_id": self.ask_id,
            "assignment_request_id": self.assignment_request_id,
            "session_id": self.session_id,
        }


@dataclass(frozen=True)
class CloseResult:
    """`close`: the agent (and its agents) were stopped and their records removed."""

    agent: str
    presentation_agent_definition: str
    _: KW_ONLY
    closed: tuple[str, ...] = ()
    """Labels closed, children before parents (not part of `details`)."""
    cleanup_errors: dict[str, str] = field(default_factory=dict)
    """Cleanup warnings by label."""

    def to_details(self) -> dict[str, Any]:
        """`{ok, action: "close", agent, presentation_agent_definition, cleanup_error? | cleanup_errors?}`."""
        out: dict[str, Any] = {
            "ok": True,
            "action": "close",
            "agent": self.agent,
            "presentation_agent_definition": self.presentation_agent_definition,
        }
        if len(self.cleanup_errors) == 1 and self.agent in self.cleanup_errors:
            out["cleanup_error"] = self.cleanup_errors[self.agent]
        elif self.cleanup_errors:
            out["cleanup_errors"] = dict(self.cleanup_errors)
        return out


@dataclass(frozen=True)
class InspectResult:
    """`inspect`: live runtime evidence, read-only."""

    agent: str
    presentation_agent_definition: str
    session_id: str
    pane_id: str
    captured_at: int
    recent_output_truncated: bool
    _: KW_ONLY
    recent_output: str | None = None
    process: list[dict[str, Any]] | None = None
    rate_limit: str | None = None
    """`waiting (rate limit, Ns)` while its model request waits for the endpoint's shared limiter."""

    def to_details(self) -> dict[str, Any]:
        """`{ok, action: "inspect", agent, presentation_agent_definition, session_id, pane_id, captured_at, recent_output_truncated, recent_output?, process?, rate_limit?}`."""
        out: dict[str, Any] = {
            "ok": True,
            "action": "inspect",
            "agent": self.agent,
            "presentation_agent_definition": self.presentation_agent_definition,
            "session_id": self.session_id,
            "pane_id": self.pane_id,
            "captured_at": self.captured_at,
            "recent_output_truncated": self.recent_output_truncated,
        }
        if self.recent_output is not None:
            out["recent_output"] = self.recent_output
        if self.process is not None:
            out["process"] = self.process
        if self.rate_limit is not None:
            out["rate_limit"] = self.rate_limit
        return out


@dataclass(frozen=True)
class TranscriptResult:
    """`transcript`: the compaction-aware projection of the persisted session."""

    agent: str
    presentation_agent_definition: str
    session_id: str
    transcript: str
    transcript_truncated: bool

    def to_details(self) -> dict[str, Any]:
        """`{ok, action: "transcript", agent, presentation_agent_definition, session_id, transcript, transcript_truncated}`."""
        return {
            "ok": True,
            "action": "transcript",
            "agent": self.agent,
            "presentation_agent_definition": self.presentation_agent_definition,
            "session_id": self.session_id,
            "transcript": self.transcript,
            "transcript_truncated": self.transcript_truncated,
        }
