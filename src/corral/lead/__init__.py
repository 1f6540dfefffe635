"""The public Python API: a program leads a corral team (`corral.open_lead`).

See docs/python-api.md. The composition root every front end builds its lead
with lives here too (`_compose`); front ends outside this package (`corral acp`) import
`launch_session`, `LaunchOptions` and `Launched` from here. The Ray worker actor, which a Ray worker
process imports without the API, lives outside this package (`corral._ray_worker`).
"""

from __future__ import annotations

from ._compose import Launched, LaunchOptions, launch_session
from ._handles import AgentHandle, AgentRow, LeadCallError
from ._items import ItemKind, ItemLog, LeadItem
from ._lead import CURSOR_TYPE, Lead, ToolOutcome, open_lead

__all__ = [
    "CURSOR_TYPE",
    "AgentHandle",
    "AgentRow",
    "ItemKind",
    "ItemLog",
    "LaunchOptions",
    "Launched",
    "Lead",
    "LeadCallError",
    "LeadItem",
    "ToolOutcome",
    "launch_session",
    "open_lead",
]
