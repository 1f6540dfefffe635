"""Project trust: which project directories may contribute definitions and risky settings.

The trust store is a small JSON file, `$XDG_CONFIG_HOME/corral/trusted-projects.json`
(`0600`, in a `0700` directory), keyed by each project's realpath:

    {"version": 1, "projects": {"/home/me/app": {"trustedAt": "2025-01-01T00:00:00Z"}}}

Updates take an advisory lock on a sibling lock file and replace the file
atomically (temp file, fsync, rename). A malformed store is an error, never
silently treated as empty.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from corral._paths import config_home, ensure_private_dir
from corral.errors import CorralError, UsageError

__all__ = ["TrustStoreError", "is_trusted", "trust_project", "trust_store_path", "untrust_project"]


class TrustStoreError(CorralError):
    """The project trust file cannot be read or is malformed."""


_TRUST_VERSION = 1


def trust_store_path() -> Path:
    """The trust store: `$XDG_CONFIG_HOME/corral/trusted-projects.json`."""
    return config_home() / "trusted-projects.json"


def is_trusted(project: Path, *, store: Path | None = None) -> bool:
    """Whether the user trusted the project at `project` (compared by realpath).

    Raises:
        TrustStoreError: the store exists but cannot be read or is malformed.
    """
    return os.path.realpath(project) in _read_trust(store or trust_store_path())


def trust_project(project: Path, *, store: Path | None = None) -> Path:
    """Trust the project directory `project`; returns its realpath.

    Raises:
        UsageError: `project` is not an existing directory.
        TrustStoreError: the store is malformed.
    """
    try:
        real = Path(os.path.realpath(project, strict=True))
    except OSError:
        raise UsageError(f"Cannot trust {project}: no such directory; give a project directory") from None
    if not real.is_dir():
        raise UsageError(f"Cannot trust {project}: not a directory; give a project directory")
    path = store or trust_store_path()
    with _trust_lock(path):
        projects = _read_trust(path)
        projects[str(real)] = {
            "trustedAt": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        }
        _write_trust(path, projects)
    return real


def untrust_project(project: Path, *, store: Path | None = None) -> bool:
    """Stop trusting `project`; returns whether it was trusted.

    Raises:
        TrustStoreError: the store is malformed.
    """
    path = store or trust_store_path()
    with _trust_lock(path):
        projects = _read_trust(path)
        if projects.pop(os.path.realpath(project), None) is None:
            return False
        _write_trust(path, projects)
    return True


@contextmanager
def _trust_lock(path: Path) -> Iterator[None]:
    """Serialise read-modify-write of the trust store across processes."""
    ensure_private_dir(path.parent)
    fd = os.open(
        path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read_trust(path: Path) -> dict[str, Any]:
    fix = "fix it or delete it and trust your projects again"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise TrustStoreError(f"Cannot read the trust store {path}: {exc}; {fix}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TrustStoreError(f"The trust store {path} is not valid JSON ({exc.msg}); {fix}") from None
    projects = data.get("projects") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("version") != _TRUST_VERSION
        or set(data) != {"version", "projects"}
        or not isinstance(projects, dict)
        or not all(isinstance(value, dict) for value in projects.values())
    ):
        raise TrustStoreError(
            f'The trust store {path} is not of the form {{"version": 1, "projects": {{…}}}}; {fix}'
        )
    return dict(projects)


def _write_trust(path: Path, projects: Mapping[str, Any]) -> None:
    payload = json.dumps({"version": _TRUST_VERSION, "projects": dict(sorted(projects.items()))}, indent=2)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(payload + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        return
