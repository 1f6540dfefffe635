"""Typed rows of the teams tables of the orchestration store.

A teams agent is an ordinary generation (`_records.GenerationRecord`) plus one
`team_members` row that says which team it belongs to (the lead session), its
teams name and how it was spawned. Its structured report (`team_reports`) is
written in the same transaction as the core `results` row that completes the
generation; file claims (`file_claims`) are per team (messages between members are
`teams/messages/records.py`'s). Timestamps are Unix milliseconds (UTC).

Statuses are `Literal` aliases because they are public strings of the teams
tool contract (`spec/teams-detail.md` §1, §5) and travel into tool results
unchanged. `normalize_claim_path` (the claim key of a path, §1.13) and the
private validators of new members and reports live here too; the store calls
them before it opens a transaction.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Literal

from corral.orchestration.errors import InvalidRequestError
from corral.orchestration.kernel.records import DeliveryState, NewGeneration
from corral.orchestration.store._database import require_text
from corral.orchestration.store.jsjson import stringify

if TYPE_CHECKING:  # the report's document loads with the reports feature, not with every start
    from corral.orchestration.teams.reports.records import AcceptanceState, ReportResult

__all__ = [
    "TEAM_LEAD",
    "TEAM_NAME_PATTERN",
    "TEAM_REPORT_TYPE",
    "ClaimOutcome",
    "FileClaimRecord",
    "NewTeamMember",
    "NewTeamReport",
    "SandboxMode",
    "SessionContextMode",
    "TeamFence",
    "TeamMemberKind",
    "TeamMemberRecord",
    "TeamReportOutcome",
    "TeamReportRecord",
    "TeamReportStatus",
    "normalize_claim_path",
    "team_name",
]

TEAM_REPORT_TYPE = "corral-team-report"
"""`customType` of the hidden message that brings a teams report to the lead."""

TEAM_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
"""What a teams name must look like (match it with `fullmatch`)."""

TEAM_LEAD = "team-lead"
"""The recipient name of the lead session; always admitted as a message recipient."""


def team_name(lead_session_id: str) -> str:
    """The implicit team of a lead session: `session-<id>`."""
    return f"session-{lead_session_id}"


TeamMemberKind = Literal["read", "write"]
"""A read agent (no edit tools) or an edit (write) agent."""

SessionContextMode = Literal["none", "lazy"]
"""Whether the agent got a snapshot of the lead's branch it may read on demand."""

SandboxMode = Literal["enforced", "instruction", "none"]
"""How a read agent is kept read-only: an enforced sandbox, only an instruction, or not at all (writers)."""

TeamFence = Literal["none", "quarantined"]
"""A quarantined member's run did not settle; its name stays fenced until cleanup completes."""

TeamReportStatus = Literal["completed", "failed"]
"""The lifecycle fact of a report: the run completed, or it failed (an empty report is never a success)."""

TeamReportOutcome = Literal["succeeded", "blocked", "failed", "cancelled"]
"""The agent's own claim about its task (`None` = unspecified)."""


@dataclass(frozen=True, slots=True)
class NewTeamMember:
    """What the teams surface knows about a member it starts (input to `Roster.create_team_generation`)."""

    lead_session_id: str
    """Session id of the lead; it identifies the team (display name `session-<id>`)."""
    name: str
    """Teams name, unique among the team's live members (`TEAM_NAME_PATTERN`)."""
    tier: str
    """Canonical tier (`model_slot`), e.g. `read-review`; also the generation's `definition`."""
    requested_tier: str
    """The `model_slot` as the caller gave it (a legacy alias stays an alias here)."""
    kind: TeamMemberKind
    """`read` or `write`."""
    model: str
    """Resolved `provider/model` reference."""
    thinking: str
    """Resolved thinking level."""
    model_source: str
    """Where the model came from (`favorite` or `lead`)."""
    sandbox: SandboxMode
    """How a read agent's read-only nature is held (`none` for writers)."""
    prompt: str
    """The mission as the caller gave it."""
    _: KW_ONLY
    depth: int = 0
    """0 for a lead-spawned member, 1 for a nested read helper."""
    parent_run_id: str | None = None
    """For a nested helper (depth 1): the run of the writer that spawned it."""
    allow_nested: bool = False
    """Whether this (depth-0 writer) run may spawn nested read helpers."""
    session_context: SessionContextMode = "none"
    """`lazy` when the member gets a snapshot of the lead's branch."""
    metadata: dict[str, Any] | None = None
    """Free-form integration metadata (JSON object); never grants authority."""
    assigned_checks: list[dict[str, Any]] | None = None
    """The assigned check policy as normalized (`CheckSpec.to_json` of each check), or `None`."""
    repair_policy: dict[str, Any] | None = None
    """`{"maxAttempts": n}` when bounded repair is enabled, or `None`."""
    checkpoint_policy: dict[str, Any] | None = None
    """The checkpoint policy (JSON object), or `None`."""
    continue_from: str | None = None
    """The checkpoint id this member continues from, or `None`."""
    group_id: str | None = None
    """The completion group the member reports into, or `None`."""
    slot_id: str | None = None
    """Its slot in that group, or `None`."""


