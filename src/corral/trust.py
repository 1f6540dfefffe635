"""Project trust: whether a project's `.corral/` files may take effect, pinned to their content.

A project directory is the one holding `.corral/`. Until the user trusts it
(`corral trust`), its `.corral/` files have no effect beyond a short allowlist
of harmless settings (`corral.settings.UNTRUSTED_PROJECT_KEYS`). Trust is
pinned to content: trusting records a SHA-256 digest of every pinned file
(`PINNED_ENTRIES`: `.corral/settings.toml`, `.corral/SYSTEM.md`,
`.corral/APPEND_SYSTEM.md` and every file below `.corral/scripts/`,
`.corral/agents/` and `.corral/skills/`, symlinks followed while they stay inside
the project; the Claude Code and Pi definitions in `.claude/agents/` and
`.pi/agents/`; the skills in `.claude/skills/` and `.agents/skills/`; the MCP
servers of `.mcp.json` and `.codex/config.toml`; and the program the project's
`shell_path` names). A link out of the project is pinned
by its target, never read. When one of them is edited, added or removed, the
project is untrusted again until the user trusts it anew.

The trust store is a small JSON file, `$XDG_CONFIG_HOME/corral/trusted-projects.json`
(`0600`, in a `0700` directory), keyed by each project's realpath:

    {"version": 1, "projects": {"/home/me/app": {
        "trustedAt": "2025-01-01T00:00:00Z",
        "files": {".corral/settings.toml": "sha256:…"}}}}

Updates take an advisory lock on a sibling lock file and replace the file
atomically (temp file, fsync, rename). A malformed store is an error, never
silently treated as empty.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from corral._confined import is_within
from corral._paths import config_home, ensure_private_dir
from corral.errors import CorralError, UsageError

__all__ = [
    "FOREIGN_AGENT_DIRS",
    "FOREIGN_MCP_FILES",
    "FOREIGN_SKILL_DIRS",
    "PINNED_ENTRIES",
    "TrustState",
    "TrustStoreError",
    "find_project_dir",
    "is_trusted",
    "pinned_files",
    "trust_project",
    "trust_state",
    "trust_store_path",
    "untrust_project",
]


class TrustStoreError(CorralError):
    """The project trust file cannot be read or is malformed."""


_TRUST_VERSION = 1

PINNED_ENTRIES = ("settings.toml", "SYSTEM.md", "APPEND_SYSTEM.md", "scripts", "agents", "skills")
"""What trust covers, relative to `.corral/`: these files, and every file below these directories."""

FOREIGN_AGENT_DIRS = (".claude/agents", ".pi/agents")
"""Claude Code's and Pi's project definition directories, relative to the project: pinned like
`.corral/agents` (corral loads their definitions only in a trusted project)."""

FOREIGN_SKILL_DIRS = (".claude/skills", ".agents/skills")
"""Claude Code's and Codex's project skill directories, relative to the project: pinned like
`.corral/skills` (corral offers their skills only in a trusted project; `corral.skills`)."""

FOREIGN_MCP_FILES = (".mcp.json", ".codex/config.toml")
"""Claude Code's and Codex's project MCP server files, relative to the project: pinned like
`.corral/settings.toml` (corral starts their servers only in a trusted project; `corral.settings`).
A link out of the project is pinned by its target, never read."""

_MAX_PINNED_FILES = 10000
"""More files than this under `.corral/` cannot be trusted (the digest would be too slow to check)."""


@dataclass(frozen=True, slots=True)
class TrustState:
    """Whether a project is trusted now, and if it was trusted before, what changed since."""

    project: Path
    """The project directory (realpath)."""
    trusted: bool
    """Trusted, and no pinned file changed since."""
    files: tuple[str, ...]
    """The pinned files present now, relative to the project (`.corral/settings.toml`, …), sorted."""
    changed: str | None = None
    """When the project was trusted but is not any more: which file changed, in words."""


def trust_store_path() -> Path:
    """The trust store: `$XDG_CONFIG_HOME/corral/trusted-projects.json`."""
    return config_home() / "trusted-projects.json"


def find_project_dir(cwd: Path) -> Path | None:
    """The nearest directory at or above `cwd` that holds a `.corral/` directory, or `None`."""
    start = Path(os.path.realpath(cwd.expanduser()))
    for directory in (start, *start.parents):
        if (directory / ".corral").is_dir():
            return directory
    return None


def pinned_files(project: Path) -> dict[str, str]:
    """The files trust covers in `project` (relative path → `sha256:<hex>`), read now: the
    `PINNED_ENTRIES` of `.corral/`, the Claude Code and Pi definitions (`FOREIGN_AGENT_DIRS`) and
    the Claude Code and Codex skills (`FOREIGN_SKILL_DIRS`) and MCP server files
    (`FOREIGN_MCP_FILES`), which count only in a trusted project too, and the program a project's
    `shell_path` names.

    A file that cannot be read is pinned as `unreadable`; a directory walk follows symlinks that
    stay inside the project (each real directory once). A link in those directories that leaves the
    project is pinned by its target as `link:<realpath>` and neither walked nor read: corral never
    loads a definition or script through it, and pointing it elsewhere untrusts the project. The
    files are listed before any is read, so a huge tree costs no hashing.

    Raises:
        UsageError: more than 10000 files are pinned.
    """
    real = Path(os.path.realpath(project))
    found: dict[str, str] = {}
    to_hash: dict[str, Path] = {}
    paths = [f".corral/{entry}" for entry in PINNED_ENTRIES] + [*FOREIGN_AGENT_DIRS, *FOREIGN_SKILL_DIRS]
    for relative in paths:
        path = real / relative
        if path.is_dir():
            target = Path(os.path.realpath(path))
            if not is_within(target, real):
                found[relative] = f"link:{target}"
                continue
            _walk_pinned(real, path, found, to_hash)
        elif path.is_file():
            to_hash[relative] = path
    for relative in FOREIGN_MCP_FILES:
        path = real / relative
        if not os.path.lexists(path):
            continue
        target = Path(os.path.realpath(path))
        if not is_within(target, real):
            found[relative] = f"link:{target}"
        elif path.is_file():
            to_hash[relative] = path
        else:
            found[relative] = "not a regular file"
    for key, file in to_hash.items():
        found[key] = _digest(file)
    shell = _project_shell_program(real)
    if shell is not None:
        found[shell.as_posix()] = _program_digest(shell)
    return dict(sorted(found.items()))


def _walk_pinned(real: Path, path: Path, found: dict[str, str], to_hash: dict[str, Path]) -> None:
    seen: set[str] = set()
    for root, dirs, names in os.walk(path, followlinks=True):
        real_root = os.path.realpath(root)
        if real_root in seen:
            dirs[:] = []
            continue
        seen.add(real_root)
        kept: list[str] = []
        for name in sorted(dirs):
            target = Path(os.path.realpath(Path(root) / name))
            if is_within(target, real):
                kept.append(name)
            else:
                found[(Path(root) / name).relative_to(real).as_posix()] = f"link:{target}"
        dirs[:] = kept
        for name in sorted(names):
            file = Path(root) / name
            key = file.relative_to(real).as_posix()
            target = Path(os.path.realpath(file))
            if not is_within(target, real):
                found[key] = f"link:{target}"
            elif file.is_file():
                to_hash[key] = file
        if len(found) + len(to_hash) > _MAX_PINNED_FILES:
            raise UsageError(
                f"{real}: more than {_MAX_PINNED_FILES} files under .corral/; "
                "trust covers at most that many, so remove what corral does not need"
            )


def _project_shell_program(real: Path) -> Path | None:
    """The program the project's `.corral/settings.toml` names as `shell_path`, as an absolute path
    (a relative one is taken from the project directory, a bare name from `PATH`), or `None`."""
    try:
        data = tomllib.loads((real / ".corral" / "settings.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    value = data.get("shell_path")
    if not isinstance(value, str) or not value:
        return None
    if "/" not in value:
        found = shutil.which(value)
        return Path(found) if found is not None else Path(value).absolute()
    program = Path(value).expanduser()
    return program if program.is_absolute() else real / program


def _program_digest(program: Path) -> str:
    """A `shell_path` program's pin: its digest, `missing`, or `not a regular file` (never read)."""
    if not program.exists():
        return "missing"
    if not program.is_file():
        return "not a regular file"
    return _digest(program)


