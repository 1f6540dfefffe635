"""The repository of checkpoints: one transaction a verb, identity rechecked inside it.

The store holds checkpoint rows and never interprets their JSON: whether a
record is valid is decided by `teams/checkpoints/records.py`. What the store
guarantees is the row discipline that makes the rules hold across processes:

* `insert_checkpoint` writes a `ready` row only when the id is new, and
  otherwise returns the row that is there (a ready row is never overwritten,
  so the caller's "identical replay is fine, anything else is immutable"
  comparison is race-free);
* `retire_checkpoint` is a compare-and-set: it replaces the row only if it
  still holds exactly the state and JSON the caller inspected, so two
  retirements (or a retirement and a save) cannot interleave.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from corral.orchestration.errors import InvalidRequestError
from corral.orchestration.store._database import Row
from corral.orchestration.store._repository import Repository

__all__ = ["CheckpointRow", "CheckpointRowState", "Checkpoints"]

CheckpointRowState = Literal["ready", "deleted", "expired"]
"""A checkpoint row is `ready` (continuable until it expires) or retired for good."""

_RETIRED_STATES = ("deleted", "expired")


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    """One row of table `checkpoints`, as stored (the JSON is not interpreted here)."""

    checkpoint_id: str
    """`checkpoint:<64 hex>` (primary key)."""
    state: CheckpointRowState
    """`ready`, `deleted` or `expired`."""
    record: str
    """The checkpoint record (ready) or the retirement record (retired), as JSON text."""
    created_at: int | None
    """When the checkpoint was created (Unix ms; kept after retirement)."""
    expires_at: int | None
    """When it stops being continuable (Unix ms; exact: valid until `expires_at - 1`)."""
    retired_at: int | None
    """When it was deleted or expired (Unix ms); `None` while ready."""


def _checkpoint_from_row(row: Row) -> CheckpointRow:
    return CheckpointRow(
        checkpoint_id=row["checkpoint_id"],
        state=row["state"],
        record=row["record"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        retired_at=row["retired_at"],
    )


class Checkpoints(Repository):
    """Checkpoint rows (table `checkpoints`)."""

    def _checkpoint(self, checkpoint_id: str) -> CheckpointRow | None:
        row = self._one("SELECT * FROM checkpoints WHERE checkpoint_id = ?", (checkpoint_id,))
        return None if row is None else _checkpoint_from_row(row)

    def insert_checkpoint(
        self, checkpoint_id: str, record: str, *, created_at: int, expires_at: int
    ) -> tuple[CheckpointRow, bool]:
        """Insert a `ready` checkpoint row unless the id already has one.

        Args:
            checkpoint_id: `checkpoint:<64 hex>`.
            record: The validated checkpoint record as JSON text.
            created_at: Creation time (Unix ms).
            expires_at: Expiry time (Unix ms).

        Returns:
            The row now stored under the id, and whether this call inserted it (`False`: the
            row that was already there, ready or retired, unchanged).

        Raises:
            InvalidRequestError: `expires_at` is before `created_at`.
        """
        if expires_at < created_at:
            raise InvalidRequestError("A checkpoint cannot expire before it was created.")

        def body() -> tuple[CheckpointRow, bool]:
            changed = self._execute(
                "INSERT INTO checkpoints (checkpoint_id, state, record, created_at, expires_at)"
                " VALUES (?, 'ready', ?, ?, ?) ON CONFLICT (checkpoint_id) DO NOTHING",
                (checkpoint_id, record, created_at, expires_at),
            )
            stored = self._checkpoint(checkpoint_id)
            assert stored is not None
            return stored, changed == 1

        return self._write(body)

    def get_checkpoint(self, checkpoint_id: str) -> CheckpointRow | None:
        """The row of `checkpoint_id`, or `None`."""
        return self._read(lambda: self._checkpoint(checkpoint_id))

    def checkpoint_rows(self) -> tuple[CheckpointRow, ...]:
        """Every checkpoint row, ordered by id."""
        return self._read(
            lambda: tuple(
                _checkpoint_from_row(row)
                for row in self._all("SELECT * FROM checkpoints ORDER BY checkpoint_id")
            )
        )

    def retire_checkpoint(
        self,
        checkpoint_id: str,
        *,
        expected_state: CheckpointRowState,
        expected_record: str,
        state: Literal["deleted", "expired"],
        record: str,
        retired_at: int,
    ) -> bool:
        """Replace a row by its retirement record if it still holds what the caller inspected.

        Args:
            checkpoint_id: The row to retire.
            expected_state: The state the caller read.
            expected_record: The JSON text the caller read.
            state: `deleted` or `expired`.
            record: The retirement record as JSON text.
            retired_at: Retirement time (Unix ms).

        Returns:
            Whether the row was replaced (`False`: it is gone or changed since it was read).

        Raises:
            InvalidRequestError: `state` is not a retired state.
        """
        if state not in _RETIRED_STATES:
            raise InvalidRequestError(f"A checkpoint is retired as deleted or expired, not {state!r}.")

        def body() -> bool:
            changed = self._execute(
                "UPDATE checkpoints SET state = ?, record = ?, retired_at = ?"
                " WHERE checkpoint_id = ? AND state = ? AND record = ?",
                (state, record, retired_at, checkpoint_id, expected_state, expected_record),
            )
            return changed == 1

        return self._write(body)
