"""Store methods for issue 5 (checkpoints): one transaction each, identity rechecked inside it."""

from __future__ import annotations

from corral.orchestration._store_core import StoreCore

__all__ = ["CheckpointsStore"]


class CheckpointsStore(StoreCore):
    """Mixin of `Store` (checkpoints tables)."""
