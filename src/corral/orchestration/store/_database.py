"""The database under the orchestration store: connection, pragmas, transactions.

`Database.open` creates the data directory `0700` and the database file
`0600` (its `-wal`/`-shm` files inherit that mode), turns on WAL (checking the
mode first, never inside a transaction), foreign keys, `busy_timeout` and
`synchronous = FULL` (a write opened with `durable=False` commits under
`NORMAL` and rides on the next durable commit's fsync; see `_transaction`),
and runs the migrations. Read-only databases set
`PRAGMA query_only`. `write()` and `read()` open one transaction each and yield
a `Tx`, the only way to run a statement: it calls the optional tracer first.
`write()` issues `BEGIN IMMEDIATE`; both roll back on any exception and turn
`sqlite3` errors into orchestration errors. The database knows no table: the
repositories (`kernel/_generations.py`, `teams/<feature>/_repository.py`) own
their tables, their SQL and their rows → records.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Self, TypeVar, cast

from corral._paths import corral_home, ensure_private_dir
from corral.orchestration.errors import (
    InternalFailureError,
    InvalidRequestError,
    ManagedAgentBusyError,
)
from corral.orchestration.store._migrations import (
    SCHEMA_VERSION,
    NewerSchemaError,
    apply_migrations,
    schema_version,
)

__all__ = [
    "DB_FILENAME",
    "INLINE_RESULT_LIMIT",
    "LABEL_PATTERN",
    "Database",
    "ForeignWrites",
    "Row",
    "StoreError",
    "StoreVersionError",
    "Tracer",
    "Tx",
    "default_store_path",
]

DB_FILENAME = "corral.db"
"""Name of the database file under the data root."""

LABEL_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
"""What a label must look like."""

INLINE_RESULT_LIMIT = 64 * 1024
"""Result texts longer than this many UTF-8 bytes live in an artifact file, not in the row."""

BUSY_TIMEOUT_MS = 5000
"""How long a writer waits for another writer before the store reports `agent_busy`."""

Tracer = Callable[[str, tuple[object, ...]], None]
"""Called with every statement and its parameters before it runs (tests, debugging)."""

_T = TypeVar("_T")

Row = sqlite3.Row
"""A result row: columns by name (`row["run_id"]`)."""


class StoreError(InternalFailureError):
    """The database cannot be opened or used (corrupt, unwritable, wrong version)."""


class StoreVersionError(StoreError):
    """The database was written by a newer corral, or is too old to read without migrating."""


def default_store_path() -> Path:
    """`corral_home() / "corral.db"`."""
    return corral_home() / DB_FILENAME


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_id() -> str:
    """A fresh row id (a UUID4 string)."""
    return str(uuid.uuid4())


def require_text(value: str, what: str) -> str:
    """`value` when it is not blank, else an `InvalidRequestError` naming `what`."""
    if not value or not value.strip():
        raise InvalidRequestError(f"{what} must not be blank; pass a non-empty {what}.")
    return value


def _touch_private(path: Path) -> None:
    """Create `path` with mode 0600 if missing, and tighten it if it exists."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR | getattr(os, "O_NOFOLLOW", 0), 0o600)
    os.close(fd)
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)


