"""The public Python API: a program leads a corral team (`corral.open_lead`).

See docs/python-api.md. The composition root every front end builds its lead
with lives here too (`_compose`). The Ray worker actor, which a Ray worker
process imports without the API, lives outside this package (`corral._ray_worker`).
"""

from __future__ import annotations

from ._handles import AgentHandle, AgentRow, LeadCallError
from ._items import ItemKind, LeadItem
from ._lead import Lead, ToolOutcome, open_lead

__all__ = [
    "AgentHandle",
    "AgentRow",
    "ItemKind",
    "Lead",
    "LeadCallError",
    "LeadItem",
    "ToolOutcome",
    "open_lead",
]
