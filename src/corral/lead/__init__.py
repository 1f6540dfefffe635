"""The public Python API: a program leads a corral team (`corral.open_lead`).

See docs/python-api.md. The composition root every front end builds its lead
with lives here too (`_compose`). The API's modules load on first use, so a
process that needs only one module of this package (a Ray worker process
imports `_ray_worker`) does not pay for the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOME = {
    "AgentHandle": "._handles",
    "AgentRow": "._handles",
    "LeadCallError": "._handles",
    "ItemKind": "._items",
    "LeadItem": "._items",
    "Lead": "._lead",
    "ToolOutcome": "._lead",
    "open_lead": "._lead",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value
