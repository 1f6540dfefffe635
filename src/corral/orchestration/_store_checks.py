"""Store methods for issue 5 (checks): one transaction each, identity rechecked inside it."""

from __future__ import annotations

from corral.orchestration._store_core import StoreCore

__all__ = ["ChecksStore"]


class ChecksStore(StoreCore):
    """Mixin of `Store` (checks tables)."""
