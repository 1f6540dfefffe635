"""Specialist checkpoints over the store: creation on report, continuation, listing, retention (§9.3–9.5).

* **Creation.** When a checkpointed agent reports, `Checkpoints.record`
  captures the source after the report (over the policy inputs, 30 s at
  most), builds the draft and saves it as a `ready` row. A continuation's
  draft keeps the parent's first report and up to 14 of its most recent later
  ones, then appends the new report; findings (new first, then the parent's
  from retained reports whose ids were not updated) are capped at 100,
  inspected evidence at 128, questions (new first, then the parent's others)
  at 32. Over 64 KiB, the second-oldest report (with its findings and
  evidence) is dropped while more than two remain, then inherited questions.
  A retry finds the saved row and returns it without capturing again; a
  different record under the same id is refused ("Checkpoint <id> is
  immutable.").
* **Continuation.** `load` accepts only the exact id and fails visibly for a
  missing, corrupt, deleted or expired checkpoint. `continuation_prompt`
  re-reads it at actual launch, compares the current source of every retained
  report's scope with what that report observed afterwards, and builds the
  child's prompt: preamble, the checkpoint JSON, "Source applicability:" and
  the revalidation entries, the revalidation instruction, then "Current
  assignment (authoritative):" and the new prompt.
* **Retention.** A checkpoint is continuable until `expiresAt - 1` ms.
  `retire_expired` (at startup) replaces each due `ready` record by an
  `expired` retirement record; `delete` writes a `deleted` one. Rows that
  break the record rules are reported as corrupt, never auto-expired, and may
  be deleted explicitly; healthy rows around them are untouched.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from corral.orchestration.store.jsjson import stringify
from corral.orchestration.teams._tiers import resolve_tier
from corral.orchestration.teams.checks._fingerprint import (
    SourceCaptureError,
    SourceFingerprint,
    _repository_root,
    capture_fingerprint,
    same_tested_source,
)
from corral.orchestration.teams.notices import ContinuationDue
from corral.orchestration.teams.reports._reports import report_id as make_report_id

from .records import (
    DAY_MS,
    MAX_CHECKPOINT_BYTES,
    MAX_FINDINGS,
    MAX_INSPECTED_EVIDENCE,
    MAX_QUESTIONS,
    CheckpointAcceptance,
    CheckpointAuthor,
    CheckpointError,
    CheckpointEvidence,
    CheckpointFinding,
    CheckpointPolicy,
    CheckpointRecord,
    CheckpointRecordError,
    CheckpointReport,
    CheckpointVerification,
    RetiredCheckpoint,
    Revalidation,
    check_checkpoint_prompt,
    checkpoint_id,
    parse_checkpoint_ref,
    report_contribution,
)

if TYPE_CHECKING:
    from corral.orchestration.teams.checkpoints._repository import CheckpointRow
    from corral.orchestration.teams.checkpoints._repository import Checkpoints as CheckpointRows
    from corral.orchestration.teams.roster.records import TeamReportRecord

__all__ = [
    "NO_CHECKPOINTS_MESSAGE",
    "SOURCE_AFTER_TIMEOUT_SECONDS",
    "Checkpoints",
    "Revalidation",
    "build_draft",
]

SOURCE_AFTER_TIMEOUT_SECONDS = 30.0
"""How long capturing the source after a report may take."""
NO_CHECKPOINTS_MESSAGE = "No specialist checkpoints saved."
"""What the list says when there is no checkpoint."""
_CHANGED_DURING = "Source changed during the earlier investigation."
_CHANGED = "Dependency scope or workspace changed."
_UNCHANGED = "Observed scope unchanged; findings remain reported claims."
_UNAVAILABLE = "Source comparison unavailable: "
_RETAINED_RECENT = 14
_CAS_ATTEMPTS = 5


def _iso(ms: int) -> str:
    """`new Date(ms).toISOString()`."""
    try:
        moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    except OverflowError:
        return f"{ms} ms"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _unavailable(cid: str) -> CheckpointError:
    return CheckpointError(f"Checkpoint unavailable: {cid}. Request a new checkpoint.")


def _corrupt(cid: str, reason: object) -> CheckpointError:
    return CheckpointError(_corrupt_text(cid, reason))


def _corrupt_text(cid: str, reason: object) -> str:
    return (
        f"Checkpoint {cid} is corrupt or incompatible ({reason}); inspect it with `corral checkpoints list` "
        f"or delete it with `corral checkpoints delete {cid}`."
    )


def _parse_row(row: CheckpointRow) -> CheckpointRecord | RetiredCheckpoint:
    """The record a row holds, checked against the row's own columns.

    Raises:
        CheckpointRecordError: The row is corrupt or incompatible.
    """
    try:
        data = json.loads(row.record)
    except ValueError:
        raise CheckpointRecordError("record is not JSON") from None
    if row.state == "ready":
        record = CheckpointRecord.from_json(data)
        if (record.id, record.created_at, record.expires_at) != (
            row.checkpoint_id,
            row.created_at,
            row.expires_at,
        ):
            raise CheckpointRecordError("record does not match its row")
        return record
    retired = RetiredCheckpoint.from_json(data)
    if (retired.id, retired.state, retired.retired_at) != (row.checkpoint_id, row.state, row.retired_at):
        raise CheckpointRecordError("retirement record does not match its row")
    return retired


def build_draft(
    *,
    author: CheckpointAuthor,
    created_at: int,
    prompt: str,
    policy: CheckpointPolicy,
    parent: CheckpointRecord | None,
    report: CheckpointReport,
    contribution: tuple[tuple[CheckpointFinding, ...], tuple[CheckpointEvidence, ...], tuple[str, ...]],
) -> CheckpointRecord:
    """The checkpoint a report makes (§9.3), already fitted into 64 KiB where history allows.

    Args:
        author: The reporting run.
        created_at: The report's time (Unix ms).
        prompt: The run's own prompt (`assignment.current`).
        policy: The run's normalized policy.
        parent: The checkpoint the run continued from, if any.
        report: The run's own retained report (source before and after, states).
        contribution: The report's findings, inspected evidence and questions (`report_contribution`).

    Returns:
        The record; it may still be over 64 KiB when the new report alone is too large.
    """
    findings, evidence, questions = contribution
    previous: list[CheckpointReport] = []
    if parent is not None:
        kept = [parent.reports[0], *parent.reports[1:][-_RETAINED_RECENT:]]
        for item in kept:
            if item.id == parent.report_id and item.lead_decisions is None:
                item = dataclasses.replace(item, lead_decisions=parent.policy.decisions)
            previous.append(item)
    retained = {item.id for item in previous}
    updated = {finding.id for finding in findings}
    inherited_findings = (
        []
        if parent is None
        else [
            finding
            for finding in parent.findings
            if finding.report_id in retained and finding.id not in updated
        ]
    )
    inherited_evidence = (
        [] if parent is None else [item for item in parent.inspected_evidence if item.report_id in retained]
    )
    inherited_questions = [] if parent is None else [q for q in parent.questions if q not in questions]
    record = CheckpointRecord(
        checkpoint_id(author.team_name, author.agent_name, author.run_id),
        author,
        created_at,
        created_at + policy.retention_days * DAY_MS,
        prompt if parent is None else parent.assignment_original,
        prompt,
        policy,
        report.id,
        (*previous, report),
        (*findings, *inherited_findings[: max(0, MAX_FINDINGS - len(findings))]),
        (*evidence, *inherited_evidence[: max(0, MAX_INSPECTED_EVIDENCE - len(evidence))]),
        (*questions, *inherited_questions[: max(0, MAX_QUESTIONS - len(questions))]),
        parent_id=None if parent is None else parent.id,
    )
    while record.pretty_bytes() > MAX_CHECKPOINT_BYTES and len(record.reports) > 2:
        removed = record.reports[1].id
        record = dataclasses.replace(
            record,
            reports=(record.reports[0], *record.reports[2:]),
            findings=tuple(f for f in record.findings if f.report_id != removed),
            inspected_evidence=tuple(e for e in record.inspected_evidence if e.report_id != removed),
        )
    while record.pretty_bytes() > MAX_CHECKPOINT_BYTES and len(record.questions) > len(questions):
        record = dataclasses.replace(record, questions=record.questions[:-1])
    return record


class Checkpoints:
    """Specialist checkpoints in the orchestration store (one per host; stateless between calls)."""

    def __init__(self, rows: CheckpointRows, *, clock: Callable[[], float] = time.time) -> None:
        """Keep checkpoints in the `checkpoints` table of `rows`.

        Args:
            rows: The checkpoints' repository.
            clock: "Now" in seconds since the epoch (rounded to the millisecond); tests pin it.
        """
        self.rows = rows
        self._clock = clock

    def _now_ms(self) -> int:
        return round(self._clock() * 1000)

    # --- creation ------------------------------------------------------------------------------

    async def capture_before(self, cwd: Path, policy: CheckpointPolicy) -> SourceFingerprint:
        """Capture the source over the policy inputs when a checkpointed run is admitted.

        Raises:
            SourceCaptureError: `cwd` is not in a repository, an input is outside it or matches
                nothing, or the source changed during the capture.
        """
        return await capture_fingerprint(cwd, policy.inputs)

    async def record(
        self,
        *,
        team: str,
        agent: str,
        run_id: str,
        model_slot: str,
        cwd: Path,
        prompt: str,
        policy: CheckpointPolicy,
        parent: CheckpointRecord | None,
        report: TeamReportRecord,
        source_before: SourceFingerprint,
    ) -> CheckpointRecord:
        """Save the checkpoint of a checkpointed run's report (§9.3); idempotent per run.

        Args:
            team: The team name (`session-<lead session id>`).
            agent: The author's teams name.
            run_id: The author's run.
            model_slot: Its tier (canonical or alias; stored canonical).
            cwd: Its working directory (the source after is captured there).
            prompt: Its own assignment as the lead gave it (not the continuation prompt built
                from a parent); kept as `assignment.current`.
            policy: Its normalized policy (`parse_checkpoint_policy` / `inherited_policy`).
            parent: The checkpoint it continued from (as loaded at launch), if any.
            report: Its stored report (with the absolute path of its Markdown copy).
            source_before: What `capture_before` observed at admission.

        Returns:
            The saved checkpoint (on a retry: the one saved before, not captured again).

        Raises:
            CheckpointError: A report field breaks its bound ("… Correct the report fields and
                resubmit report_and_exit."), the report does not belong to the run, the source
                cannot be captured, the record cannot fit in 64 KiB, or another record holds
                the id ("Checkpoint <id> is immutable.").
        """
        author = CheckpointAuthor(team, agent, run_id, resolve_tier(model_slot).name)
        cid = checkpoint_id(team, agent, run_id)
        own_report = make_report_id(team, agent, run_id)
        if report.report_id != own_report or report.run_id != run_id:
            raise CheckpointError(
                f"Checkpoint report binding changed: report {report.report_id} is not the report of run "
                f"{run_id} of agent {agent}."
            )
        contribution = report_contribution(report.result.claims.to_json(), own_report)
        check_checkpoint_prompt(prompt)
        if not report.markdown_path or not os.path.isabs(report.markdown_path):
            raise CheckpointError(
                f"Checkpoint report provenance is unavailable: report {own_report} has no Markdown copy, "
                "so no checkpoint was saved."
            )
        existing = self.rows.get_checkpoint(cid)
        if existing is not None:
            return self._replayed(existing, author, prompt, policy, own_report, source_before)
        try:
            after = await asyncio.wait_for(
                capture_fingerprint(cwd, policy.inputs), timeout=SOURCE_AFTER_TIMEOUT_SECONDS
            )
        except TimeoutError:
            raise CheckpointError(
                f"Checkpoint {cid} was not saved: capturing the source took longer than "
                f"{SOURCE_AFTER_TIMEOUT_SECONDS:g} s."
            ) from None
        except SourceCaptureError as exc:
            raise CheckpointError(f"Checkpoint {cid} was not saved: {exc}") from None
        state = report.result.verification.state
        own = CheckpointReport(
            own_report,
            report.markdown_path,
            source_before,
            after,
            _as_verification(state),
            _as_acceptance(report.acceptance),
            lead_decisions=policy.decisions,
        )
        draft = build_draft(
            author=author,
            created_at=report.created_at,
            prompt=prompt,
            policy=policy,
            parent=parent,
            report=own,
            contribution=contribution,
        )
        size = draft.pretty_bytes()
        if size > MAX_CHECKPOINT_BYTES:
            raise CheckpointError(
                f"Checkpoint {cid} was not saved: even without older history it is {size} bytes, more than "
                f"{MAX_CHECKPOINT_BYTES}. Report shorter findings, evidence and questions next time."
            )
        text = stringify(draft.to_json())
        try:
            saved = CheckpointRecord.from_json(json.loads(text))
        except CheckpointRecordError as exc:
            raise CheckpointError(f"Checkpoint {cid} was not saved: {exc}.") from None
        row, inserted = self.rows.insert_checkpoint(
            cid, text, created_at=saved.created_at, expires_at=saved.expires_at
        )
        if inserted:
            return saved
        stored = self._parsed(row)
        if isinstance(stored, RetiredCheckpoint):
            raise CheckpointError(f"Checkpoint {cid} was {stored.state}. Request a new checkpoint.")
        if stored.to_json() != saved.to_json():
            raise CheckpointError(f"Checkpoint {cid} is immutable.")
        return stored

    def _replayed(
        self,
        row: CheckpointRow,
        author: CheckpointAuthor,
        prompt: str,
        policy: CheckpointPolicy,
        own_report: str,
        source_before: SourceFingerprint,
    ) -> CheckpointRecord:
        """A retry: the saved checkpoint of this run, if it was saved for exactly this assignment."""
        stored = self._parsed(row)
        if isinstance(stored, RetiredCheckpoint):
            raise CheckpointError(f"Checkpoint {stored.id} was {stored.state}. Request a new checkpoint.")
        if (
            stored.author != author
            or stored.policy != policy
            or stored.assignment_current != prompt
            or stored.report_id != own_report
            or stored.current_report.before != source_before
        ):
            raise CheckpointError(f"Checkpoint {stored.id} is immutable.")
        return stored

    def _parsed(self, row: CheckpointRow) -> CheckpointRecord | RetiredCheckpoint:
        try:
            return _parse_row(row)
        except CheckpointRecordError as exc:
            raise _corrupt(row.checkpoint_id, exc) from None

    # --- continuation --------------------------------------------------------------------------

    def load(self, checkpoint_id: str) -> CheckpointRecord:
        """The `ready`, unexpired checkpoint with exactly this id (for `continue_from`).

        Raises:
            CheckpointError: The id is not exact, or the checkpoint is unavailable, corrupt or
                incompatible, deleted or expired (each says so; all ask for a new checkpoint or
                a deletion).
        """
        cid = parse_checkpoint_ref(checkpoint_id)
        row = self.rows.get_checkpoint(cid)
        if row is None:
            raise _unavailable(cid)
        record = self._parsed(row)
        if isinstance(record, RetiredCheckpoint):
            raise CheckpointError(f"Checkpoint {cid} was {record.state}. Request a new checkpoint.")
        if record.expires_at <= self._now_ms():
            raise CheckpointError(f"Checkpoint {cid} has expired. Request a new checkpoint.")
        return record

    def inherited_policy(
        self, record: CheckpointRecord, override: CheckpointPolicy | None
    ) -> CheckpointPolicy:
        """A continuation's policy: `override` when the spawn gave one, else the parent's inputs and
        retention (its decisions are never re-authorized)."""
        if override is not None:
            return override
        return CheckpointPolicy(record.policy.inputs, retention_days=record.policy.retention_days)

    async def revalidation(
        self, record: CheckpointRecord, *, cwd: Path, source_before: SourceFingerprint | None = None
    ) -> list[Revalidation]:
        """Compare each retained report's scope now with what that report observed afterwards.

        Args:
            record: The checkpoint continued from.
            cwd: The continuation's working directory.
            source_before: The continuation's own admission capture, reused for a matching scope.

        Returns:
            One entry per retained report, in order.
        """
        observations: dict[tuple[str, ...], SourceFingerprint | BaseException] = {}
        root: str | BaseException
        if source_before is not None:
            observations[tuple(sorted(source_before.inputs))] = source_before
            root = source_before.repository_root
        else:
            try:
                root = await asyncio.to_thread(_repository_root, os.path.realpath(cwd))
            except (SourceCaptureError, OSError) as exc:
                root = exc
        entries: list[Revalidation] = []
        for report in record.reports:
            scope = tuple(sorted(report.after.inputs))
            if scope not in observations:
                observations[scope] = await _observe(cwd, root, scope)
            current = observations[scope]
            if isinstance(current, BaseException):
                entries.append(Revalidation(report.id, True, _UNAVAILABLE + str(current)[:1024]))
                continue
            if not same_tested_source(report.before, report.after):
                entries.append(Revalidation(report.id, True, _CHANGED_DURING))
            elif not same_tested_source(report.after, current):
                entries.append(Revalidation(report.id, True, _CHANGED))
            else:
                entries.append(Revalidation(report.id, False, _UNCHANGED))
        return entries

    async def continuation(
        self,
        record: CheckpointRecord,
        *,
        cwd: Path,
        prompt: str,
        source_before: SourceFingerprint | None = None,
    ) -> ContinuationDue:
        """What the first prompt of a continuation carries, read at actual launch (also after a queue
        wait); `teams/texts.py` words it (`continuation_prompt`).

        The checkpoint is read again (it may have been deleted or expired meanwhile) and each
        retained report's scope compared with the current source (`revalidation`).

        Raises:
            CheckpointError: The checkpoint can no longer be loaded.
        """
        current = self.load(record.id)
        entries = await self.revalidation(current, cwd=cwd, source_before=source_before)
        return ContinuationDue(checkpoint=current, revalidation=tuple(entries), assignment=prompt)

    # --- listing and retention ----------------------------------------------------------------

    def list_entries(self) -> tuple[list[str], list[str]]:
        """The §9.5 lines (one per healthy record) and one warning per unreadable record.

        A ready record reads `id | agent | tier | ready|expired | expires <ISO>` (expired once
        due, even before startup retired it); a retired one `id | deleted|expired`.
        """
        now = self._now_ms()
        lines: list[str] = []
        warnings: list[str] = []
        for row in self.rows.checkpoint_rows():
            try:
                record = _parse_row(row)
            except CheckpointRecordError as exc:
                warnings.append(_corrupt_text(row.checkpoint_id, exc))
                continue
            if isinstance(record, RetiredCheckpoint):
                lines.append(f"{record.id} | {record.state}")
                continue
            state = "expired" if record.expires_at <= now else "ready"
            lines.append(
                f"{record.id} | {record.author.agent_name} | {record.author.model_slot} | {state} | "
                f"expires {_iso(record.expires_at)}"
            )
        return lines, warnings

    def list_lines(self) -> list[str]:
        """`list_entries` as one list: the lines (or "No specialist checkpoints saved."), then the warnings."""
        lines, warnings = self.list_entries()
        return [*(lines or [NO_CHECKPOINTS_MESSAGE]), *warnings]

    def delete(self, checkpoint_id: str) -> str:
        """Retire a checkpoint as `deleted` (also a corrupt one); returns the confirmation.

        Deleting an already retired checkpoint changes nothing and confirms its state.

        Raises:
            CheckpointError: The id is not exact or no such checkpoint exists.
        """
        retired = self._retire(parse_checkpoint_ref(checkpoint_id), "deleted", self._now_ms())
        return (
            f"{retired.id} is {retired.state}. Future continuations cannot load it. Independent reports "
            "and previously delivered context are unchanged."
        )

    def retire_expired(self) -> list[str]:
        """Retire every due `ready` checkpoint as `expired` (run at startup); corrupt rows are left alone.

        Returns:
            One warning per row that is corrupt or could not be retired.
        """
        now = self._now_ms()
        warnings: list[str] = []
        for row in self.rows.checkpoint_rows():
            try:
                record = _parse_row(row)
            except CheckpointRecordError as exc:
                warnings.append(_corrupt_text(row.checkpoint_id, exc))
                continue
            if isinstance(record, RetiredCheckpoint) or record.expires_at > now:
                continue
            try:
                self._retire(record.id, "expired", now)
            except CheckpointError as exc:
                warnings.append(f"Checkpoint {record.id}: {exc}")
        return warnings

    def _retire(self, cid: str, state: Literal["deleted", "expired"], now: int) -> RetiredCheckpoint:
        for _ in range(_CAS_ATTEMPTS):
            row = self.rows.get_checkpoint(cid)
            if row is None:
                raise _unavailable(cid)
            try:
                current: CheckpointRecord | RetiredCheckpoint | None = _parse_row(row)
            except CheckpointRecordError as exc:
                if state != "deleted":
                    raise _corrupt(cid, exc) from None
                current = None  # corrupt data may be deleted explicitly
            if isinstance(current, RetiredCheckpoint):
                return current
            if state == "expired" and (current is None or current.expires_at > now):
                raise CheckpointError(f"Checkpoint {cid} is not expired.")
            retired = RetiredCheckpoint(cid, state, now)
            if self.rows.retire_checkpoint(
                cid,
                expected_state=row.state,
                expected_record=row.record,
                state=state,
                record=stringify(retired.to_json()),
                retired_at=now,
            ):
                return retired
        raise CheckpointError(f"Checkpoint {cid} kept changing while it was being {state}; retry.")


async def _observe(
    cwd: Path, root: str | BaseException, scope: Sequence[str]
) -> SourceFingerprint | BaseException:
    if isinstance(root, BaseException):
        return root
    try:
        return await capture_fingerprint(cwd, [os.path.join(root, item) for item in scope])
    except Exception as exc:  # any failure makes the comparison unavailable, never the launch
        return exc


def _as_verification(value: object) -> CheckpointVerification:
    return value if value in ("not-requested", "pending", "passed", "failed", "stale") else "not-requested"  # type: ignore[return-value]


def _as_acceptance(value: object) -> CheckpointAcceptance:
    return value if value in ("pending", "accepted", "rejected") else "pending"  # type: ignore[return-value]
