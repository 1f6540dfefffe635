"""Reading files that a repository may have planted: confined to a root, regular and size-capped.

A cloned repository decides what its paths are. Its `AGENTS.md` can be a symlink to
`/proc/self/environ` (corral's environment, with the user's API keys), to `~/.ssh/id_rsa`, a FIFO
that blocks a reader forever, or a gigabyte of text; its `.corral/agents` can link to `/usr`.
The helpers here read such a path only when its real path (links resolved) stays inside the
roots its caller allows, is a regular file, lies outside `/proc`, `/dev` and `/sys`, and is no
larger than the caller's cap. A refusal is raised as `Refused`, whose `reason` says why in words,
and `note_refused` names it on stderr once per process.

The file is opened by its real path with `O_NOFOLLOW | O_NONBLOCK` and checked with `fstat` on the
open descriptor, so a FIFO cannot block the reader and a final link swapped in after the check is
not followed.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "SYSTEM_TREES",
    "Refused",
    "confined_target",
    "is_within",
    "note_refused",
    "project_root",
    "read_at_most",
    "read_confined",
]

SYSTEM_TREES = (Path("/proc"), Path("/dev"), Path("/sys"))
"""Trees corral never reads a planted file from, whatever the roots allow."""


class Refused(Exception):
    """A path that is not read; `reason` says why, in words that fit after the path."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def is_within(path: Path, root: Path) -> bool:
    """Whether `path` is `root` or below it (both taken as given: pass real paths)."""
    return path == root or root in path.parents


def project_root(cwd: Path, *, home: Path | None = None) -> Path:
    """The project a working directory belongs to: the nearest directory at or above `cwd` that
    holds `.git` or `.corral/`, else `cwd` itself (real paths).

    The search stops below the home directory and the filesystem root: a home directory kept in
    git (dotfiles) is never the project of a repository unpacked somewhere below it, unless
    corral runs in the home directory itself.
    """
    real = Path(os.path.realpath(cwd))
    stop = {Path(os.path.realpath(home if home is not None else Path.home())), Path(real.anchor)}
    for directory in (real, *real.parents):
        if directory in stop and directory != real:
            break
        if (directory / ".git").exists() or (directory / ".corral").is_dir():
            return directory
    return real


def confined_target(path: Path, roots: Sequence[Path] | None) -> Path:
    """The real path of `path`, checked against the system trees and `roots`.

    Args:
        path: The path as found (it may be a link).
        roots: Real directories the target must lie in (any of them); `None` allows anywhere but
            the system trees.

    Raises:
        Refused: the target lies in `/proc`, `/dev` or `/sys`, or outside every root.
    """
    real = Path(os.path.realpath(path))
    shown = f"it links to {real}, " if real != path else ""
    for tree in SYSTEM_TREES:
        if is_within(real, tree):
            raise Refused(f"{shown}inside {tree} (corral never reads /proc, /dev or /sys)")
    if roots is not None and not any(is_within(real, root) for root in roots):
        where = " or ".join(str(root) for root in roots)
        raise Refused(f"{shown or 'it is '}outside {where}")
    return real


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_confined(path: Path, *, roots: Sequence[Path] | None, limit: int) -> bytes:
    """The bytes of `path`, read only when it is a regular file of at most `limit` bytes whose real
    path lies in one of `roots` and outside the system trees.

    Raises:
        Refused: the file is outside the roots or in a system tree, not a regular file, or larger
            than `limit` bytes.
        OSError: it cannot be opened or read (missing, permissions).
    """
    real = confined_target(path, roots)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):  # swapped for a link since it was resolved; a socket
            kind = "a socket" if exc.errno == errno.ENXIO else "a link that changed while it was read"
            raise Refused(f"it is {kind}") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"it is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise Refused(f"it is {info.st_size} bytes, more than the {limit} allowed")
        data = read_at_most(fd, limit + 1)
        if len(data) > limit:
            raise Refused(f"it grew past the {limit} bytes allowed while it was read")
        return data
    finally:
        os.close(fd)


def read_at_most(fd: int, limit: int) -> bytes:
    """Read an open file until its end or `limit` bytes, whichever comes first."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


class _Notes:
    """The refusals already named on stderr in this process (each path once)."""

    def __init__(self) -> None:
        self.named: set[str] = set()

    def note(self, path: Path, reason: str, what: str) -> bool:
        key = str(path)
        if key in self.named:
            return False
        self.named.add(key)
        print(f"corral: warning: not reading the {what} {path}: {reason}", file=sys.stderr, flush=True)
        return True


_NOTES = _Notes()


def note_refused(path: Path, reason: str, *, what: str = "file") -> bool:
    """Name a refused file on stderr, once per process and path; returns whether it was named now.

    Args:
        path: The path as found (not its target).
        reason: `Refused.reason`.
        what: What the file is, for the line (`context file`, `agent definition directory`).
    """
    return _NOTES.note(path, reason, what)
