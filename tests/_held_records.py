"""Records of process groups as a host that died left them (for `corral._held`'s tests and the CLI's)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral._held import HeldProcesses
from corral._process import ProcessStamp, process_stamp

__all__ = ["SLEEPER", "gone_host", "group", "orphan_record"]

SLEEPER = [sys.executable, "-c", "import sys; sys.stdin.read()"]
"""A process that runs until its stdin closes (or it is killed)."""


@pytest.fixture
def group() -> Iterator[subprocess.Popen[bytes]]:
    """A process leading its own group, as an ACP agent does."""
    process = subprocess.Popen(SLEEPER, stdin=subprocess.PIPE, start_new_session=True)
    yield process
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert process.stdin is not None
    process.stdin.close()


def gone_host() -> ProcessStamp:
    """The stamp of a process that has exited (a host killed before it could end its agents)."""
    host = subprocess.Popen([sys.executable, "-c", "pass"])
    stamp = process_stamp(host.pid)
    host.wait()
    assert stamp is not None and not stamp.alive()
    return stamp


def orphan_record(held: HeldProcesses, leader: int) -> Path:
    """A record of `leader`'s group as a host that has died left it."""
    path = held.hold(leader, what="ACP agent fake")
    assert path is not None
    record = json.loads(path.read_text())
    gone = gone_host()
    record["host"] = {"pid": gone.pid, "startTicks": gone.start_ticks, "bootId": gone.boot_id}
    path.write_text(json.dumps(record))
    return path
