"""Verification of a report's assigned checks, with optional bounded repair: the one API of the teams core.

`Verifier.verify` runs when an agent submits `report_and_exit` (before the
report closes the recipient):

* no checks → verification `not-requested`, accepted;
* checks without repair (`max_attempts == 0`) → each check runs once
  (attempt 1; a duplicate submission reruns nothing), verification from
  `verify_batch`, and the report is accepted whatever the checks say (failed
  checks never block a report without repair);
* with repair → `RepairController.submit` (§7.3); the receipt is not accepted
  only when the decision is `requested`, and then carries the repair request.

`observe` rebuilds a stored report's verification and repair from the store
as it is now (a `passed` check whose source changed reads `stale`; a
ledger's decision is never taken from cached report fields), without writing.
`cancel` kills the report's running checks and cancels its repair durably;
`unresolved` says why a run's cleanup must stay fenced.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from corral.orchestration.errors import InvalidRequestError, OrchestrationError
from corral.orchestration.teams.checks._checks import (
    CheckExecutor,
    CheckRunner,
    CheckSpec,
    LocalShellExecutor,
    assign_checks,
    read_evidence,
)
from corral.orchestration.teams.checks.records import CheckRecord, CheckStore, read_check_records

from ._repair import RepairController, parse_repair_policy, submission_signature
from .records import ObservedVerification, RepairRequest, RepairResult, ReportVerification

if TYPE_CHECKING:
    from corral.orchestration.teams._repositories import TeamsRepositories
    from corral.orchestration.teams.commands import ReportSubmission

__all__ = ["VerificationDecision", "Verifier", "parse_repair_policy"]


@dataclass(frozen=True, slots=True)
class VerificationDecision:
    """What verifying one submission decided."""

    accepted: bool
    """`False` only when repair requests another attempt (the agent stays active)."""
    verification: ReportVerification
    """The report's `result.verification`."""
    repair: RepairResult | None
    """The repair decision (the report's `result.repair`), or `None` without repair."""
    repair_request: RepairRequest | None
    """The repair the agent is asked for (only when repair requests another attempt)."""
    records: tuple[CheckRecord, ...] = ()
    """The checks' records as observed, in policy order (missing ones left out)."""


_SIGNED_CLAIMS = ("changedPaths", "artifacts", "findings", "questions", "inspectedEvidence")
"""The order the signature takes the claims in (not the stored order; kept so signatures stay stable)."""


def _signature(submission: ReportSubmission) -> str:
    """The submission's repair signature: its content, summary, outcome, then its claims."""
    claims = submission.claims().to_json()
    signed = {
        "content": submission.content,
        "summary": submission.summary,
        "outcome": submission.outcome,
        **{key: claims[key] for key in _SIGNED_CLAIMS if key in claims},
    }
    return submission_signature(signed)


