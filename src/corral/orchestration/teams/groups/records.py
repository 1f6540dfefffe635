"""Completion groups (grouped report delivery, `spec/teams-detail.md` §8): policy, ids, records, planning, index.

A swarm spawned with `completion_group: {delivery: ...}` gets one group whose
members are bound at creation (one *slot* per member, in member order). Each
slot moves `pending → queued → running → reported` or settles `rejected`,
`cancelled` or `interrupted`; terminal slots never revive. After every change
the journal is *planned*: visible terminal slots no delivery covers yet are
due; in `all-settled` mode a sealed group whose slots are all terminal gets one
`settled` delivery covering every member (none when every member was already
delivered urgently), otherwise each due member gets an `urgent` delivery when
it is urgent (§8.1); in `immediate` mode each due member gets a `member`
delivery. A delivery's compact JSON index (§8.4) is what the lead reads.

Ids are the spec's: `group:` + SHA-256 of `JSON.stringify([team, session,
submission])`, `<group id>:<index>` for slots, `delivery:` + SHA-256 of
`JSON.stringify([groupId, kind, slotIds])` for deliveries (`store.jsjson.stringify`).
Because delivery ids are derived, planning twice never delivers twice.

The repository (`groups._repository.Groups`) runs the transitions; this module holds
the types and the pure parts (validation, planning, the index) it calls.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal, get_args
from urllib.parse import quote

from corral.orchestration.errors import InternalFailureError, InvalidRequestError
from corral.orchestration.store.jsjson import stringify
from corral.orchestration.teams.roster.records import TeamReportRecord

__all__ = [
    "GROUP_INDEX_VERSION",
    "GROUP_JOURNAL_VERSION",
    "INDEX_TEXT_LIMIT",
    "INTERRUPTED_ON_RECOVERY",
    "INVALID_GROUP_POLICY_MESSAGE",
    "TERMINAL_SLOT_STATUSES",
    "CompletionDeliveryMode",
    "CompletionGroupBindingError",
    "CompletionGroupJournalError",
    "CompletionGroupPolicyError",
    "CompletionGroupRecord",
    "CompletionPolicy",
    "CompletionSlotSettledError",
    "DeliveryKind",
    "DeliveryStatus",
    "GroupDelivery",
    "GroupHandle",
    "GroupSlotRecord",
    "GroupWake",
    "SettledStatus",
    "SlotReceipt",
    "SlotStatus",
    "WakeState",
    "build_index",
    "delivery_id",
    "group_id",
    "is_urgent",
    "parse_completion_group",
    "plan_deliveries",
    "slot_id",
    "wake_text",
]

GROUP_JOURNAL_VERSION = 1
"""The `version` of a group's journal view (`CompletionGroupRecord.to_journal`)."""

GROUP_INDEX_VERSION = 1
"""The `version` of a delivery's index."""

INDEX_TEXT_LIMIT = 400
"""Summaries, finding texts and reasons in an index are cut to this many characters (ending in "…")."""

INVALID_GROUP_POLICY_MESSAGE = "Invalid completion group policy."

INTERRUPTED_ON_RECOVERY = "Assignment was not retained across restart; no work was restarted."
"""The reason recovery gives a slot that was never bound to a run."""

CompletionDeliveryMode = Literal["immediate", "all-settled"]
"""`immediate`: one member index per settled member; `all-settled`: one index once all settled (+ urgent)."""

SlotStatus = Literal["pending", "queued", "running", "reported", "rejected", "cancelled", "interrupted"]
"""Where a member's assignment stands; the last four are terminal."""

SettledStatus = Literal["rejected", "cancelled", "interrupted"]
"""The terminal statuses without a report."""

DeliveryKind = Literal["member", "urgent", "settled"]
"""What a delivery covers: one member (`immediate`), one urgent member early, or the whole group."""

DeliveryStatus = Literal["pending", "enqueued"]
"""`enqueued` once the index is stored in the lead's inbox (same transaction as the planning)."""

WakeState = Literal["pending", "observed"]
"""`pending`: the wake was reserved (sent at most once); `observed`: its entry is in the lead's session."""

TERMINAL_SLOT_STATUSES: frozenset[str] = frozenset(("reported", "rejected", "cancelled", "interrupted"))
"""Slot statuses that never change again."""