def _digest(path: Path) -> str:
    sha = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 16), b""):
                sha.update(chunk)
    except OSError:
        return "unreadable"
    return f"sha256:{sha.hexdigest()}"


def trust_state(project: Path, *, store: Path | None = None) -> TrustState:
    """Whether `project` is trusted now: trusted by the user, and every pinned file unchanged.

    Raises:
        TrustStoreError: the store exists but cannot be read or is malformed.
    """
    real = Path(os.path.realpath(project))
    entry = _read_trust(store or trust_store_path()).get(str(real))
    try:
        files = pinned_files(real)
    except UsageError:
        return TrustState(real, False, (), "more than 10000 files under .corral/" if entry else None)
    if entry is None:
        return TrustState(real, False, tuple(files))
    recorded = entry.get("files")
    if recorded is None:
        return TrustState(
            real, False, tuple(files), "it was trusted before trust was pinned to file contents"
        )
    changed = _describe_change(recorded, files)
    return TrustState(real, changed is None, tuple(files), changed)


def _describe_change(before: Mapping[str, str], now: Mapping[str, str]) -> str | None:
    changes = [
        f"{name} was {'added' if name not in before else 'removed' if name not in now else 'edited'}"
        for name in sorted(set(before) | set(now))
        if before.get(name) != now.get(name)
    ]
    if not changes:
        return None
    more = f" (and {len(changes) - 1} more change(s))" if len(changes) > 1 else ""
    return f"{changes[0]}{more} since it was trusted"