class Verifier:
    """Runs, decides, observes and cancels assigned verification for the teams core."""

    def __init__(
        self,
        repos: TeamsRepositories,
        *,
        logs_dir: Callable[[str], Path],
        executor: CheckExecutor | None = None,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        """Create the verifier.

        Args:
            repos: The teams repositories (check records, repair ledgers).
            logs_dir: `logs_dir(lead_session_id)` → the team's checks directory (logs go there).
            executor: The runtime's local shell; default `LocalShellExecutor()`. An executor whose
                `available()` is false makes every check `unsupported`.
            on_change: Called when a check is claimed or settles (the host's `changed`).
        """
        self._repos = repos
        self._on_change = on_change
        self._logs_dir = logs_dir
        self._executor: CheckExecutor = executor if executor is not None else LocalShellExecutor()
        self._active: dict[str, asyncio.Event] = {}
        self._cancelled: set[str] = set()

    async def verify(
        self,
        *,
        lead_session_id: str,
        task_id: str,
        report_id: str,
        run_id: str,
        cwd: Path,
        checks: tuple[CheckSpec, ...],
        max_attempts: int,
        submission_id: str,
        submission: ReportSubmission,
        cancel: asyncio.Event | None = None,
        executor: CheckExecutor | None = None,
    ) -> VerificationDecision:
        """Verify one `report_and_exit` submission.

        Args:
            lead_session_id: The team.
            task_id: The report's task id.
            report_id: The report's id.
            run_id: The agent's run.
            cwd: The agent's working directory (checks run there).
            checks: The spawn's assigned checks, in policy order.
            max_attempts: The repair policy's `maxAttempts` (0 = no repair).
            submission_id: The submission's runtime id (the tool call id); required with repair.
            submission: What the agent submitted (its content, summary, outcome and claims sign the
                submission for repair; a plain final answer is a submission of its content alone).
            cancel: Setting it kills running checks (as `cancel(report_id)` does).
            executor: Where this run's commands execute, when not here (a member on a Ray worker:
                its node); default: the verifier's executor.

        Raises:
            InvalidRequestError: Repair without checks, or without a submission id.
            RepairBindingError: The repair policy or assignments changed since the ledger was made,
                or the submission id was reused with other details.
            RepairLedgerError: The report's ledger is corrupt or belongs to another run.
        """
        if not checks:
            if max_attempts:
                raise InvalidRequestError("Repair policy requires explicitly assigned checks.")
            return VerificationDecision(True, ReportVerification(), None, None)
        event = cancel if cancel is not None else asyncio.Event()
        if report_id in self._cancelled:
            event.set()
        self._active[report_id] = event
        try:
            runner = CheckRunner(
                CheckStore(self._repos.checks, self._logs_dir(lead_session_id)),
                executor=executor if executor is not None else self._executor,
                on_change=self._on_change,
            )
            assignments = assign_checks(
                checks, task_id=task_id, run_id=run_id, report_id=report_id, cwd=os.fspath(cwd), attempt=1
            )
            if max_attempts == 0:
                batch = await runner.run_all(assignments, cancel=event)
                records = tuple(record for record in batch.records.values() if record is not None)
                return VerificationDecision(
                    True, ReportVerification.of(batch.verification), None, None, records
                )
            outcome_ = await RepairController(self._repos, runner).submit(
                assignments,
                max_attempts=max_attempts,
                submission_id=submission_id,
                signature=_signature(submission),
                outcome=submission.outcome,
                cancel=event,
            )
        finally:
            if self._active.get(report_id) is event:
                del self._active[report_id]
        records = tuple(record for record in outcome_.records.values() if record is not None)
        return VerificationDecision(
            outcome_.result.state != "requested",
            ReportVerification.of(outcome_.verification),
            outcome_.result,
            outcome_.request,
            records,
        )

    async def observe(
        self,
        *,
        report_id: str,
        run_id: str,
        task_id: str,
        verification: ReportVerification,
        repair: RepairResult | None,
    ) -> ObservedVerification:
        """A stored report's verification and repair observed now; never writes.

        Args:
            report_id: The report.
            run_id: Its run.
            task_id: Its task.
            verification: The verification the report stored.
            repair: The repair decision the report stored (`None`: it references no repair).

        Without a ledger and without a stored repair, the verification is re-read from its
        check records (`passed` becomes `stale` when the source changed; a missing, corrupt
        or foreign record makes it `failed` with the error). Otherwise verification and
        repair are rebuilt from the ledger (§7.6); the stored repair's fields are ignored.
        """
        observed = await RepairController(self._repos).observe(
            report_id=report_id, run_id=run_id, task_id=task_id, referenced=repair is not None
        )
        if observed is not None:
            return ObservedVerification(ReportVerification.of(observed.verification), observed.result)
        ids = verification.check_ids
        if not ids:
            return ObservedVerification(verification, repair)
        try:
            batch = await read_evidence(self._repos.checks, ids, task_id=task_id, run_id=run_id)
        except OrchestrationError as exc:
            return ObservedVerification(ReportVerification("failed", ids, error=str(exc)), repair)
        return ObservedVerification(ReportVerification.of(batch.verification), repair)

    def cancel(self, report_id: str) -> None:
        """Cancel the report's verification: kill its running checks and cancel its repair durably (§7.5)."""
        self._cancelled.add(report_id)
        event = self._active.get(report_id)
        if event is not None:
            event.set()
        RepairController(self._repos).cancel(report_id)

    def cancel_and_require_settled(self, report_id: str) -> None:
        """`cancel` durably, then refuse while the report's repair work is unresolved (stop and cleanup).

        Raises:
            RepairUnresolvedError: A repair stage is running or a referenced check is still claimed.
        """
        self.cancel(report_id)
        RepairController(self._repos).cancel_and_require_settled(report_id)

    def unresolved(self, run_id: str) -> str | None:
        """Why the run's cleanup must stay fenced (a claimed check, a running repair stage), else `None`."""
        return RepairController(self._repos).unresolved(run_id)

    def records(self, check_ids: Sequence[str]) -> list[CheckRecord]:
        """The stored records of `check_ids` (missing ones left out), e.g. for `check_teammate`'s log paths.

        Raises:
            CheckRecordError: A stored row breaks an invariant.
        """
        return [
            record
            for record in read_check_records(self._repos.checks, check_ids).values()
            if record is not None
        ]
