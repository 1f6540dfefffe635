"""The SDK's side of the early `initialize` answer (`_handshake.py`).

The client's first line (read before the SDK was loaded) reaches the SDK first, ahead of everything
its stdio transport reads (`_screen.ScreenedLines`); `AnswerOnce` sits on the transport's write side, starts
the lead once the SDK has answered that opening request, and drops the answer when corral already
gave it early — after checking the two agree. A different protocol version or a refusal ends the
server (the client would otherwise believe in a session the SDK never accepted); any other
difference is one warning on stderr.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import TracebackType
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage

from corral.errors import CorralError

from ._handshake import EarlyAnswer
from ._slot import LeadSlot

__all__ = ["AnswerOnce", "EarlyAnswerMismatch", "parse_line"]


class EarlyAnswerMismatch(CorralError):
    """The SDK answered the client's opening request otherwise than corral's early answer."""


def parse_line(line: bytes) -> SessionMessage | Exception:
    """One line from the client as the SDK's stdio transport turns it into a message."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(
            line.decode("utf-8", errors="replace"), by_name=False
        )
    except Exception as exc:
        return exc
    return SessionMessage(message)


class AnswerOnce:
    """A write stream over `stream` that starts `slot` once the client's opening request is answered.

    With `early` (the answer corral already wrote), the SDK's answer to that request is checked
    against it and not written again: a refusal or another protocol version is reported to
    `failed`, any other difference to `warn`.
    """

    def __init__(
        self,
        stream: Any,
        slot: LeadSlot,
        *,
        early: EarlyAnswer | None,
        failed: Callable[[BaseException], None],
        warn: Callable[[str], None],
    ) -> None:
        self._stream = stream
        self._slot = slot
        self._early = early
        self._failed = failed
        self._warn = warn
        self._pending = True

    async def send(self, item: SessionMessage) -> None:
        message = item.message
        if (
            self._pending
            and self._early is not None
            and isinstance(message, types.JSONRPCResponse | types.JSONRPCError)
            and message.id == self._early.request_id
        ):
            self._pending = False
            if self._agrees(message):
                self._slot.start()
            return
        await self._stream.send(item)
        if self._pending and self._early is None:
            self._pending = False
            self._slot.start()

    def _agrees(self, message: types.JSONRPCResponse | types.JSONRPCError) -> bool:
        """Whether the SDK accepted the opening corral answered (reporting any difference)."""
        early = self._early
        assert early is not None
        if isinstance(message, types.JSONRPCError):
            self._failed(
                EarlyAnswerMismatch(
                    f"the MCP SDK refused the client's {early.method} request ({message.error.message}) after "
                    "corral had accepted it; please report this with the client's name and version"
                )
            )
            return False
        given = early.response["result"]
        sdk = json.loads(message.model_dump_json(by_alias=True, exclude_unset=True))["result"]
        if sdk.get(early.decisive) != given[early.decisive]:
            self._failed(
                EarlyAnswerMismatch(
                    f"the MCP SDK answered {early.method} with {early.decisive} {sdk.get(early.decisive)} where "
                    f"corral had answered {given[early.decisive]}; please report this with the installed mcp version"
                )
            )
            return False
        if sdk != given:
            keys = sorted(key for key in set(sdk) | set(given) if sdk.get(key) != given.get(key))
            self._warn(
                f"warning: the MCP SDK's {early.method} answer differs from the one corral sent in "
                f"{', '.join(keys)}; the client was told corral's (please report this with the installed mcp version)"
            )
        return True

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> AnswerOnce:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None