_MODES: tuple[str, ...] = get_args(CompletionDeliveryMode)
_URGENT_OUTCOMES = frozenset(("blocked", "failed"))
_URGENT_VERIFICATION = frozenset(("failed", "stale"))


class CompletionGroupPolicyError(InvalidRequestError):
    """A `completion_group` that is not `{"delivery": "immediate" | "all-settled"}`."""


class CompletionGroupBindingError(InvalidRequestError):
    """An event contradicts what the journal already bound (members, queue, run, report, wake entry)."""


class CompletionSlotSettledError(InvalidRequestError):
    """An event for a slot that is already terminal (terminal slots never revive)."""


class CompletionGroupJournalError(InternalFailureError):
    """The journal and the stored reports disagree (fail closed; inspect the group)."""


def _sha256(value: object) -> str:
    return hashlib.sha256(stringify(value).encode("utf-8")).hexdigest()


def group_id(team: str, session_id: str, submission_id: str) -> str:
    """`group:` + SHA-256 of `JSON.stringify([team, session, submission])`."""
    return "group:" + _sha256([team, session_id, submission_id])


def slot_id(group: str, index: int) -> str:
    """`<group id>:<index>` (0-based, member order)."""
    return f"{group}:{index}"


def delivery_id(group: str, kind: DeliveryKind, slot_ids: Sequence[str]) -> str:
    """`delivery:` + SHA-256 of `JSON.stringify([groupId, kind, slotIds])`."""
    return "delivery:" + _sha256([group, kind, list(slot_ids)])


def _report_id(team: str, agent: str, run_id: str) -> str:
    # Same formula as `teams._reports.report_id` (that package imports the store, not the reverse).
    def enc(value: str) -> str:
        return quote(value, safe="-_.!~*'()")

    return f"report:{enc(team)}:{enc(agent)}:{enc(run_id)}"


@dataclass(frozen=True, slots=True)
class CompletionPolicy:
    """A validated `completion_group` (`parse_completion_group`)."""

    delivery: CompletionDeliveryMode
    """`immediate` or `all-settled`."""

    def to_json(self) -> dict[str, str]:
        """`{"delivery": ...}`."""
        return {"delivery": self.delivery}


def parse_completion_group(value: object) -> CompletionPolicy:
    """Validate a spawn's `completion_group` before anything is stored.

    Exactly `{"delivery": "immediate"}` or `{"delivery": "all-settled"}`; `None`,
    `{}`, another delivery or any extra key is refused.

    Raises:
        CompletionGroupPolicyError: "Invalid completion group policy." (`details["reason"]` says why).
    """
    if not isinstance(value, Mapping):
        reason = "completion_group must be an object"
    elif set(value) != {"delivery"}:
        reason = "completion_group takes exactly one key, delivery"
    elif value["delivery"] not in _MODES:
        reason = "delivery must be immediate or all-settled"
    else:
        mode: CompletionDeliveryMode = value["delivery"]
        return CompletionPolicy(delivery=mode)
    raise CompletionGroupPolicyError(
        INVALID_GROUP_POLICY_MESSAGE,
        details={"reason": reason},
        next_action='Pass {"delivery": "immediate"} or {"delivery": "all-settled"}, or omit completion_group.',
    )


