"""The repository of assigned checks (schema v3; see `store/_schema_checks.py`).

`Checks` is a repository over the shared database: every public verb is one transaction, re-reads
what it depends on inside it and raises an `OrchestrationError` subclass
(changing nothing) on a mismatch.

Checks (§6.3 of the teams notes): `claim_check` writes the durable `claimed`
row before anything runs — a row with the same assignment binding is returned
unchanged (`claimed=False`, nothing may run), a different binding is refused;
`finish_check` settles a claimed row once, only with its claim token.

`abandon_check` also cancels the run's repair ledgers, through the repair
repository's `cancel_run_in`, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, get_args

from corral.orchestration.errors import InvalidRequestError, TargetNotFoundError
from corral.orchestration.store._database import Database, Row, new_id
from corral.orchestration.store._repository import Repository
from corral.orchestration.store.jsjson import stringify
from corral.orchestration.teams.checks._rows import (
    CheckIdentityError,
    CheckRecordError,
    CheckRow,
    CheckState,
    decode_json_column,
)
from corral.orchestration.teams.repair._repository import RepairLedgers

__all__ = ["Checks"]

_CHECK_STATES: tuple[str, ...] = get_args(CheckState)


def _check_from_row(row: Row) -> CheckRow:
    key = row["check_id"]
    return CheckRow(
        check_id=key,
        run_id=row["run_id"],
        report_id=row["report_id"],
        name=row["name"],
        attempt=row["attempt"],
        assignment=decode_json_column(row["assignment"], "assignment", key),
        binding=row["binding"],
        claim_token=row["claim_token"],
        state=row["state"],
        started_at=row["started_at"],
        completed_at=row["completed_at"],
        source_before=decode_json_column(row["source_before"], "sourceBefore", key),
        source_after=decode_json_column(row["source_after"], "sourceAfter", key),
        exit_code=row["exit_code"],
        log_path=row["log_path"],
        log_bytes=row["log_bytes"],
        error=row["error"],
    )


class Checks(Repository):
    """Assigned check records (table `team_checks`); every public verb is one transaction."""

    def __init__(self, db: Database, repair: RepairLedgers) -> None:
        """Work over `db`; abandoning a check cancels its run's repair through `repair`."""
        super().__init__(db)
        self._repair = repair

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
                    new_id(),
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
        state: CheckState,
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
            self._repair.cancel_run_in(self._tx, stored.run_id, now)
            settled = self._check_row(check_id)
            assert settled is not None
            return settled

        return self._write(body)

    # --- helpers (inside a transaction) ---------------------------------------------------------------

    def _check_row(self, check_id: str) -> CheckRow | None:
        row = self._one("SELECT * FROM team_checks WHERE check_id = ?", (check_id,))
        return None if row is None else _check_from_row(row)
