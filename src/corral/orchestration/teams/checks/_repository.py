"""The repository of assigned checks and repair ledgers (schema v3; see `store/_schema_checks.py`).

`Checks` is a repository over the shared database: every public verb is one transaction, re-reads
what it depends on inside it and raises an `OrchestrationError` subclass
(changing nothing) on a mismatch.

Checks (§6.3 of the teams notes): `claim_check` writes the durable `claimed`
row before anything runs — a row with the same assignment binding is returned
unchanged (`claimed=False`, nothing may run), a different binding is refused;
`finish_check` settles a claimed row once, only with its claim token.

Repair (§7.3): `reserve_repair_stage` creates the ledger or checks its
binding, replays a known submission, and otherwise appends the next stage,
all in one transaction, so a stage is durable before any command or feedback;
`finish_repair_stage` settles the stage its token names; `cancel_repair`
makes further attempts impossible.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from corral.orchestration.errors import InvalidRequestError, TargetNotFoundError
from corral.orchestration.store._database import Row, _new_id
from corral.orchestration.store._repository import Repository
from corral.orchestration.store.jsjson import stringify
from corral.orchestration.teams.checks._rows import (
    TERMINAL_REPAIR_STATES,
    CheckIdentityError,
    CheckRecordError,
    CheckRow,
    CheckRowState,
    RepairBindingError,
    RepairLedgerError,
    RepairLedgerRow,
    RepairReservation,
    RepairStageRow,
    RepairStageState,
)

__all__ = ["Checks"]

_CHECK_STATES = ("claimed", "passed", "failed", "cancelled", "timed-out", "stale", "unsupported", "error")
_REPAIR_STATES = (
    "running",
    "not-needed",
    "requested",
    "repaired",
    "exhausted",
    "cancelled",
    "declined",
    "blocked",
)


def _decode(text: str | None, what: str, key: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CheckRecordError(f"Stored {what} of {key} is not JSON ({exc}); inspect that row.") from None


def _check_from_row(row: Row) -> CheckRow:
    key = row["check_id"]
    return CheckRow(
        check_id=key,
        run_id=row["run_id"],
        report_id=row["report_id"],
        name=row["name"],
        attempt=row["attempt"],
        assignment=_decode(row["assignment"], "assignment", key),
        binding=row["binding"],
        claim_token=row["claim_token"],
        state=row["state"],
        started_at=row["started_at"],
        completed_at=row["completed_at"],
        source_before=_decode(row["source_before"], "sourceBefore", key),
        source_after=_decode(row["source_after"], "sourceAfter", key),
        exit_code=row["exit_code"],
        log_path=row["log_path"],
        log_bytes=row["log_bytes"],
        error=row["error"],
    )


def _stage_from_row(row: Row) -> RepairStageRow:
    ids = _decode(row["check_ids"], "check ids", row["controller_id"])
    if not isinstance(ids, list) or not all(isinstance(item, str) for item in ids):
        raise RepairLedgerError(f"Repair ledger {row['controller_id']} has a stage without check ids.")
    return RepairStageRow(
        controller_id=row["controller_id"],
        attempt=row["attempt"],
        submission_id=row["submission_id"],
        signature=row["signature"],
        token=row["token"],
        state=row["state"],
        check_ids=tuple(ids),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


class Checks(Repository):
    """Assigned check records and repair ledgers (tables `team_checks`, `team_repair_ledgers`, `team_repair_stages`)."""

    # --- checks -----------------------------------------------------------------------------------

    def claim_check(
        self, check_id: str, *, assignment: Mapping[str, Any], binding: str, log_path: str
    ) -> tuple[CheckRow, bool]:
        """Claim a check id durably, before anything runs.

        Args:
            check_id: `check:<64 hex>` (the caller derives it from the assignment).
            assignment: The `AssignedCheck` JSON (its `runId` must be a teams member).
            binding: The assignment binding; a later claim of the id must present the same one.
            log_path: Where the check's log goes (`<dir>/<64 hex>.log`).

        Returns:
            `(row, True)` for a new `claimed` row; `(stored, False)` when the id is already
            stored with the same binding (duplicates never rerun).

        Raises:
            CheckIdentityError: The id is stored with another binding.
            TargetNotFoundError: The assignment's run is not a teams member.
            InvalidRequestError: The assignment lacks its identity fields.
        """
        run_id = assignment.get("runId")
        if not all(
            isinstance(assignment.get(k), str) for k in ("runId", "reportId", "name")
        ) or not isinstance(assignment.get("attempt"), int):
            raise InvalidRequestError("A check assignment needs runId, reportId, name and attempt.")
        encoded = stringify(dict(assignment))

        def body() -> tuple[CheckRow, bool]:
            stored = self._check_row(check_id)
            if stored is not None:
                if stored.binding != binding:
                    raise CheckIdentityError("Check identity is already bound to another assignment.")
                return stored, False
            if self._one("SELECT 1 FROM team_members WHERE run_id = ?", (run_id,)) is None:
                raise TargetNotFoundError(f"Run {run_id} is not a teams agent; checks verify a teams run.")
            self._execute(
                "INSERT INTO team_checks (check_id, run_id, report_id, name, attempt, assignment, binding,"
                " claim_token, state, started_at, log_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'claimed', ?, ?)",
                (
                    check_id,
                    run_id,
                    assignment["reportId"],
                    assignment["name"],
                    assignment["attempt"],
                    encoded,
                    binding,
                    _new_id(),
                    self._clock(),
                    log_path,
                ),
            )
            row = self._check_row(check_id)
            assert row is not None
            return row, True

        return self._write(body)

    def finish_check(
        self,
        check_id: str,
        *,
        claim_token: str,
        state: CheckRowState,
        source_before: Mapping[str, Any] | None,
        source_after: Mapping[str, Any] | None,
        exit_code: int | None,
        log_bytes: int,
        error: str | None,
    ) -> CheckRow:
        """Settle a claimed check with its claim token (completion time = now).

        Returns:
            The settled row, or the stored row unchanged when it had already settled.

        Raises:
            CheckRecordError: No such row, or another claim token.
            InvalidRequestError: `state` is `claimed` or unknown.
            StoreError: The outcome breaks a record invariant (e.g. `passed` without exit 0).
        """
        if state == "claimed" or state not in _CHECK_STATES:
            raise InvalidRequestError(f"A check settles in a final state, not {state!r}.")

        def body() -> CheckRow:
            stored = self._check_row(check_id)
            if stored is None:
                raise CheckRecordError(f"Check record {check_id} disappeared before it settled.")
            if stored.claim_token != claim_token:
                raise CheckRecordError(f"Check {check_id} is claimed by another token.")
            if stored.state != "claimed":
                return stored
            self._execute(
                "UPDATE team_checks SET state = ?, completed_at = ?, source_before = ?, source_after = ?,"
                " exit_code = ?, log_bytes = ?, error = ? WHERE check_id = ? AND state = 'claimed'",
                (
                    state,
                    max(self._clock(), stored.started_at),
                    None if source_before is None else stringify(dict(source_before)),
                    None if source_after is None else stringify(dict(source_after)),
                    exit_code,
                    log_bytes,
                    error,
                    check_id,
                ),
            )
            row = self._check_row(check_id)
            assert row is not None
            return row

        return self._write(body)

    def get_check(self, check_id: str) -> CheckRow | None:
        """The row of `check_id`, or `None`."""
        return self._read(lambda: self._check_row(check_id))

    def get_checks(self, check_ids: Sequence[str]) -> dict[str, CheckRow]:
        """The stored rows among `check_ids` (missing ids are absent), read in one transaction."""

        def body() -> dict[str, CheckRow]:
            rows: dict[str, CheckRow] = {}
            for key in dict.fromkeys(check_ids):
                row = self._check_row(key)
                if row is not None:
                    rows[key] = row
            return rows

        return self._read(body)

    def claimed_checks(self, run_id: str | None = None) -> tuple[CheckRow, ...]:
        """The run's checks still `claimed` (unresolved executions), oldest first; every run's with `None`."""
        where, params = ("run_id = ? AND ", (run_id,)) if run_id is not None else ("", ())
        return self._read(
            lambda: tuple(
                _check_from_row(row)
                for row in self._all(
                    f"SELECT * FROM team_checks WHERE {where}state = 'claimed' ORDER BY started_at, rowid",
                    params,
                )
            )
        )

    def abandon_check(self, check_id: str, *, error: str) -> CheckRow:
        """Settle a `claimed` check whose process died as `error`, by hand, in one transaction.

        The command is never run again. Every repair stage of the run still `running` is settled
        `cancelled`, and its ledgers take no further attempt (§7.5 cancellation), since the run
        that would have made them is gone.
        The caller proves the claiming process is gone first.

        Raises:
            TargetNotFoundError: No check `check_id`.
            InvalidRequestError: It already settled, or `error` is empty.
        """
        if not error.strip():
            raise InvalidRequestError("Abandoning a check needs a reason.")

        def body() -> CheckRow:
            stored = self._check_row(check_id)
            if stored is None:
                raise TargetNotFoundError(
                    f"No check {check_id}; `corral checks list` shows the unresolved ones."
                )
            if stored.state != "claimed":
                raise InvalidRequestError(
                    f"Check {check_id} already settled ({stored.state}); nothing to resolve."
                )
            now = self._clock()
            self._execute(
                "UPDATE team_checks SET state = 'error', completed_at = ?, error = ?"
                " WHERE check_id = ? AND state = 'claimed'",
                (max(now, stored.started_at), error, check_id),
            )
            for ledger_row in self._all(
                "SELECT controller_id FROM team_repair_ledgers WHERE run_id = ?", (stored.run_id,)
            ):
                ledger = self._require_ledger(ledger_row["controller_id"])
                for stage in ledger.stages:
                    if stage.state == "running":
                        self._execute(
                            "UPDATE team_repair_stages SET state = 'cancelled', updated_at = ?"
                            " WHERE controller_id = ? AND token = ?",
                            (max(now, stage.created_at), ledger.controller_id, stage.token),
                        )
                self._cancel_ledger(self._require_ledger(ledger.controller_id), now)
            settled = self._check_row(check_id)
            assert settled is not None
            return settled

        return self._write(body)

    # --- repair ledgers -----------------------------------------------------------------------------

    def repair_ledger(self, controller_id: str) -> RepairLedgerRow | None:
        """The ledger `controller_id` with its stages, or `None`."""
        return self._read(lambda: self._ledger(controller_id))

    def repair_ledgers(self, run_id: str) -> tuple[RepairLedgerRow, ...]:
        """Every ledger of a run (one per report; a run has one report)."""

        def body() -> tuple[RepairLedgerRow, ...]:
            rows = self._all(
                "SELECT controller_id FROM team_repair_ledgers WHERE run_id = ? ORDER BY created_at, rowid",
                (run_id,),
            )
            ledgers = (self._ledger(row["controller_id"]) for row in rows)
            return tuple(ledger for ledger in ledgers if ledger is not None)

        return self._read(body)

    def reserve_repair_stage(
        self,
        controller_id: str,
        *,
        run_id: str,
        report_id: str,
        assignments: Sequence[Mapping[str, Any]],
        max_attempts: int,
        submission_id: str,
        signature: str,
        decline: bool,
        cancel_first: bool,
        check_ids: Callable[[int], Sequence[str]],
    ) -> RepairReservation:
        """Reserve the stage of one submission (§7.3 step 1), in one transaction.

        Creates the ledger on first use; otherwise its run, report, assignments and
        `max_attempts` must be the ones given. With `cancel_first` (the caller's signal
        was already aborted) the ledger is cancelled first. Then: a known submission id
        replays its stage; a cancelled ledger, or a last stage that is not `requested`,
        takes no new stage (the last stage is returned); otherwise the next stage is
        appended — `declined` with the previous stage's check ids when `decline` and
        this is a resubmission, else `running` with `check_ids(attempt)`.

        Raises:
            RepairBindingError: The policy or assignments changed ("Repair policy or
                assignment binding has changed."), or the submission id was recorded
                with another signature.
            TargetNotFoundError: `run_id` is not a teams member.
        """
        encoded = stringify([dict(item) for item in assignments])
        wanted = [dict(item) for item in assignments]

        def body() -> RepairReservation:
            ledger = self._ledger(controller_id)
            now = self._clock()
            if ledger is None:
                if self._one("SELECT 1 FROM team_members WHERE run_id = ?", (run_id,)) is None:
                    raise TargetNotFoundError(f"Run {run_id} is not a teams agent; repair needs a teams run.")
                self._execute(
                    "INSERT INTO team_repair_ledgers (controller_id, run_id, report_id, assignments, max_attempts,"
                    " cancelled, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (controller_id, run_id, report_id, encoded, max_attempts, int(cancel_first), now, now),
                )
            else:
                if (
                    ledger.run_id != run_id
                    or ledger.report_id != report_id
                    or list(ledger.assignments) != wanted
                    or ledger.max_attempts != max_attempts
                ):
                    raise RepairBindingError("Repair policy or assignment binding has changed.")
                if cancel_first:
                    self._cancel_ledger(ledger, now)
            ledger = self._require_ledger(controller_id)
            replay = ledger.stage_for(submission_id)
            if replay is not None:
                if replay.signature != signature:
                    raise RepairBindingError(
                        f"Repair submission {submission_id} was already recorded with different report details."
                    )
                return RepairReservation(ledger, replay, created=False)
            last = ledger.last_stage
            if ledger.cancelled or (last is not None and last.state != "requested"):
                return RepairReservation(ledger, last, created=False)
            attempt = 1 if last is None else last.attempt + 1
            declined = decline and last is not None
            ids = list(last.check_ids) if declined and last is not None else list(check_ids(attempt))
            self._execute(
                "INSERT INTO team_repair_stages (controller_id, attempt, submission_id, signature, token, state,"
                " check_ids, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    controller_id,
                    attempt,
                    submission_id,
                    signature,
                    _new_id(),
                    "declined" if declined else "running",
                    stringify(ids),
                    now,
                    now,
                ),
            )
            self._execute(
                "UPDATE team_repair_ledgers SET updated_at = ? WHERE controller_id = ?", (now, controller_id)
            )
            ledger = self._require_ledger(controller_id)
            return RepairReservation(ledger, ledger.last_stage, created=True)

        return self._write(body)

    def finish_repair_stage(
        self,
        controller_id: str,
        *,
        token: str,
        state: RepairStageState,
        check_ids: Sequence[str],
        cancel: bool,
    ) -> RepairLedgerRow:
        """Settle the stage `token` names (§7.3 step 3): its check ids and state; cancel the ledger if asked.

        A stage that already left `running` is left as it is (the ledger is returned unchanged
        apart from `cancel`). `state` may stay `running` while verification is pending.

        Raises:
            RepairLedgerError: No ledger, or no stage with that token in it.
            InvalidRequestError: An unknown state.
        """
        if state not in _REPAIR_STATES:
            raise InvalidRequestError(f"Unknown repair stage state {state!r}.")

        def body() -> RepairLedgerRow:
            ledger = self._require_ledger(controller_id)
            stage = next((s for s in ledger.stages if s.token == token), None)
            if stage is None:
                raise RepairLedgerError(
                    f"Repair ledger {controller_id} has no stage reserved with this token."
                )
            now = self._clock()
            if stage.state == "running":
                self._execute(
                    "UPDATE team_repair_stages SET state = ?, check_ids = ?, updated_at = ?"
                    " WHERE controller_id = ? AND token = ?",
                    (state, stringify(list(check_ids)), max(now, stage.created_at), controller_id, token),
                )
            if cancel and not ledger.cancelled:
                self._execute(
                    "UPDATE team_repair_ledgers SET cancelled = 1, updated_at = ? WHERE controller_id = ?",
                    (max(now, ledger.created_at), controller_id),
                )
            return self._require_ledger(controller_id)

        return self._write(body)

    def cancel_repair(self, controller_id: str) -> RepairLedgerRow | None:
        """Cancel a ledger unless its last stage is terminal (§7.5); `None` when there is no ledger."""

        def body() -> RepairLedgerRow | None:
            ledger = self._ledger(controller_id)
            if ledger is None:
                return None
            self._cancel_ledger(ledger, self._clock())
            return self._require_ledger(controller_id)

        return self._write(body)

    # --- helpers (inside a transaction) ---------------------------------------------------------------

    def _check_row(self, check_id: str) -> CheckRow | None:
        row = self._one("SELECT * FROM team_checks WHERE check_id = ?", (check_id,))
        return None if row is None else _check_from_row(row)

    def _ledger(self, controller_id: str) -> RepairLedgerRow | None:
        row = self._one("SELECT * FROM team_repair_ledgers WHERE controller_id = ?", (controller_id,))
        if row is None:
            return None
        assignments = _decode(row["assignments"], "assignments", controller_id)
        if not isinstance(assignments, list) or not all(isinstance(item, dict) for item in assignments):
            raise RepairLedgerError(f"Repair ledger {controller_id} has malformed assignments; inspect it.")
        stages = tuple(
            _stage_from_row(stage)
            for stage in self._all(
                "SELECT * FROM team_repair_stages WHERE controller_id = ? ORDER BY attempt", (controller_id,)
            )
        )
        return RepairLedgerRow(
            controller_id=controller_id,
            run_id=row["run_id"],
            report_id=row["report_id"],
            assignments=tuple(assignments),
            max_attempts=row["max_attempts"],
            cancelled=bool(row["cancelled"]),
            stages=stages,
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

    def _require_ledger(self, controller_id: str) -> RepairLedgerRow:
        ledger = self._ledger(controller_id)
        if ledger is None:
            raise RepairLedgerError(f"Repair ledger {controller_id} is unavailable.")
        return ledger

    def _cancel_ledger(self, ledger: RepairLedgerRow, now: int) -> None:
        last = ledger.last_stage
        if ledger.cancelled or (last is not None and last.state in TERMINAL_REPAIR_STATES):
            return
        self._execute(
            "UPDATE team_repair_ledgers SET cancelled = 1, updated_at = ? WHERE controller_id = ?",
            (max(now, ledger.created_at), ledger.controller_id),
        )