@dataclass(frozen=True, slots=True)
class TeamMemberRecord:
    """A teams agent: one generation's membership in a team (table `team_members`)."""

    run_id: str
    """The generation (primary key)."""
    lead_session_id: str
    """The team's lead session id."""
    name: str
    """Teams name (the generation's label)."""
    tier: str
    """Canonical tier."""
    requested_tier: str
    """Tier as requested (alias kept)."""
    kind: TeamMemberKind
    """`read` or `write`."""
    depth: int
    """0 (lead-spawned) or 1 (nested read helper)."""
    parent_run_id: str | None
    """The nested helper's writer run (depth 1), else `None`."""
    allow_nested: bool
    """Whether the run may spawn nested read helpers."""
    model: str
    """Resolved model reference."""
    thinking: str
    """Resolved thinking level."""
    model_source: str
    """`favorite` or `lead`."""
    session_context: SessionContextMode
    """`none` or `lazy`."""
    session_context_path: str | None
    """The lazy snapshot file, once written (and until removed)."""
    sandbox: SandboxMode
    """`enforced`, `instruction` or `none`."""
    metadata: dict[str, Any] | None
    """Decoded integration metadata."""
    prompt: str
    """The mission as given."""
    live: bool
    """Whether the member still holds its name (cleared when its generation is finalized)."""
    fence: TeamFence
    """`quarantined` while a teardown did not settle."""
    fence_reason: str | None
    """Why it is quarantined."""
    created_at: int
    """Row creation time (ms)."""
    _: KW_ONLY
    assigned_checks: list[dict[str, Any]] | None = None
    """The assigned check policy as normalized at spawn, or `None`."""
    repair_policy: dict[str, Any] | None = None
    """`{"maxAttempts": n}`, or `None` without repair."""
    checkpoint_policy: dict[str, Any] | None = None
    """The checkpoint policy, or `None`."""
    continue_from: str | None = None
    """The checkpoint id the member continues from, or `None`."""
    group_id: str | None = None
    """The completion group, or `None`."""
    slot_id: str | None = None
    """The member's slot in it, or `None`."""
    checkpoint_source: dict[str, Any] | None = None
    """For a checkpointed member: the source observed at admission (a `SourceFingerprint` as JSON)."""


@dataclass(frozen=True, slots=True)
class NewTeamReport:
    """A member's final report (input to `Reports.store_team_report`)."""

    report_id: str
    """`report:<team>:<agent>:<run>` (runtime-assigned; one per run)."""
    task_id: str
    """`task:<team>:<agent>:<run>`."""
    status: TeamReportStatus
    """`completed`, or `failed` when no usable report could be recovered."""
    content: str
    """The full deliverable (or, when failed, the diagnostic); non-blank."""
    result: ReportResult
    """The versioned result document (its ids must be the report's and run's)."""
    report_source: str
    """Where the text came from (`report_and_exit`, `assistant-text`, …)."""
    _: KW_ONLY
    summary: str | None = None
    """Short label given by the agent."""
    outcome: TeamReportOutcome | None = None
    """The agent's claimed outcome."""
    markdown_path: str | None = None
    """The Markdown copy of the report, when written."""
    elapsed_ms: int | None = None
    """Run time of the agent (ms)."""
    tokens: int | None = None
    """Tokens the agent used."""
    cost_usd: float | None = None
    """What the agent cost (USD)."""


