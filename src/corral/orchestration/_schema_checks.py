"""Schema step of the orchestration store for issue 5 (checks); see `_migrations.py`.

Only `_store*.py`, `_schema_*.py` and `_migrations.py` import sqlite3.
"""

from __future__ import annotations

import sqlite3

__all__ = ["migrate"]


def migrate(conn: sqlite3.Connection) -> None:
    """Create this step's tables (runs inside the migration's transaction)."""
    del conn  # filled in by the owner of this module
