"""Specialist checkpoint records: the policy, the id, the record and every validity rule (§9.1–9.2).

A checkpoint keeps what one specialist run found so that a later, fresh run
can continue from it (`continue_from`). Its id is one per author run:
`checkpoint:` + SHA-256 of `JSON.stringify([teamName, agentName, runId])`.

`CheckpointRecord` is the `ready` record; `RetiredCheckpoint` replaces it
when it is deleted or expires (and permanently prevents continuation). A
record is valid only if it has exactly the fields below, every bound holds,
its id, report id and expiry follow from its author and policy, its policy is
already normalized, every finding and evidence item points at a listed
report, the current report's `source.before` was captured over exactly the
policy inputs, each report's two observations share cwd, repository root and
scopes, and the whole record pretty-printed with a 2-space indent is at most
65,536 UTF-8 bytes. `CheckpointRecord.from_json` enforces all of it and
raises `CheckpointRecordError` (a `ValueError`: the record is corrupt or
incompatible); `to_json` writes the exact key order of the original.

Bounds of the checkpoint's fields travel back to the agent when its report
breaks them (`check_report_fields`): "… Correct the report fields and
resubmit report_and_exit."
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal, get_args

from corral.orchestration.errors import InvalidRequestError
from corral.orchestration.store.jsjson import stringify
from corral.orchestration.teams._tiers import TierName
from corral.orchestration.teams.checks._fingerprint import FINGERPRINT_VERSION, SourceFingerprint
from corral.orchestration.teams.reports._reports import report_id as make_report_id

__all__ = [
    "CHECKPOINT_RECORD_VERSION",
    "DAY_MS",
    "DEFAULT_RETENTION_DAYS",
    "INVALID_POLICY_MESSAGE",
    "MAX_ASSIGNMENT_CHARS",
    "MAX_CHECKPOINT_BYTES",
    "CheckpointAcceptance",
    "CheckpointAuthor",
    "CheckpointError",
    "CheckpointEvidence",
    "CheckpointFinding",
    "CheckpointPolicy",
    "CheckpointPolicyError",
    "CheckpointRecord",
    "CheckpointRecordError",
    "CheckpointReport",
    "CheckpointVerification",
    "RetiredCheckpoint",
    "Revalidation",
    "check_checkpoint_prompt",
    "check_report_fields",
    "checkpoint_id",
    "parse_checkpoint_policy",
    "parse_checkpoint_ref",
    "pretty_json_bytes",
    "report_contribution",
]

CHECKPOINT_RECORD_VERSION = 1
"""The `version` of every checkpoint and retirement record."""
MAX_CHECKPOINT_BYTES = 65_536
"""Largest record: its 2-space pretty JSON in UTF-8 bytes."""
DEFAULT_RETENTION_DAYS = 30
"""`retentionDays` when the policy names none."""
DAY_MS = 86_400_000
"""One retention day in milliseconds."""
MAX_ASSIGNMENT_CHARS = 16_384
"""Longest original or current assignment (prompt) a checkpoint keeps."""
MAX_REPORTS = 16
MAX_FINDINGS = 100
MAX_INSPECTED_EVIDENCE = 128
MAX_QUESTIONS = 32
MAX_DECISIONS = 32
MAX_INPUTS = 64
MAX_SAFE_INTEGER = 2**53 - 1
INVALID_POLICY_MESSAGE = "Invalid checkpoint policy."
"""The one message of every malformed checkpoint policy."""

CheckpointVerification = Literal["not-requested", "pending", "passed", "failed", "stale"]
"""A retained report's verification state when the checkpoint was made."""
CheckpointAcceptance = Literal["pending", "accepted", "rejected"]
"""A retained report's acceptance state when the checkpoint was made."""

_VERIFICATION: tuple[str, ...] = get_args(CheckpointVerification)
_ACCEPTANCE: tuple[str, ...] = get_args(CheckpointAcceptance)
_TIERS: tuple[str, ...] = get_args(TierName)
_ID = re.compile(r"checkpoint:[0-9a-f]{64}")
_REPORT_ID = re.compile(r"report:[^:]+:[^:]+:[^:]+")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_DRIVE = re.compile(r"[A-Za-z]:")
_RESUBMIT = "Correct the report fields and resubmit report_and_exit."


