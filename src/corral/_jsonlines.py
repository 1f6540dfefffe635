"""LF-framed JSON lines on a file descriptor, as the stdio front ends read them (`corral run --mode rpc`,
`corral acp`): the reading thread, and the strict pieces of decoding a line that both use."""

from __future__ import annotations

import asyncio
import math
import os
from typing import Any

__all__ = ["read_lines", "reject_constant", "valid_id"]


def read_lines(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes | None], fd: int) -> None:
    """Read LF-framed lines from `fd` (a thread's body) and hand each to `queue` on `loop`, then `None`
    at the end of input; an unterminated last line is handed too. Returns quietly when the loop closed
    under it at shutdown."""
    pending = bytearray()
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except InterruptedError:  # pragma: no cover - retried by Python itself since PEP 475
                continue
            except OSError:
                break
            if not chunk:
                break
            pending += chunk
            while (cut := pending.find(b"\n")) >= 0:
                line = bytes(pending[:cut])
                del pending[: cut + 1]
                loop.call_soon_threadsafe(queue.put_nowait, line)
        if pending:
            loop.call_soon_threadsafe(queue.put_nowait, bytes(pending))
        loop.call_soon_threadsafe(queue.put_nowait, None)
    except RuntimeError:  # pragma: no cover - the loop closed under us at shutdown
        return


def reject_constant(name: str) -> Any:
    """`json.loads`'s `parse_constant`: `NaN`, `Infinity` and `-Infinity` are not JSON."""
    raise ValueError(f"{name} is not JSON")


def valid_id(value: object) -> bool:
    """Whether `value` may be a request's `id`: a string or a finite number (not a boolean)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, str | int):
        return True
    return isinstance(value, float) and math.isfinite(value)
