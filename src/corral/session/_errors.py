"""Errors raised by the session store.

CorralError
└── SessionError
    ├── SessionFileError       a file is not a readable session (bad header, unreadable)
    ├── SessionNotFoundError   a path or id prefix names no session (or several)
    ├── SessionLockedError     another writer holds the file's lock
    ├── SessionWriteError      an append or write failed (disk full, I/O error); nothing was recorded
    ├── EntryNotFoundError     an entry id is not in the session
    └── InvalidEntryError      an entry or message cannot be used that way (also a ValueError)
"""

from __future__ import annotations

from corral.errors import CorralError

__all__ = [
    "EntryNotFoundError",
    "InvalidEntryError",
    "SessionError",
    "SessionFileError",
    "SessionLockedError",
    "SessionNotFoundError",
    "SessionWriteError",
]


class SessionError(CorralError):
    """Base of every session-store error."""


class SessionFileError(SessionError):
    """A file is not a valid session file (missing or bad header, unreadable)."""


class SessionNotFoundError(SessionError):
    """A session path or id prefix matched no session, or matched more than one."""


class SessionLockedError(SessionError):
    """Another writer holds the session file's advisory lock."""


class SessionWriteError(SessionError):
    """Writing to a session file failed (no space, I/O error); the entry was not recorded."""


class EntryNotFoundError(SessionError, KeyError):
    """An entry id is not in the session."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidEntryError(SessionError, ValueError):
    """An entry or message cannot be used for this operation (wrong kind)."""
