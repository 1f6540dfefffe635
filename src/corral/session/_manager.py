"""`SessionManager`: one session file, its entry tree and its append-only writes.

Persistence follows Pi: a new session writes nothing until its first
assistant message is appended; then the header and every buffered entry are
written together, and from then on each append is written at once (one
`write` of one whole line to an `O_APPEND` descriptor, so readers tailing the
file never see half a line). `flush()` forces the first write early (managed
sessions use it so the orchestrator can find the file at once), and
`persist=False` keeps a session in memory only.

A writer holds an exclusive advisory lock (`flock`) on the file for as long
as it has the file open; a second writer, in this process or another, gets
`SessionLockedError`. Readers open with `read_only=True` and take no lock.

A write that fails (disk full, I/O error) raises `SessionWriteError` and
records nothing: the file is cut back to where it was and the entry is not
added in memory either, so the session and its file stay in step. Opening a
file for writing first repairs a torn last line (see `repair_torn_tail`).
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from corral import _paths
from corral.llm import (
    AgentMessage,
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ThinkingLevel,
    Usage,
    UserContent,
    to_json_dict,
)

from ._context import SessionContext, build_session_context, path_to
from ._entries import (
    BaseEntry,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionHeader,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    entry_to_json,
    iso_now,
    new_entry_id,
)
from ._errors import (
    EntryNotFoundError,
    InvalidEntryError,
    SessionError,
    SessionNotFoundError,
    SessionWriteError,
)
from ._file import (
    acquire_lock,
    check_header,
    dumps_line,
    load_session,
    read_header,
    repair_torn_tail,
    session_dir,
    session_file_name,
    write_all,
    write_atomic,
)

__all__ = ["SessionManager", "SessionTreeNode"]


@dataclass
class SessionTreeNode:
    """One entry of the session tree with its children."""

    entry: SessionEntry
    """The entry."""
    children: list[SessionTreeNode] = field(default_factory=list)
    """Entries whose parent is this one, oldest first."""
    label: str | None = None
    """The entry's current label, if any."""


