"""The teams reports of the orchestration store: a member's one report, stored with its result.

`store_team_report` writes the core `results` row that completes the
generation (through `Generations.complete_assignment`, the writer behind the
kernel's `store_result`) and the `team_reports` row in the same transaction, so
core delivery, finalize and crash recovery apply to reports unchanged. The
lead's acceptance (`record_report_acceptance`) is a check-and-set on the same
row. A report's delivery state is the kernel's: reads join `results`.

Table: `team_reports`.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from corral.orchestration.errors import InternalFailureError, InvalidRequestError, TargetNotFoundError
from corral.orchestration.kernel._generations import Generations
from corral.orchestration.kernel.records import GenerationRecord, ResultRecord
from corral.orchestration.store._database import Database, Row, Tx
from corral.orchestration.store._repository import Repository
from corral.orchestration.teams.reports.records import ReportAcceptance, ReportResult
from corral.orchestration.teams.roster import Roster
from corral.orchestration.teams.roster.records import (
    NewTeamReport,
    TeamReportRecord,
    _check_report,
    _encode_json,
)

__all__ = ["Reports"]

_REPORT_SELECT = (
    "SELECT t.*, r.delivery AS delivery, r.delivered_entry_id AS delivered_entry_id"
    " FROM team_reports t JOIN results r ON r.request_id = t.request_id"
)


def _json_column(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _report_from_row(row: Row) -> TeamReportRecord:
    return TeamReportRecord(
        report_id=row["report_id"],
        task_id=row["task_id"],
        run_id=row["run_id"],
        request_id=row["request_id"],
        lead_session_id=row["lead_session_id"],
        name=row["name"],
        tier=row["tier"],
        kind=row["kind"],
        status=row["status"],
        content=row["content"],
        summary=row["summary"],
        outcome=row["outcome"],
        result=ReportResult.from_json(
            json.loads(row["result"]),
            task_id=row["task_id"],
            run_id=row["run_id"],
            report_id=row["report_id"],
        ),
        report_source=row["report_source"],
        markdown_path=row["markdown_path"],
        acceptance=row["acceptance"],
        acceptance_reason=row["acceptance_reason"],
        decided_at=row["decided_at"],
        elapsed_ms=row["elapsed_ms"],
        tokens=row["tokens"],
        cost_usd=row["cost_usd"],
        created_at=row["created_at"],
        delivery=row["delivery"],
        delivered_entry_id=row["delivered_entry_id"],
    )


class Reports(Repository):
    """Team reports (table `team_reports`); every public verb is one transaction."""

    def __init__(self, db: Database, generations: Generations, roster: Roster) -> None:
        """Work over `db`, completing generations through `generations`, members read through `roster`."""
        super().__init__(db)
        self._generations = generations
        self._roster = roster

    def store_team_report(self, run_id: str, request_id: str, report: NewTeamReport) -> TeamReportRecord:
        """Store a member's final report and complete its generation, in one transaction.

        Writes the core `results` row (`completed` with the content as its text,
        or `failed` with `empty_result` and the content as the error message),
        the `team_reports` row and the generation's completion together; a big
        text also goes to the result's artifact file, as `store_result` does.
        The first report of a run wins: storing again returns the stored one
        unchanged.

        Raises:
            InvalidRequestError: Blank or inconsistent report fields.
            TargetNotFoundError: `run_id` is not a teams agent, not live, or `request_id` is not
                its active assignment.
            ManagedAgentBusyError: No active assignment, or an ask is pending.
        """
        encoded = _check_report(run_id, report)
        completed = report.status == "completed"

        def existing() -> TeamReportRecord | None:
            self._roster.require_member_in(self._tx, run_id)
            row = self._one(f"{_REPORT_SELECT} WHERE t.run_id = ?", (run_id,))
            return None if row is None else _report_from_row(row)

        def attach(generation: GenerationRecord, result: ResultRecord) -> TeamReportRecord:
            member = self._roster.require_member_in(self._tx, run_id)
            if self._team_report(report.report_id) is not None:
                raise InternalFailureError(
                    f"Report id {report.report_id} already belongs to another run; report ids name one run."
                )
            self._execute(
                "INSERT INTO team_reports (report_id, task_id, run_id, request_id, lead_session_id, name, tier,"
                " kind, status, content, summary, outcome, result, report_source, markdown_path, elapsed_ms,"
                " tokens, cost_usd, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    report.report_id,
                    report.task_id,
                    run_id,
                    result.request_id,
                    member.lead_session_id,
                    member.name,
                    member.tier,
                    member.kind,
                    report.status,
                    report.content,
                    report.summary,
                    report.outcome,
                    encoded,
                    report.report_source,
                    report.markdown_path,
                    report.elapsed_ms,
                    report.tokens,
                    report.cost_usd,
                    result.created_at,
                ),
            )
            stored = self._team_report(report.report_id)
            assert stored is not None
            return stored

        return self._generations.complete_assignment(
            run_id,
            request_id,
            status="completed" if completed else "failed",
            text=report.content if completed else None,
            error_code=None if completed else "empty_result",
            error_message=None if completed else report.content,
            context_tokens=None,
            existing=existing,
            attach=attach,
        )

    def team_report(self, report_id: str) -> TeamReportRecord | None:
        """The report `report_id`, or `None`."""
        return self._read(lambda: self._team_report(report_id))

    def team_report_for_run(self, run_id: str) -> TeamReportRecord | None:
        """The report of run `run_id`, or `None`."""

        def body() -> TeamReportRecord | None:
            row = self._one(f"{_REPORT_SELECT} WHERE t.run_id = ?", (run_id,))
            return None if row is None else _report_from_row(row)

        return self._read(body)

    def team_reports(
        self, lead_session_id: str, *, name: str | None = None, limit: int | None = None
    ) -> tuple[TeamReportRecord, ...]:
        """The team's reports (of member `name` if given): the latest `limit` of them, oldest first.

        Raises:
            InvalidRequestError: A negative `limit`.
        """
        if limit is not None and limit < 0:
            raise InvalidRequestError("limit must not be negative.")
        sql = f"{_REPORT_SELECT} WHERE t.lead_session_id = ?"
        params: list[object] = [lead_session_id]
        if name is not None:
            sql += " AND t.name = ?"
            params.append(name)
        sql += " ORDER BY t.created_at DESC, t.rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return self._read(lambda: tuple(reversed([_report_from_row(row) for row in self._all(sql, params)])))

    def record_report_acceptance(
        self, report_id: str, state: str, reason: str | None = None
    ) -> TeamReportRecord:
        """Record the lead's decision on a report (also in its `result.acceptance`), with `decided_at` now.

        Raises:
            InvalidRequestError: `state` is not `accepted` or `rejected`.
            TargetNotFoundError: No such report.
        """
        if state not in ("accepted", "rejected"):
            raise InvalidRequestError("Report acceptance must be accepted or rejected.")
        stored_reason = reason if reason and reason.strip() else None

        def body() -> TeamReportRecord:
            report = self._team_report(report_id)
            if report is None:
                raise TargetNotFoundError(f"Structured report {report_id} is unavailable.")
            now = self._clock()
            acceptance = ReportAcceptance(state, now, stored_reason)  # type: ignore[arg-type]  # checked above
            result = dataclasses.replace(report.result, acceptance=acceptance)
            self._execute(
                "UPDATE team_reports SET acceptance = ?, acceptance_reason = ?, decided_at = ?, result = ?"
                " WHERE report_id = ?",
                (state, stored_reason, now, _encode_json(result.to_json(), "Report result"), report_id),
            )
            updated = self._team_report(report_id)
            assert updated is not None
            return updated

        return self._write(body)

    # --- helpers (inside a transaction) ---------------------------------------------------------

    def _team_report(self, report_id: str) -> TeamReportRecord | None:
        row = self._one(f"{_REPORT_SELECT} WHERE t.report_id = ?", (report_id,))
        return None if row is None else _report_from_row(row)

    def team_report_in(self, tx: Tx, report_id: str) -> TeamReportRecord | None:
        """The report `report_id`, or `None`, inside `tx`."""
        self._inside(tx)
        return self._team_report(report_id)