def is_trusted(project: Path, *, store: Path | None = None) -> bool:
    """Whether the user trusted the project at `project` and none of its pinned files changed since.

    Raises:
        TrustStoreError: the store exists but cannot be read or is malformed.
    """
    return trust_state(project, store=store).trusted


def trust_project(
    project: Path, *, store: Path | None = None, expected: Mapping[str, str] | None = None
) -> Path:
    """Trust the project directory `project` as its pinned files are now; returns its realpath.

    Args:
        project: The directory holding `.corral/`.
        store: The trust store (default `trust_store_path()`).
        expected: The pinned files (as `pinned_files` gave them) the user reviewed; when the files
            changed since, nothing is trusted.

    Raises:
        UsageError: `project` is not an existing directory, has too many files under `.corral/`,
            or its files changed since `expected` was read.
        TrustStoreError: the store is malformed.
    """
    try:
        real = Path(os.path.realpath(project, strict=True))
    except OSError:
        raise UsageError(f"Cannot trust {project}: no such directory; give a project directory") from None
    if not real.is_dir():
        raise UsageError(f"Cannot trust {project}: not a directory; give a project directory")
    files = pinned_files(real)
    if expected is not None and dict(expected) != files:
        change = _describe_change(expected, files) or "its files changed"
        raise UsageError(
            f"Did not trust {real}: {change.removesuffix(' since it was trusted')} while it was being "
            "reviewed; run `corral trust` again"
        )
    path = store or trust_store_path()
    with _trust_lock(path):
        projects = _read_trust(path)
        projects[str(real)] = {
            "trustedAt": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "files": files,
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


def _valid_entry(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    files = value.get("files")
    return files is None or (
        isinstance(files, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
    )


def _read_trust(path: Path) -> dict[str, Any]:
    fix = f"fix it or delete it (`rm {path}`) and trust your projects again"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise TrustStoreError(f"Cannot read the trust store {path}: {reason}; {fix}") from None
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
        or not all(_valid_entry(value) for value in projects.values())
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