class SessionManager:
    """A session: header, entries in file order, the current leaf, and the file they live in.

    Build one with [`create`][corral.session.SessionManager.create] or
    [`open`][corral.session.SessionManager.open]. Every `append_*` adds a child
    of the current leaf, which then becomes the leaf.
    """

    def __init__(
        self,
        header: SessionHeader,
        entries: list[SessionEntry],
        *,
        path: Path | None,
        on_disk: bool,
        read_only: bool = False,
        fd: int = -1,
    ) -> None:
        """Low-level constructor; use `create`, `open` or the fork functions instead."""
        self._header = header
        self._entries = entries
        self._by_id: dict[str, SessionEntry] = {entry.id: entry for entry in entries}
        self._leaf_id: str | None = entries[-1].id if entries else None
        self._path = path
        self._on_disk = on_disk
        self._read_only = read_only
        self._fd = fd
        self._closed = False
        self.torn_fragment: Path | None = None
        """The sidecar file a torn last line was moved to when the file was opened, if any."""

    # --- construction -------------------------------------------------------

    @classmethod
    def create(
        cls,
        cwd: Path,
        *,
        sessions_root: Path | None = None,
        parent_session: str | None = None,
        persist: bool = True,
        header_extra: Mapping[str, Any] | None = None,
    ) -> SessionManager:
        """A new, empty session for `cwd`.

        Args:
            cwd: The working directory the session belongs to (made absolute).
            sessions_root: Where session directories live; default `corral._paths.sessions_root()`.
            parent_session: Path of the session this one derives from (header `parentSession`).
            persist: `False` keeps the session in memory only (`path` is `None`).
            header_extra: Extra header fields, such as `{"corral": {"managed": True}}`.

        Returns:
            The manager. Its file is created on the first assistant message or `flush()`.
        """
        session_id = str(uuid.uuid4())
        timestamp = iso_now()
        cwd_text = os.fspath(Path(cwd).absolute())
        header = SessionHeader(id=session_id, timestamp=timestamp, cwd=cwd_text)
        if parent_session is not None:
            header.parent_session = parent_session
        for key, value in (header_extra or {}).items():
            setattr(header, key, value)
        path: Path | None = None
        if persist:
            root = sessions_root if sessions_root is not None else _paths.sessions_root()
            path = session_dir(root, cwd_text) / session_file_name(timestamp, session_id)
        return cls(header, [], path=path, on_disk=False)

    @classmethod
    def open(cls, path: Path, *, read_only: bool = False) -> SessionManager:
        """Open an existing session file; the last entry becomes the leaf.

        Malformed lines are skipped. A version 1 or 2 file is migrated and,
        unless `read_only`, rewritten atomically in place.

        Args:
            path: The `.jsonl` file.
            read_only: Take no lock, never write (appends raise `SessionError`).

        Raises:
            SessionNotFoundError: The file does not exist.
            SessionFileError: The file cannot be read or has no valid header.
            SessionLockedError: Another writer holds the file (not with `read_only`).
        """
        path = Path(path).absolute()
        if not path.is_file():
            raise SessionNotFoundError(
                f"session file {path} does not exist; check the path or pass a session id"
            )
        fd = -1
        torn: Path | None = None
        first = read_header(path)
        if first is not None:
            check_header(first, path, read_only=read_only)
        if not read_only:
            fd = acquire_lock(path, create=False)
        try:
            if fd >= 0:
                torn = repair_torn_tail(fd, path)
            loaded = load_session(path)
            check_header(loaded.header, path, read_only=read_only)
            if loaded.migrated_lines is not None and not read_only:
                try:
                    write_atomic(path, loaded.migrated_lines)
                except OSError as exc:
                    raise SessionWriteError(
                        f"cannot rewrite {path} in the current format: {exc.strerror or exc}; "
                        "free some space and open it again (the file is unchanged)"
                    ) from exc
                # The rename replaced the file our descriptor (and lock) points at.
                os.close(fd)
                fd = -1
                fd = acquire_lock(path, create=False)
            header = SessionHeader.model_validate(loaded.header)
            entries = loaded.entries
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise
        manager = cls(header, entries, path=path, on_disk=True, read_only=read_only, fd=fd)
        manager.torn_fragment = torn
        return manager

    # --- properties ---------------------------------------------------------

    @property
    def path(self) -> Path | None:
        """The session file (it may not exist yet); `None` for an in-memory session."""
        return self._path

    @property
    def session_id(self) -> str:
        """The session's UUID."""
        return self._header.id

    @property
    def header(self) -> SessionHeader:
        """The header line."""
        return self._header

    @property
    def cwd(self) -> Path:
        """The working directory the session belongs to."""
        return Path(self._header.cwd)

    @property
    def entries(self) -> list[SessionEntry]:
        """All entries in file order (a copy)."""
        return list(self._entries)

    @property
    def leaf_id(self) -> str | None:
        """The current leaf's id; `None` for an empty session or after `reset_leaf()`."""
        return self._leaf_id

    @property
    def is_managed(self) -> bool:
        """Whether the header marks a corral-managed session (`"corral": {"managed": true}`)."""
        extra = self._header.model_extra or {}
        corral = extra.get("corral")
        return isinstance(corral, dict) and corral.get("managed") is True

    @property
    def is_persisted(self) -> bool:
        """Whether the file exists on disk (the first write happened)."""
        return self._on_disk

    @property
    def read_only(self) -> bool:
        """Whether this manager refuses to write."""
        return self._read_only

    @property
    def name(self) -> str | None:
        """The session's name: the latest `session_info` entry's."""
        for entry in reversed(self._entries):
            if isinstance(entry, SessionInfoEntry):
                # Like Pi, the latest entry decides: an empty name clears it.
                name = (entry.name or "").strip()
                return name or None
        return None

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        """The entry with this id, or `None`."""
        return self._by_id.get(entry_id)

    def labels(self) -> dict[str, str]:
        """Current labels by target entry id (later label entries override, an empty one clears)."""
        labels: dict[str, str] = {}
        for entry in self._entries:
            if isinstance(entry, LabelEntry):
                if entry.label:
                    labels[entry.target_id] = entry.label
                else:
                    labels.pop(entry.target_id, None)
        return labels

    # --- writing ------------------------------------------------------------

    def _append(self, entry: BaseEntry) -> None:
        if self._closed:
            raise SessionError(f"session {self.session_id} is closed; open it again to append")
        if self._read_only:
            raise SessionError(f"session {self._path} was opened read-only; open it without read_only")
        typed: SessionEntry = entry  # type: ignore[assignment]
        if self._path is not None and self._on_disk:
            # Written first: an entry that is not on disk is not in the session either.
            self._write_line(dumps_line(entry_to_json(typed)))
        previous_leaf = self._leaf_id
        self._entries.append(typed)
        self._by_id[entry.id] = typed
        self._leaf_id = entry.id
        if (
            self._path is not None
            and not self._on_disk
            and isinstance(entry, MessageEntry)
            and isinstance(entry.message, AssistantMessage)
        ):
            try:
                self.flush()
            except BaseException:
                self._entries.pop()
                del self._by_id[entry.id]
                self._leaf_id = previous_leaf
                raise

    def _write_line(self, line: bytes) -> None:
        """Append one line; on failure cut the file back to where it was and raise `SessionWriteError`."""
        fd = self._ensure_fd()
        try:
            size = os.fstat(fd).st_size
            write_all(fd, line)
        except OSError as exc:
            with contextlib.suppress(OSError, UnboundLocalError):
                os.ftruncate(fd, size)
            raise SessionWriteError(
                f"cannot append to session file {self._path}: {exc.strerror or exc}; "
                "the entry was not recorded (free some space and retry)"
            ) from exc

    def _ensure_fd(self) -> int:
        if self._fd < 0:
            assert self._path is not None
            try:
                self._fd = acquire_lock(self._path, create=True)
            except OSError as exc:
                raise SessionWriteError(
                    f"cannot create session file {self._path}: {exc.strerror or exc}"
                ) from exc
        return self._fd

    def flush(self) -> None:
        """Write the header and all buffered entries now, if they are not on disk yet.

        Does nothing for an in-memory session or once the file exists.

        Raises:
            SessionWriteError: The file could not be written (it is removed again;
                the entries stay buffered for the next attempt).
        """
        if self._path is None or self._on_disk or self._read_only:
            return
        fd = self._ensure_fd()
        lines = [dumps_line(to_json_dict(self._header))]
        lines.extend(dumps_line(entry_to_json(entry)) for entry in self._entries)
        try:
            os.ftruncate(fd, 0)
            write_all(fd, b"".join(lines))
        except OSError as exc:
            # Leave no partial file behind; the next flush creates it afresh.
            with contextlib.suppress(OSError):
                os.unlink(self._path)
            os.close(fd)
            self._fd = -1
            raise SessionWriteError(
                f"cannot write session file {self._path}: {exc.strerror or exc}; "
                "nothing was written (free some space and retry)"
            ) from exc
        self._on_disk = True

    def close(self) -> None:
        """Release the file lock; the manager can no longer append. Buffered entries are not written."""
        self._closed = True
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        fd = getattr(self, "_fd", -1)
        if fd >= 0:
            os.close(fd)

    def _base(self) -> dict[str, Any]:
        return {"id": new_entry_id(self._by_id), "parent_id": self._leaf_id, "timestamp": iso_now()}

    def append_message(self, message: AgentMessage) -> MessageEntry | CustomMessageEntry:
        """Append a message; a `CustomMessage` becomes a `custom_message` entry.

        Raises:
            InvalidEntryError: For branch and compaction summary messages, which
                exist only in memory (append a branch summary or compaction instead).
        """
        if isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
            raise InvalidEntryError(
                f"a {message.role} message is rebuilt from its entry and cannot be appended; "
                "use branch_with_summary() or append_compaction()"
            )
        if isinstance(message, CustomMessage):
            return self.append_custom_message(
                message.custom_type, message.content, display=message.display, details=message.details
            )
        entry = MessageEntry(message=message, **self._base())
        self._append(entry)
        return entry

    def append_custom_message(
        self,
        custom_type: str,
        content: str | list[UserContent],
        *,
        display: bool = True,
        details: Any = None,
    ) -> CustomMessageEntry:
        """Append a program's message (sent to the model as a user message; `details` never is)."""
        entry = CustomMessageEntry(custom_type=custom_type, content=content, display=display, **self._base())
        if details is not None:
            entry.details = details
        self._append(entry)
        return entry

    def append_thinking_level_change(self, level: ThinkingLevel) -> ThinkingLevelChangeEntry:
        """Append a thinking level change."""
        entry = ThinkingLevelChangeEntry(thinking_level=level, **self._base())
        self._append(entry)
        return entry

    def append_model_change(self, provider: str, model_id: str) -> ModelChangeEntry:
        """Append a model change."""
        entry = ModelChangeEntry(provider=provider, model_id=model_id, **self._base())
        self._append(entry)
        return entry

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        *,
        details: Any = None,
        from_hook: bool = False,
        usage: Usage | None = None,
    ) -> CompactionEntry:
        """Append a compaction: `summary` replaces the path before `first_kept_entry_id`."""
        entry = CompactionEntry(
            summary=summary,
            first_kept_entry_id=first_kept_entry_id,
            tokens_before=tokens_before,
            **self._base(),
        )
        if details is not None:
            entry.details = details
        if from_hook:
            entry.from_hook = True
        if usage is not None:
            entry.usage = usage
        self._append(entry)
        return entry

    def append_custom(self, custom_type: str, data: Any = None) -> CustomEntry:
        """Append program state (never sent to the model)."""
        entry = CustomEntry(custom_type=custom_type, **self._base())
        if data is not None:
            entry.data = data
        self._append(entry)
        return entry

    def append_label(self, target_id: str, label: str | None) -> LabelEntry:
        """Label an entry (`None` or `""` clears its label).

        Raises:
            EntryNotFoundError: `target_id` is not an entry of this session.
        """
        self._require(target_id)
        entry = LabelEntry(target_id=target_id, **self._base())
        if label:
            entry.label = label
        self._append(entry)
        return entry

    def append_session_info(self, name: str) -> SessionInfoEntry:
        """Name the session (the latest name wins; an empty name clears it).

        Line breaks become spaces and surrounding blanks are trimmed, as Pi does.
        """
        cleaned = re.sub(r"[\r\n]+", " ", name).strip()
        entry = SessionInfoEntry(name=cleaned, **self._base())
        self._append(entry)
        return entry

    # --- tree ---------------------------------------------------------------

    def _require(self, entry_id: str) -> SessionEntry:
        entry = self._by_id.get(entry_id)
        if entry is None:
            raise EntryNotFoundError(f"entry {entry_id!r} is not in session {self.session_id}")
        return entry

    def branch(self, entry_id: str) -> None:
        """Make `entry_id` the leaf; the next append starts a new branch from it.

        Raises:
            EntryNotFoundError: No such entry.
        """
        self._require(entry_id)
        self._leaf_id = entry_id

    def reset_leaf(self) -> None:
        """Forget the leaf: the next append becomes a new root."""
        self._leaf_id = None

    def branch_with_summary(
        self,
        entry_id: str | None,
        summary: str,
        *,
        details: Any = None,
        from_hook: bool = False,
    ) -> BranchSummaryEntry:
        """Branch from `entry_id` (`None`: from before the root) and append a summary of the abandoned branch.

        Raises:
            EntryNotFoundError: No such entry.
        """
        if entry_id is None:
            self.reset_leaf()
        else:
            self.branch(entry_id)
        entry = BranchSummaryEntry(from_id=entry_id or "root", summary=summary, **self._base())
        if details is not None:
            entry.details = details
        if from_hook:
            entry.from_hook = True
        self._append(entry)
        return entry

    def get_branch(self, entry_id: str | None = None) -> list[SessionEntry]:
        """The entries from the root to `entry_id` (default: the leaf); empty without a leaf.

        Raises:
            EntryNotFoundError: `entry_id` is given and is not an entry.
        """
        if entry_id is not None:
            self._require(entry_id)
            return path_to(self._entries, entry_id, by_id=self._by_id)
        return path_to(self._entries, self._leaf_id, by_id=self._by_id)

    def get_tree(self) -> list[SessionTreeNode]:
        """The entry tree: root nodes (entries without a known parent), children oldest first."""
        labels = self.labels()
        nodes = {entry.id: SessionTreeNode(entry, label=labels.get(entry.id)) for entry in self._entries}
        roots: list[SessionTreeNode] = []
        for entry in self._entries:
            node = nodes[entry.id]
            parent = nodes.get(entry.parent_id) if entry.parent_id is not None else None
            if parent is None or parent is node:
                roots.append(node)
            else:
                parent.children.append(node)
        for node in nodes.values():
            node.children.sort(key=lambda child: child.entry.timestamp)
        return roots

    def build_context(self) -> SessionContext:
        """The conversation, thinking level and model at the current leaf."""
        return build_session_context(self._entries, self._leaf_id, by_id=self._by_id)

    # --- used by fork/clone -------------------------------------------------

    def _write_new_file(self) -> None:
        """Write a freshly built session to its file at once (forks and clones)."""
        if self._path is None or self._on_disk:
            return
        self.flush()

    @classmethod
    def _with_entries(
        cls,
        cwd: str,
        entries: list[SessionEntry],
        *,
        sessions_root: Path,
        parent_session: str | None,
        header_extra: Mapping[str, Any] | None = None,
    ) -> SessionManager:
        manager = cls.create(
            Path(cwd), sessions_root=sessions_root, parent_session=parent_session, header_extra=header_extra
        )
        manager._entries = list(entries)
        manager._by_id = {entry.id: entry for entry in entries}
        manager._leaf_id = entries[-1].id if entries else None
        return manager
