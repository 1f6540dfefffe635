"""corral: teams of coding agents that a lead controls.

The Python API (`open_lead` and its types, docs/python-api.md) is loaded on
first use, so `import corral` and `corral --help` stay fast. This module-level
`__getattr__` is the one such map in corral, kept for the documented public API;
every internal package re-exports eagerly or not at all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from corral.lead import (
        AgentHandle,
        AgentRow,
        ItemKind,
        Lead,
        LeadCallError,
        LeadItem,
        ToolOutcome,
        open_lead,
    )

from corral._version import __version__

__all__ = [
    "AgentHandle",
    "AgentRow",
    "ItemKind",
    "Lead",
    "LeadCallError",
    "LeadItem",
    "ToolOutcome",
    "__version__",
    "open_lead",
]

_API = frozenset(__all__) - {"__version__"}


def __dir__() -> list[str]:
    """The public API (loaded or not) and the module's dunder names, for REPL and IDE completion."""
    return sorted(set(__all__) | {name for name in globals() if name.startswith("__")})


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'corral' has no attribute {name!r}")
    value = getattr(importlib.import_module("corral.lead"), name)
    globals()[name] = value
    return value
