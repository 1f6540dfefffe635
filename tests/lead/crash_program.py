"""Crash-test program: a Python-API lead that consumes items with a durable cursor, killable anywhere.

Usage: `python crash_program.py <dir> <agents> <kill>`. The lead session id is kept in
`<dir>/lead.txt`; `<dir>/consumed.log` holds one line per item the program handled
(`entry_id request_id`), written with one `write` each: its last line is the cursor. A run
reopens the session, replays `items(after=cursor)`, delegates `<agents>` new agents, waits until
the lead is quiet and drains `next_item`, then prints `done`. `<kill>` is `none`, or
`before:N` / `after:N`: SIGKILL itself just before / after logging the N-th item of this run;
`CORRAL_FAULTS` kills it inside the core's delivery.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from pathlib import Path

import corral


def _cursor(log: Path) -> str | None:
    if not log.exists():
        return None
    lines = log.read_text().splitlines()
    return lines[-1].split()[0] if lines else None


async def main(root: Path, agents: int, kill: str) -> None:
    when, _, nth = kill.partition(":")
    marker, log = root / "lead.txt", root / "consumed.log"
    session = marker.read_text() if marker.exists() else None
    handled = 0

    def consume(item: corral.LeadItem) -> None:
        nonlocal handled
        handled += 1
        if when == "before" and handled == int(nth):
            os.kill(os.getpid(), signal.SIGKILL)
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{item.entry_id} {item.details.get('request_id')}\n".encode())
        finally:
            os.close(fd)
        if when == "after" and handled == int(nth):
            os.kill(os.getpid(), signal.SIGKILL)

    async with corral.open_lead(root / "work", session=session) as lead:
        if session is None:
            marker.write_text(lead.session_id)
        async for item in lead.items(after=_cursor(log)):
            consume(item)
        for _ in range(agents):
            await lead.delegate("scout", "task", label=f"a{uuid.uuid4().hex[:8]}")
        await lead.wait_quiet(60)
        while (item := await lead.next_item(timeout=0)) is not None:
            consume(item)
    print("done")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
