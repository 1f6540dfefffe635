"""Store methods for issue 5 (groups): one transaction each, identity rechecked inside it."""

from __future__ import annotations

from corral.orchestration._store_core import StoreCore

__all__ = ["GroupsStore"]


class GroupsStore(StoreCore):
    """Mixin of `Store` (groups tables)."""
