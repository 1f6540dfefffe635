"""The teams tool surface: wire parameters (`_wire.py`) and tools (`_tools.py`).

Its own package, loaded only when a lead or a teams agent gets the teams tools: a lead with only the
`agent` surface never imports it, nor the teams core behind it.
"""

from ._requests import ORCHESTRATION_REQUEST_TYPES, OrchestrationResponse, handle_request
from ._tools import TEAMS_LEAD_TOOL_NAMES, TeamsTool, team_member_tools, teams_lead_tools
from ._wire import (
    TEAMS_SCHEMAS,
    AgentNameRequest,
    Artifact,
    ClaimRequest,
    Finding,
    ReadInboxRequest,
    ReportSubmission,
    SendMessageRequest,
    SpawnRequest,
    StatusRequest,
    StopRequest,
    SwarmRequest,
    parse_report,
    parse_spawn,
    parse_swarm,
)

__all__ = [
    "ORCHESTRATION_REQUEST_TYPES",
    "TEAMS_LEAD_TOOL_NAMES",
    "TEAMS_SCHEMAS",
    "AgentNameRequest",
    "Artifact",
    "ClaimRequest",
    "Finding",
    "OrchestrationResponse",
    "ReadInboxRequest",
    "ReportSubmission",
    "SendMessageRequest",
    "SpawnRequest",
    "StatusRequest",
    "StopRequest",
    "SwarmRequest",
    "TeamsTool",
    "handle_request",
    "parse_report",
    "parse_spawn",
    "parse_swarm",
    "team_member_tools",
    "teams_lead_tools",
]
