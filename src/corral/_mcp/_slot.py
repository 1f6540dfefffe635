"""`LeadSlot`: the server's lead session, opened once the client has its `initialize` answer.

Opening a lead imports most of corral and opens the store; doing it before the MCP handshake would
make every client wait for it. So the server answers `initialize` first (`AnswerOnce` calls
`start` once the SDK has answered it), and every handler that needs the lead awaits `get`,
which also starts the opening if nothing did yet. The lead is opened and closed in one task that
holds it until `aclose`. When opening fails, `failed` is called once with the error.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.lead import Lead

__all__ = ["LeadSlot"]


class LeadSlot:
    """One lead, opened on first need."""

    def __init__(
        self,
        opener: Callable[[], AbstractAsyncContextManager[Lead]],
        *,
        failed: Callable[[BaseException], None] | None = None,
        opened: Callable[[Lead], None] | None = None,
    ) -> None:
        self._opener = opener
        self._failed = failed
        self._opened = opened
        self._ready: asyncio.Future[Lead] | None = None
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._started = asyncio.Event()

    def start(self) -> None:
        """Begin opening the lead (once)."""
        if self._task is not None:
            return
        self._started.set()
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.get_running_loop().create_task(self._hold(self._ready))

    async def _hold(self, ready: asyncio.Future[Lead]) -> None:
        try:
            async with self._opener() as lead:
                ready.set_result(lead)
                if self._opened is not None:
                    self._opened(lead)
                await self._closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
                if self._failed is not None and not isinstance(exc, asyncio.CancelledError):
                    self._failed(exc)
            if not isinstance(exc, Exception):
                raise

    async def get(self) -> Lead:
        """The open lead (opening it now if nothing started that yet).

        Raises:
            CorralError: opening failed (the same error each time).
        """
        self.start()
        assert self._ready is not None
        return await asyncio.shield(self._ready)

    @property
    def started(self) -> bool:
        """Whether opening the lead has begun."""
        return self._started.is_set()

    async def when_started(self) -> Lead:
        """The lead, once something else started opening it (`start` or `get`).

        Raises:
            CorralError: opening failed.
        """
        await self._started.wait()
        return await self.get()

    async def aclose(self) -> None:
        """Close the lead (stops its in-process agents) and wait for that."""
        self._closing.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
        if self._ready is not None and self._ready.done() and not self._ready.cancelled():
            self._ready.exception()  # retrieved: no "exception was never retrieved" warning
