"""Finished agents' transcripts over MCP: readable (tool and resource) until the agent is closed.

Once its result is delivered, an agent is no longer live, and the lead's `transcript` answers
`target_not_found`. An MCP client has no other way to read it, so the server finds the newest result
item of that label in the lead's session (its `session_id` and `session_path`) and reads the saved
session. `agent_close` of a finished agent forgets it for the rest of the server's run.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from corral.lead import Lead

__all__ = ["FinishedAgents"]


@dataclass
class FinishedAgents:
    """The lead's finished agents, by label (from its result items)."""

    closed: set[str] = field(default_factory=set)

    async def _find(self, lead: Lead, label: str) -> dict[str, Any] | None:
        if label in self.closed:
            return None
        found = None
        async for item in lead.items(after=None):
            if item.kind == "result" and item.details.get("agent") == label:
                found = item.details
        if found is None or not isinstance(found.get("session_path"), str):
            return None
        return found

    async def transcript(self, lead: Lead, label: str) -> dict[str, Any] | None:
        """The `transcript` details of finished agent `label` (`None`: no such finished agent)."""
        from corral.orchestration import OrchestrationError
        from corral.orchestration.kernel._transcript import read_transcript

        details = await self._find(lead, label)
        if details is None:
            return None
        try:
            projected = await asyncio.to_thread(
                read_transcript, Path(details["session_path"]), str(details.get("session_id"))
            )
        except OrchestrationError:
            return None
        return {
            "ok": True,
            "action": "transcript",
            "agent": label,
            "presentation_agent_definition": details.get("definition"),
            "session_id": details.get("session_id"),
            "transcript": projected.text,
            "transcript_truncated": projected.truncated,
            "finished": True,
        }

    async def close(self, lead: Lead, label: str) -> bool:
        """Forget finished agent `label`; `False` when there is none."""
        if await self._find(lead, label) is None:
            return False
        self.closed.add(label)
        return True
