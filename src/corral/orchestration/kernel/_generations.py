"""The kernel's repository: generations, requests, asks, results and their artifacts.

Every public verb is one short `BEGIN IMMEDIATE` transaction that first
re-reads the rows it depends on and checks identity (run id, owner session,
request id, ask id); anything that does not match raises the orchestration
error of the matching category and changes nothing (fail closed). Uniqueness
that the contract relies on is a constraint, not a race: one live label per
lead, one task per generation, one unacknowledged request per generation, one
pending ask per generation, one result per request and per generation.

Exactly-once delivery rests on `store_result` writing the result row and
marking the generation completed in the same transaction, on `mark_delivered`
being a guarded check-and-set that reports whether *this* call did it, and on
`finalize_generation` refusing while a result is undelivered. `mark_delivered`
of a run that has ended also finalizes it in its transaction (`finalize=True`),
under the same refusals (then it only marks).

The kernel knows no feature built on it. A feature that keeps rows per
generation (teams: file claims, membership) registers a finalize hook
(`add_finalize_hook`); `finalize_generation` runs every hook inside its own
transaction, so the generation and the feature's rows change together or not
at all. Features that write a generation together with their own rows
(a team member's start, a team report) call the `*_in(tx, ...)` pieces inside
their transaction.

Tables: `generations`, `requests`, `asks`, `results`, `result_artifacts`,
`labels` (migration 1; labels scoped per lead since migration 7).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from corral._paths import ensure_private_dir
from corral.orchestration.errors import (
    AgentLabelExistsError,
    InternalFailureError,
    InvalidRequestError,
    ManagedAgentBusyError,
    TargetAmbiguousError,
    TargetNotFoundError,
)
from corral.orchestration.kernel.records import (
    AckCode,
    AskRecord,
    GenerationRecord,
    NewGeneration,
    Presence,
    RequestKind,
    RequestRecord,
    ResultArtifactRecord,
    ResultErrorCode,
    ResultRecord,
    ResultStatus,
    StoreSnapshot,
    WatchedRun,
)
from corral.orchestration.store._database import (
    INLINE_RESULT_LIMIT,
    LABEL_PATTERN,
    Database,
    Row,
    Tx,
    _write_private_file,
    new_id,
    require_text,
)
from corral.orchestration.store._repository import Repository

__all__ = ["FinalizeHook", "Generations"]

FinalizeHook = Callable[[Tx, str], None]
"""Run by `finalize_generation` inside its transaction with the run id being finalized."""

_DIAGNOSTIC_LIMIT = 256
_MAX_AUTO_LABEL = 999
_WATCH_CHUNK = 500
"""Runs per statement of `watch` (SQLite's limit on bound parameters is far above)."""

_T = TypeVar("_T")


# --- rows → records -------------------------------------------------------------


def _generation_from_row(row: Row) -> GenerationRecord:
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


def _request_from_row(row: Row) -> RequestRecord:
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


def _ask_from_row(row: Row) -> AskRecord:
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


def _result_from_row(row: Row) -> ResultRecord:
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


def _artifact_from_row(row: Row) -> ResultArtifactRecord:
    return ResultArtifactRecord(
        request_id=row["request_id"],
        path=Path(row["path"]),
        size=row["size"],
        sha256=row["sha256"],
        created_at=row["created_at"],
    )


class Generations(Repository):
    """Generations and their requests, asks and results; every public verb is one transaction.

    Mutations raise `OrchestrationError` subclasses on identity or state
    mismatches and leave the database unchanged when they do.
    """

    def __init__(self, db: Database, *, on_finalize: tuple[FinalizeHook, ...] = ()) -> None:
        """Work over `db`; `on_finalize` hooks run inside every `finalize_generation`."""
        super().__init__(db)
        self._finalize_hooks: list[FinalizeHook] = list(on_finalize)

    def add_finalize_hook(self, hook: FinalizeHook) -> None:
        """Run `hook(tx, run_id)` inside every later `finalize_generation` (before the row is marked finalized)."""
        self._finalize_hooks.append(hook)

    @property
    def results_dir(self) -> Path:
        """Where result artifact files live: `<data root>/results`."""
        return self._db.results_dir

    # --- pieces for other aggregates (inside the caller's transaction) --------------------------

    def generation_in(self, tx: Tx, run_id: str) -> GenerationRecord | None:
        """The generation `run_id` (finalized ones included), or `None`, inside `tx`."""
        self._inside(tx)
        return self._generation(run_id)

    def request_in(self, tx: Tx, request_id: str) -> RequestRecord | None:
        """The request `request_id`, or `None`, inside `tx`."""
        self._inside(tx)
        return self._request(request_id)

    def check_new_in(self, tx: Tx, new: NewGeneration) -> GenerationRecord | None:
        """`create_generation`'s checks of the parent and the session, inside `tx`; returns the parent."""
        self._inside(tx)
        parent = self._check_parent(new)
        self._check_session_free(new)
        return parent

    def insert_generation_in(
        self, tx: Tx, new: NewGeneration, *, label: str, parent: GenerationRecord | None
    ) -> tuple[str, str]:
        """Insert a generation and its `task` request inside `tx` (no label claim); `(run_id, request_id)`."""
        self._inside(tx)
        return self._insert_generation(new, label=label, parent=parent, now=tx.now)

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
        run_id, request_id = new.run_id or new_id(), new_id()
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

    def watch(self, run_ids: Sequence[str]) -> dict[str, WatchedRun]:
        """Each run's generation, pending ask and count of acknowledged requests, in one read (the
        host's watch loop polls them for every run it watches; runs that do not exist are left out)."""
        wanted = list(dict.fromkeys(run_ids))

        def body() -> dict[str, WatchedRun]:
            generations: dict[str, GenerationRecord] = {}
            asks: dict[str, AskRecord] = {}
            acked: dict[str, int] = {}
            for start in range(0, len(wanted), _WATCH_CHUNK):
                chunk = wanted[start : start + _WATCH_CHUNK]
                marks = ", ".join("?" * len(chunk))
                for row in self._all(f"SELECT * FROM generations WHERE run_id IN ({marks})", chunk):
                    generation = _generation_from_row(row)
                    generations[generation.run_id] = generation
                for row in self._all(
                    f"SELECT * FROM asks WHERE run_id IN ({marks}) AND state = 'pending'", chunk
                ):
                    ask = _ask_from_row(row)
                    asks[ask.run_id] = ask
                for row in self._all(
                    f"SELECT run_id, COUNT(*) FROM requests WHERE run_id IN ({marks})"
                    " AND acknowledged_at IS NOT NULL GROUP BY run_id",
                    chunk,
                ):
                    acked[str(row[0])] = int(row[1])
            return {
                run_id: WatchedRun(generation, asks.get(run_id), acked.get(run_id, 0))
                for run_id, generation in generations.items()
            }

        return self._read(body)

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

    # --- generations ----------------------------------------------------------------------------

    def create_generation(self, new: NewGeneration) -> tuple[GenerationRecord, RequestRecord]:
        """Record a new generation, claim its label and record its task request, in one transaction.

        Labels are scoped to the lead whose tree the generation joins (its owner, or its parent's
        owner): another lead's live or lost label neither blocks nor reveals this one.

        Args:
            new: What the controller knows about the generation to start.

        Returns:
            The new generation (phase `starting`) and its unacknowledged `task` request.

        Raises:
            InvalidRequestError: Blank fields, a bad label, or a parent that may not delegate.
            AgentLabelExistsError: The explicit label is live in this lead's tree, or no auto-label is free.
            TargetNotFoundError: `parent_run_id` names no live generation of `owner_session_id`.
            ManagedAgentBusyError: The session is already represented by a live generation.
            TargetAmbiguousError: The session is represented more than once.
        """
        for value, what in (
            (new.definition, "definition"),
            (new.owner_session_id, "owner session id"),
            (new.cwd, "cwd"),
            (new.session_id, "session id"),
            (new.task, "task"),
        ):
            require_text(value, what)
        if new.label is not None and not LABEL_PATTERN.match(new.label):
            raise InvalidRequestError(
                f"Agent label {new.label!r} is invalid; use 1-32 characters matching ^[a-z][a-z0-9_-]{{0,31}}$."
            )
        if new.label is None and not LABEL_PATTERN.match(new.definition):
            raise InvalidRequestError(
                f"Definition name {new.definition!r} is not a valid agent label; pass an explicit label."
            )

        def body() -> tuple[GenerationRecord, RequestRecord]:
            parent = self._check_parent(new)
            self._check_session_free(new)
            lead = new.owner_session_id if parent is None else parent.owner_session_id
            label = self._choose_label(new, lead)
            now = self._clock()
            run_id, request_id = self._insert_generation(new, label=label, parent=parent, now=now)
            self._claim_label(lead, label, run_id, now)
            generation = self._generation(run_id)
            request = self._request(request_id)
            assert generation is not None and request is not None
            return generation, request

        return self._write(body)

    def record_started(
        self,
        run_id: str,
        *,
        session_path: str | None = None,
        pid: int | None = None,
        host_id: str | None = None,
        pane_id: str | None = None,
    ) -> GenerationRecord:
        """Record that the runtime started the agent, with its runtime identity.

        Identity fields already recorded must not change (a different value raises
        `TargetAmbiguousError`); missing ones are filled in. Group-committed (no fsync of
        its own): after a power loss the runtime it names is gone anyway.
        """

        def body() -> GenerationRecord:
            generation = self._live_generation(run_id)
            if generation.presence == "lost":
                raise TargetNotFoundError(
                    f"Agent {generation.label} is lost.", ids={"label": generation.label}
                )
            merged: dict[str, object] = {}
            for field, value in (
                ("session_path", session_path),
                ("pid", pid),
                ("host_id", host_id),
                ("pane_id", pane_id),
            ):
                current = getattr(generation, field)
                if value is None:
                    continue
                if current is not None and current != value:
                    raise TargetAmbiguousError(
                        f"Agent {generation.label} already runs with {field}={current!r}, not {value!r}.",
                        ids={"label": generation.label, "runId": run_id},
                    )
                merged[field] = value
            now = self._clock()
            self._execute(
                "UPDATE generations SET session_path = COALESCE(?, session_path), pid = COALESCE(?, pid),"
                " host_id = COALESCE(?, host_id), pane_id = COALESCE(?, pane_id),"
                " started_at = COALESCE(started_at, ?), updated_at = ? WHERE run_id = ?",
                (
                    merged.get("session_path"),
                    merged.get("pid"),
                    merged.get("host_id"),
                    merged.get("pane_id"),
                    now,
                    now,
                    run_id,
                ),
            )
            return self._reload(run_id)

        return self._write(body, durable=False)

    def transfer_runtime(
        self, run_id: str, *, owner_session_id: str, host_id: str, runtime: str = "tmux"
    ) -> GenerationRecord:
        """Move a live in-process generation to the worker runtime `runtime` (a handoff), in one
        transaction.

        Re-checks that it is live, `inprocess`, `active`, not lost, owned by `owner_session_id` and
        run by host `host_id`; then records `runtime_kind=runtime` and clears `pid`, `host_id` and
        `pane_id` for the worker's record.

        Raises:
            TargetNotFoundError: No live generation `run_id` of that owner.
            ManagedAgentBusyError: It is not an active, live in-process assignment of that host.
        """

        def body() -> GenerationRecord:
            generation = self._live_generation(run_id, owner_session_id)
            if (
                generation.runtime_kind != "inprocess"
                or generation.phase != "active"
                or generation.presence != "live"
                or generation.host_id != host_id
            ):
                raise ManagedAgentBusyError(
                    f"Agent {generation.label} is not an active in-process agent of this host "
                    f"({generation.runtime_kind}, {generation.phase}, {generation.presence}).",
                    ids={"label": generation.label, "runId": run_id},
                )
            self._execute(
                "UPDATE generations SET runtime_kind = ?, pid = NULL, host_id = NULL, pane_id = NULL,"
                " updated_at = ? WHERE run_id = ?",
                (runtime, self._clock(), run_id),
            )
            return self._reload(run_id)

        return self._write(body)

    def record_activity(self, run_id: str, *, at: int | None = None, tokens: int | None = None) -> None:
        """Record progress of an active assignment (and the latest context token count).

        `last_activity_at` only moves forward, and only while the assignment is
        active; tokens are recorded for any live generation. Group-committed (no fsync
        of its own).

        Raises:
            TargetNotFoundError: No live generation `run_id`.
        """

        def body() -> None:
            generation = self._live_generation(run_id)
            when = self._clock() if at is None else at
            activity = generation.last_activity_at
            if generation.phase == "active":
                activity = when if activity is None else max(activity, when)
            self._execute(
                "UPDATE generations SET last_activity_at = ?, tokens = COALESCE(?, tokens), updated_at = ?"
                " WHERE run_id = ?",
                (activity, tokens, self._clock(), run_id),
            )

        self._write(body, durable=False)

    def mark_presence(
        self, run_id: str, presence: Presence, *, diagnostic: str | None = None
    ) -> GenerationRecord:
        """Record a presence verdict: `lost` (final), `unknown`, or back to `live` from `unknown`.

        Raises:
            TargetNotFoundError: No live generation `run_id`.
            InvalidRequestError: Leaving `lost` (loss is final for a generation).
        """
        if diagnostic is not None:
            diagnostic = diagnostic[:_DIAGNOSTIC_LIMIT]

        def body() -> GenerationRecord:
            generation = self._live_generation(run_id)
            if generation.presence == "lost" and presence != "lost":
                raise InvalidRequestError(
                    f"Agent {generation.label} is lost; loss is final, close it instead.",
                    ids={"label": generation.label},
                )
            self._execute(
                "UPDATE generations SET presence = ?, diagnostic = ?, updated_at = ? WHERE run_id = ?",
                (presence, diagnostic if presence != "live" else None, self._clock(), run_id),
            )
            return self._reload(run_id)

        return self._write(body)

    def finalize_generation(
        self, run_id: str, *, owner_session_id: str, cleanup_error: str | None = None
    ) -> GenerationRecord:
        """Tear a generation down: free its label, abandon a pending ask, mark it finalized.

        The finalize hooks run in the same transaction (teams: the agent
        releases its file claims and stops being a live member); a hook that
        raises undoes the whole finalize.

        Called after the result was delivered (normal completion) or to close
        an agent (the assignment is abandoned).

        Args:
            run_id: The generation.
            owner_session_id: Its direct owner (checked).
            cleanup_error: A cleanup warning to keep with the row.

        Raises:
            TargetNotFoundError: No live generation `run_id` of that owner.
            TargetAmbiguousError: A result is still undelivered, presence is unknown, or live
                child agents remain (close them first).
        """

        def body() -> GenerationRecord:
            generation = self._live_generation(run_id, owner_session_id)
            refusal = self._finalize_refusal(generation)
            if refusal is not None:
                raise refusal
            self._finalize_rows(run_id, cleanup_error)
            return self._reload(run_id)

        return self._write(body)

    def _finalize_refusal(self, generation: GenerationRecord) -> TargetAmbiguousError | None:
        """Why `generation` cannot be finalized now (an undelivered result, unknown presence, live
        child agents), else `None`."""
        run_id = generation.run_id
        ids = {"label": generation.label, "runId": run_id}
        pending = self._one(
            "SELECT request_id FROM results WHERE run_id = ? AND delivery = 'pending'", (run_id,)
        )
        if pending is not None:
            return TargetAmbiguousError(
                f"Agent {generation.label} has a durable result; close result delivery first.",
                ids=ids,
                details={"requestId": pending["request_id"]},
            )
        if generation.presence == "unknown":
            return TargetAmbiguousError(
                f"Agent {generation.label} has unknown presence; it cannot be closed safely.", ids=ids
            )
        children = self._all(
            "SELECT label FROM generations WHERE parent_run_id = ? AND phase <> 'finalized'", (run_id,)
        )
        if children:
            return TargetAmbiguousError(
                f"Agent {generation.label} still has live agents; close them first.",
                ids=ids,
                details={"children": [row["label"] for row in children]},
            )
        return None

    def _finalize_rows(self, run_id: str, cleanup_error: str | None) -> None:
        """Finalize `run_id` (checked by `_finalize_refusal`): its ask abandoned, its label freed, the
        finalize hooks, the phase."""
        now = self._clock()
        self._execute(
            "UPDATE asks SET state = 'abandoned', resolved_at = ? WHERE run_id = ? AND state = 'pending'",
            (now, run_id),
        )
        self._execute("DELETE FROM labels WHERE run_id = ?", (run_id,))
        for hook in self._finalize_hooks:
            hook(self._tx, run_id)
        self._execute(
            "UPDATE generations SET phase = 'finalized', finalized_at = ?, updated_at = ?,"
            " cleanup_error = COALESCE(?, cleanup_error) WHERE run_id = ?",
            (now, now, cleanup_error, run_id),
        )

    # --- requests -------------------------------------------------------------------------------

    def submit_request(
        self,
        run_id: str,
        *,
        owner_session_id: str,
        kind: RequestKind,
        text: str,
        ask_id: str | None = None,
    ) -> RequestRecord:
        """Record a `steer`, `interrupt` or `reply` for the generation's active assignment.

        Raises:
            InvalidRequestError: A `task` kind, blank text, or `ask_id` with a non-reply.
            TargetNotFoundError: Not a live generation of this owner, or the ask does not match.
            TargetAmbiguousError: Presence is unknown.
            ManagedAgentBusyError: No active assignment, the agent is lost, a request is
                still unacknowledged, an ask is pending (steer/interrupt) or none is (reply).
        """
        if kind == "task":
            raise InvalidRequestError("A generation accepts exactly one task; delegate or continue instead.")
        require_text(text, "message")
        if (kind == "reply") != (ask_id is not None):
            raise InvalidRequestError("A reply needs the ask id it answers, and only a reply takes one.")

        def body() -> RequestRecord:
            generation = self._live_generation(run_id, owner_session_id)
            ids = {"label": generation.label, "runId": run_id}
            if generation.presence == "unknown":
                raise TargetAmbiguousError(f"Agent {generation.label} has unknown presence.", ids=ids)
            if generation.presence == "lost":
                raise ManagedAgentBusyError(
                    f"Agent {generation.label} is lost; it accepts no {kind}.", ids=ids
                )
            active = self._require_active(generation, kind)
            waiting = self._unacknowledged(run_id)
            if waiting is not None:
                raise ManagedAgentBusyError(
                    f"Agent {generation.label} has not acknowledged its previous {waiting.kind} yet.",
                    ids=ids,
                    next_action="Do not submit the same intent again; wait and refresh with `list`.",
                )
            ask = self._pending_ask(run_id)
            if kind == "reply":
                if ask is None:
                    raise ManagedAgentBusyError(
                        f"Agent {generation.label} is not waiting for an owner reply.", ids=ids
                    )
                if ask.ask_id != ask_id or ask.request_id != active:
                    raise TargetNotFoundError(
                        f"Agent {generation.label} ask identity did not match.", ids=ids
                    )
            elif ask is not None:
                raise ManagedAgentBusyError(
                    f"Agent {generation.label} is waiting for an owner reply; use reply instead of {kind}.",
                    ids=ids,
                )
            request_id = new_id()
            self._execute(
                "INSERT INTO requests (request_id, run_id, kind, ask_id, payload, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (request_id, run_id, kind, ask_id, text, self._clock()),
            )
            request = self._request(request_id)
            assert request is not None
            return request

        return self._write(body)

    def record_request_delivered(self, run_id: str, request_id: str) -> RequestRecord:
        """Note that the child injected the request (at-least-once; it may be applied again)."""

        def body() -> RequestRecord:
            request = self._owned_request(run_id, request_id)
            self._execute(
                "UPDATE requests SET delivered_at = COALESCE(delivered_at, ?) WHERE request_id = ?",
                (self._clock(), request_id),
            )
            return self._owned_request(run_id, request.request_id)

        return self._write(body)

    def record_ack(
        self,
        run_id: str,
        request_id: str,
        *,
        accepted: bool,
        code: AckCode | None = None,
        message: str | None = None,
    ) -> RequestRecord:
        """Record the child's acknowledgement of a request.

        An accepted `task` makes the generation `active`; an accepted `reply`
        answers its ask. Group-committed (no fsync of its own): an ack is the live
        child's, and no child outlives a power loss. Repeating the same ack is a no-op that returns the
        stored request; a conflicting second ack raises.

        Raises:
            InvalidRequestError: `code` given with `accepted=True` or missing with `accepted=False`.
            TargetNotFoundError: The request is not this generation's, or a reply's ask is no
                longer pending.
            InternalFailureError: A conflicting ack, or a task ack for a generation that is not starting.
        """
        if accepted == (code is not None):
            raise InvalidRequestError("An accepted ack has no code; a rejected ack needs one.")

        def body() -> RequestRecord:
            request = self._owned_request(run_id, request_id)
            if request.acknowledged:
                if request.accepted == accepted and request.ack_code == code:
                    return request
                raise InternalFailureError(
                    f"Request {request_id} was already acknowledged differently; the child's acks conflict."
                )
            generation = self._reload(run_id)
            now = self._clock()
            if accepted and request.kind == "task":
                if generation.phase != "starting":
                    raise InternalFailureError(
                        f"Agent {generation.label} is {generation.phase}; a task ack expects a starting generation."
                    )
                self._execute(
                    "UPDATE generations SET phase = 'active', active_request_id = ?, last_activity_at = ?,"
                    " updated_at = ? WHERE run_id = ?",
                    (request_id, now, now, run_id),
                )
            if accepted and request.kind == "reply":
                ask = self._pending_ask(run_id)
                if ask is None or ask.ask_id != request.ask_id:
                    raise TargetNotFoundError(
                        f"Agent {generation.label} ask identity did not match; the reply is stale.",
                        ids={"label": generation.label, "runId": run_id},
                    )
                self._execute(
                    "UPDATE asks SET state = 'answered', reply = ?, resolved_at = ? WHERE ask_id = ?",
                    (request.payload, now, ask.ask_id),
                )
            self._execute(
                "UPDATE requests SET acknowledged_at = ?, accepted = ?, ack_code = ?, ack_message = ?,"
                " delivered_at = COALESCE(delivered_at, ?) WHERE request_id = ?",
                (now, int(accepted), code, message, now, request_id),
            )
            return self._owned_request(run_id, request_id)

        return self._write(body, durable=False)

    # --- asks -----------------------------------------------------------------------------------

    def create_ask(
        self, run_id: str, *, request_id: str, question: str, ask_id: str | None = None
    ) -> AskRecord:
        """Record an `ask_owner` question for the active assignment.

        `ask_id` is the id a remote worker chose for it; recording the same ask again returns
        the stored one unchanged.

        Raises:
            InvalidRequestError: Blank question.
            TargetNotFoundError: No live generation, or `request_id` is not its active assignment.
            ManagedAgentBusyError: No active assignment, an ask is already pending, a control
                request is unacknowledged, or direct agent work is still active.
        """
        require_text(question, "question")

        def body() -> AskRecord:
            if ask_id is not None:
                stored = self._ask(ask_id)
                if stored is not None and stored.run_id == run_id:
                    return stored
            generation = self._live_generation(run_id)
            ids = {"label": generation.label, "runId": run_id}
            active = self._require_active(generation, "ask_owner")
            if active != request_id:
                raise TargetNotFoundError(
                    f"Request {request_id} is not the active assignment of agent {generation.label}.", ids=ids
                )
            if self._pending_ask(run_id) is not None:
                raise ManagedAgentBusyError(
                    f"Agent {generation.label} is already waiting for an owner reply.", ids=ids
                )
            if self._unacknowledged(run_id) is not None:
                raise ManagedAgentBusyError("A control request is still pending.", ids=ids)
            if self._unresolved_children(run_id, allow_asking=True):
                raise ManagedAgentBusyError("Direct agent work is still active.", ids=ids)
            chosen = ask_id or new_id()
            self._execute(
                "INSERT INTO asks (ask_id, run_id, request_id, question, created_at) VALUES (?, ?, ?, ?, ?)",
                (chosen, run_id, request_id, question, self._clock()),
            )
            ask = self._ask(chosen)
            assert ask is not None
            return ask

        return self._write(body)

    def answer_ask(self, run_id: str, *, owner_session_id: str, ask_id: str, text: str) -> RequestRecord:
        """Submit the owner's reply to a pending ask (a `reply` request; the ask is answered on its ack)."""
        return self.submit_request(
            run_id, owner_session_id=owner_session_id, kind="reply", text=text, ask_id=ask_id
        )

    def abandon_ask(self, run_id: str, ask_id: str) -> AskRecord:
        """Abandon a pending ask (idempotent for an already abandoned one).

        Raises:
            TargetNotFoundError: The ask is not this live generation's.
            ManagedAgentBusyError: The ask was already answered.
        """

        def body() -> AskRecord:
            generation = self._live_generation(run_id)
            ask = self._ask(ask_id)
            if ask is None or ask.run_id != run_id:
                raise TargetNotFoundError(
                    f"Agent {generation.label} has no ask {ask_id}.", ids={"label": generation.label}
                )
            if ask.state == "answered":
                raise ManagedAgentBusyError(
                    f"Ask {ask_id} was already answered.", ids={"label": generation.label}
                )
            if ask.state == "pending":
                self._execute(
                    "UPDATE asks SET state = 'abandoned', resolved_at = ? WHERE ask_id = ?",
                    (self._clock(), ask_id),
                )
            refreshed = self._ask(ask_id)
            assert refreshed is not None
            return refreshed

        return self._write(body)

    def mark_ask_delivered(self, ask_id: str, *, owner_session_id: str, entry_id: str) -> bool:
        """Record the owner-session entry that delivered a pending ask; `True` if this call did it.

        Raises:
            TargetNotFoundError: No such ask for a generation of this owner.
        """
        require_text(entry_id, "entry id")

        def body() -> bool:
            ask = self._ask(ask_id)
            generation = None if ask is None else self._generation(ask.run_id)
            if ask is None or generation is None or generation.owner_session_id != owner_session_id:
                raise TargetNotFoundError(f"No ask {ask_id} for this owner session.")
            changed = self._execute(
                "UPDATE asks SET delivered_entry_id = ? WHERE ask_id = ? AND delivered_entry_id IS NULL",
                (entry_id, ask_id),
            )
            return changed == 1

        return self._write(body)

    # --- results --------------------------------------------------------------------------------

    def store_result(
        self,
        run_id: str,
        request_id: str,
        *,
        status: ResultStatus,
        text: str | None = None,
        error_code: ResultErrorCode | None = None,
        error_message: str | None = None,
        context_tokens: int | None = None,
    ) -> ResultRecord:
        """Store the assignment's terminal result and mark the generation completed, atomically.

        A text longer than `INLINE_RESULT_LIMIT` bytes is written to
        `<data root>/results/<request-id>` (0600) and the row points at it.
        Storing the same request's result again returns the stored one unchanged.

        Raises:
            InvalidRequestError: `completed` without non-blank text, or `failed` without an
                error code or with text.
            TargetNotFoundError: No live generation, or `request_id` is not its active assignment.
            ManagedAgentBusyError: No active assignment, or an ask is pending.
        """
        if status == "completed":
            if text is None or not text.strip() or error_code is not None:
                raise InvalidRequestError("A completed result needs non-blank text and no error code.")
        elif text is not None or error_code is None:
            raise InvalidRequestError("A failed result needs an error code and no text.")

        def existing() -> ResultRecord | None:
            stored = self._result(request_id)
            if stored is not None and stored.run_id != run_id:
                raise TargetNotFoundError(f"Request {request_id} is not addressed to generation {run_id}.")
            return stored

        return self.complete_assignment(
            run_id,
            request_id,
            status=status,
            text=text,
            error_code=error_code,
            error_message=error_message,
            context_tokens=context_tokens,
            existing=existing,
            attach=lambda _generation, result: result,
        )

    def complete_assignment(
        self,
        run_id: str,
        request_id: str,
        *,
        status: ResultStatus,
        text: str | None,
        error_code: ResultErrorCode | None,
        error_message: str | None,
        context_tokens: int | None,
        existing: Callable[[], _T | None],
        attach: Callable[[GenerationRecord, ResultRecord], _T],
    ) -> _T:
        """Write an assignment's `results` row and complete its generation, in one transaction.

        The writer behind `store_result` and teams' `store_team_report`. Inside the
        transaction `existing()` runs first: a value means "already stored" and
        is returned with nothing written. Otherwise the generation must be live
        with `request_id` as its active assignment and no pending ask; the
        result row goes in (a text over `INLINE_RESULT_LIMIT` bytes in an
        artifact file), the generation is completed, and `attach` adds its own
        rows; its value is returned. The artifact file is moved into place
        last, so a failure anywhere leaves neither rows nor file.
        """
        data = None if text is None else text.encode("utf-8")
        artifact = (
            self.results_dir / request_id if data is not None and len(data) > INLINE_RESULT_LIMIT else None
        )
        staged: Path | None = None
        if artifact is not None and data is not None:
            if not re.fullmatch(r"[0-9a-f-]{36}", request_id):
                raise TargetNotFoundError(f"Request {request_id} is not a request id.")
            ensure_private_dir(self.results_dir)
            staged = artifact.with_name(f".{artifact.name}.{uuid.uuid4().hex}.staged")
            _write_private_file(staged, data)

        def body() -> _T:
            found = existing()
            if found is not None:
                return found
            generation = self._live_generation(run_id)
            ids = {"label": generation.label, "runId": run_id}
            active = self._require_active(generation, "storing a result")
            if active != request_id:
                raise TargetNotFoundError(
                    f"Request {request_id} is not the active assignment of agent {generation.label}.", ids=ids
                )
            if self._pending_ask(run_id) is not None:
                raise ManagedAgentBusyError(
                    f"Agent {generation.label} is waiting for an owner reply; it cannot finish yet.", ids=ids
                )
            now = self._clock()
            self._execute(
                "INSERT INTO results (request_id, run_id, owner_session_id, status, text, artifact_path,"
                " error_code, error_message, context_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    request_id,
                    run_id,
                    generation.owner_session_id,
                    status,
                    text if artifact is None else None,
                    None if artifact is None else str(artifact),
                    error_code,
                    error_message,
                    context_tokens,
                    now,
                ),
            )
            if artifact is not None and data is not None:
                self._insert_artifact(request_id, artifact, data, now)
            self._execute(
                "UPDATE generations SET phase = 'completed', completed_request_id = ?, active_request_id = NULL,"
                " last_activity_at = NULL, tokens = COALESCE(?, tokens), updated_at = ? WHERE run_id = ?",
                (request_id, context_tokens, now, run_id),
            )
            stored = self._result(request_id)
            assert stored is not None
            value = attach(generation, stored)
            if artifact is not None and staged is not None:
                os.replace(staged, artifact)
            return value

        try:
            return self._write(body)
        finally:
            if staged is not None:
                with contextlib.suppress(FileNotFoundError):
                    staged.unlink()

    def record_result_error(self, run_id: str, request_id: str, *, message: str) -> GenerationRecord:
        """Record that the active assignment's result could not be persisted (`result_error`).

        Raises:
            TargetNotFoundError: No live generation, or `request_id` is not its active assignment.
            ManagedAgentBusyError: No active assignment.
        """
        require_text(message, "message")

        def body() -> GenerationRecord:
            generation = self._live_generation(run_id)
            if self._require_active(generation, "recording a result error") != request_id:
                raise TargetNotFoundError(
                    f"Request {request_id} is not the active assignment of agent {generation.label}.",
                    ids={"label": generation.label, "runId": run_id},
                )
            self._execute(
                "UPDATE generations SET phase = 'result_error', result_error = ?, active_request_id = NULL,"
                " last_activity_at = NULL, updated_at = ? WHERE run_id = ?",
                (message, self._clock(), run_id),
            )
            return self._reload(run_id)

        return self._write(body)

    def settle_result_error(self, run_id: str) -> ResultRecord | None:
        """Settle a generation whose result could not be written (`result_error`) as failed.

        One transaction: a `failed` result (`write_failure`, the recorded write error as its message)
        for the generation's task, and the generation `completed` with the write error as its
        diagnostic, so the owner is told once, through the ordinary delivery, and the generation
        finalizes. For a generation whose run is over (its host is gone): nothing else will settle it.

        Returns:
            The stored result; `None` when the generation is not (or no longer) in `result_error`.
        """

        def body() -> ResultRecord | None:
            generation = self._generation(run_id)
            if generation is None or generation.phase != "result_error" or generation.result_error is None:
                return None
            row = self._one(
                "SELECT request_id FROM requests WHERE run_id = ? AND kind = 'task' ORDER BY created_at, rowid",
                (run_id,),
            )
            if row is None:
                return None
            request_id = str(row["request_id"])
            error = generation.result_error
            now = self._clock()
            if self._result(request_id) is None:
                self._execute(
                    "INSERT INTO results (request_id, run_id, owner_session_id, status, text, artifact_path,"
                    " error_code, error_message, context_tokens, created_at)"
                    " VALUES (?, ?, ?, 'failed', NULL, NULL, 'write_failure', ?, ?, ?)",
                    (
                        request_id,
                        run_id,
                        generation.owner_session_id,
                        f"Agent {generation.label} finished, but its result could not be written: {error}",
                        generation.tokens,
                        now,
                    ),
                )
            self._execute(
                "UPDATE generations SET phase = 'completed', completed_request_id = ?, result_error = NULL,"
                " diagnostic = ?, updated_at = ? WHERE run_id = ?",
                (request_id, f"its result could not be written: {error}"[:_DIAGNOSTIC_LIMIT], now, run_id),
            )
            return self._result(request_id)

        return self._write(body)

    def mark_delivered(
        self, request_id: str, *, owner_session_id: str, entry_id: str, finalize: bool = False
    ) -> bool:
        """Record that the owner's session holds the result entry `entry_id`.

        `finalize=True` (the caller knows the generation's run has ended) also finalizes the
        generation in the same transaction, as `finalize_generation` would, when nothing keeps it
        open (another undelivered result, unknown presence, live child agents); otherwise it is
        left for a later `finalize_generation`. One commit instead of two at an agent's finish.

        Returns:
            `True` if this call marked it delivered; `False` if it already was.

        Raises:
            TargetNotFoundError: No result for `request_id`, or it belongs to another owner.
        """
        require_text(entry_id, "entry id")

        def body() -> bool:
            result = self._result(request_id)
            if result is None:
                raise TargetNotFoundError(f"No durable result for request {request_id}.")
            if result.owner_session_id != owner_session_id:
                raise TargetNotFoundError(
                    f"The result of request {request_id} belongs to another owner session."
                )
            changed = self._execute(
                "UPDATE results SET delivery = 'delivered', delivered_entry_id = ?, delivered_at = ?"
                " WHERE request_id = ? AND owner_session_id = ? AND delivery = 'pending'",
                (entry_id, self._clock(), request_id, owner_session_id),
            )
            if finalize:
                generation = self._generation(result.run_id)
                if generation is not None and generation.live and self._finalize_refusal(generation) is None:
                    self._finalize_rows(generation.run_id, None)
            return changed == 1

        return self._write(body)

    def materialize_artifact(self, request_id: str) -> ResultArtifactRecord:
        """The result's text as a private file for `result:<request-id>` references (created once).

        Raises:
            TargetNotFoundError: No completed result for `request_id`.
        """
        existing = self.get_artifact(request_id)
        if existing is not None:
            return existing
        result = self.get_result(request_id)
        if result is None or result.status != "completed" or result.text is None:
            raise InvalidRequestError(
                "Canonical result references are opaque; use only exact references already supplied as file evidence."
            )
        data = result.text.encode("utf-8")
        path = self.results_dir / request_id
        ensure_private_dir(self.results_dir)
        staged = path.with_name(f".{path.name}.{uuid.uuid4().hex}.staged")
        _write_private_file(staged, data)

        def body() -> ResultArtifactRecord:
            row = self._one("SELECT * FROM result_artifacts WHERE request_id = ?", (request_id,))
            if row is None:
                self._insert_artifact(request_id, path, data, self._clock())
                os.replace(staged, path)
                row = self._one("SELECT * FROM result_artifacts WHERE request_id = ?", (request_id,))
            assert row is not None
            return _artifact_from_row(row)

        try:
            return self._write(body)
        finally:
            with contextlib.suppress(FileNotFoundError):
                staged.unlink()