@dataclass(frozen=True, slots=True)
class TeamReportRecord:
    """A stored report (table `team_reports`, with the delivery state of its `results` row)."""

    report_id: str
    """Report id (primary key)."""
    task_id: str
    """Task id."""
    run_id: str
    """The run that reported (one report per run)."""
    request_id: str
    """The task request whose `results` row this report completed."""
    lead_session_id: str
    """The team's lead session id."""
    name: str
    """The member's teams name."""
    tier: str
    """The member's canonical tier."""
    kind: TeamMemberKind
    """`read` or `write`."""
    status: TeamReportStatus
    """`completed` or `failed`."""
    content: str
    """The full report text (or failure diagnostic)."""
    summary: str | None
    """Short label."""
    outcome: TeamReportOutcome | None
    """The agent's claimed outcome."""
    result: ReportResult
    """The versioned result document (its `acceptance` follows `record_report_acceptance`)."""
    report_source: str
    """Where the text came from."""
    markdown_path: str | None
    """The Markdown copy, if written."""
    acceptance: AcceptanceState
    """The lead's decision."""
    acceptance_reason: str | None
    """Why it was accepted or rejected."""
    decided_at: int | None
    """When it was decided (ms)."""
    elapsed_ms: int | None
    """Run time (ms)."""
    tokens: int | None
    """Tokens used."""
    cost_usd: float | None
    """Cost (USD)."""
    created_at: int
    """When the report became durable (ms)."""
    delivery: DeliveryState
    """Delivery of the report to the owner's session (from `results`)."""
    delivered_entry_id: str | None
    """Entry id of that session entry (from `results`)."""


@dataclass(frozen=True, slots=True)
class FileClaimRecord:
    """An advisory claim of one path by one edit agent (table `file_claims`)."""

    lead_session_id: str
    """The team's lead session id."""
    path: str
    """Normalized repository-relative path (`normalize_claim_path`)."""
    agent: str
    """The holder's teams name."""
    run_id: str
    """The holder's run."""
    since: int
    """When it was first claimed (ms); re-claiming keeps it."""


@dataclass(frozen=True, slots=True)
class ClaimOutcome:
    """What `Roster.claim_files` did: everything granted, or nothing and the conflicts."""

    granted: tuple[FileClaimRecord, ...]
    """The caller's claims on the requested paths (empty when there are conflicts)."""
    conflicts: tuple[tuple[str, str], ...]
    """`(path, held_by)` for each requested path another agent holds."""


_DRIVE = re.compile(r"^[A-Za-z]:/")


def normalize_claim_path(path: str) -> str:
    """The claim key of a path: trimmed, `/`-separated, relative, without `.`/`..` games.

    `./a`, `a` and `a/` are the same key. Empty paths, absolute paths (`/…` or
    `X:/…`), the repository root and any `..` segment are refused.

    Raises:
        InvalidRequestError: The path cannot be claimed.
    """
    text = path.strip().replace("\\", "/")
    if not text:
        raise InvalidRequestError(
            "A file claim path must not be empty; pass a path relative to the repository."
        )
    if "\x00" in text:
        raise InvalidRequestError("A file claim path must not contain NUL; pass a plain relative path.")
    if text.startswith("/") or _DRIVE.match(text):
        raise InvalidRequestError(
            f"File claim path {path!r} is absolute; pass a path relative to the repository root."
        )
    if ".." in text.split("/"):
        raise InvalidRequestError(
            f"File claim path {path!r} contains '..'; pass a path inside the repository."
        )
    normalized = posixpath.normpath(text).rstrip("/")
    if normalized in ("", "."):
        raise InvalidRequestError(
            f"File claim path {path!r} is the repository root; claim specific files or directories."
        )
    return normalized


# --- validation of new rows (used by the store) --------------------------------------------------


_NAME_CHARS = re.compile(r"[A-Za-z0-9_-]+")


def _check_name(name: str) -> None:
    if TEAM_NAME_PATTERN.fullmatch(name):
        return
    if _NAME_CHARS.fullmatch(name):
        raise InvalidRequestError(
            f"Invalid name {name[:32]}… ({len(name)} characters). Names have at most 128 characters."
        )
    raise InvalidRequestError(
        f"Invalid name {name or repr(name)}. Only alphanumeric characters, hyphens, and underscores are allowed."
    )


def _check_choice(value: object, allowed: Iterable[object], what: str) -> None:
    choices = tuple(allowed)
    if value not in choices:
        raise InvalidRequestError(f"{what} must be one of {', '.join(map(str, choices))}, not {value!r}.")


def _encode_json(value: dict[str, Any], what: str) -> str:
    if not isinstance(value, dict):
        raise InvalidRequestError(f"{what} must be a JSON object; pass a dict.")
    try:
        return stringify(value)
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(
            f"{what} is not JSON-serializable ({exc}); pass plain JSON values."
        ) from exc


