"""Session files on disk: layout, reading, migration, atomic rewrites, locks, tail reads.

Layout: `<sessions root>/--<encoded cwd>--/<ISO time>_<uuid>.jsonl`, where the
cwd loses its leading `/` (or `\\`) and has `/`, `\\` and `:` replaced by `-`,
and the time has `:` and `.` replaced by `-` (Pi's layout, so files move
between corral and Pi both ways).

Lines are compact JSON (`{"a":1}`, non-ASCII kept), one entry per line. A
file is read line by line; lines that are not JSON objects are skipped, but
the first line must be a `session` header with a string `id`.

A line that does not parse is skipped, except that an entry fused onto a torn
line (written after it by a writer that did not repair the file) is still
read. A file whose last line has no newline (a power cut or full disk
mid-write, or a Pi 0.73 file) is repaired before anything is appended to it
([`repair_torn_tail`][corral.session._file.repair_torn_tail]): a complete
JSON line is just terminated; a torn fragment is moved to a sidecar file
next to the session (`<file>.torn-<n>`) and cut off, so the next entry starts
on a line of its own and follows the last valid entry.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from corral._paths import ensure_private_dir

from ._entries import CURRENT_VERSION, SessionEntry, entry_class, new_entry_id, parse_entry
from ._errors import SessionFileError, SessionLockedError

__all__ = [
    "LoadedSession",
    "RawSession",
    "acquire_lock",
    "check_header",
    "dumps_line",
    "encode_cwd",
    "iter_session_files",
    "load_session",
    "migrate_raw",
    "parse_line",
    "parse_raw_entries",
    "read_header",
    "read_raw_session",
    "read_tail_entries",
    "repair_torn_tail",
    "session_dir",
    "session_file_name",
    "write_all",
    "write_atomic",
]

FILE_MODE = 0o600


def encode_cwd(cwd: str | os.PathLike[str]) -> str:
    """The directory name of a cwd's sessions: `/src/proj` → `--src-proj--`."""
    text = os.fspath(cwd)
    text = re.sub(r"^[/\\]", "", text)
    return "--" + re.sub(r"[/\\:]", "-", text) + "--"


def session_dir(sessions_root: Path, cwd: str | os.PathLike[str]) -> Path:
    """The directory holding the sessions of `cwd`."""
    return sessions_root / encode_cwd(cwd)


def session_file_name(timestamp: str, session_id: str) -> str:
    """`<ISO time with : and . replaced by ->_<uuid>.jsonl`."""
    return re.sub(r"[:.]", "-", timestamp) + f"_{session_id}.jsonl"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class _JsonNumber(float):
    """A JSON number with a fraction or exponent as read from a file, remembering its spelling.

    Written back with that spelling, so rewriting a file (migrating a v1 or v2
    session) changes no number: `1e-7` stays `1e-7`, not Python's `1e-07`.
    """

    __slots__ = ("text",)
    seen = False
    """Whether any was read in this process (`dumps_line` only looks for them then)."""

    text: str

    def __new__(cls, text: str) -> _JsonNumber:
        number = super().__new__(cls, text)
        number.text = text
        _JsonNumber.seen = True
        return number


_NUMBER_MARK = "\u0000\u0001corral-number-{}\u0001\u0000"


def _mark_numbers(value: Any, spelled: list[str]) -> Any:
    """`value` with every `_JsonNumber` replaced by a placeholder string (its spelling kept in `spelled`)."""
    if isinstance(value, _JsonNumber):
        spelled.append(value.text)
        return _NUMBER_MARK.format(len(spelled) - 1)
    if isinstance(value, dict):
        return {key: _mark_numbers(item, spelled) for key, item in value.items()}
    if isinstance(value, list):
        return [_mark_numbers(item, spelled) for item in value]
    return value


