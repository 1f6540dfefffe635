"""The orchestration store: one SQLite database per data root.

Every mutation is one short `BEGIN IMMEDIATE` transaction that first re-reads
the rows it depends on and checks identity (run id, owner session, request id,
ask id); anything that does not match raises the orchestration error of the
matching category and changes nothing (fail closed). Uniqueness that the
contract relies on is a constraint, not a race: one live label per database,
one task per generation, one unacknowledged request per generation, one
pending ask per generation, one result per request and per generation.

Exactly-once delivery rests on `store_result` writing the result row and
marking the generation completed in the same transaction, on `mark_delivered`
being a guarded check-and-set that reports whether *this* call did it, and on
`finalize_generation` refusing while a result is undelivered.

Methods are synchronous and fast; async callers run them off the event loop
(`asyncio.to_thread`). A `Store` may be shared between threads (one connection
guarded by a lock); other processes open their own `Store` on the same file
(WAL mode, `busy_timeout`). Only the store modules import `sqlite3`.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from corral._paths import ensure_private_dir
from corral.orchestration.errors import (
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
)
from corral.orchestration.store._database import (
    INLINE_RESULT_LIMIT,
    LABEL_PATTERN,
    _artifact_from_row,
    _new_id,
    _require_text,
    _write_private_file,
)
from corral.orchestration.teams.checkpoints._repository import CheckpointsStore
from corral.orchestration.teams.checks._repository import ChecksStore
from corral.orchestration.teams.groups._repository import GroupsStore
from corral.orchestration.teams.roster._repository import TeamStore
from corral.orchestration.worktrees._repository import WorktreesStore

__all__ = ["Store"]

_DIAGNOSTIC_LIMIT = 256

_T = TypeVar("_T")


class Store(TeamStore, ChecksStore, GroupsStore, CheckpointsStore, WorktreesStore):
    """The orchestration database. Open with `Store.open`; every method is one transaction.

    Mutations raise `OrchestrationError` subclasses on identity or state
    mismatches and leave the database unchanged when they do. The teams
    tables' methods come from `TeamStore`.
    """

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
            _require_text(value, what)
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

    def transfer_runtime(self, run_id: str, *, owner_session_id: str, host_id: str) -> GenerationRecord:
        """Move a live in-process generation to the tmux runtime (a handoff), in one transaction.

        Re-checks that it is live, `inprocess`, `active`, not lost, owned by `owner_session_id` and
        run by host `host_id`; then records `runtime_kind='tmux'` and clears `pid`, `host_id` and
        `pane_id` for the worker's readiness record.

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
                "UPDATE generations SET runtime_kind = 'tmux', pid = NULL, host_id = NULL, pane_id = NULL,"
                " updated_at = ? WHERE run_id = ?",
                (self._clock(), run_id),
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

        A teams agent also releases its file claims and stops being a live
        member (its name is free again), in the same transaction.

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
            ids = {"label": generation.label, "runId": run_id}
            pending = self._one(
                "SELECT request_id FROM results WHERE run_id = ? AND delivery = 'pending'", (run_id,)
            )
            if pending is not None:
                raise TargetAmbiguousError(
                    f"Agent {generation.label} has a durable result; close result delivery first.",
                    ids=ids,
                    details={"requestId": pending["request_id"]},
                )
            if generation.presence == "unknown":
                raise TargetAmbiguousError(
                    f"Agent {generation.label} has unknown presence; it cannot be closed safely.", ids=ids
                )
            children = self._all(
                "SELECT label FROM generations WHERE parent_run_id = ? AND phase <> 'finalized'", (run_id,)
            )
            if children:
                raise TargetAmbiguousError(
                    f"Agent {generation.label} still has live agents; close them first.",
                    ids=ids,
                    details={"children": [row["label"] for row in children]},
                )
            now = self._clock()
            self._execute(
                "UPDATE asks SET state = 'abandoned', resolved_at = ? WHERE run_id = ? AND state = 'pending'",
                (now, run_id),
            )
            self._execute("DELETE FROM labels WHERE run_id = ?", (run_id,))
            self._retire_member(run_id)
            self._execute(
                "UPDATE generations SET phase = 'finalized', finalized_at = ?, updated_at = ?,"
                " cleanup_error = COALESCE(?, cleanup_error) WHERE run_id = ?",
                (now, now, cleanup_error, run_id),
            )
            return self._reload(run_id)

        return self._write(body)

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
        _require_text(text, "message")
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
            request_id = _new_id()
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

    def create_ask(self, run_id: str, *, request_id: str, question: str) -> AskRecord:
        """Record an `ask_owner` question for the active assignment.

        Raises:
            InvalidRequestError: Blank question.
            TargetNotFoundError: No live generation, or `request_id` is not its active assignment.
            ManagedAgentBusyError: No active assignment, an ask is already pending, a control
                request is unacknowledged, or direct agent work is still active.
        """
        _require_text(question, "question")

        def body() -> AskRecord:
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
            ask_id = _new_id()
            self._execute(
                "INSERT INTO asks (ask_id, run_id, request_id, question, created_at) VALUES (?, ?, ?, ?, ?)",
                (ask_id, run_id, request_id, question, self._clock()),
            )
            ask = self._ask(ask_id)
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
        _require_text(entry_id, "entry id")

        def body() -> bool:
            ask = self._ask(ask_id)
            generation = None if ask is None else self._generation(ask.run_id)
            if ask is None or generation is None or generation.owner_session_id != owner_session_id:
                raise TargetNotFoundError(f"No ask {ask_id} for this owner session.")
            cursor = self._execute(
                "UPDATE asks SET delivered_entry_id = ? WHERE ask_id = ? AND delivered_entry_id IS NULL",
                (entry_id, ask_id),
            )
            return cursor.rowcount == 1

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

        return self._complete_assignment(
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

    def _complete_assignment(
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

        The writer behind `store_result` and `store_team_report`. Inside the
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
        _require_text(message, "message")

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

    def mark_delivered(self, request_id: str, *, owner_session_id: str, entry_id: str) -> bool:
        """Record that the owner's session holds the result entry `entry_id`.

        Returns:
            `True` if this call marked it delivered; `False` if it already was.

        Raises:
            TargetNotFoundError: No result for `request_id`, or it belongs to another owner.
        """
        _require_text(entry_id, "entry id")

        def body() -> bool:
            result = self._result(request_id)
            if result is None:
                raise TargetNotFoundError(f"No durable result for request {request_id}.")
            if result.owner_session_id != owner_session_id:
                raise TargetNotFoundError(
                    f"The result of request {request_id} belongs to another owner session."
                )
            cursor = self._execute(
                "UPDATE results SET delivery = 'delivered', delivered_entry_id = ?, delivered_at = ?"
                " WHERE request_id = ? AND owner_session_id = ? AND delivery = 'pending'",
                (entry_id, self._clock(), request_id, owner_session_id),
            )
            return cursor.rowcount == 1

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