class CheckpointError(InvalidRequestError):
    """A checkpoint cannot be saved, loaded, continued from or deleted (the message says why and what to do)."""


class CheckpointPolicyError(CheckpointError):
    """A malformed `checkpoint` policy ("Invalid checkpoint policy."); `details["reason"]` says which part."""


class CheckpointRecordError(ValueError):
    """A stored record breaks the checkpoint rules: it is corrupt or incompatible."""


def pretty_json_bytes(value: Any) -> int:
    """UTF-8 size of `JSON.stringify(value, null, 2)`."""
    return len(stringify(value, indent=2).encode("utf-8"))


def checkpoint_id(team: str, agent: str, run_id: str) -> str:
    """`checkpoint:` + sha256 hex of `JSON.stringify([team, agent, runId])` — one per author run."""
    digest = hashlib.sha256(stringify([team, agent, run_id]).encode("utf-8")).hexdigest()
    return f"checkpoint:{digest}"


def parse_checkpoint_ref(value: object) -> str:
    """Validate a `continue_from` (or delete) argument: exactly `checkpoint:<64 lowercase hex>`.

    Raises:
        CheckpointError: Anything else (no trimming, no prefix matching).
    """
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise CheckpointError(
            "Invalid checkpoint ID; pass the exact checkpoint:<64 hex> id a checkpointed run saved "
            "(`corral checkpoints list` shows them)."
        )
    return value


# --- field checks --------------------------------------------------------------------------------


def _fail(where: str, problem: str) -> CheckpointRecordError:
    return CheckpointRecordError(f"{where}: {problem}")