# --- records ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SlotReceipt:
    """What the journal keeps of a member's stored report (its provenance, §8.3)."""

    run_id: str
    """The run that reported."""
    report_id: str
    """`report:<team>:<agent>:<run>`."""
    runtime_status: str
    """`completed` or `failed` (the report's lifecycle status)."""
    verification: str
    """Verification state at report time (`not-requested`, `pending`, `passed`, `failed`, `stale`)."""
    _: KW_ONLY
    outcome: str | None = None
    """The agent's claimed outcome."""
    effective_outcome: str | None = None
    """`repair.outcome` when repair added a blocker, else the claimed outcome."""

    @classmethod
    def from_report(cls, report: TeamReportRecord) -> SlotReceipt:
        """The receipt of a stored report."""
        return cls(
            run_id=report.run_id,
            report_id=report.report_id,
            runtime_status=report.status,
            verification=report.result.verification.state,
            outcome=report.outcome,
            effective_outcome=report.result.effective_outcome,
        )

    def to_json(self) -> dict[str, Any]:
        """The journal shape `{runId, reportId, runtimeStatus, outcome?, effectiveOutcome?, verification}`."""
        data: dict[str, Any] = {
            "runId": self.run_id,
            "reportId": self.report_id,
            "runtimeStatus": self.runtime_status,
        }
        if self.outcome is not None:
            data["outcome"] = self.outcome
        if self.effective_outcome is not None:
            data["effectiveOutcome"] = self.effective_outcome
        data["verification"] = self.verification
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SlotReceipt:
        """Read a stored receipt.

        Raises:
            CompletionGroupJournalError: The stored receipt is malformed.
        """
        try:
            return cls(
                run_id=str(data["runId"]),
                report_id=str(data["reportId"]),
                runtime_status=str(data["runtimeStatus"]),
                verification=str(data["verification"]),
                outcome=None if data.get("outcome") is None else str(data["outcome"]),
                effective_outcome=None
                if data.get("effectiveOutcome") is None
                else str(data["effectiveOutcome"]),
            )
        except (KeyError, TypeError) as exc:
            raise CompletionGroupJournalError(
                f"A completion group report receipt is malformed ({exc}); inspect the group."
            ) from exc


@dataclass(frozen=True, slots=True)
class GroupSlotRecord:
    """One member's slot in a group (table `completion_group_slots`)."""

    slot_id: str
    """`<group id>:<index>`."""
    group_id: str
    """The group."""
    index: int
    """Position in member order (0-based)."""
    name: str
    """The member's teams name, bound at creation."""
    status: SlotStatus
    """Where the assignment stands."""
    queue_id: str | None
    """The capacity-queue identity, once queued (kept when it later runs or settles)."""
    run_id: str | None
    """The run, bound once before launch."""
    reason: str | None
    """Why a slot settled without a report (`rejected`, `cancelled`, `interrupted`)."""
    receipt: SlotReceipt | None
    """The report's provenance, once `reported`."""
    updated_at: int
    """Last change (ms)."""

    @property
    def terminal(self) -> bool:
        """Whether the slot settled (it never changes again)."""
        return self.status in TERMINAL_SLOT_STATUSES

    def to_json(self) -> dict[str, Any]:
        """The journal member shape of §8.3 (`suppressed` is always false in corral)."""
        data: dict[str, Any] = {
            "slotId": self.slot_id,
            "name": self.name,
            "suppressed": False,
            "status": self.status,
        }
        for key, value in (("queueId", self.queue_id), ("runId", self.run_id), ("reason", self.reason)):
            if value is not None:
                data[key] = value
        if self.receipt is not None:
            data["report"] = self.receipt.to_json()
        return data


@dataclass(frozen=True, slots=True)
class GroupWake:
    """The wake receipt of a delivery: reserved (`pending`) or seen in the lead's session (`observed`)."""

    state: WakeState
    """`pending` or `observed`."""
    entry_id: str | None
    """The lead-session entry that holds the wake, once observed."""
    error: str | None
    """Why sending it failed, if it did (never retried)."""

    def to_json(self) -> dict[str, Any]:
        """`{state, entryId?, error?}`."""
        data: dict[str, Any] = {"state": self.state}
        if self.entry_id is not None:
            data["entryId"] = self.entry_id
        if self.error is not None:
            data["error"] = self.error
        return data


@dataclass(frozen=True, slots=True)
class GroupDelivery:
    """One planned index delivery (table `completion_group_deliveries`)."""

    delivery_id: str
    """`delivery:` + SHA-256 of `[groupId, kind, slotIds]`."""
    group_id: str
    """The group."""
    lead_session_id: str
    """The lead session it is for."""
    kind: DeliveryKind
    """`member`, `urgent` or `settled`."""
    slot_ids: tuple[str, ...]
    """The slots it covers, in member order."""
    index: str
    """The compact JSON index (§8.4), exactly as sent."""
    text: str
    """The full message text: the index plus the instructions (`wake_text`); also the inbox copy."""
    status: DeliveryStatus
    """`enqueued` once the inbox copy is stored."""
    message_id: str | None
    """The `team_messages` row holding the inbox copy."""
    wake: GroupWake | None
    """The wake receipt, once reserved."""
    created_at: int
    """When it was planned (ms)."""

    def to_json(self) -> dict[str, Any]:
        """The journal delivery shape `{id, kind, slotIds, status, wake?}`."""
        data: dict[str, Any] = {
            "id": self.delivery_id,
            "kind": self.kind,
            "slotIds": list(self.slot_ids),
            "status": self.status,
        }
        if self.wake is not None:
            data["wake"] = self.wake.to_json()
        return data


