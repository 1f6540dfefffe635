"""Plumbing under the orchestration store: connection, pragmas, transactions, rows, reads.

`StoreCore.open` creates the data directory `0700` and the database file
`0600` (its `-wal`/`-shm` files inherit that mode), turns on WAL (checking the
mode first, never inside a transaction), foreign keys, `busy_timeout` and
`synchronous = FULL` (a write marked `durable=False` commits under `NORMAL`
and rides on the next durable commit's fsync; see `_transaction`), and runs
the migrations. Read-only stores set
`PRAGMA query_only`. Every statement goes through `_execute`, which calls the
optional tracer first; every transaction goes through `_transaction`, which
issues `BEGIN IMMEDIATE` for writes, rolls back on any exception and turns
`sqlite3` errors into orchestration errors. Rows become `*Record`s only in the
`_*_from_row` functions here. `_store.Store` adds the mutations.
"""

from __future__ import annotations

import contextlib
import hashlib
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
    AgentLabelExistsError,
    InternalFailureError,
    InvalidRequestError,
    ManagedAgentBusyError,
    TargetAmbiguousError,
    TargetNotFoundError,
)
from corral.orchestration.kernel.records import (
    AskRecord,
    GenerationRecord,
    NewGeneration,
    RequestRecord,
    ResultArtifactRecord,
    ResultRecord,
    StoreSnapshot,
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
    "StoreCore",
    "StoreError",
    "StoreVersionError",
    "Tracer",
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

_MAX_AUTO_LABEL = 999

Tracer = Callable[[str, tuple[object, ...]], None]
"""Called with every statement and its parameters before it runs (tests, debugging)."""

_T = TypeVar("_T")
_Row = sqlite3.Row


class StoreError(InternalFailureError):
    """The database cannot be opened or used (corrupt, unwritable, wrong version)."""


class StoreVersionError(StoreError):
    """The database was written by a newer corral, or is too old to read without migrating."""


def default_store_path() -> Path:
    """`corral_home() / "corral.db"`."""
    return corral_home() / DB_FILENAME


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _new_id() -> str:
    return str(uuid.uuid4())


def _require_text(value: str, what: str) -> str:
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


# --- rows → records (the one place) -------------------------------------------------------------


def _generation_from_row(row: _Row) -> GenerationRecord:
    return GenerationRecord(
        run_id=row["run_id"],
        label=row["label"],
        definition=row["definition"],
        owner_session_id=row["owner_session_id"],
        parent_run_id=row["parent_run_id"],
        parent_label=row["parent_label"],
        delegating=bool(row["delegating"]),
        cwd=row["cwd"],
        session_id=row["session_id"],
        session_path=row["session_path"],
        runtime_kind=row["runtime_kind"],
        pid=row["pid"],
        host_id=row["host_id"],
        pane_id=row["pane_id"],
        phase=row["phase"],
        presence=row["presence"],
        active_request_id=row["active_request_id"],
        completed_request_id=row["completed_request_id"],
        created_at=row["created_at"],
        started_at=row["started_at"],
        finalized_at=row["finalized_at"],
        last_activity_at=row["last_activity_at"],
        updated_at=row["updated_at"],
        tokens=row["tokens"],
        cleanup_error=row["cleanup_error"],
        result_error=row["result_error"],
        diagnostic=row["diagnostic"],
    )


def _request_from_row(row: _Row) -> RequestRecord:
    accepted = row["accepted"]
    return RequestRecord(
        request_id=row["request_id"],
        run_id=row["run_id"],
        kind=row["kind"],
        ask_id=row["ask_id"],
        payload=row["payload"],
        created_at=row["created_at"],
        delivered_at=row["delivered_at"],
        acknowledged_at=row["acknowledged_at"],
        accepted=None if accepted is None else bool(accepted),
        ack_code=row["ack_code"],
        ack_message=row["ack_message"],
    )


def _ask_from_row(row: _Row) -> AskRecord:
    return AskRecord(
        ask_id=row["ask_id"],
        run_id=row["run_id"],
        request_id=row["request_id"],
        question=row["question"],
        state=row["state"],
        reply=row["reply"],
        created_at=row["created_at"],
        resolved_at=row["resolved_at"],
        delivered_entry_id=row["delivered_entry_id"],
    )


def _result_from_row(row: _Row) -> ResultRecord:
    artifact = row["artifact_path"]
    return ResultRecord(
        request_id=row["request_id"],
        run_id=row["run_id"],
        owner_session_id=row["owner_session_id"],
        status=row["status"],
        text=row["text"],
        artifact_path=None if artifact is None else Path(artifact),
        error_code=row["error_code"],
        error_message=row["error_message"],
        context_tokens=row["context_tokens"],
        created_at=row["created_at"],
        delivery=row["delivery"],
        delivered_entry_id=row["delivered_entry_id"],
        delivered_at=row["delivered_at"],
    )


def _artifact_from_row(row: _Row) -> ResultArtifactRecord:
    return ResultArtifactRecord(
        request_id=row["request_id"],
        path=Path(row["path"]),
        size=row["size"],
        sha256=row["sha256"],
        created_at=row["created_at"],
    )


class StoreCore:
    """Connection handling, transactions, shared checks and queries; `Store` adds the mutations."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        path: Path,
        readonly: bool,
        tracer: Tracer | None,
        clock: Callable[[], int],
    ) -> None:
        """Wrap an open connection; use `Store.open` instead."""
        self._conn = conn
        self._path = path
        self._readonly = readonly
        self._tracer = tracer
        self._clock = clock
        self._lock = threading.RLock()
        self._closed = False

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
        """Open (and create or migrate) the store.

        Args:
            path: Database file; default `corral_home() / "corral.db"`. Its directory is
                created `0700`; the file (and its `-wal`/`-shm`) are `0600`.
            readonly: Open with `PRAGMA query_only`; mutations then raise `StoreError`. The
                database must exist and be at the current schema version.
            tracer: Called with every statement the store runs.
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

    # --- transactions ---------------------------------------------------------------------------

    def _execute(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
        if self._tracer is not None:
            self._tracer(sql, tuple(params))
        return self._conn.execute(sql, params)

    def _one(self, sql: str, params: Sequence[object] = ()) -> _Row | None:
        return cast("_Row | None", self._execute(sql, params).fetchone())

    def _all(self, sql: str, params: Sequence[object] = ()) -> list[_Row]:
        return cast("list[_Row]", self._execute(sql, params).fetchall())

    @contextlib.contextmanager
    def _transaction(self, *, write: bool, durable: bool = True) -> Iterator[None]:
        """One transaction: `BEGIN IMMEDIATE` for writes, deferred for consistent reads.

        Rolls back on any exception (including a failing `COMMIT`) and maps
        `sqlite3` errors to orchestration errors so none crosses the layer.
        A write with `durable=False` commits under `synchronous = NORMAL`: no
        fsync of its own; in WAL mode its frames become durable with the next
        durable commit (group commit). A process crash loses nothing either
        way (the WAL is already written); only a power loss or OS crash can
        lose such a commit, so it is used only for live-process state that a
        restart re-derives (activity, acks, the runtime's start).
        """
        with self._lock:
            if self._closed:
                raise StoreError("The corral store is closed; open it again.")
            if write and self._readonly:
                raise StoreError("The corral store was opened read-only; open it read-write to change it.")
            relaxed = write and not durable
            try:
                if relaxed:
                    self._conn.execute("PRAGMA synchronous = NORMAL")
                self._execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield
                    self._execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
                finally:
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

    def _write(self, body: Callable[[], _T], *, durable: bool = True) -> _T:
        with self._transaction(write=True, durable=durable):
            return body()

    def _read(self, body: Callable[[], _T]) -> _T:
        with self._transaction(write=False):
            return body()

    # --- shared checks (inside a transaction) ---------------------------------------------------

    def _generation(self, run_id: str) -> GenerationRecord | None:
        row = self._one("SELECT * FROM generations WHERE run_id = ?", (run_id,))
        return None if row is None else _generation_from_row(row)

    def _live_generation(self, run_id: str, owner_session_id: str | None = None) -> GenerationRecord:
        """The generation `run_id`, not finalized, and owned by `owner_session_id` when given."""
        generation = self._generation(run_id)
        if generation is None or not generation.live:
            raise TargetNotFoundError(
                f"No live agent generation {run_id}; refresh with `list`.", ids={"runId": run_id}
            )
        if owner_session_id is not None and generation.owner_session_id != owner_session_id:
            raise TargetNotFoundError(
                f"Agent {generation.label} belongs to another owner session.",
                ids={"label": generation.label, "runId": run_id},
            )
        return generation

    def _pending_ask(self, run_id: str) -> AskRecord | None:
        row = self._one("SELECT * FROM asks WHERE run_id = ? AND state = 'pending'", (run_id,))
        return None if row is None else _ask_from_row(row)

    def _unacknowledged(self, run_id: str) -> RequestRecord | None:
        row = self._one("SELECT * FROM requests WHERE run_id = ? AND acknowledged_at IS NULL", (run_id,))
        return None if row is None else _request_from_row(row)

    def _result(self, request_id: str) -> ResultRecord | None:
        row = self._one("SELECT * FROM results WHERE request_id = ?", (request_id,))
        return None if row is None else _result_from_row(row)

    def _request(self, request_id: str) -> RequestRecord | None:
        row = self._one("SELECT * FROM requests WHERE request_id = ?", (request_id,))
        return None if row is None else _request_from_row(row)

    def _ask(self, ask_id: str) -> AskRecord | None:
        row = self._one("SELECT * FROM asks WHERE ask_id = ?", (ask_id,))
        return None if row is None else _ask_from_row(row)

    def _require_active(self, generation: GenerationRecord, what: str) -> str:
        if generation.phase != "active" or generation.active_request_id is None:
            raise ManagedAgentBusyError(
                f"Agent {generation.label} has no active assignment ({generation.phase}); {what} is not possible now.",
                ids={"label": generation.label, "runId": generation.run_id},
                next_action="Refresh with `list` and use only the listed actions.",
            )
        return generation.active_request_id

    # --- shared checks (continued) ---------------------------------------------------------

    def _check_parent(self, new: NewGeneration) -> GenerationRecord | None:
        if new.parent_run_id is None:
            owners = self._all(
                "SELECT run_id, label FROM generations WHERE session_id = ? AND phase <> 'finalized'",
                (new.owner_session_id,),
            )
            if owners:
                raise InvalidRequestError(
                    f"Owner session {new.owner_session_id} belongs to managed agent {owners[0]['label']}; "
                    "pass its run id as parent_run_id."
                )
            return None
        parent = self._live_generation(new.parent_run_id)
        if parent.session_id != new.owner_session_id:
            raise TargetNotFoundError(
                f"Owner session {new.owner_session_id} is not the session of agent {parent.label}.",
                ids={"label": parent.label, "runId": parent.run_id},
            )
        if parent.presence != "live":
            raise TargetNotFoundError(
                f"Delegating agent {parent.label} is {parent.presence}; it cannot start agents.",
                ids={"label": parent.label, "runId": parent.run_id},
            )
        if not parent.delegating or parent.parent_run_id is not None:
            raise InvalidRequestError(
                f"Agent {parent.label} may not delegate: agent-started agents are leaves.",
                ids={"label": parent.label},
            )
        if new.delegating:
            raise InvalidRequestError(
                "An agent started by an agent is a leaf and cannot be delegating; drop `agents` from it."
            )
        return parent

    def _check_session_free(self, new: NewGeneration) -> None:
        rows = self._all(
            "SELECT label FROM generations WHERE phase <> 'finalized' AND"
            " (session_id = ? OR (? IS NOT NULL AND session_path = ?))",
            (new.session_id, new.session_path, new.session_path),
        )
        if len(rows) > 1:
            raise TargetAmbiguousError(
                f"Session {new.session_id} is represented by several live agents; close them first.",
                details={"labels": [row["label"] for row in rows]},
            )
        if rows:
            raise ManagedAgentBusyError(
                f"Session {new.session_id} is already represented by active managed work ({rows[0]['label']}).",
                ids={"label": rows[0]["label"]},
                next_action="Wait for its result, or close that agent if abandoning the work.",
            )

    def _choose_label(self, new: NewGeneration, lead: str) -> str:
        """The label for `new` among the live labels of `lead`'s tree."""
        if new.label is not None:
            if (
                self._one("SELECT 1 FROM labels WHERE lead_session_id = ? AND label = ?", (lead, new.label))
                is not None
            ):
                raise AgentLabelExistsError(
                    f"Agent label {new.label} is already live; choose another label or close that agent.",
                    ids={"label": new.label},
                )
            return new.label
        taken = {
            row["label"]
            for row in self._all(
                "SELECT label FROM labels WHERE lead_session_id = ? AND (label = ? OR label LIKE ? ESCAPE '\\')",
                (lead, new.definition, new.definition.replace("_", "\\_") + "-%"),
            )
        }
        for index in range(1, _MAX_AUTO_LABEL + 1):
            candidate = new.definition if index == 1 else f"{new.definition}-{index}"
            if not LABEL_PATTERN.match(candidate):
                break
            if candidate not in taken:
                return candidate
        raise AgentLabelExistsError(
            f"Unable to choose agent label for definition {new.definition}; pass an explicit label."
        )

    def _claim_label(self, lead: str, label: str, run_id: str, now: int) -> None:
        """Hold `label` for `run_id` in `lead`'s tree (inside the caller's transaction)."""
        self._execute(
            "INSERT INTO labels (lead_session_id, label, run_id, claimed_at) VALUES (?, ?, ?, ?)",
            (lead, label, run_id, now),
        )

    def _label_scope(self, session_id: str) -> str:
        """The lead whose labels a caller in session `session_id` sees: the owner of the live
        top-level managed agent running in it, else the session itself (a lead)."""
        row = self._one(
            "SELECT owner_session_id FROM generations"
            " WHERE session_id = ? AND phase <> 'finalized' AND parent_run_id IS NULL",
            (session_id,),
        )
        return session_id if row is None else str(row["owner_session_id"])

    def _insert_generation(
        self, new: NewGeneration, *, label: str, parent: GenerationRecord | None, now: int
    ) -> tuple[str, str]:
        """Insert a generation row and its single `task` request (inside the caller's transaction).

        Returns:
            `(run_id, request_id)`.
        """
        run_id, request_id = new.run_id or _new_id(), _new_id()
        self._execute(
            "INSERT INTO generations (run_id, label, definition, owner_session_id, parent_run_id,"
            " parent_label, delegating, cwd, session_id, session_path, runtime_kind, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                label,
                new.definition,
                new.owner_session_id,
                new.parent_run_id,
                None if parent is None else parent.label,
                int(new.delegating),
                new.cwd,
                new.session_id,
                new.session_path,
                new.runtime_kind,
                now,
                now,
            ),
        )
        self._execute(
            "INSERT INTO requests (request_id, run_id, kind, payload, created_at) VALUES (?, ?, 'task', ?, ?)",
            (request_id, run_id, new.task, now),
        )
        return run_id, request_id

    def _owned_request(self, run_id: str, request_id: str) -> RequestRecord:
        generation = self._live_generation(run_id)
        request = self._request(request_id)
        if request is None or request.run_id != run_id:
            raise TargetNotFoundError(
                f"Request {request_id} is not addressed to agent {generation.label}.",
                ids={"label": generation.label, "runId": run_id},
            )
        return request

    def _unresolved_children(self, run_id: str, *, allow_asking: bool) -> list[str]:
        """Labels of direct children whose work is unresolved (optionally excusing ones blocked on an ask)."""
        rows = self._all(
            "SELECT g.label, g.phase,"
            " EXISTS (SELECT 1 FROM asks a WHERE a.run_id = g.run_id AND a.state = 'pending') AS asking,"
            " EXISTS (SELECT 1 FROM results r WHERE r.run_id = g.run_id AND r.delivery = 'pending')"
            " AS undelivered"
            " FROM generations g WHERE g.parent_run_id = ? AND g.phase <> 'finalized'",
            (run_id,),
        )
        unresolved = []
        for row in rows:
            if (
                row["undelivered"]
                or row["phase"] == "result_error"
                or (row["phase"] in ("starting", "active") and not (allow_asking and row["asking"]))
            ):
                unresolved.append(row["label"])
        return unresolved

    def _insert_artifact(self, request_id: str, path: Path, data: bytes, now: int) -> None:
        self._execute(
            "INSERT INTO result_artifacts (request_id, path, size, sha256, created_at) VALUES (?, ?, ?, ?, ?)",
            (request_id, str(path), len(data), hashlib.sha256(data).hexdigest(), now),
        )

    def _reload(self, run_id: str) -> GenerationRecord:
        generation = self._generation(run_id)
        assert generation is not None
        return generation

    # --- queries --------------------------------------------------------------------------------

    def get_generation(self, run_id: str) -> GenerationRecord | None:
        """The generation `run_id` (finalized ones included), or `None`."""
        return self._read(lambda: self._generation(run_id))

    def generation_by_label(self, label: str, *, session_id: str | None = None) -> GenerationRecord | None:
        """The live generation holding `label`, or `None`.

        Args:
            label: The label.
            session_id: The caller's session: only labels of its lead's tree are seen. `None`
                looks across every lead (the oldest claim wins; for tools and tests).
        """

        def body() -> GenerationRecord | None:
            if session_id is None:
                row = self._one(
                    "SELECT g.* FROM labels l JOIN generations g ON g.run_id = l.run_id WHERE l.label = ?"
                    " ORDER BY l.claimed_at, l.rowid",
                    (label,),
                )
            else:
                row = self._one(
                    "SELECT g.* FROM labels l JOIN generations g ON g.run_id = l.run_id"
                    " WHERE l.lead_session_id = ? AND l.label = ?",
                    (self._label_scope(session_id), label),
                )
            return None if row is None else _generation_from_row(row)

        return self._read(body)

    def generations(
        self,
        *,
        owner_session_id: str | None = None,
        session_id: str | None = None,
        parent_run_id: str | None = None,
        include_finalized: bool = False,
    ) -> tuple[GenerationRecord, ...]:
        """Generations matching every given filter, oldest first (live ones unless `include_finalized`)."""
        clauses: list[str] = []
        params: list[object] = []
        for column, value in (
            ("owner_session_id", owner_session_id),
            ("session_id", session_id),
            ("parent_run_id", parent_run_id),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if not include_finalized:
            clauses.append("phase <> 'finalized'")
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = f"SELECT * FROM generations{where} ORDER BY created_at, rowid"
        return self._read(lambda: tuple(_generation_from_row(row) for row in self._all(sql, params)))

    def get_request(self, request_id: str) -> RequestRecord | None:
        """The request `request_id`, or `None`."""
        return self._read(lambda: self._request(request_id))

    def requests(self, run_id: str) -> tuple[RequestRecord, ...]:
        """Every request of a generation, oldest first."""
        return self._read(
            lambda: tuple(
                _request_from_row(row)
                for row in self._all(
                    "SELECT * FROM requests WHERE run_id = ? ORDER BY created_at, rowid", (run_id,)
                )
            )
        )

    def unacknowledged_request(self, run_id: str) -> RequestRecord | None:
        """The generation's single unacknowledged request, or `None`."""
        return self._read(lambda: self._unacknowledged(run_id))

    def get_ask(self, ask_id: str) -> AskRecord | None:
        """The ask `ask_id`, or `None`."""
        return self._read(lambda: self._ask(ask_id))

    def pending_ask(self, run_id: str) -> AskRecord | None:
        """The generation's pending ask, or `None`."""
        return self._read(lambda: self._pending_ask(run_id))

    def get_result(self, request_id: str) -> ResultRecord | None:
        """The result of request `request_id`, or `None`."""
        return self._read(lambda: self._result(request_id))

    def result_text(self, result: ResultRecord) -> str | None:
        """The result's text, read from its artifact file when it is not inline."""
        if result.artifact_path is not None:
            return result.artifact_path.read_text(encoding="utf-8")
        return result.text

    def get_artifact(self, request_id: str) -> ResultArtifactRecord | None:
        """The artifact file record of a result, or `None`."""

        def body() -> ResultArtifactRecord | None:
            row = self._one("SELECT * FROM result_artifacts WHERE request_id = ?", (request_id,))
            return None if row is None else _artifact_from_row(row)

        return self._read(body)

    def undelivered_results(self, owner_session_id: str) -> tuple[ResultRecord, ...]:
        """Results waiting for delivery to `owner_session_id`, oldest first."""
        return self._read(
            lambda: tuple(
                _result_from_row(row)
                for row in self._all(
                    "SELECT * FROM results WHERE owner_session_id = ? AND delivery = 'pending'"
                    " ORDER BY created_at, rowid",
                    (owner_session_id,),
                )
            )
        )

    def snapshot(self) -> StoreSnapshot:
        """Everything the lifecycle projection needs, read in one transaction."""

        def body() -> StoreSnapshot:
            live = "SELECT run_id FROM generations WHERE phase <> 'finalized'"
            generations = tuple(
                _generation_from_row(row)
                for row in self._all(
                    "SELECT * FROM generations WHERE phase <> 'finalized' ORDER BY created_at, rowid"
                )
            )
            asks = tuple(
                _ask_from_row(row)
                for row in self._all(f"SELECT * FROM asks WHERE state = 'pending' AND run_id IN ({live})")
            )
            requests = tuple(
                _request_from_row(row)
                for row in self._all(
                    f"SELECT * FROM requests WHERE acknowledged_at IS NULL AND run_id IN ({live})"
                )
            )
            results = tuple(
                _result_from_row(row)
                for row in self._all(
                    f"SELECT * FROM results WHERE delivery = 'pending' AND run_id IN ({live})"
                )
            )
            return StoreSnapshot(
                generations=generations,
                pending_asks=asks,
                unacknowledged=requests,
                undelivered=results,
                taken_at=self._clock(),
            )

        return self._read(body)
