"""`eventually`: the tests' one bounded wait for a condition to come true."""

from __future__ import annotations

import asyncio
import linecache
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.lead._host import ComposedHost

__all__ = ["EVENTUALLY", "eventually"]

EVENTUALLY = 30.0
"""The default bound of `eventually`: what takes milliseconds alone takes seconds on a loaded 2-core
machine (load 8 and more), so only a condition that never comes true reaches it."""


async def eventually(
    check: Callable[[], bool], host: ComposedHost | None = None, *, timeout: float = EVENTUALLY
) -> None:
    """Wait until `check()` is true: on `host`'s change events when the check reads host state
    (`host.wait_for`), else (files, processes, model calls) with short yields; at most `timeout` s
    (longer when the wait includes a process's start-up).

    Raises:
        TimeoutError: `check()` still did not hold after `timeout` s; the message names the check.
    """
    __tracebackhide__ = True  # a timeout is reported at the caller's line
    try:
        if host is not None:
            await host.wait_for(check, timeout)
        else:
            async with asyncio.timeout(timeout):
                while not check():
                    await asyncio.sleep(0.005)
    except TimeoutError as timed_out:
        raise TimeoutError(f"not true within {timeout:g} s: {_awaited(check)}") from timed_out


def _awaited(check: Callable[[], bool]) -> str:
    """What `check` waits for, for a timeout's message: its source line and place, else its repr."""
    code = getattr(check, "__code__", None)
    if code is None:
        return repr(check)
    line = linecache.getline(code.co_filename, code.co_firstlineno).strip()
    place = f"{Path(code.co_filename).name}:{code.co_firstlineno}"
    return f"{line} ({place})" if line else f"{check.__qualname__} ({place})"