def dumps_line(obj: dict[str, Any]) -> bytes:
    """One JSONL line as JavaScript's `JSON.stringify` writes it, with the newline.

    A lone UTF-16 surrogate (read from a Pi file, or from a tool's undecodable
    output) is written as its `\\udXXX` escape, as JavaScript does, so the
    line stays valid UTF-8. Numbers read from a file keep their spelling.
    """
    spelled: list[str] = []
    if _JsonNumber.seen:
        obj = _mark_numbers(obj, spelled)
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
    for index, number in enumerate(spelled):
        marked = json.dumps(_NUMBER_MARK.format(index), ensure_ascii=False)
        text = text.replace(marked, number, 1)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def _loads(line: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(line, parse_float=_JsonNumber)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


_ENTRY_START = b'{"type":"'


def _fused_entry(line: bytes) -> dict[str, Any] | None:
    """The entry written right after a torn line and fused onto it (by a writer without repair), if any.

    Such a line is `<torn fragment><whole entry>`: the whole entry is the
    shortest... longest suffix that starts an object and parses as an entry.
    """
    start = line.find(_ENTRY_START, 1)
    while start > 0:
        obj = _loads(line[start:])
        if obj is not None and isinstance(obj.get("id"), str) and isinstance(obj.get("type"), str):
            return obj
        start = line.find(_ENTRY_START, start + 1)
    return None


def _valid_header(obj: dict[str, Any] | None) -> bool:
    return obj is not None and obj.get("type") == "session" and isinstance(obj.get("id"), str)


def check_header(header: dict[str, Any], path: Path, *, read_only: bool) -> None:
    """Refuse a header corral cannot work with.

    Raises:
        SessionFileError: The header has no string `cwd`, or (unless
            `read_only`) its version is newer than the one corral writes.
    """
    version = header.get("version")
    if not read_only and isinstance(version, int | float) and version > CURRENT_VERSION:
        raise SessionFileError(
            f"{path} is a version {version} session file, newer than this corral writes "
            f"(version {CURRENT_VERSION}); upgrade corral to continue it (the file is unchanged)"
        )
    if not isinstance(header.get("cwd"), str):
        raise SessionFileError(
            f"{path} has a session header without a 'cwd' (the directory the session belongs to); "
            'add the absolute directory as "cwd" to its first line'
        )


@dataclass
class RawSession:
    """A session file as parsed JSON: the header and every well-formed entry line."""

    header: dict[str, Any]
    entries: list[dict[str, Any]]
    migrated: bool = False
    """Whether `entries` were migrated from an older version (the file needs a rewrite)."""


def read_header(path: Path) -> dict[str, Any] | None:
    """The header of a session file, or `None` when it has no valid header (or cannot be read)."""
    try:
        with path.open("rb") as handle:
            first = handle.readline()
    except OSError:
        return None
    obj = _loads(first)
    return obj if _valid_header(obj) else None


def _split_header(path: Path) -> tuple[dict[str, Any], list[bytes]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SessionFileError(f"cannot read session file {path}: {exc.strerror or exc}") from exc
    lines = data.split(b"\n")
    first_index = next((i for i, line in enumerate(lines) if line.strip()), None)
    header = _loads(lines[first_index]) if first_index is not None else None
    if header is None or not _valid_header(header):
        problem = "it is empty" if first_index is None else "its first line is not a session header"
        raise SessionFileError(
            f"{path} is not a session file: {problem}; pass a .jsonl file written by corral or Pi"
        )
    assert first_index is not None
    return header, lines[first_index + 1 :]


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    # Parsing a large file allocates many small objects that all survive; the
    # cyclic collector would re-scan them again and again (quadratic time).
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_raw_session(path: Path) -> RawSession:
    """Read a session file as JSON objects and migrate it to the current version in memory.

    Raises:
        SessionFileError: The file cannot be read, or its first line is not a header.
    """
    header, lines = _split_header(path)
    entries: list[dict[str, Any]] = []
    with _gc_paused():
        for line in lines:
            if not line.strip():
                continue
            obj = _loads(line)
            if obj is None:
                obj = _fused_entry(line)
            if obj is not None and isinstance(obj.get("type"), str):
                entries.append(obj)
    raw = RawSession(header, entries)
    raw.migrated = migrate_raw(raw.header, raw.entries)
    return raw


@dataclass
class LoadedSession:
    """A session file as typed entries."""

    header: dict[str, Any]
    entries: list[SessionEntry]
    migrated_lines: list[dict[str, Any]] | None = None
    """The whole migrated file (header first) when it was an older version, to be written back."""


def load_session(path: Path) -> LoadedSession:
    """Read a session file as typed entries, migrating older versions in memory.

    Current-version lines are validated straight from their JSON text (the
    fast path); older files go through JSON objects and the migration.

    Raises:
        SessionFileError: The file cannot be read, or its first line is not a header.
    """
    header, lines = _split_header(path)
    version = header.get("version")
    if isinstance(version, int) and version >= CURRENT_VERSION:
        with _gc_paused():
            entries = [entry for entry in map(parse_line, lines) if entry is not None]
        return LoadedSession(header, entries)
    raw = read_raw_session(path)
    with _gc_paused():
        typed = parse_raw_entries(raw.entries)
    return LoadedSession(raw.header, typed, [raw.header, *raw.entries])


def migrate_raw(header: dict[str, Any], entries: list[dict[str, Any]]) -> bool:
    """Migrate parsed entries to version 3 in place; returns whether anything changed.

    v1 → v2 gives every entry an id and links them into a linear chain, and
    turns a compaction's `firstKeptEntryIndex` (an index into the file's lines,
    header included) into `firstKeptEntryId`. v2 → v3 renames the message role
    `hookMessage` to `custom`.
    """
    version = header.get("version")
    if not isinstance(version, int):
        version = 1
    if version >= CURRENT_VERSION:
        return False
    if version < 2:
        ids: set[str] = set()
        previous: str | None = None
        file_lines: list[dict[str, Any]] = [header, *entries]
        for entry in entries:
            entry_id = new_entry_id(ids)
            ids.add(entry_id)
            entry["id"] = entry_id
            entry["parentId"] = previous
            previous = entry_id
            if entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
                index = entry.pop("firstKeptEntryIndex")
                if isinstance(index, int | float) and index >= 0 and int(index) == index:
                    target_index = int(index)
                    if target_index < len(file_lines) and file_lines[target_index] is not header:
                        entry["firstKeptEntryId"] = file_lines[target_index].get("id")
    for entry in entries:
        message = entry.get("message")
        if (
            entry.get("type") == "message"
            and isinstance(message, dict)
            and message.get("role") == "hookMessage"
        ):
            message["role"] = "custom"
    header["version"] = CURRENT_VERSION
    return True


def parse_raw_entries(raw_entries: Iterable[dict[str, Any]]) -> list[SessionEntry]:
    """Typed entries from parsed lines, skipping lines that are not entries."""
    out: list[SessionEntry] = []
    for obj in raw_entries:
        try:
            out.append(parse_entry(obj))
        except ValueError:
            continue
    return out


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to a file descriptor (one `write` in practice)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_atomic(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    """Replace `path` with `lines`, atomically (temporary file in the same directory, then rename).

    The new file has mode 0600 and is fsynced before the rename.
    """
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        write_all(fd, b"".join(dumps_line(line) for line in lines))
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp_name, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise


def repair_torn_tail(fd: int, path: Path) -> Path | None:
    """Make a session file end with a newline before anything is appended to it.

    A last line without its newline that is a complete JSON object (Pi 0.73
    writes files that way) gets the newline. Anything else after the last
    newline is a torn write: its bytes are saved to a sidecar file
    (`<file>.torn-<n>`, mode 0600, fsynced) and the file is cut back to the
    last newline. Call with the writer's lock held.

    Args:
        fd: The locked, writable descriptor of `path`.
        path: The session file.

    Returns:
        The sidecar file, when a fragment was moved there.

    Raises:
        SessionFileError: The file could not be read or repaired (nothing was cut then).
    """
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return None
        with path.open("rb") as handle:
            window = min(size, 1 << 16)
            handle.seek(size - window)
            tail = handle.read(window)
            if tail.endswith(b"\n"):
                return None
            cut = tail.rfind(b"\n")
            while cut < 0 and window < size:
                window = min(size, window * 4)
                handle.seek(size - window)
                tail = handle.read(window)
                cut = tail.rfind(b"\n")
        start = size - window + cut + 1
        fragment = tail[cut + 1 :]
        if _loads(fragment) is not None:
            write_all(fd, b"\n")
            return None
        if cut < 0:
            return None  # no complete line at all: not a session file, nothing to keep apart
        sidecar = _free_sidecar(path)
        side_fd = os.open(sidecar, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        try:
            write_all(side_fd, fragment)
            os.fsync(side_fd)
        finally:
            os.close(side_fd)
        os.ftruncate(fd, start)
        os.fsync(fd)
    except OSError as exc:
        raise SessionFileError(
            f"cannot repair the torn last line of {path}: {exc.strerror or exc}; free some space and open it again"
        ) from exc
    return sidecar


def _free_sidecar(path: Path) -> Path:
    for n in range(1, 10_000):
        candidate = path.with_name(f"{path.name}.torn-{n}")
        if not candidate.exists():
            return candidate
    return path.with_name(f"{path.name}.torn-{os.getpid()}-{os.urandom(4).hex()}")


def acquire_lock(path: Path, *, create: bool) -> int:
    """Open `path` for appending and take its exclusive advisory lock.

    Args:
        path: The session file.
        create: Create the file (mode 0600) when missing, and its directory and
            the sessions root above it (mode 0700).

    Returns:
        The open file descriptor (`O_APPEND`); closing it releases the lock.

    Raises:
        SessionLockedError: Another writer holds the lock.
        SessionFileError: The file cannot be opened.
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
    if create:
        # The sessions root and the cwd's directory are both data directories (0700).
        ensure_private_dir(path.parent.parent)
        ensure_private_dir(path.parent)
        flags |= os.O_CREAT
    try:
        fd = os.open(path, flags, FILE_MODE)
    except OSError as exc:
        raise SessionFileError(f"cannot open session file {path}: {exc.strerror or exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SessionLockedError(
            f"session file {path} is in use by another corral process (the app or a `corral run`); "
            "close it there first, or start a new session"
        ) from None
    return fd


def iter_session_files(directory: Path) -> Iterator[Path]:
    """The `*.jsonl` files of a directory (none when it does not exist)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name.endswith(".jsonl") and not name.startswith("."):
            yield directory / name


def read_tail_entries(
    path: Path, *, max_bytes: int = 1 << 20, max_entries: int | None = None
) -> list[SessionEntry]:
    """The last entries of a session file, reading at most `max_bytes` from its end.

    The cost depends on `max_bytes`, not on the file's size: the file is read
    from `size - max_bytes`, the first (partial) line of that window is
    dropped, and only the lines after it are parsed. The header and
    malformed lines are skipped; no migration is applied.

    Args:
        path: The session file.
        max_bytes: How much of the end of the file to read.
        max_entries: Keep only this many of the last entries.

    Returns:
        The entries in file order.

    Raises:
        SessionFileError: The file cannot be read.
    """
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - max_bytes)
            skip_first = False
            if start > 0:
                handle.seek(start - 1)
                skip_first = handle.read(1) != b"\n"
            else:
                handle.seek(0)
            data = handle.read(size - start)
    except OSError as exc:
        raise SessionFileError(f"cannot read session file {path}: {exc.strerror or exc}") from exc
    lines = data.split(b"\n")
    if skip_first:
        lines = lines[1:]
    with _gc_paused():
        return _parse_tail(lines, max_entries)


def _parse_tail(lines: list[bytes], max_entries: int | None) -> list[SessionEntry]:
    if max_entries is not None:
        # Parse from the end and stop once enough entries are found.
        picked: list[SessionEntry] = []
        for line in reversed(lines):
            if len(picked) >= max_entries:
                break
            entry = parse_line(line)
            if entry is not None:
                picked.append(entry)
        picked.reverse()
        return picked
    return [entry for entry in (parse_line(line) for line in lines) if entry is not None]


_TYPE_PREFIX = re.compile(rb'\s*\{"type":"([a-z_]+)"')


def parse_line(line: bytes) -> SessionEntry | None:
    """One entry from one JSONL line; `None` for blank, malformed, non-entry and header lines.

    Lines written by Pi or corral start with `{"type":"<kind>"`; those of a
    known kind are validated straight from the JSON text.
    """
    if not line.strip():
        return None
    match = _TYPE_PREFIX.match(line)
    if match is not None:
        cls = entry_class(match.group(1).decode("ascii"))
        if cls is not None:
            try:
                return cls.model_validate_json(line)  # type: ignore[return-value]
            except ValidationError:
                pass
    obj = _loads(line)
    if obj is None:
        obj = _fused_entry(line)
    if obj is None or obj.get("type") == "session":
        return None
    try:
        return parse_entry(obj)
    except ValueError:
        return None
