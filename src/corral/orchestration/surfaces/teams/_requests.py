"""The programmatic launch: another program's request to the lead session (the seed's event bus).

One more wire format over the teams core, next to the tools: a request
`{requestId, type, params}` is parsed like a `spawn_agent` call
(`parse_spawn`, with `continueFrom` accepted for `continue_from`), run through
`Teams.spawn` with the same tier, capacity and lifecycle rules, and answered
with a correlated `OrchestrationResponse`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corral.orchestration.errors import InvalidRequestError, OrchestrationError

from ._render import render_spawn, spawn_details
from ._wire import parse_spawn

if TYPE_CHECKING:
    from corral.orchestration.teams._teams import Teams

__all__ = ["ORCHESTRATION_REQUEST_TYPES", "OrchestrationResponse", "handle_request"]

ORCHESTRATION_REQUEST_TYPES = ("spawn_agent",)
"""Request types `handle_request` serves."""


@dataclass(frozen=True, slots=True)
class OrchestrationResponse:
    """The correlated answer to a programmatic request (`handle_request`)."""

    request_id: str
    """The request's `requestId`."""
    type: str
    """The request's `type`."""
    ok: bool
    """Whether the agent was started or queued."""
    details: dict[str, Any] | None = None
    """The spawn's details (as `spawn_agent` answers them), when `ok`."""
    content: str | None = None
    """The spawn's text, when `ok`."""
    error: str | None = None
    """One line saying what is wrong, when not `ok`."""

    def to_json(self) -> dict[str, Any]:
        """The wire shape: `{requestId, type, ok: true, details, content}` or `{…, ok: false, error}`."""
        base: dict[str, Any] = {"requestId": self.request_id, "type": self.type, "ok": self.ok}
        if self.ok:
            return {**base, "details": self.details, "content": self.content}
        return {**base, "error": self.error}


async def handle_request(
    teams: Teams, lead_session_id: str, request: Mapping[str, Any]
) -> OrchestrationResponse | None:
    """Serve another program's request to the lead session.

    Args:
        teams: The host's teams core (`host.teams`).
        lead_session_id: The attached lead's session id.
        request: `{requestId, type, params}`; only `type: "spawn_agent"` exists.

    Returns:
        The correlated response, or `None` for a request without `requestId` (as in the original).
    """
    request_id = request.get("requestId")
    if not isinstance(request_id, str) or not request_id:
        return None
    kind = str(request.get("type"))
    caller = teams.host.runs.lead(lead_session_id)
    try:
        if caller is None:
            raise InvalidRequestError(
                "No active lead session context is available; attach the lead (Host.attach_lead) first."
            )
        if kind not in ORCHESTRATION_REQUEST_TYPES:
            raise InvalidRequestError(f"Unsupported orchestration request type: {kind}")
        params = request.get("params")
        if not isinstance(params, dict):
            raise InvalidRequestError("params must be an object with the spawn_agent parameters.")
        # A trusted integration may bind checks, repair and a continuation (`continueFrom`).
        params = {("continue_from" if key == "continueFrom" else key): value for key, value in params.items()}
        outcome = await teams.spawn(caller, parse_spawn(params))
    except OrchestrationError as exc:
        return OrchestrationResponse(request_id, kind, ok=False, error=str(exc))
    return OrchestrationResponse(
        request_id, kind, ok=True, details=spawn_details(outcome), content=render_spawn(outcome)
    )
