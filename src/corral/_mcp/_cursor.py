"""`WaitCursor`: which items `wait` hands out, and when the lead's durable cursor moves.

Two positions per served lead:

* `handed`: after the last item a `wait` answer of this process carried. The next `wait` without
  `after` goes on from here, so two calls in flight never get the same item (calls are served one
  at a time, in the order they arrived).
* the durable cursor (`Lead.save_cursor`, in the lead's session): after the last item the client
  has shown it holds. It moves only when a `wait` arrives: without `after`, that call acknowledges
  every answer that was complete when it arrived; with `after: X`, the client says it holds the
  items up to X (and no further), and the cursor becomes X.

A server killed after it collected items but before its answer reached the client (or while the
client did not read) so gives them again after a restart: an item not acknowledged is repeated,
never skipped. A restarted server begins at the durable cursor.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.lead import Lead

__all__ = ["WaitCursor", "WaitTurn"]


@dataclass(frozen=True)
class WaitTurn:
    """One `wait` call's place in line: what it acknowledges once served."""

    acknowledges: tuple[str | None] | None
    """The cursor of the newest answer complete when the call arrived (`None`: no answer yet)."""


@dataclass
class WaitCursor:
    """The `wait` positions of one served lead (see the module docstring)."""

    lead: Lead
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _handed: tuple[str | None] | None = None
    _answered: tuple[str | None] | None = None
    _acknowledged: tuple[str | None] | None = None

    def arrive(self) -> WaitTurn:
        """Take a place in line (call it when the request arrives, before waiting for `lock`)."""
        return WaitTurn(self._answered)

    def acknowledged(self) -> str | None:
        """The durable cursor: after the last item the client has shown it holds."""
        if self._acknowledged is None:
            self._acknowledged = (self.lead.saved_cursor(),)
        return self._acknowledged[0]

    def start(self, turn: WaitTurn, *, after: tuple[str | None] | None) -> str | None:
        """Acknowledge for `turn` (durably), and say where its items begin. Hold `lock`.

        `after` is the call's `after` argument (`None`: not given).

        Raises:
            UsageError: `after` is not the entry id of an item of the lead's session.
        """
        mark = after if after is not None else turn.acknowledges
        if mark is not None and mark[0] != self.acknowledged():
            self.lead.save_cursor(mark[0])
            self._acknowledged = mark
        if after is not None:
            return after[0]
        return self._handed[0] if self._handed is not None else self.acknowledged()

    def answered(self, cursor: str | None) -> None:
        """The call holding `lock` answers up to `cursor` (its last item, or where it began)."""
        self._handed = (cursor,)
        self._answered = (cursor,)

    def pending_from(self) -> str | None:
        """Where the items not yet handed out begin (for `corral://inbox`)."""
        return self._handed[0] if self._handed is not None else self.acknowledged()
