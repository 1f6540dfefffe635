"""A small tmpfs for full-disk tests (`mount -t tmpfs`; needs root).

Where mounting is impossible (not root, no mount namespace) the test is
skipped, except under `CI=true`, where CI runs as root and a failure to mount
is a failure.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests._ci import unavailable

__all__ = ["fill", "small_tmpfs"]


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str = "1m", *, read_only: bool = False) -> Iterator[Path]:
    """Mount a tmpfs of `size` at `path` (created) for the block; unmounted afterwards.

    `read_only` mounts it `ro`: a directory nobody can write, root included.
    """
    path.mkdir(parents=True, exist_ok=True)
    mount = shutil.which("mount")
    problem = None
    if mount is None:
        problem = "no mount command"
    elif os.geteuid() != 0:
        problem = "mounting a tmpfs needs root"
    else:
        done = subprocess.run(
            [
                mount,
                "-t",
                "tmpfs",
                "-o",
                f"size={size},mode=0700{',ro' if read_only else ''}",
                "tmpfs",
                str(path),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            problem = f"mount -t tmpfs failed: {done.stderr.strip()}"
    if problem is not None:
        unavailable(problem)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def fill(directory: Path) -> Path:
    """Fill the filesystem of `directory` to the last byte; returns the filler file (delete it to free space)."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for chunk in (1 << 16, 1 << 12, 1):
            block = b"\0" * chunk
            while True:
                try:
                    os.write(fd, block)
                except OSError:
                    break
    finally:
        os.close(fd)
    return filler
