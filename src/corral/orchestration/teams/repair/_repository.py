"""The repository of repair ledgers (schema v3; see `store/_schema_checks.py`).

Repair (§7.3): `reserve_repair_stage` creates the ledger or checks its
binding, replays a known submission, and otherwise appends the next stage,
all in one transaction, so a stage is durable before any command or feedback;
`finish_repair_stage` settles the stage its token names; `cancel_repair`
makes further attempts impossible. `cancel_run_in` is the piece the checks
repository runs inside `abandon_check`'s transaction.

Tables: `team_repair_ledgers`, `team_repair_stages`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from corral.orchestration.errors import InvalidRequestError, TargetNotFoundError
from corral.orchestration.store._database import Row, Tx, new_id
from corral.orchestration.store._repository import Repository
from corral.orchestration.store.jsjson import stringify
from corral.orchestration.teams.checks._rows import (
    TERMINAL_REPAIR_STATES,
    RepairBindingError,
    RepairLedgerError,
    RepairLedgerRow,
    RepairReservation,
    RepairStageRow,
    RepairStageState,
    decode_json_column,
)

__all__ = ["RepairLedgers"]

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


def _stage_from_row(row: Row) -> RepairStageRow:
    ids = decode_json_column(row["check_ids"], "check ids", row["controller_id"])
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


class RepairLedgers(Repository):
    """Repair ledgers and their stages; every public verb is one transaction."""

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
                    new_id(),
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

    # --- helpers (inside a transaction) ---------------------------------------------------------

    def cancel_run_in(self, tx: Tx, run_id: str, now: int) -> None:
        """Inside `tx`: settle every `running` stage of the run's ledgers `cancelled`, and cancel the ledgers."""
        self._inside(tx)
        for ledger_row in self._all(
            "SELECT controller_id FROM team_repair_ledgers WHERE run_id = ?", (run_id,)
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

    def _ledger(self, controller_id: str) -> RepairLedgerRow | None:
        row = self._one("SELECT * FROM team_repair_ledgers WHERE controller_id = ?", (controller_id,))
        if row is None:
            return None
        assignments = decode_json_column(row["assignments"], "assignments", controller_id)
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
