"""A report's versioned `result` document, typed: read once from its row, written back in its stored shape.

The document (`ReportResult`) is stored as JSON in `team_reports.result`;
`ReportResult.from_json` reads it when the row is read and `to_json` writes
it, so the stored bytes stay what they always were — key order included:

    {version, taskId, runId, reportId, outcome?, changedPaths?, inspectedEvidence?,
     artifacts?, findings?, questions?, verification, acceptance, checkpointId?,
     repair?, …extension fields}

The agent's claims (`ReportClaims`) keep the stored order above (empty ones
omitted). The trailing extension fields are what host extensions add to a
report (an isolated writer's `branch`, `base`, `diffStat` and `merge`; an
agent's `budget`): they are genuinely open — each extension shapes its own —
so they stay a mapping of JSON values, kept in order. A stored key this
version does not know is kept there too, so nothing is lost on a rewrite.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

from corral.orchestration.teams.repair.records import RepairResult, ReportVerification, effective_outcome

__all__ = [
    "REPORT_RESULT_VERSION",
    "AcceptanceState",
    "Artifact",
    "Finding",
    "ReportAcceptance",
    "ReportClaims",
    "ReportResult",
]

REPORT_RESULT_VERSION = 1
"""The `version` of the result document."""

AcceptanceState = Literal["pending", "accepted", "rejected"]
"""The lead's decision on a report."""

_CORE_KEYS = frozenset(
    {
        "version",
        "taskId",
        "runId",
        "reportId",
        "outcome",
        "changedPaths",
        "inspectedEvidence",
        "artifacts",
        "findings",
        "questions",
        "verification",
        "acceptance",
        "checkpointId",
        "repair",
    }
)


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list) else ()


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class Artifact:
    """An artifact an agent reports: a path and an optional label."""

    path: str
    """Path as given (non-blank)."""
    _: KW_ONLY
    label: str | None = None
    """Optional label."""

    def to_json(self) -> dict[str, Any]:
        """`{path, label?}`."""
        return {"path": self.path} if self.label is None else {"path": self.path, "label": self.label}


@dataclass(frozen=True, slots=True)
class Finding:
    """A finding an agent reports: a stable id, its text and evidence references."""

    id: str
    """Id, unique within the report."""
    text: str
    """The finding."""
    _: KW_ONLY
    evidence: tuple[str, ...] = ()
    """Evidence references (paths, lines, commands)."""

    def to_json(self) -> dict[str, Any]:
        """`{id, text, evidence}`."""
        return {"id": self.id, "text": self.text, "evidence": list(self.evidence)}


@dataclass(frozen=True, slots=True)
class ReportClaims:
    """What the agent claims in its report (never verified by the runtime)."""

    changed_paths: tuple[str, ...] = ()
    """Paths the agent says it changed."""
    inspected_evidence: tuple[str, ...] = ()
    """References the agent inspected."""
    artifacts: tuple[Artifact, ...] = ()
    """Artifacts the agent points to."""
    findings: tuple[Finding, ...] = ()
    """Findings with unique ids."""
    questions: tuple[str, ...] = ()
    """Open questions for the lead."""

    def to_json(self) -> dict[str, Any]:
        """`{changedPaths?, inspectedEvidence?, artifacts?, findings?, questions?}` (empty ones omitted)."""
        data: dict[str, Any] = {}
        if self.changed_paths:
            data["changedPaths"] = list(self.changed_paths)
        if self.inspected_evidence:
            data["inspectedEvidence"] = list(self.inspected_evidence)
        if self.artifacts:
            data["artifacts"] = [artifact.to_json() for artifact in self.artifacts]
        if self.findings:
            data["findings"] = [finding.to_json() for finding in self.findings]
        if self.questions:
            data["questions"] = list(self.questions)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ReportClaims:
        """The claims of a stored result (a malformed item is left out)."""
        artifacts = data.get("artifacts")
        findings = data.get("findings")
        return cls(
            changed_paths=_strings(data.get("changedPaths")),
            inspected_evidence=_strings(data.get("inspectedEvidence")),
            artifacts=tuple(
                Artifact(str(item["path"]), label=_text(item.get("label")))
                for item in (artifacts if isinstance(artifacts, list) else ())
                if isinstance(item, Mapping) and "path" in item
            ),
            findings=tuple(
                Finding(str(item["id"]), str(item.get("text", "")), evidence=_strings(item.get("evidence")))
                for item in (findings if isinstance(findings, list) else ())
                if isinstance(item, Mapping) and "id" in item
            ),
            questions=_strings(data.get("questions")),
        )