@dataclass(frozen=True, slots=True)
class CompletionGroupRecord:
    """A group with its slots and deliveries (the journal of §8.3)."""

    group_id: str
    """`group:<64 hex>`."""
    lead_session_id: str
    """The lead session (the spec's `sessionId`)."""
    team: str
    """The team name the id was derived from (`session-<lead session id>`)."""
    submission_id: str
    """The spawning tool call id."""
    policy: CompletionPolicy
    """The delivery mode."""
    sealed: bool
    """No member joins any more; `all-settled` may deliver once every slot is terminal."""
    created_at: int
    """When it was created (ms)."""
    slots: tuple[GroupSlotRecord, ...]
    """The members, in member order."""
    deliveries: tuple[GroupDelivery, ...]
    """The planned deliveries, oldest first."""

    def slot(self, slot: str) -> GroupSlotRecord | None:
        """The slot `slot`, if it is this group's."""
        return next((record for record in self.slots if record.slot_id == slot), None)

    def to_journal(self) -> dict[str, Any]:
        """The journal of §8.3 as a JSON object (`teamName`, `sessionId`, `members`, `deliveries`, …)."""
        return {
            "version": GROUP_JOURNAL_VERSION,
            "groupId": self.group_id,
            "teamName": self.team,
            "sessionId": self.lead_session_id,
            "submissionId": self.submission_id,
            "policy": self.policy.to_json(),
            "sealed": self.sealed,
            "members": [slot.to_json() for slot in self.slots],
            "deliveries": [delivery.to_json() for delivery in self.deliveries],
        }


@dataclass(frozen=True, slots=True)
class GroupHandle:
    """What creating a group returns."""

    group_id: str
    """The group."""
    slot_ids: tuple[str, ...]
    """One slot per member, in member order."""
    _: KW_ONLY
    created: bool = True
    """Whether this call created it (`False`: the same binding existed)."""


# --- planning -----------------------------------------------------------------------------------


def is_urgent(slot: GroupSlotRecord) -> bool:
    """§8.1: rejected, a failed run, a blocked/failed (effective) outcome, or failed/stale verification."""
    if slot.status == "rejected":
        return True
    receipt = slot.receipt
    if slot.status != "reported" or receipt is None:
        return False
    return (
        receipt.runtime_status == "failed"
        or receipt.outcome in _URGENT_OUTCOMES
        or receipt.effective_outcome in _URGENT_OUTCOMES
        or receipt.verification in _URGENT_VERIFICATION
    )


def plan_deliveries(group: CompletionGroupRecord) -> list[tuple[DeliveryKind, tuple[str, ...]]]:
    """The deliveries the journal owes now, in member order (§8.3, last paragraph).

    Terminal slots no delivery covers yet are due. `all-settled`: a sealed
    group whose slots are all terminal gets one `settled` delivery over every
    member, unless nothing is due (every member was delivered urgently);
    before that, each due urgent slot gets an `urgent` delivery. `immediate`:
    each due slot gets a `member` delivery.
    """
    covered = {slot for delivery in group.deliveries for slot in delivery.slot_ids}
    due = [slot for slot in group.slots if slot.terminal and slot.slot_id not in covered]
    if not due:
        return []
    if group.policy.delivery == "immediate":
        return [("member", (slot.slot_id,)) for slot in due]
    if group.sealed and all(slot.terminal for slot in group.slots):
        return [("settled", tuple(slot.slot_id for slot in group.slots))]
    return [("urgent", (slot.slot_id,)) for slot in due if is_urgent(slot)]


# --- the index ----------------------------------------------------------------------------------