def _write_private_file(path: Path, data: bytes) -> None:
    """Write `data` to a 0600 temp file beside `path`, fsync it, and rename it into place."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise
    except OSError as exc:
        raise StoreError(
            f"Cannot write {path}: {exc.strerror or exc}; nothing was recorded (free some space and retry)."
        ) from exc


class Tx:
    """One open transaction of a `Database`; valid only inside its `with` block.

    `now` is the database clock read once, when first asked, so every row a
    verb writes can carry the same instant.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._now: int | None = None

    @property
    def now(self) -> int:
        """Unix milliseconds from the database clock (read once per transaction)."""
        if self._now is None:
            self._now = self._db.clock()
        return self._now

    def one(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        """The first row of `sql`, or `None`."""
        return cast("Row | None", self._db._run(sql, params).fetchone())

    def all(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """Every row of `sql`."""
        return cast("list[Row]", self._db._run(sql, params).fetchall())

    def execute(self, sql: str, params: Sequence[object] = ()) -> int:
        """Run a statement; returns the number of rows it changed."""
        return self._db._run(sql, params).rowcount


class Database:
    """One SQLite database per data root: connection, pragmas, migrations, transactions.

    Shared between threads (one connection guarded by a lock); other processes
    open their own `Database` on the same file (WAL mode, `busy_timeout`).
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        path: Path,
        readonly: bool,
        tracer: Tracer | None,
        clock: Callable[[], int],
    ) -> None:
        """Wrap an open connection; use `Database.open` instead."""
        self._conn = conn
        self._path = path
        self._readonly = readonly
        self._tracer = tracer
        self._clock = clock
        self._lock = threading.RLock()
        self._closed = False
        self._current: Tx | None = None

    # --- lifecycle ------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: Path | None = None,
        *,
        readonly: bool = False,
        tracer: Tracer | None = None,
        clock: Callable[[], int] | None = None,
    ) -> Self:
        """Open (and create or migrate) the database.

        Args:
            path: Database file; default `corral_home() / "corral.db"`. Its directory is
                created `0700`; the file (and its `-wal`/`-shm`) are `0600`.
            readonly: Open with `PRAGMA query_only`; mutations then raise `StoreError`. The
                database must exist and be at the current schema version.
            tracer: Called with every statement the database runs.
            clock: Returns "now" in Unix milliseconds (tests pin it).

        Raises:
            StoreVersionError: The database is newer than this code (or, read-only, older).
            StoreError: The database cannot be opened.
        """
        db_path = (path or default_store_path()).expanduser()
        try:
            if readonly:
                if not db_path.is_file():
                    raise StoreError(f"No corral database at {db_path}; start corral once to create it.")
                conn = sqlite3.connect(
                    f"{db_path.resolve().as_uri()}?mode=ro",
                    uri=True,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=BUSY_TIMEOUT_MS / 1000,
                )
            else:
                ensure_private_dir(db_path.parent)
                _touch_private(db_path)
                conn = sqlite3.connect(
                    db_path,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=BUSY_TIMEOUT_MS / 1000,
                )
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot open the corral database {db_path}: {exc}") from exc
        conn.row_factory = sqlite3.Row
        try:
            cls._configure(conn, db_path, readonly=readonly)
        except BaseException:
            conn.close()
            raise
        return cls(conn, path=db_path, readonly=readonly, tracer=tracer, clock=clock or _now_ms)

    @staticmethod
    def _configure(conn: sqlite3.Connection, db_path: Path, *, readonly: bool) -> None:
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
            conn.execute("PRAGMA foreign_keys = ON")
            if readonly:
                conn.execute("PRAGMA query_only = ON")
                version = schema_version(conn)
                if version != SCHEMA_VERSION:
                    raise StoreVersionError(
                        f"The corral database {db_path} has schema version {version}, this corral reads "
                        f"version {SCHEMA_VERSION}; open it read-write with a matching corral first."
                    )
                return
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            apply_migrations(conn)
        except NewerSchemaError as exc:
            raise StoreVersionError(
                f"The corral database {db_path} has schema version {exc.found}, newer than this corral "
                f"supports ({exc.supported}); upgrade corral or use another CORRAL_HOME."
            ) from exc
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot prepare the corral database {db_path}: {exc}") from exc
        for suffix in ("-wal", "-shm"):
            side = db_path.with_name(db_path.name + suffix)
            if side.exists() and side.stat().st_mode & 0o077:
                side.chmod(0o600)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    @property
    def results_dir(self) -> Path:
        """Where result artifact files live: `<data root>/results`."""
        return self._path.parent / "results"

    @property
    def clock(self) -> Callable[[], int]:
        """Returns "now" in Unix milliseconds (tests pin it)."""
        return self._clock

    # --- transactions ---------------------------------------------------------------------------

    def _run(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
        if self._tracer is not None:
            self._tracer(sql, tuple(params))
        return self._conn.execute(sql, params)

    @contextlib.contextmanager
    def write(self, *, durable: bool = True) -> Iterator[Tx]:
        """One write transaction (`BEGIN IMMEDIATE` … `COMMIT`); see `_transaction` for `durable`."""
        with self._transaction(write=True, durable=durable) as tx:
            yield tx

    @contextlib.contextmanager
    def read(self) -> Iterator[Tx]:
        """One consistent read (deferred `BEGIN` … `COMMIT`); see `_transaction`."""
        with self._transaction(write=False) as tx:
            yield tx

    @property
    def current(self) -> Tx:
        """The transaction this thread has open (for helpers that run inside one)."""
        tx = self._current
        if tx is None:
            raise RuntimeError("No corral database transaction is open; run this inside write() or read().")
        return tx

    @contextlib.contextmanager
    def _transaction(self, *, write: bool, durable: bool = True) -> Iterator[Tx]:
        """One transaction: `BEGIN IMMEDIATE` for writes, deferred for consistent reads.

        Rolls back on any exception (including a failing `COMMIT`) and maps
        `sqlite3` errors to orchestration errors so none crosses the layer.
        Transactions do not nest. A write with `durable=False` commits under
        `synchronous = NORMAL`: no fsync of its own; in WAL mode its frames
        become durable with the next durable commit (group commit). A process
        crash loses nothing either way (the WAL is already written); only a
        power loss or OS crash can lose such a commit, so it is used only for
        live-process state that a restart re-derives (activity, acks, the
        runtime's start).
        """
        with self._lock:
            if self._closed:
                raise StoreError("The corral store is closed; open it again.")
            if write and self._readonly:
                raise StoreError("The corral store was opened read-only; open it read-write to change it.")
            if self._current is not None:
                raise RuntimeError("A corral database transaction is already open on this thread.")
            tx = Tx(self)
            relaxed = write and not durable
            try:
                if relaxed:
                    self._conn.execute("PRAGMA synchronous = NORMAL")
                self._run("BEGIN IMMEDIATE" if write else "BEGIN")
                self._current = tx
                try:
                    yield tx
                    self._run("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
                finally:
                    self._current = None
                    if relaxed:
                        self._conn.execute("PRAGMA synchronous = FULL")
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    raise ManagedAgentBusyError(
                        "The corral database is busy (another process holds the write lock); retry shortly."
                    ) from exc
                if "full" in str(exc):
                    raise StoreError(
                        f"The corral database {self._path} is out of space ({exc}); nothing was recorded. "
                        "Free some space and retry."
                    ) from exc
                raise StoreError(f"Corral database operation failed: {exc}") from exc
            except sqlite3.Error as exc:
                raise StoreError(f"Corral database constraint or operation failed: {exc}") from exc

    # --- other processes' writes ----------------------------------------------------------------

    def data_version(self) -> int:
        """SQLite's `PRAGMA data_version`: changes when another connection (another process) commits.

        This connection's own commits leave it unchanged. Use it through `ForeignWrites`.

        Raises:
            StoreError: The store is closed or cannot be read.
        """
        with self._lock:
            if self._closed:
                raise StoreError("The corral store is closed; open it again.")
            try:
                return int(self._conn.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error as exc:
                raise StoreError(f"Corral database operation failed: {exc}") from exc


class ForeignWrites:
    """Notices commits that other processes (tmux workers, `corral agents`) made to the database.

    SQLite tells no connection about another's commits, so a process that must react to them checks
    `changed()` at a bounded interval: one cheap pragma, no table read. This is the one way corral
    watches the store for other processes' writes (the host's tmux watch; see "Waits on host state"
    in docs/development.md).
    """

    def __init__(self, db: Database) -> None:
        """Start from the database's current version (earlier commits are not reported)."""
        self._db = db
        self._seen = db.data_version()

    def changed(self) -> bool:
        """Whether another connection committed since the last call (or since this was made)."""
        version = self._db.data_version()
        if version == self._seen:
            return False
        self._seen = version
        return True