@dataclass(frozen=True, slots=True)
class ReportAcceptance:
    """The lead's decision on a report (`result.acceptance`)."""

    state: AcceptanceState = "pending"
    """`pending` until the lead records `accepted` or `rejected`."""
    decided_at: int | None = None
    """When the lead decided (Unix ms)."""
    reason: str | None = None
    """The lead's reason, when given."""

    def to_json(self) -> dict[str, Any]:
        """`{state, decidedAt?, reason?}`."""
        data: dict[str, Any] = {"state": self.state}
        if self.decided_at is not None:
            data["decidedAt"] = self.decided_at
        if self.reason is not None:
            data["reason"] = self.reason
        return data

    @classmethod
    def from_json(cls, value: object) -> ReportAcceptance:
        """A stored `result.acceptance`; anything but a known state reads `pending`."""
        if not isinstance(value, Mapping):
            return cls()
        state = value.get("state")
        decided = value.get("decidedAt")
        return cls(
            state if state in ("accepted", "rejected") else "pending",  # type: ignore[arg-type]
            decided if type(decided) is int else None,
            _text(value.get("reason")),
        )


@dataclass(frozen=True, slots=True)
class ReportResult:
    """A report's versioned `result` document (`team_reports.result`).

    Four facts stay separate: the agent's claimed `outcome`, the runtime's
    `verification` (and `repair`), and the lead's `acceptance`; the report's
    lifecycle status is the row's.
    """

    task_id: str
    """`task:<team>:<agent>:<run>`."""
    run_id: str
    """The run that reported."""
    report_id: str
    """`report:<team>:<agent>:<run>`."""
    _: KW_ONLY
    version: int = REPORT_RESULT_VERSION
    """The document's version."""
    outcome: str | None = None
    """The agent's claimed outcome (`None`: unspecified)."""
    claims: ReportClaims = field(default_factory=ReportClaims)
    """The agent's structured claims."""
    verification: ReportVerification = field(default_factory=ReportVerification)
    """The assigned checks' verification at report time (`not-requested` without any)."""
    acceptance: ReportAcceptance = field(default_factory=ReportAcceptance)
    """The lead's decision."""
    checkpoint_id: str | None = None
    """The checkpoint a checkpointed run's report saves."""
    repair: RepairResult | None = None
    """The repair decision at report time, when the run had a repair policy."""
    extensions: Mapping[str, object] = field(default_factory=dict)
    """Fields host extensions add (e.g. `branch`, `base`, `diffStat`, `merge`; `budget`): JSON values
    each extension shapes, kept open and in order."""

    @property
    def effective_outcome(self) -> str | None:
        """`blocked` when repair added a blocker, else the agent's own `outcome`."""
        return effective_outcome(self.outcome, self.repair)

    def to_json(self) -> dict[str, Any]:
        """The stored JSON object, in the stored key order."""
        data: dict[str, Any] = {
            "version": self.version,
            "taskId": self.task_id,
            "runId": self.run_id,
            "reportId": self.report_id,
        }
        if self.outcome is not None:
            data["outcome"] = self.outcome
        data.update(self.claims.to_json())
        data["verification"] = self.verification.to_json()
        data["acceptance"] = self.acceptance.to_json()
        if self.checkpoint_id is not None:
            data["checkpointId"] = self.checkpoint_id
        if self.repair is not None:
            data["repair"] = self.repair.to_json()
        for key, value in self.extensions.items():
            data.setdefault(key, value)
        return data

    @classmethod
    def from_json(
        cls, data: Mapping[str, object], *, task_id: str, run_id: str, report_id: str
    ) -> ReportResult:
        """Read a stored result; its row's ids stand in for ids the document lacks."""
        version = data.get("version")
        return cls(
            _text(data.get("taskId")) or task_id,
            _text(data.get("runId")) or run_id,
            _text(data.get("reportId")) or report_id,
            version=version if type(version) is int else REPORT_RESULT_VERSION,
            outcome=_text(data.get("outcome")),
            claims=ReportClaims.from_json(data),
            verification=ReportVerification.from_json(data.get("verification")),
            acceptance=ReportAcceptance.from_json(data.get("acceptance")),
            checkpoint_id=_text(data.get("checkpointId")),
            repair=RepairResult.from_json(data.get("repair")),
            extensions={key: value for key, value in data.items() if key not in _CORE_KEYS},
        )
