"""Finding, listing and summing session files (read-only; no locks taken).

Listing reads the JSON lines directly instead of validating every entry, so
a directory of large sessions lists quickly. Cost totals follow the
`parentSession` chain to skip entries a fork or clone copied from its
source (they keep their ids), so a fork's total is only what it spent itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from corral import _paths
from corral.llm import Usage

from ._entries import SessionEntry, iso_to_ms
from ._errors import SessionFileError, SessionNotFoundError
from ._file import (
    iter_session_files,
    parse_raw_entries,
    read_header,
    read_raw_session,
    session_dir,
)

__all__ = [
    "SessionInfo",
    "UsageTotals",
    "find_recent_session",
    "list_sessions",
    "read_entries_since",
    "resolve_session_arg",
    "session_usage_totals",
]


@dataclass(frozen=True)
class SessionInfo:
    """A session file as a listing shows it."""

    path: Path
    """The `.jsonl` file."""
    id: str
    """The session's UUID."""
    cwd: str
    """The working directory it belongs to."""
    name: str | None
    """The latest `session_info` name, if any."""
    parent_session_path: str | None
    """The header's `parentSession`."""
    created: datetime
    """The header's timestamp."""
    modified: datetime
    """The newest user or assistant message's time (the file's mtime when there is none)."""
    message_count: int
    """Number of `message` entries."""
    first_message: str
    """Text of the first user message (`""` when none)."""
    all_messages_text: str
    """Text of every user and assistant message, joined by spaces (for search)."""
    is_managed: bool = False
    """Whether the header marks a corral-managed session."""


def _root(sessions_root: Path | None) -> Path:
    return sessions_root if sessions_root is not None else _paths.sessions_root()


def _is_managed(header: dict[str, Any]) -> bool:
    corral = header.get("corral")
    return isinstance(corral, dict) and corral.get("managed") is True


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        )
    return ""


def _from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _session_info(path: Path) -> SessionInfo | None:
    try:
        raw = read_raw_session(path)
        mtime = path.stat().st_mtime
    except (SessionFileError, OSError):
        return None
    header = raw.header
    name: str | None = None
    message_count = 0
    first_message = ""
    texts: list[str] = []
    last_activity = 0
    for entry in raw.entries:
        kind = entry.get("type")
        if kind == "session_info":
            # The latest entry decides; an empty (or missing) name clears it, as in Pi.
            value = entry.get("name")
            name = value.strip() or None if isinstance(value, str) else None
        if kind != "message":
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        message_count += 1
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue
        text = _text_of(message.get("content"))
        if role == "user" and not first_message and text:
            first_message = text
        if text:
            texts.append(text)
        stamp = message.get("timestamp")
        if isinstance(stamp, int | float):
            last_activity = max(last_activity, int(stamp))
    created_ms = iso_to_ms(str(header.get("timestamp", "")))
    parent = header.get("parentSession")
    return SessionInfo(
        path=path,
        id=str(header["id"]),
        cwd=str(header.get("cwd", "")),
        name=name,
        parent_session_path=parent if isinstance(parent, str) else None,
        created=_from_ms(created_ms),
        modified=_from_ms(last_activity) if last_activity else datetime.fromtimestamp(mtime, tz=UTC),
        message_count=message_count,
        first_message=first_message,
        all_messages_text=" ".join(texts),
        is_managed=_is_managed(header),
    )


def list_sessions(
    cwd: Path | None = None,
    *,
    sessions_root: Path | None = None,
    include_managed: bool = False,
) -> list[SessionInfo]:
    """The sessions of `cwd` (or of every cwd when `None`), newest activity first.

    Files without a valid header are skipped; so are managed sessions unless
    `include_managed`.
    """
    root = _root(sessions_root)
    if cwd is not None:
        directories = [session_dir(root, os.fspath(Path(cwd).absolute()))]
    else:
        try:
            directories = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            directories = []
    infos: list[SessionInfo] = []
    for directory in directories:
        for path in iter_session_files(directory):
            info = _session_info(path)
            if info is not None and (include_managed or not info.is_managed):
                infos.append(info)
    infos.sort(key=lambda info: info.modified, reverse=True)
    return infos


def find_recent_session(
    cwd: Path,
    *,
    sessions_root: Path | None = None,
    include_managed: bool = False,
) -> Path | None:
    """The newest (by mtime) valid session file of `cwd`, or `None` (what `--continue` opens).

    Managed sessions are skipped unless `include_managed`.
    """
    directory = session_dir(_root(sessions_root), os.fspath(Path(cwd).absolute()))
    candidates: list[tuple[float, Path]] = []
    for path in iter_session_files(directory):
        try:
            candidates.append((path.stat().st_mtime, path))
        except OSError:
            continue
    for _, path in sorted(candidates, reverse=True):
        header = read_header(path)
        if header is not None and (include_managed or not _is_managed(header)):
            return path
    return None


def _match_prefix(directories: list[Path], prefix: str) -> list[Path]:
    matches: list[Path] = []
    for directory in directories:
        for path in iter_session_files(directory):
            header = read_header(path)
            if header is not None and str(header["id"]).startswith(prefix):
                matches.append(path)
    return sorted(matches)