def _text(value: object, where: str, limit: int) -> str:
    if not isinstance(value, str):
        raise _fail(where, "must be a string")
    if not value:
        raise _fail(where, "must not be empty")
    if len(value) > limit:
        raise _fail(where, f"must have at most {limit} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(where, "must be valid Unicode text") from None
    return value


def _list(value: object, where: str, limit: int, *, minimum: int = 0) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(where, "must be an array")
    if len(value) < minimum:
        raise _fail(where, f"must have at least {minimum} item{'s' if minimum > 1 else ''}")
    if len(value) > limit:
        raise _fail(where, f"must have at most {limit} items")
    return value


def _texts(value: object, where: str, count: int, length: int) -> tuple[str, ...]:
    return tuple(_text(item, f"{where}/{i}", length) for i, item in enumerate(_list(value, where, count)))


def _object(
    value: object, where: str, required: Sequence[str], optional: Sequence[str] = ()
) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(where, "must be an object")
    keys = set(value)
    missing = [key for key in required if key not in keys]
    if missing:
        raise _fail(where, f"is missing {', '.join(missing)}")
    extra = sorted(str(key) for key in keys - set(required) - set(optional))
    if extra:
        raise _fail(where, f"has unknown field(s) {', '.join(extra)}")
    return value


def _time(value: object, where: str) -> int:
    if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
        raise _fail(where, "must be a non-negative integer time in milliseconds")
    return value


def _choice(value: object, where: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise _fail(where, f"must be one of {', '.join(allowed)}")
    return str(value)


def _pattern(value: object, where: str, pattern: re.Pattern[str], limit: int) -> str:
    text = _text(value, where, limit)
    if not pattern.fullmatch(text):
        raise _fail(where, "has the wrong format")
    return text


# --- policy --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    """A normalized checkpoint policy (`{inputs, retentionDays, decisions}`)."""

    inputs: tuple[str, ...]
    """Literal paths relative to the agent's cwd (1..64, deduplicated and sorted) the checkpoint is scoped to."""
    _: KW_ONLY
    retention_days: int = DEFAULT_RETENTION_DAYS
    """Days the checkpoint stays continuable (1..365)."""
    decisions: tuple[str, ...] = ()
    """Lead decisions recorded with this run's report (≤32); never re-authorized by a continuation."""

    def to_json(self) -> dict[str, Any]:
        """The stored policy object."""
        return {
            "inputs": list(self.inputs),
            "retentionDays": self.retention_days,
            "decisions": list(self.decisions),
        }


def _policy_input(item: object, where: str) -> str:
    text = _text(item, where, 2048)
    if not text.strip():
        raise _fail(where, "must not be blank")
    if "\0" in text:
        raise _fail(where, "must not contain NUL")
    if text.startswith("/") or _DRIVE.match(text):
        raise _fail(where, "must be relative to the agent's cwd")
    if ".." in re.split(r"[\\/]", text):
        raise _fail(where, "must not contain a '..' segment")
    return text


def _retention(value: object) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if type(value) is not int or not 1 <= value <= 365:
        raise _fail("/retentionDays", "must be an integer from 1 to 365")
    return value


def parse_checkpoint_policy(value: object) -> CheckpointPolicy:
    """Validate and normalize a spawn's `checkpoint` policy.

    `{inputs: string[] (1..64, each 1..2048 characters), retentionDays?: integer 1..365
    (default 30), decisions?: string[] (≤32, each 1..4096)}` and no other keys. Inputs
    are literal relative paths: not blank, no NUL, not absolute, no drive letter, no `..`
    segment; they are deduplicated and sorted.

    Raises:
        CheckpointPolicyError: "Invalid checkpoint policy." (`details["reason"]` names the part).
    """
    try:
        data = _object(value, "checkpoint", ("inputs",), ("retentionDays", "decisions"))
        raw_inputs = _list(data["inputs"], "/inputs", MAX_INPUTS, minimum=1)
        inputs = tuple(sorted({_policy_input(item, f"/inputs/{i}") for i, item in enumerate(raw_inputs)}))
        retention = _retention(data["retentionDays"]) if "retentionDays" in data else DEFAULT_RETENTION_DAYS
        decisions = (
            _texts(data["decisions"], "/decisions", MAX_DECISIONS, 4096) if "decisions" in data else ()
        )
    except CheckpointRecordError as exc:
        raise CheckpointPolicyError(INVALID_POLICY_MESSAGE, details={"reason": str(exc)}) from None
    return CheckpointPolicy(inputs, retention_days=retention, decisions=decisions)


# --- the record ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckpointAuthor:
    """The run a checkpoint belongs to."""

    team_name: str
    """The team (`session-<lead session id>`)."""
    agent_name: str
    """The author's teams name."""
    run_id: str
    """The author's lifecycle run."""
    model_slot: str
    """Its canonical tier."""

    def to_json(self) -> dict[str, Any]:
        """`{teamName, agentName, runId, modelSlot}`."""
        return {
            "teamName": self.team_name,
            "agentName": self.agent_name,
            "runId": self.run_id,
            "modelSlot": self.model_slot,
        }


@dataclass(frozen=True, slots=True)
class CheckpointReport:
    """One retained report: where its full text is and what source it observed."""

    id: str
    """The report id (`report:<team>:<agent>:<run>`)."""
    path: str
    """Absolute path of its Markdown copy."""
    before: SourceFingerprint
    """Source over the policy inputs when the run was admitted."""
    after: SourceFingerprint
    """Source over the same scopes after the report."""
    verification: CheckpointVerification
    """Its verification state when the checkpoint was made."""
    acceptance: CheckpointAcceptance
    """Its acceptance state when the checkpoint was made."""
    _: KW_ONLY
    lead_decisions: tuple[str, ...] | None = None
    """The policy decisions the lead gave that run (absent on some older reports)."""

    def to_json(self) -> dict[str, Any]:
        """`{id, path, source: {before, after}, verification, acceptance, leadDecisions?}`."""
        data: dict[str, Any] = {
            "id": self.id,
            "path": self.path,
            "source": {"before": self.before.to_json(), "after": self.after.to_json()},
            "verification": self.verification,
            "acceptance": self.acceptance,
        }
        if self.lead_decisions is not None:
            data["leadDecisions"] = list(self.lead_decisions)
        return data


@dataclass(frozen=True, slots=True)
class CheckpointFinding:
    """A finding an earlier run claimed (historical; never verified by the checkpoint)."""

    id: str
    """Stable finding id (1..256 characters), unique in the record."""
    text: str
    """The finding (1..4096)."""
    evidence: tuple[str, ...]
    """Evidence references (≤32, each 1..2048)."""
    report_id: str
    """The retained report that claimed it."""

    def to_json(self) -> dict[str, Any]:
        """`{id, text, evidence, reportId}`."""
        return {"id": self.id, "text": self.text, "evidence": list(self.evidence), "reportId": self.report_id}


@dataclass(frozen=True, slots=True)
class CheckpointEvidence:
    """A reference an earlier run said it inspected."""

    reference: str
    """The reference (1..2048)."""
    report_id: str
    """The retained report that listed it."""

    def to_json(self) -> dict[str, Any]:
        """`{reference, reportId}`."""
        return {"reference": self.reference, "reportId": self.report_id}


def _source(value: object, where: str) -> SourceFingerprint:
    data = _object(
        value, where, ("version", "cwd", "repositoryRoot", "head", "fingerprint", "inputs", "fileCount")
    )
    if data["version"] != FINGERPRINT_VERSION or type(data["version"]) is not int:
        raise _fail(f"{where}/version", f"must be {FINGERPRINT_VERSION}")
    if not isinstance(data["fingerprint"], str) or not _HEX64.fullmatch(data["fingerprint"]):
        raise _fail(f"{where}/fingerprint", "must be 64 lowercase hex digits")
    if type(data["fileCount"]) is not int or data["fileCount"] < 0:
        raise _fail(f"{where}/fileCount", "must be a non-negative integer")
    for key in ("cwd", "repositoryRoot"):
        _text(data[key], f"{where}/{key}", 1_000_000)
    if data["head"] is not None:
        _text(data["head"], f"{where}/head", 1024)
    _list(data["inputs"], f"{where}/inputs", 1_000_000)
    try:
        return SourceFingerprint.from_json(data)
    except ValueError as exc:
        raise _fail(where, str(exc)) from None


def _report(value: object, where: str) -> CheckpointReport:
    data = _object(value, where, ("id", "path", "source", "verification", "acceptance"), ("leadDecisions",))
    source = _object(data["source"], f"{where}/source", ("before", "after"))
    decisions = data.get("leadDecisions")
    return CheckpointReport(
        _pattern(data["id"], f"{where}/id", _REPORT_ID, 2048),
        _text(data["path"], f"{where}/path", 2048),
        _source(source["before"], f"{where}/source/before"),
        _source(source["after"], f"{where}/source/after"),
        _choice(data["verification"], f"{where}/verification", _VERIFICATION),  # type: ignore[arg-type]
        _choice(data["acceptance"], f"{where}/acceptance", _ACCEPTANCE),  # type: ignore[arg-type]
        lead_decisions=None
        if "leadDecisions" not in data
        else _texts(decisions, f"{where}/leadDecisions", MAX_DECISIONS, 4096),
    )


def _finding(value: object, where: str) -> CheckpointFinding:
    data = _object(value, where, ("id", "text", "evidence", "reportId"))
    return CheckpointFinding(
        _text(data["id"], f"{where}/id", 256),
        _text(data["text"], f"{where}/text", 4096),
        _texts(data["evidence"], f"{where}/evidence", 32, 2048),
        _pattern(data["reportId"], f"{where}/reportId", _REPORT_ID, 2048),
    )


def _evidence(value: object, where: str) -> CheckpointEvidence:
    data = _object(value, where, ("reference", "reportId"))
    return CheckpointEvidence(
        _text(data["reference"], f"{where}/reference", 2048),
        _pattern(data["reportId"], f"{where}/reportId", _REPORT_ID, 2048),
    )


def _scope(root: str, cwd: str, item: str) -> str:
    relative = os.path.relpath(os.path.normpath(os.path.join(cwd, item)), root)
    return relative.replace(os.sep, "/")


def _inside(root: str, cwd: str) -> bool:
    relative = os.path.relpath(cwd, root)
    return not os.path.isabs(relative) and ".." not in relative.split(os.sep)


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """A `ready` specialist checkpoint (immutable once saved)."""

    id: str
    """`checkpoint:<64 hex>`, derived from the author."""
    author: CheckpointAuthor
    """The run that made it."""
    created_at: int
    """Creation time (Unix ms): the author's report time."""
    expires_at: int
    """`created_at + retentionDays · 86,400,000`; continuable until `expires_at - 1`."""
    assignment_original: str
    """The first run's prompt (kept through continuations)."""
    assignment_current: str
    """The author run's prompt."""
    policy: CheckpointPolicy
    """The author run's normalized policy."""
    report_id: str
    """The author run's report id (its report is the last of `reports`)."""
    reports: tuple[CheckpointReport, ...]
    """Retained reports (1..16): the first, recent history, then the author's."""
    findings: tuple[CheckpointFinding, ...]
    """Claimed findings (≤100, unique ids), newest report's first."""
    inspected_evidence: tuple[CheckpointEvidence, ...]
    """Inspected references (≤128)."""
    questions: tuple[str, ...]
    """Open questions (≤32)."""
    _: KW_ONLY
    parent_id: str | None = None
    """The checkpoint this run continued from."""

    @property
    def current_report(self) -> CheckpointReport:
        """The author run's own report."""
        return next(report for report in self.reports if report.id == self.report_id)

    def to_json(self) -> dict[str, Any]:
        """The record object, keys in the original's order."""
        data: dict[str, Any] = {
            "version": CHECKPOINT_RECORD_VERSION,
            "state": "ready",
            "id": self.id,
            "author": self.author.to_json(),
            "createdAt": self.created_at,
            "expiresAt": self.expires_at,
        }
        if self.parent_id is not None:
            data["parentId"] = self.parent_id
        data.update(
            {
                "assignment": {"original": self.assignment_original, "current": self.assignment_current},
                "policy": self.policy.to_json(),
                "reportId": self.report_id,
                "reports": [report.to_json() for report in self.reports],
                "findings": [finding.to_json() for finding in self.findings],
                "inspectedEvidence": [item.to_json() for item in self.inspected_evidence],
                "questions": list(self.questions),
            }
        )
        return data

    def pretty_bytes(self) -> int:
        """UTF-8 size of the record pretty-printed with a 2-space indent."""
        return pretty_json_bytes(self.to_json())

    @classmethod
    def from_json(cls, value: object) -> CheckpointRecord:
        """Parse and validate a stored record.

        Raises:
            CheckpointRecordError: The record breaks any checkpoint rule.
        """
        data = _object(
            value,
            "record",
            (
                "version",
                "state",
                "id",
                "author",
                "createdAt",
                "expiresAt",
                "assignment",
                "policy",
                "reportId",
                "reports",
                "findings",
                "inspectedEvidence",
                "questions",
            ),
            ("parentId",),
        )
        if data["version"] != CHECKPOINT_RECORD_VERSION or type(data["version"]) is not int:
            raise _fail("/version", f"must be {CHECKPOINT_RECORD_VERSION}")
        if data["state"] != "ready":
            raise _fail("/state", "must be ready")
        author = _object(data["author"], "/author", ("teamName", "agentName", "runId", "modelSlot"))
        assignment = _object(data["assignment"], "/assignment", ("original", "current"))
        policy_data = _object(data["policy"], "/policy", ("inputs", "retentionDays", "decisions"))
        if type(policy_data["retentionDays"]) is not int:
            raise _fail("/policy/retentionDays", "must be an integer")
        try:
            policy = parse_checkpoint_policy(policy_data)
        except CheckpointPolicyError as exc:
            raise _fail("/policy", str(exc.details.get("reason", exc))) from None
        record = cls(
            _pattern(data["id"], "/id", _ID, 75),
            CheckpointAuthor(
                _text(author["teamName"], "/author/teamName", 256),
                _text(author["agentName"], "/author/agentName", 256),
                _text(author["runId"], "/author/runId", 256),
                _choice(author["modelSlot"], "/author/modelSlot", _TIERS),
            ),
            _time(data["createdAt"], "/createdAt"),
            _time(data["expiresAt"], "/expiresAt"),
            _text(assignment["original"], "/assignment/original", MAX_ASSIGNMENT_CHARS),
            _text(assignment["current"], "/assignment/current", MAX_ASSIGNMENT_CHARS),
            policy,
            _pattern(data["reportId"], "/reportId", _REPORT_ID, 2048),
            tuple(
                _report(item, f"/reports/{i}")
                for i, item in enumerate(_list(data["reports"], "/reports", MAX_REPORTS, minimum=1))
            ),
            tuple(
                _finding(item, f"/findings/{i}")
                for i, item in enumerate(_list(data["findings"], "/findings", MAX_FINDINGS))
            ),
            tuple(
                _evidence(item, f"/inspectedEvidence/{i}")
                for i, item in enumerate(
                    _list(data["inspectedEvidence"], "/inspectedEvidence", MAX_INSPECTED_EVIDENCE)
                )
            ),
            _texts(data["questions"], "/questions", MAX_QUESTIONS, 4096),
            parent_id=None if "parentId" not in data else _pattern(data["parentId"], "/parentId", _ID, 75),
        )
        if policy.to_json() != dict(policy_data):
            raise _fail("/policy", "is not in its normalized form")
        record.validate()
        return record

    def validate(self) -> None:
        """Check the rules that tie the fields together and the size bound (`from_json` checks the rest).

        Raises:
            CheckpointRecordError: A rule is broken.
        """
        author = self.author
        if self.id != checkpoint_id(author.team_name, author.agent_name, author.run_id):
            raise _fail("/id", "does not match the author")
        if self.parent_id == self.id:
            raise _fail("/parentId", "must not be the checkpoint itself")
        if self.report_id != make_report_id(author.team_name, author.agent_name, author.run_id):
            raise _fail("/reportId", "does not match the author")
        if self.expires_at != self.created_at + self.policy.retention_days * DAY_MS:
            raise _fail("/expiresAt", "must be createdAt + retentionDays days")
        report_ids = [report.id for report in self.reports]
        if len(set(report_ids)) != len(report_ids):
            raise _fail("/reports", "has duplicate report ids")
        if self.report_id not in report_ids:
            raise _fail("/reports", "does not include the author's report")
        finding_ids = [finding.id for finding in self.findings]
        if len(set(finding_ids)) != len(finding_ids):
            raise _fail("/findings", "has duplicate finding ids")
        for where, refs in (
            ("/findings", [finding.report_id for finding in self.findings]),
            ("/inspectedEvidence", [item.report_id for item in self.inspected_evidence]),
        ):
            if not set(refs) <= set(report_ids):
                raise _fail(where, "references a report the checkpoint does not keep")
        before = self.current_report.before
        scopes = tuple(
            sorted({_scope(before.repository_root, before.cwd, item) for item in self.policy.inputs})
        )
        if scopes != before.inputs:
            raise _fail("/reports", "the author's source was not captured over the policy inputs")
        for index, report in enumerate(self.reports):
            first, last = report.before, report.after
            if not (
                os.path.isabs(report.path)
                and os.path.isabs(first.cwd)
                and os.path.isabs(first.repository_root)
                and _inside(first.repository_root, first.cwd)
                and first.cwd == last.cwd
                and first.repository_root == last.repository_root
                and first.inputs == last.inputs
            ):
                raise _fail(f"/reports/{index}", "has inconsistent source observations or a relative path")
        size = self.pretty_bytes()
        if size > MAX_CHECKPOINT_BYTES:
            raise _fail("record", f"is {size} bytes, more than {MAX_CHECKPOINT_BYTES}")


@dataclass(frozen=True, slots=True)
class RetiredCheckpoint:
    """What replaces a deleted or expired checkpoint: it can never be continued from again."""

    id: str
    """The checkpoint id."""
    state: Literal["deleted", "expired"]
    """Why it was retired."""
    retired_at: int
    """When (Unix ms)."""

    def to_json(self) -> dict[str, Any]:
        """`{version: 1, id, state, retiredAt}`."""
        return {
            "version": CHECKPOINT_RECORD_VERSION,
            "id": self.id,
            "state": self.state,
            "retiredAt": self.retired_at,
        }

    @classmethod
    def from_json(cls, value: object) -> RetiredCheckpoint:
        """Parse a retirement record.

        Raises:
            CheckpointRecordError: It is malformed.
        """
        data = _object(value, "record", ("version", "id", "state", "retiredAt"))
        if data["version"] != CHECKPOINT_RECORD_VERSION or type(data["version"]) is not int:
            raise _fail("/version", f"must be {CHECKPOINT_RECORD_VERSION}")
        state = _choice(data["state"], "/state", ("deleted", "expired"))
        return cls(_pattern(data["id"], "/id", _ID, 75), state, _time(data["retiredAt"], "/retiredAt"))  # type: ignore[arg-type]


# --- the report's contribution -------------------------------------------------------------------


def _report_fields(
    result: Mapping[str, Any], report_id: str
) -> tuple[tuple[CheckpointFinding, ...], tuple[CheckpointEvidence, ...], tuple[str, ...]]:
    findings_raw = result.get("findings") or []
    findings = tuple(
        _finding({**item, "reportId": report_id} if isinstance(item, Mapping) else item, f"/findings/{i}")
        for i, item in enumerate(_list(findings_raw, "/findings", MAX_FINDINGS))
    )
    ids = [finding.id for finding in findings]
    if len(set(ids)) != len(ids):
        raise _fail("/findings", "finding ids must be unique")
    evidence_raw = _list(result.get("inspectedEvidence") or [], "/inspectedEvidence", 1_000_000)
    evidence_texts = (
        list(dict.fromkeys(evidence_raw)) if all(isinstance(e, str) for e in evidence_raw) else evidence_raw
    )
    evidence = tuple(
        CheckpointEvidence(_text(item, f"/inspectedEvidence/{i}", 2048), report_id)
        for i, item in enumerate(_list(evidence_texts, "/inspectedEvidence", MAX_INSPECTED_EVIDENCE))
    )
    questions_raw = _list(result.get("questions") or [], "/questions", 1_000_000)
    unique = (
        list(dict.fromkeys(questions_raw))
        if all(isinstance(q, str) for q in questions_raw)
        else questions_raw
    )
    questions = _texts(unique, "/questions", MAX_QUESTIONS, 4096)
    return findings, evidence, questions


def report_contribution(
    result: Mapping[str, Any], report_id: str
) -> tuple[tuple[CheckpointFinding, ...], tuple[CheckpointEvidence, ...], tuple[str, ...]]:
    """The findings, inspected evidence (deduplicated) and questions (deduplicated) a report adds.

    Raises:
        CheckpointError: A field breaks its checkpoint bound; the message asks the agent to
            correct its fields and resubmit `report_and_exit`.
    """
    try:
        return _report_fields(result, report_id)
    except CheckpointRecordError as exc:
        raise CheckpointError(f"Checkpoint report {exc}. {_RESUBMIT}") from None


def check_report_fields(result: Mapping[str, Any]) -> None:
    """Check a report's `findings`, `inspectedEvidence` and `questions` against the checkpoint bounds.

    Call it before a checkpointed agent's report is accepted, so the agent can still fix it:
    findings ≤100 with unique ids (each id ≤256, text ≤4096, evidence ≤32 × ≤2048),
    inspected evidence ≤128 distinct items of ≤2048, questions ≤32 distinct items of ≤4096.

    Raises:
        CheckpointError: "Checkpoint report <field>: <problem>. Correct the report fields and
            resubmit report_and_exit."
    """
    report_contribution(result, "report:x:x:x")


def check_checkpoint_prompt(prompt: object) -> str:
    """Check a checkpointed spawn's prompt: the checkpoint keeps it, so it is 1..16,384 characters.

    Raises:
        CheckpointError: The prompt is blank or longer than 16,384 characters.
    """
    if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > MAX_ASSIGNMENT_CHARS:
        raise CheckpointError(
            f"Invalid checkpoint assignment: a checkpointed prompt must be non-blank text of at most "
            f"{MAX_ASSIGNMENT_CHARS} characters; shorten the prompt or drop the checkpoint."
        )
    return prompt


@dataclass(frozen=True, slots=True)
class Revalidation:
    """Whether a retained report's findings need revalidation before a continuation reuses them."""

    report_id: str
    """The retained report."""
    required: bool
    """Whether its scope changed (or could not be compared)."""
    reason: str
    """Why."""

    def to_json(self) -> dict[str, Any]:
        """`{reportId, required, reason}`."""
        return {"reportId": self.report_id, "required": self.required, "reason": self.reason}
