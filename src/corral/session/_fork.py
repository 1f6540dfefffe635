"""Deriving new sessions from saved ones: `fork`, `clone` and `fork_from`.

All three write a new file under a new session id whose header's
`parentSession` is the source file, and keep the copied entries' ids, so costs
can be de-duplicated along the `parentSession` chain. Label entries on the
copied path are not copied verbatim: the labels that apply to copied entries
are re-created at the end (Pi's rule), and entries that followed a dropped
label are re-linked to the entry before it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from corral import _paths
from corral.llm import TextContent, UserMessage

from ._entries import LabelEntry, MessageEntry, SessionEntry, iso_now, new_entry_id
from ._errors import InvalidEntryError, SessionNotFoundError
from ._manager import SessionManager

__all__ = ["clone", "fork", "fork_from"]


def _source(source: SessionManager | Path | str) -> tuple[SessionManager, bool]:
    if isinstance(source, SessionManager):
        return source, False
    return SessionManager.open(Path(source), read_only=True), True


def _default_root(source: SessionManager, sessions_root: Path | None) -> Path:
    if sessions_root is not None:
        return sessions_root
    if source.path is not None:
        return source.path.parent.parent
    return _paths.sessions_root()


def _copy_path(source: SessionManager, path: list[SessionEntry]) -> list[SessionEntry]:
    """The path without its label entries, re-linked, with the applicable labels re-created at the end."""
    kept: list[SessionEntry] = []
    previous_id: str | None = None
    dropped = False
    for entry in path:
        if isinstance(entry, LabelEntry):
            dropped = True
            continue
        if dropped and entry.parent_id != previous_id:
            entry = entry.model_copy(update={"parent_id": previous_id})
        dropped = False
        kept.append(entry)
        previous_id = entry.id
    ids = {entry.id for entry in kept}
    for target_id, label in source.labels().items():
        if target_id not in ids:
            continue
        label_entry = LabelEntry(
            id=new_entry_id(ids), parent_id=previous_id, timestamp=iso_now(), target_id=target_id
        )
        label_entry.label = label
        ids.add(label_entry.id)
        kept.append(label_entry)
        previous_id = label_entry.id
    return kept


def _parent_ref(source: SessionManager) -> str | None:
    return os.fspath(source.path) if source.path is not None else None


def fork(
    source: SessionManager | Path | str,
    user_entry_id: str,
    *,
    sessions_root: Path | None = None,
) -> tuple[SessionManager, str]:
    """Rewind to just before a user message, in a new session file.

    The new session holds the path to the message's parent (labels
    re-created), with `parentSession` set to the source file, and is written
    at once. For a root message the new session is empty (and, like any new
    session, written with its first assistant message).

    Args:
        source: The session (manager or file path).
        user_entry_id: A `message` entry holding a user message.
        sessions_root: Where to put the new file; default the source's sessions root.

    Returns:
        The new session (open for writing) and the user message's text, to
        put back in the editor or re-send.

    Raises:
        EntryNotFoundError: No such entry.
        InvalidEntryError: The entry is not a user message.
    """
    manager, opened = _source(source)
    try:
        entry = manager._require(user_entry_id)
        if not (isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage)):
            raise InvalidEntryError(f"entry {user_entry_id!r} is not a user message; fork needs one")
        content = entry.message.content
        text = (
            content
            if isinstance(content, str)
            else "".join(block.text for block in content if isinstance(block, TextContent))
        )
        root = _default_root(manager, sessions_root)
        path = manager.get_branch(entry.parent_id) if entry.parent_id is not None else []
        new = SessionManager._with_entries(
            manager.header.cwd,
            _copy_path(manager, path) if path else [],
            sessions_root=root,
            parent_session=_parent_ref(manager),
        )
        if path:
            new._write_new_file()
        return new, text
    finally:
        if opened:
            manager.close()


def clone(
    source: SessionManager | Path | str,
    entry_id: str | None = None,
    *,
    sessions_root: Path | None = None,
) -> SessionManager:
    """Copy the active path up to `entry_id` (default: the leaf) into a new session file.

    Ids are kept, `parentSession` is set to the source file, labels are
    re-created; the file is written at once.

    Raises:
        EntryNotFoundError: No such entry.
    """
    manager, opened = _source(source)
    try:
        path = manager.get_branch(entry_id)
        new = SessionManager._with_entries(
            manager.header.cwd,
            _copy_path(manager, path),
            sessions_root=_default_root(manager, sessions_root),
            parent_session=_parent_ref(manager),
        )
        new._write_new_file()
        return new
    finally:
        if opened:
            manager.close()


def fork_from(
    source_path: Path | str,
    target_cwd: Path,
    *,
    sessions_root: Path | None = None,
    header_extra: Mapping[str, Any] | None = None,
    write_now: bool = True,
) -> SessionManager:
    """Copy every entry of a session file, ids unchanged, into a new session of `target_cwd`.

    Used to continue another project's session here. The new header has a new
    id, `cwd = target_cwd`, `parentSession` = the source and any `header_extra`
    fields; the leaf is the last entry. The file is written at once unless
    `write_now` is false (then on the first append or `flush()`, as for a new
    session — the orchestration uses this to add its own entries first).

    Raises:
        SessionNotFoundError: The source file does not exist.
        SessionFileError: The source is not a session file.
    """
    source_path = Path(source_path).absolute()
    if not source_path.is_file():
        raise SessionNotFoundError(f"session file {source_path} does not exist; check the path")
    with SessionManager.open(source_path, read_only=True) as manager:
        entries = manager.entries
    new = SessionManager._with_entries(
        os.fspath(Path(target_cwd).absolute()),
        entries,
        sessions_root=sessions_root if sessions_root is not None else _paths.sessions_root(),
        parent_session=os.fspath(source_path),
        header_extra=header_extra,
    )
    if write_now:
        new._write_new_file()
    return new
