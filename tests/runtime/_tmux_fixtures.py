"""A private tmux server per test: its socket in a private directory, killed in `finally`."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._ci import require

_SOCKET_MAX = 100  # AF_UNIX paths are limited to about 107 bytes


def require_tmux() -> None:
    """Skip (outside CI only) when tmux cannot start a server."""
    require("tmux")


def kill_server(socket: Path) -> None:
    """Kill the private server on `socket` (no-op when none runs)."""
    subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, check=False, timeout=10)


@pytest.fixture
def tmux_socket(tmp_path: Path) -> Iterator[Path]:
    """A socket path for this test's own tmux server (under `tmp_path` unless that path is too long)."""
    require_tmux()
    folder = tmp_path / "tmux"
    short: str | None = None
    if len(str(folder / "s")) > _SOCKET_MAX:
        short = tempfile.mkdtemp(prefix="corral-tmux-")
        folder = Path(short)
    folder.mkdir(mode=0o700, exist_ok=True)
    socket = folder / "s"
    try:
        yield socket
    finally:
        kill_server(socket)
        if short is not None:
            shutil.rmtree(short, ignore_errors=True)
