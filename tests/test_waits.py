"""`tests._waits.eventually`: returns once its check holds, and a timeout names the check."""

from __future__ import annotations

import asyncio

import pytest

from tests._waits import eventually


async def test_eventually_returns_once_the_check_holds() -> None:
    done = asyncio.Event()
    asyncio.get_running_loop().call_soon(done.set)
    await eventually(done.is_set, timeout=5)


async def test_a_timeout_names_what_was_awaited() -> None:
    never: list[str] = []
    with pytest.raises(
        TimeoutError, match=r'not true within 0\.05 s: .*lambda: never == \["x"\].* \(test_waits\.py:\d+\)$'
    ):
        await eventually(lambda: never == ["x"], timeout=0.05)