def _clip(text: str, limit: int = INDEX_TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_provenance(
    group: CompletionGroupRecord, slot: GroupSlotRecord, report: TeamReportRecord | None
) -> None:
    """The stored report must still be the one the slot's receipt names (§8.4).

    Raises:
        CompletionGroupJournalError: The report is missing or its provenance differs.
    """
    receipt = slot.receipt
    assert receipt is not None
    if report is None:
        raise CompletionGroupJournalError(
            f"Stored report {receipt.report_id} of completion slot {slot.slot_id} is unavailable; "
            "inspect the team's reports."
        )
    if (
        report.lead_session_id != group.lead_session_id
        or report.name != slot.name
        or report.run_id != slot.run_id
        or report.report_id != _report_id(group.team, slot.name, receipt.run_id)
        or SlotReceipt.from_report(report) != receipt
    ):
        raise CompletionGroupJournalError(
            f"Stored report {report.report_id} no longer matches the receipt of completion slot "
            f"{slot.slot_id}; inspect the report and the group."
        )


def _index_member(slot: GroupSlotRecord, report: TeamReportRecord | None) -> dict[str, Any]:
    member: dict[str, Any] = {"name": slot.name, "slotId": slot.slot_id, "status": slot.status}
    if slot.run_id is not None:
        member["runId"] = slot.run_id
    if slot.status != "reported" or report is None:
        if slot.reason is not None:
            member["reason"] = _clip(slot.reason)
        return member
    result = report.result
    verification: dict[str, Any] = {"state": result.verification.state}
    if result.verification.check_ids:
        verification["checkIds"] = list(result.verification.check_ids)
    if result.verification.error:
        verification["error"] = _clip(result.verification.error)
    acceptance: dict[str, Any] = {"state": report.acceptance}
    if report.acceptance_reason is not None:
        acceptance["reason"] = _clip(report.acceptance_reason)
    if report.decided_at is not None:
        acceptance["decidedAt"] = report.decided_at
    member["taskId"] = report.task_id
    member["runtimeStatus"] = report.status
    member["role"] = report.tier
    member["summary"] = _clip(report.summary or report.content.strip())
    if report.outcome is not None:
        member["outcome"] = report.outcome
    effective = result.effective_outcome
    if effective is not None:
        member["effectiveOutcome"] = effective
    member["verification"] = verification
    member["acceptance"] = acceptance
    if result.claims.findings:
        member["findings"] = [
            {"id": finding.id, "text": _clip(finding.text), "evidence": list(finding.evidence)}
            for finding in result.claims.findings
        ]
    if result.claims.questions:
        member["questions"] = list(result.claims.questions)
    member["report"] = {"id": report.report_id, "path": report.markdown_path}
    return member


def build_index(
    group: CompletionGroupRecord,
    *,
    kind: DeliveryKind,
    slot_ids: Sequence[str],
    reports: Mapping[str, TeamReportRecord | None],
) -> dict[str, Any]:
    """The compact index of one delivery (§8.4), its reported members checked against their receipts.

    Args:
        group: The group as planned (slots current).
        kind: The delivery kind.
        slot_ids: The slots it covers.
        reports: The stored report of each reported slot, by slot id.

    Raises:
        CompletionGroupJournalError: A reported slot's stored report is missing or differs from its receipt.
    """
    members = []
    for slot_key in slot_ids:
        slot = group.slot(slot_key)
        assert slot is not None
        report = reports.get(slot_key)
        if slot.status == "reported":
            _check_provenance(group, slot, report)
        members.append(_index_member(slot, report))
    return {
        "version": GROUP_INDEX_VERSION,
        "groupId": group.group_id,
        "deliveryId": delivery_id(group.group_id, kind, slot_ids),
        "kind": kind,
        "members": members,
    }


_INSTRUCTIONS = (
    "Completion group index ({kind}: {count} result(s)). Settlement is not task success or lead "
    "acceptance: each member's outcome, verification and acceptance are separate facts, and reports are "
    "the agents' claims. Read the full reports by id or path (report.id / report.path) as needed, recheck "
    "source-bound evidence before accepting, integrate, and continue. The agents exit by themselves; do "
    "not stop them."
)


def wake_text(index: str, *, kind: DeliveryKind, count: int) -> str:
    """The text of a delivery's wake (and of its inbox copy): the compact index, then the instructions."""
    return index + "\n\n" + _INSTRUCTIONS.format(kind=kind, count=count)