def _check_member(new: NewGeneration, member: NewTeamMember) -> str | None:
    """Validate a new member against its generation; returns the encoded metadata."""
    for value, what in (
        (new.definition, "definition"),
        (new.owner_session_id, "owner session id"),
        (new.cwd, "cwd"),
        (new.session_id, "session id"),
        (new.task, "task"),
        (member.lead_session_id, "lead session id"),
        (member.tier, "tier"),
        (member.requested_tier, "requested tier"),
        (member.model, "model"),
        (member.thinking, "thinking level"),
        (member.model_source, "model source"),
        (member.prompt, "prompt"),
    ):
        require_text(value, what)
    _check_name(member.name)
    if new.label != member.name:
        raise InvalidRequestError(
            f"The generation label {new.label!r} must be the member's name {member.name!r}; pass the same name."
        )
    if new.definition != member.tier:
        raise InvalidRequestError(
            f"The generation definition {new.definition!r} must be the member's tier {member.tier!r}."
        )
    _check_choice(member.kind, ("read", "write"), "Member kind")
    _check_choice(member.depth, (0, 1), "Member depth")
    _check_choice(member.session_context, ("none", "lazy"), "session_context")
    _check_choice(member.sandbox, ("enforced", "instruction", "none"), "Sandbox mode")
    if (member.depth == 1) != (member.parent_run_id is not None):
        raise InvalidRequestError(
            "A nested helper (depth 1) needs its writer's run id, and only a helper has one."
        )
    if member.parent_run_id != new.parent_run_id:
        raise InvalidRequestError("The member's parent run must be the generation's parent run.")
    if member.depth == 1 and (
        member.kind != "read" or member.allow_nested or member.session_context != "none"
    ):
        raise InvalidRequestError(
            "A nested helper is a read agent without nested helpers or session context; spawn a read tier."
        )
    if member.depth == 0 and new.owner_session_id != member.lead_session_id:
        raise InvalidRequestError(
            "A lead-spawned member is owned by its lead session; pass the lead session id."
        )
    for text, what in (
        (member.continue_from, "continue_from"),
        (member.group_id, "group id"),
        (member.slot_id, "slot id"),
    ):
        if text is not None:
            require_text(text, what)
    if (member.group_id is None) != (member.slot_id is None):
        raise InvalidRequestError("A grouped member needs both its group id and its slot id.")
    return None if member.metadata is None else _encode_json(member.metadata, "metadata")


def _encode_assignments(member: NewTeamMember) -> tuple[str | None, str | None, str | None]:
    """The JSON columns of a member's spawn assignments: checks (array), repair and checkpoint (objects)."""
    checks: str | None = None
    if member.assigned_checks is not None:
        if not isinstance(member.assigned_checks, list) or not all(
            isinstance(item, dict) for item in member.assigned_checks
        ):
            raise InvalidRequestError(
                "assigned_checks must be a list of check objects; pass the normalized policy."
            )
        try:
            checks = json.dumps(
                member.assigned_checks, ensure_ascii=False, allow_nan=False, separators=(",", ":")
            )
        except (TypeError, ValueError) as exc:
            raise InvalidRequestError(f"assigned_checks is not JSON-serializable ({exc}).") from exc
    repair = None if member.repair_policy is None else _encode_json(member.repair_policy, "repair_policy")
    checkpoint = (
        None
        if member.checkpoint_policy is None
        else _encode_json(member.checkpoint_policy, "checkpoint_policy")
    )
    return checks, repair, checkpoint


def _check_report(run_id: str, report: NewTeamReport) -> str:
    """Validate a report; returns the encoded `result`."""
    for value, what in (
        (report.report_id, "report id"),
        (report.task_id, "task id"),
        (report.content, "report content"),
        (report.report_source, "report source"),
    ):
        require_text(value, what)
    _check_choice(report.status, ("completed", "failed"), "Report status")
    if report.outcome is not None:
        _check_choice(report.outcome, ("succeeded", "blocked", "failed", "cancelled"), "Report outcome")
    for count, what in ((report.elapsed_ms, "elapsed_ms"), (report.tokens, "tokens")):
        if count is not None and count < 0:
            raise InvalidRequestError(f"Report {what} must not be negative.")
    if report.cost_usd is not None and (not math.isfinite(report.cost_usd) or report.cost_usd < 0):
        raise InvalidRequestError("Report cost_usd must be a finite, non-negative number.")
    result = report.result
    for key, value, expected in (
        ("reportId", result.report_id, report.report_id),
        ("taskId", result.task_id, report.task_id),
        ("runId", result.run_id, run_id),
    ):
        if value != expected:
            raise InvalidRequestError(f"Report result {key} {value!r} must be {expected!r}.")
    return _encode_json(result.to_json(), "Report result")


def _unique_claim_paths(paths: Sequence[str]) -> list[str]:
    normalized = list(dict.fromkeys(normalize_claim_path(path) for path in paths))
    if not normalized:
        raise InvalidRequestError("Pass at least one file path.")
    return normalized