def resolve_session_arg(arg: str, cwd: Path, *, sessions_root: Path | None = None) -> Path:
    """The session file a `--session` argument names.

    An argument containing `/` or `\\`, or ending in `.jsonl`, is a path
    (relative to `cwd`) that must exist. Anything else is a session id prefix,
    matched against this cwd's sessions first, then against every project's.

    Raises:
        SessionNotFoundError: No file matches, or the prefix matches several
            (the message names them).
    """
    if "/" in arg or "\\" in arg or arg.endswith(".jsonl"):
        path = Path(arg).expanduser()
        if not path.is_absolute():
            path = Path(cwd) / path
        if not path.is_file():
            raise SessionNotFoundError(f"session file {path} does not exist; check the path")
        return path.absolute()
    if not arg:
        raise SessionNotFoundError("empty session id; pass a session file path or an id prefix")
    root = _root(sessions_root)
    local = session_dir(root, os.fspath(Path(cwd).absolute()))
    matches = _match_prefix([local], arg)
    if not matches:
        try:
            others = sorted(p for p in root.iterdir() if p.is_dir() and p != local)
        except OSError:
            others = []
        matches = _match_prefix(others, arg)
    if not matches:
        raise SessionNotFoundError(
            f"no session id starts with {arg!r}: `corral sessions` lists this directory's ids (`--all`: every directory's)"
        )
    if len(matches) > 1:
        names = ", ".join(os.fspath(p) for p in matches[:10])
        more = f" (and {len(matches) - 10} more)" if len(matches) > 10 else ""
        raise SessionNotFoundError(
            f"session id prefix {arg!r} is ambiguous: matches {names}{more}; give more characters"
        )
    return matches[0]


def read_entries_since(path: Path, entry_id: str | None) -> tuple[list[SessionEntry], str | None]:
    """Entries of a file after the cursor `entry_id`, and the file's leaf (last entry) id.

    Args:
        path: The session file (read without a lock; older versions are
            migrated in memory only).
        entry_id: The last entry the caller has seen; `None`, or an id not in
            the file, returns every entry.

    Returns:
        `(entries, leaf_id)`; pass `leaf_id` as the next cursor.

    Raises:
        SessionFileError: The file cannot be read or has no valid header.
    """
    raw = read_raw_session(Path(path))
    entries = parse_raw_entries(raw.entries)
    leaf_id = entries[-1].id if entries else None
    if entry_id is not None:
        for index, entry in enumerate(entries):
            if entry.id == entry_id:
                return entries[index + 1 :], leaf_id
    return entries, leaf_id


@dataclass
class UsageTotals:
    """Token usage and cost spent in one session file."""

    usage: Usage = field(default_factory=Usage)
    """The sum of every counted usage (tokens and `cost`)."""
    by_model: dict[str, Usage] = field(default_factory=dict)
    """Assistant-message usage per `provider/model`."""
    counted_entries: int = 0
    """How many entries contributed."""
    missing_usage: int = 0
    """How many counted assistant messages carry no usable `usage` (the totals are then incomplete)."""

    @property
    def cost(self) -> float:
        """Total cost in USD."""
        return self.usage.cost.total


def _usage_of(value: Any) -> Usage | None:
    if not isinstance(value, dict):
        return None
    try:
        return Usage.model_validate(value)
    except ValueError:
        return None


def _ancestor_ids(header: dict[str, Any]) -> set[str]:
    ids: set[str] = set()
    seen: set[str] = set()
    parent = header.get("parentSession")
    while isinstance(parent, str) and parent not in seen:
        seen.add(parent)
        try:
            raw = read_raw_session(Path(parent))
        except (SessionFileError, OSError):
            break
        ids.update(e["id"] for e in raw.entries if isinstance(e.get("id"), str))
        parent = raw.header.get("parentSession")
    return ids


def session_usage_totals(path: Path, *, include_inherited: bool = False) -> UsageTotals:
    """What a session file spent: usage of every assistant message, compaction,
    branch summary and tool result in the file (not just the active branch).

    Args:
        path: The session file.
        include_inherited: Also count entries copied from the files along the
            `parentSession` chain (by default they are skipped, since the
            source session already counts them).

    Raises:
        SessionFileError: The file cannot be read or has no valid header.
    """
    raw = read_raw_session(Path(path))
    skip = set() if include_inherited else _ancestor_ids(raw.header)
    totals = UsageTotals()
    for entry in raw.entries:
        if entry.get("id") in skip:
            continue
        kind = entry.get("type")
        usage: Usage | None = None
        model_key: str | None = None
        if kind == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") in ("assistant", "toolResult"):
                usage = _usage_of(message.get("usage"))
                if message.get("role") == "assistant":
                    model_key = f"{message.get('provider', '')}/{message.get('model', '')}"
                    if usage is None:
                        totals.missing_usage += 1
        elif kind in ("compaction", "branch_summary"):
            usage = _usage_of(entry.get("usage"))
        if usage is None:
            continue
        totals.usage = totals.usage + usage
        totals.counted_entries += 1
        if model_key is not None:
            totals.by_model[model_key] = totals.by_model.get(model_key, Usage()) + usage
    return totals
