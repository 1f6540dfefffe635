"""Typed conveniences over the lead's tools: agent handles, agent rows, call errors.

Each method is one `agent` tool call (`Lead.call`), so it has the tool's
contract; a failed call raises `LeadCallError` carrying the category a model
would have seen.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from corral.errors import CorralError

if TYPE_CHECKING:
    from ._items import LeadItem


class HandleOwner(Protocol):
    """What a handle needs of its lead (`Lead` implements it): one checked call and a result wait."""

    async def call_ok(self, tool_name: str, args: dict[str, Any]) -> dict[str, Any]: ...

    async def result_of(self, handle: AgentHandle, timeout: float | None = None) -> LeadItem: ...


__all__ = ["AgentHandle", "AgentRow", "LeadCallError"]


class LeadCallError(CorralError):
    """A tool call of a typed convenience failed; the text is what the model would read."""

    def __init__(
        self, tool: str, text: str, *, category: str | None, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(text)
        self.tool = tool
        """The tool that failed (`agent`, …)."""
        self.category = category or "invalid_request"
        """The error category (`invalid_request`, `target_not_found`, `agent_busy`, …)."""
        self.details = details or {}
        """The error result's details."""


@dataclass(frozen=True)
class AgentRow:
    """One agent the lead can see (a record of the `agent` tool's `list`)."""

    label: str
    """The agent's label (what the actions take as `agent`)."""
    state: str
    """Its public state: `starting`, `working`, `waiting`, `blocked`, `done`, `failed`, `lost`, …"""
    definition: str
    """The definition it runs."""
    _: KW_ONLY
    available_actions: tuple[str, ...] = ()
    """The actions that apply to it now."""
    runtime_kind: str = "inprocess"
    """Where it runs: `inprocess` or `tmux`."""
    session_id: str | None = None
    """Its own session's id."""
    session_path: str | None = None
    """Its own session's file."""
    cwd: str | None = None
    """Its working directory."""
    active_request_id: str | None = None
    """The request it works on, if any."""
    parent_label: str | None = None
    """The delegating agent, for an agent of an agent."""
    record: dict[str, Any] = field(default_factory=dict)
    """The whole `list` record."""

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> AgentRow:
        """A row from one `list` record."""
        return cls(
            str(record.get("agent", "")),
            str(record.get("state", "")),
            str(record.get("agent_definition", "")),
            available_actions=tuple(record.get("available_actions") or ()),
            runtime_kind=str(record.get("runtime_kind") or "inprocess"),
            session_id=record.get("pi_session_id"),
            session_path=record.get("pi_session_path"),
            cwd=record.get("cwd"),
            active_request_id=record.get("active_request_id"),
            parent_label=record.get("parent_label"),
            record=dict(record),
        )


@dataclass
class AgentHandle:
    """One managed agent of the lead, by label; every method is one `agent` action."""

    lead: HandleOwner
    label: str
    _: KW_ONLY
    request_id: str | None = None
    """The assignment `result` waits for (`None`: the agent's next result)."""
    session_id: str | None = None
    """The agent's own session id (what `continue_` resumes)."""
    after: int = 0
    """Only items from this position of the lead's item log on can be its result."""

    def matches(self, item: LeadItem) -> bool:
        """Whether `item` is this handle's result."""
        if self.request_id is not None:
            return item.details.get("request_id") == self.request_id
        return item.agent == self.label

    async def result(self, timeout: float | None = None) -> LeadItem:
        """Wait for the agent's result (persisted in the lead's session) and return it.

        Does not move `next_item`'s position: the result is also returned there.

        Raises:
            TimeoutError: nothing arrived within `timeout` seconds.
        """
        return await self.lead.result_of(self, timeout)

    async def _act(self, action: str, **fields: Any) -> dict[str, Any]:
        args = {"action": action, "agent": self.label, **{k: v for k, v in fields.items() if v is not None}}
        return await self.lead.call_ok("agent", args)

    async def steer(self, message: str) -> dict[str, Any]:
        """Send guidance the agent reads after its current step (`steer`)."""
        return await self._act("steer", message=message)

    async def interrupt(self, message: str) -> dict[str, Any]:
        """Stop the agent's current step and redirect it (`interrupt`)."""
        return await self._act("interrupt", message=message)

    async def reply(self, message: str) -> dict[str, Any]:
        """Answer the agent's pending question (`reply`)."""
        return await self._act("reply", message=message)

    async def continue_(self, task: str) -> AgentHandle:
        """Give a finished (closed) agent a new task in its saved session (`continue`); returns the new handle."""
        if self.session_id is None:
            raise LeadCallError(
                "agent", f"agent {self.label}: its session id is unknown", category="invalid_request"
            )
        details = await self.lead.call_ok(
            "agent", {"action": "continue", "session": self.session_id, "task": task}
        )
        return AgentHandle(
            self.lead,
            str(details["agent"]),
            request_id=str(details["request_id"]),
            session_id=self.session_id,
        )

    async def inspect(self) -> dict[str, Any]:
        """Live runtime evidence (`inspect`)."""
        return await self._act("inspect")

    async def transcript(self) -> str:
        """The agent's transcript as text (`transcript`)."""
        details = await self._act("transcript")
        return str(details.get("transcript", ""))

    async def close(self) -> dict[str, Any]:
        """Stop the agent and remove it (`close`)."""
        return await self._act("close")
