"""`WaitCursor`: which items `wait` hands out, and when the lead's durable cursor moves.

Two positions per served lead:

* `handed`: after the last item a `wait` answer of this process carries. The next `wait` without
  `after` goes on from here, so two calls in flight never get the same item (calls collect one at
  a time, in the order they arrived). A call that ends without its answer leaving (the client
  cancelled it, or building the answer failed) gives its items back when nothing was handed out
  after them: the next `wait` gets them again.
* the durable cursor (`Lead.save_cursor`, in the lead's session): after the last item the client
  has shown it holds. It moves only when a `wait` arrives: without `after`, that call acknowledges
  every answer that had left (was returned to the SDK) when it arrived, up to the first one that had
  not — answers are acknowledged in the order they were handed out, so the cursor never moves back;
  with `after: X`, the client says it holds the items up to X (and no further), and the cursor
  becomes X.

A server killed after it collected items but before its answer reached the client (or while the
client did not read) so gives them again after a restart: an item not acknowledged is repeated,
never skipped. A restarted server begins at the durable cursor. An answer that never left while
later ones did keeps the durable cursor before its items (they come again after a restart, or the
client passes `after`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.lead import Lead

__all__ = ["Handout", "WaitCursor", "WaitTurn"]


@dataclass(frozen=True)
class WaitTurn:
    """One `wait` call's place in line: what it acknowledges once served."""

    acknowledges: tuple[str | None] | None
    """The cursor of the newest answer that had left when the call arrived (`None`: no answer yet)."""


@dataclass(eq=False)
class Handout:
    """The items of one `wait` answer: after `start`, up to `end`."""

    start: str | None
    end: str | None
    left: bool = False
    """The answer was returned to the SDK, which sends it."""


@dataclass
class WaitCursor:
    """The `wait` positions of one served lead (see the module docstring)."""

    lead: Lead
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _handed: tuple[str | None] | None = None
    _answered: tuple[str | None] | None = None
    _acknowledged: tuple[str | None] | None = None
    _open: list[Handout] = field(default_factory=list)
    """Handouts not yet acknowledgeable, in the order they were handed out."""

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
            SessionWriteError: the cursor could not be written (nothing moved).
        """
        mark = after if after is not None else turn.acknowledges
        if mark is not None and mark[0] != self.acknowledged():
            self.lead.save_cursor(mark[0])
            self._acknowledged = mark
        if after is not None:
            return after[0]
        return self.pending_from()

    def hand(self, start: str | None, end: str | None) -> Handout:
        """The call holding `lock` answers with the items after `start` up to `end` (`end == start`: none)."""
        handout = Handout(start, end)
        self._open.append(handout)
        self._handed = (end,)
        return handout

    def left(self, handout: Handout) -> None:
        """`handout`'s answer leaves now (no await between this and returning it to the SDK)."""
        handout.left = True
        while self._open and self._open[0].left:
            self._answered = (self._open.pop(0).end,)

    def withdraw(self, handout: Handout) -> None:
        """`handout`'s answer will not leave: give its items back unless later ones were handed out."""
        if self._open and self._open[-1] is handout:
            self._open.pop()
            self._handed = (handout.start,)

    def pending_from(self) -> str | None:
        """Where the items not yet handed out begin (for `corral://inbox`)."""
        return self._handed[0] if self._handed is not None else self.acknowledged()
