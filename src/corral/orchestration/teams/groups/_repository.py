"""Completion groups in the orchestration store (`spec/teams-detail.md` §8.3–§8.6).

`Groups` is the repository of the group tables. Every event is one `BEGIN IMMEDIATE`
transaction that re-reads the slot and its group, checks the event against
what the journal already bound, applies it, and then *plans*: each delivery
the journal now owes (`groups.records.plan_deliveries`) is inserted with its
index, together with a `team-lead` inbox message holding the same text
(sender `corral`, summary `Completion group <kind>: <n> result(s)`), so
`read_inbox` shows it, and the delivery is marked `enqueued`, all in the same
transaction. A refused event raises and writes nothing; a repeat of an event
already applied is a no-op.

The transitions (§8.3): `queued` only from `pending` (a repeat with the same
queue id is a no-op); `running` binds the run once; `reported` needs the
slot's run and the report id derived from (team, member, run), and takes the
report's receipt from the stored report; a different report for a reported
slot is refused; settlements by queue id must match the slot's queue identity
(a run bound meanwhile is kept), settlements by run id must match its run, and
a slot bound to a run is never settled without naming it. Terminal slots never
revive.

Wakes: `reserve_group_wakes` reserves each enqueued delivery's wake once
(`pending`) and returns it; a reserved wake is never returned again.
`observe_group_wake` records the lead-session entry that holds it (a different
entry later is refused) and marks its inbox copy read and delivered. Group
inbox messages are not delivered by the ordinary lead-message path
(`Messages.undelivered_lead_messages` skips them): the wake is their delivery.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import cast, get_args

from corral.orchestration.errors import InvalidRequestError, TargetNotFoundError
from corral.orchestration.kernel._generations import Generations
from corral.orchestration.store._database import Database, Row, new_id, require_text
from corral.orchestration.store._repository import Repository
from corral.orchestration.store.jsjson import stringify
from corral.orchestration.teams.groups.records import (
    INTERRUPTED_ON_RECOVERY,
    CompletionGroupBindingError,
    CompletionGroupJournalError,
    CompletionGroupRecord,
    CompletionPolicy,
    CompletionSlotSettledError,
    DeliveryKind,
    GroupDelivery,
    GroupHandle,
    GroupSlotRecord,
    GroupWake,
    SettledStatus,
    SlotReceipt,
    _report_id,
    build_index,
    group_id,
    plan_deliveries,
    slot_id,
    wake_text,
)
from corral.orchestration.teams.reports._repository import Reports
from corral.orchestration.teams.roster import Roster
from corral.orchestration.teams.roster.records import TEAM_LEAD, TEAM_NAME_PATTERN, TeamReportRecord

__all__ = ["GROUP_MESSAGE_SENDER", "Groups"]

GROUP_MESSAGE_SENDER = "corral"
"""Sender of a group index's inbox copy."""

_SETTLED: tuple[str, ...] = get_args(SettledStatus)


# --- rows → records -----------------------------------------------------------------------------


def _slot_from_row(row: Row) -> GroupSlotRecord:
    receipt = row["receipt"]
    return GroupSlotRecord(
        slot_id=row["slot_id"],
        group_id=row["group_id"],
        index=row["slot_index"],
        name=row["name"],
        status=row["status"],
        queue_id=row["queue_id"],
        run_id=row["run_id"],
        reason=row["reason"],
        receipt=None if receipt is None else SlotReceipt.from_json(json.loads(receipt)),
        updated_at=row["updated_at"],
    )


def _delivery_from_row(row: Row) -> GroupDelivery:
    state = row["wake_state"]
    return GroupDelivery(
        delivery_id=row["delivery_id"],
        group_id=row["group_id"],
        lead_session_id=row["lead_session_id"],
        kind=row["kind"],
        slot_ids=tuple(json.loads(row["slot_ids"])),
        index=row["index_json"],
        text=row["text"],
        status=row["status"],
        message_id=row["message_id"],
        wake=None
        if state is None
        else GroupWake(state=state, entry_id=row["wake_entry_id"], error=row["wake_error"]),
        created_at=row["created_at"],
    )


def _check_members(members: Sequence[str]) -> tuple[str, ...]:
    names = tuple(members)
    if not names:
        raise InvalidRequestError(
            "A completion group needs at least one member; pass the swarm's agent names."
        )
    for name in names:
        if not isinstance(name, str) or not TEAM_NAME_PATTERN.fullmatch(name):
            raise InvalidRequestError(
                f"Completion group member {name!r} is not a valid agent name; pass the spawned agents' names."
            )
    if len(set(names)) != len(names):
        raise InvalidRequestError("Completion group member names must be unique; pass each agent once.")
    return names


class Groups(Repository):
    """Completion groups: slots, transitions, planned deliveries and wake receipts; one transaction a verb."""

    def __init__(self, db: Database, generations: Generations, roster: Roster, reports: Reports) -> None:
        """Work over `db`, reading generations, members and reports through the other repositories."""
        super().__init__(db)
        self._generations = generations
        self._roster = roster
        self._reports = reports

    # --- groups -------------------------------------------------------------------------------------

    def create_completion_group(
        self,
        *,
        lead_session_id: str,
        team: str,
        submission_id: str,
        policy: CompletionPolicy,
        members: Sequence[str],
    ) -> GroupHandle:
        """Create a group and bind its members (one slot each, in order), or return the same binding.

        Returns:
            The group id and slot ids; `created` is `False` when this exact group already existed.

        Raises:
            InvalidRequestError: Blank ids, no members, an invalid or repeated member name.
            CompletionGroupBindingError: The group exists with another policy or member list
                ("Completion group assignment binding has changed.").
        """
        for value, what in (
            (lead_session_id, "lead session id"),
            (team, "team"),
            (submission_id, "submission id"),
        ):
            require_text(value, what)
        names = _check_members(members)
        if not isinstance(policy, CompletionPolicy):
            raise InvalidRequestError("Pass a parsed CompletionPolicy (parse_completion_group).")
        group = group_id(team, lead_session_id, submission_id)
        slots = tuple(slot_id(group, index) for index in range(len(names)))

        def body() -> GroupHandle:
            existing = self._group(group)
            if existing is not None:
                if (
                    existing.lead_session_id != lead_session_id
                    or existing.team != team
                    or existing.submission_id != submission_id
                    or existing.policy != policy
                    or tuple(slot.name for slot in existing.slots) != names
                ):
                    raise CompletionGroupBindingError(
                        "Completion group assignment binding has changed.",
                        ids={"groupId": group},
                        next_action="A spawn call binds its group once; use a new call for other members.",
                    )
                return GroupHandle(group, slots, created=False)
            now = self._clock()
            self._execute(
                "INSERT INTO completion_groups (group_id, lead_session_id, team, submission_id, delivery_mode,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (group, lead_session_id, team, submission_id, policy.delivery, now),
            )
            for index, (name, slot) in enumerate(zip(names, slots, strict=True)):
                self._execute(
                    "INSERT INTO completion_group_slots (slot_id, group_id, slot_index, name, updated_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (slot, group, index, name, now),
                )
            return GroupHandle(group, slots, created=True)

        return self._write(body)

    def completion_group(self, group: str) -> CompletionGroupRecord | None:
        """The group with its slots and deliveries, or `None`."""
        return self._read(lambda: self._group(group))

    def completion_groups(self, lead_session_id: str) -> tuple[CompletionGroupRecord, ...]:
        """Every group of a lead session, oldest first."""

        def body() -> tuple[CompletionGroupRecord, ...]:
            rows = self._all(
                "SELECT group_id FROM completion_groups WHERE lead_session_id = ? ORDER BY created_at, rowid",
                (lead_session_id,),
            )
            return tuple(self._require_group(row["group_id"]) for row in rows)

        return self._read(body)

    def seal_completion_group(self, group: str) -> CompletionGroupRecord:
        """Seal the group (no member joins any more) and plan what it now owes (idempotent).

        Raises:
            TargetNotFoundError: No such group.
        """

        def body() -> CompletionGroupRecord:
            record = self._require_group(group)
            if not record.sealed:
                self._execute(
                    "UPDATE completion_groups SET sealed = 1, sealed_at = ? WHERE group_id = ?",
                    (self._clock(), group),
                )
            self._plan(group)
            return self._require_group(group)

        return self._write(body)

    # --- slot events --------------------------------------------------------------------------------

    def completion_slot(self, slot: str) -> GroupSlotRecord | None:
        """The slot `slot`, or `None`."""
        return self._read(lambda: self._slot(slot))

    def group_slot_queued(self, slot: str, queue_id: str) -> GroupSlotRecord:
        """The member waits in the capacity queue as `queue_id` (only from `pending`).

        Raises:
            TargetNotFoundError: No such slot.
            CompletionSlotSettledError: The slot is terminal.
            CompletionGroupBindingError: The slot is past `pending` or queued under another id.
        """
        require_text(queue_id, "queue id")

        def body() -> GroupSlotRecord:
            record = self._require_slot(slot)
            if record.queue_id == queue_id:
                return record
            _refuse_terminal(record)
            if record.status == "queued":
                raise _binding("Completion queue binding has changed.", record)
            if record.status != "pending":
                raise _binding(
                    f"Completion slot {slot} is {record.status}; it can be queued only while pending.", record
                )
            self._execute(
                "UPDATE completion_group_slots SET status = 'queued', queue_id = ?, updated_at = ? WHERE slot_id = ?",
                (queue_id, self._clock(), slot),
            )
            return self._require_slot(slot)

        return self._write(body)

    def group_slot_running(self, slot: str, run_id: str) -> GroupSlotRecord:
        """Bind the member's run (once) before it launches.

        Raises:
            TargetNotFoundError: No such slot.
            CompletionGroupBindingError: Another run is bound ("Completion run binding has changed.").
            CompletionSlotSettledError: The slot is terminal.
        """
        require_text(run_id, "run id")

        def body() -> GroupSlotRecord:
            record = self._require_slot(slot)
            if record.run_id is not None and record.run_id != run_id:
                raise _binding("Completion run binding has changed.", record)
            _refuse_terminal(record)
            if record.status == "running":
                return record
            self._execute(
                "UPDATE completion_group_slots SET status = 'running', run_id = ?, updated_at = ? WHERE slot_id = ?",
                (run_id, self._clock(), slot),
            )
            return self._require_slot(slot)

        return self._write(body)

    def group_slot_reported(self, slot: str, report_id: str) -> GroupSlotRecord:
        """Record the member's stored report (its receipt is read from the stored row) and plan.

        Raises:
            TargetNotFoundError: No such slot, or no stored report `report_id`.
            CompletionGroupBindingError: The slot has no run, or the report is not the one derived from
                (team, member, run), or the slot already holds another report
                ("Conflicting completion report binding.").
            CompletionSlotSettledError: The slot settled without a report.
        """
        require_text(report_id, "report id")

        def body() -> GroupSlotRecord:
            record = self._require_slot(slot)
            group = self._require_group(record.group_id)
            report = self._reports.team_report_in(self._tx, report_id)
            if report is None:
                raise TargetNotFoundError(
                    f"Structured report {report_id} is unavailable.", ids={"slotId": slot}
                )
            receipt = SlotReceipt.from_report(report)
            if record.status == "reported":
                if record.receipt == receipt:
                    return record
                raise _binding("Conflicting completion report binding.", record)
            _refuse_terminal(record)
            if record.run_id is None:
                raise _binding(
                    f"Completion slot {slot} has no bound run; bind the run before reporting.", record
                )
            if (
                report.run_id != record.run_id
                or report.name != record.name
                or report.lead_session_id != group.lead_session_id
                or report.report_id != _report_id(group.team, record.name, record.run_id)
            ):
                raise _binding("Conflicting completion report binding.", record)
            self._set_reported(slot, receipt)
            self._plan(record.group_id)
            return self._require_slot(slot)

        return self._write(body)

    def group_slot_settled(
        self,
        slot: str,
        status: SettledStatus,
        reason: str,
        *,
        run_id: str | None = None,
        queue_id: str | None = None,
    ) -> GroupSlotRecord:
        """Settle the member without a report (`rejected`, `cancelled`, `interrupted`) and plan.

        By `queue_id` (rejected/cancelled only) it must match the slot's queue
        identity and keeps any run bound meanwhile; by `run_id` it must match
        the bound run (binding it if none is); without either the slot must
        have no run. Repeating the same settlement is a no-op.

        Raises:
            InvalidRequestError: An unknown status, a blank reason, both ids, or `interrupted` by queue id.
            TargetNotFoundError: No such slot.
            CompletionGroupBindingError: The queue or run identity does not match.
            CompletionSlotSettledError: The slot is already terminal otherwise.
        """
        if status not in _SETTLED:
            raise InvalidRequestError(f"A settlement is one of {', '.join(_SETTLED)}, not {status!r}.")
        require_text(reason, "settlement reason")
        if run_id is not None and queue_id is not None:
            raise InvalidRequestError("Settle a completion slot by run_id or by queue_id, not both.")
        if queue_id is not None and status == "interrupted":
            raise InvalidRequestError("Only rejected or cancelled settle a completion slot by queue_id.")

        def body() -> GroupSlotRecord:
            record = self._require_slot(slot)
            if record.terminal:
                if (
                    record.status == status
                    and record.reason == reason
                    and run_id in (None, record.run_id)
                    and queue_id in (None, record.queue_id)
                ):
                    return record
                _refuse_terminal(record)
            bound_run = record.run_id
            if queue_id is not None:
                if record.queue_id != queue_id:
                    raise _binding("Completion queue binding has changed.", record)
            elif run_id is not None:
                if record.run_id is not None and record.run_id != run_id:
                    raise _binding(
                        "Completion run binding has changed; a settlement cannot cancel a different run.",
                        record,
                    )
                bound_run = run_id
            elif record.run_id is not None:
                raise _binding(
                    f"Completion slot {slot} is bound to run {record.run_id}; pass its run_id to settle it.",
                    record,
                )
            self._execute(
                "UPDATE completion_group_slots SET status = ?, reason = ?, run_id = ?, updated_at = ?"
                " WHERE slot_id = ?",
                (status, reason, bound_run, self._clock(), slot),
            )
            self._plan(record.group_id)
            return self._require_slot(slot)

        return self._write(body)

    # --- deliveries and wakes -----------------------------------------------------------------------

    def group_delivery(self, delivery: str) -> GroupDelivery | None:
        """The delivery `delivery`, or `None`."""
        return self._read(lambda: self._delivery(delivery))

    def reserve_group_wakes(self, lead_session_id: str) -> tuple[GroupDelivery, ...]:
        """Reserve the wake of every enqueued delivery of the lead not reserved yet, and return them.

        A reserved wake (`pending`) is never returned again, also after a restart (no automatic retry).
        """

        def body() -> tuple[GroupDelivery, ...]:
            rows = self._all(
                "SELECT delivery_id FROM completion_group_deliveries WHERE lead_session_id = ?"
                " AND status = 'enqueued' AND wake_state IS NULL ORDER BY created_at, rowid",
                (lead_session_id,),
            )
            now = self._clock()
            reserved = []
            for row in rows:
                self._execute(
                    "UPDATE completion_group_deliveries SET wake_state = 'pending', reserved_at = ?"
                    " WHERE delivery_id = ? AND wake_state IS NULL",
                    (now, row["delivery_id"]),
                )
                reserved.append(self._require_delivery(row["delivery_id"]))
            return tuple(reserved)

        return self._write(body)

    def observe_group_wake(self, delivery: str, entry_id: str) -> GroupDelivery:
        """Record that the lead's session holds the wake as entry `entry_id`; mark its inbox copy read.

        Raises:
            TargetNotFoundError: No such delivery.
            CompletionGroupBindingError: The wake was observed as another entry.
        """
        require_text(entry_id, "entry id")

        def body() -> GroupDelivery:
            self._observe(self._require_delivery(delivery), entry_id)
            return self._require_delivery(delivery)

        return self._write(body)

    def fail_group_wake(self, delivery: str, error: str) -> GroupDelivery:
        """Record why sending a reserved wake failed; it stays `pending` and is not retried.

        Raises:
            TargetNotFoundError: No such delivery.
            InvalidRequestError: The wake was never reserved, or the error is blank.
        """
        require_text(error, "wake error")

        def body() -> GroupDelivery:
            record = self._require_delivery(delivery)
            if record.wake is None:
                raise InvalidRequestError(
                    f"The wake of completion delivery {delivery} was never reserved; reserve it first."
                )
            if record.wake.state == "pending":
                self._execute(
                    "UPDATE completion_group_deliveries SET wake_error = ? WHERE delivery_id = ?",
                    (error, delivery),
                )
            return self._require_delivery(delivery)

        return self._write(body)

    # --- recovery -----------------------------------------------------------------------------------

    def recover_completion_group(
        self, group: str, *, delivered: Mapping[str, str]
    ) -> tuple[CompletionGroupRecord, list[str]]:
        """Reconcile one group after a host restart (§8.6), in one transaction.

        Marks wakes found in the lead's session (`delivered`: delivery id →
        entry id) observed; binds a pending or queued slot whose member was
        already created to that member's run; records the stored report of a
        running slot; interrupts slots never bound to a run
        (`INTERRUPTED_ON_RECOVERY`); then seals the group and plans. Running
        slots whose run ended without a report are left unresolved (never
        restarted, never declared successful) with a warning.

        Returns:
            The recovered group and the warnings about it.

        Raises:
            TargetNotFoundError: No such group.
            CompletionGroupJournalError: A stored report disagrees with the journal (nothing is written).
        """

        def body() -> tuple[CompletionGroupRecord, list[str]]:
            record = self._require_group(group)
            warnings: list[str] = []
            for delivery in record.deliveries:
                entry_id = delivered.get(delivery.delivery_id)
                if entry_id is None:
                    continue
                try:
                    self._observe(delivery, entry_id)
                except CompletionGroupBindingError as exc:
                    warnings.append(exc.message)
            for slot in record.slots:
                warning = self._recover_slot(record, slot)
                if warning is not None:
                    warnings.append(warning)
            if not record.sealed:
                self._execute(
                    "UPDATE completion_groups SET sealed = 1, sealed_at = ? WHERE group_id = ?",
                    (self._clock(), group),
                )
            self._plan(group)
            return self._require_group(group), warnings

        return self._write(body)

    def _recover_slot(self, group: CompletionGroupRecord, slot: GroupSlotRecord) -> str | None:
        status, run_id = slot.status, slot.run_id
        if status in ("pending", "queued"):
            run_id = self._slot_member_run(group, slot)
            if run_id is None:
                self._execute(
                    "UPDATE completion_group_slots SET status = 'interrupted', reason = ?, updated_at = ?"
                    " WHERE slot_id = ?",
                    (INTERRUPTED_ON_RECOVERY, self._clock(), slot.slot_id),
                )
                return None
            self._execute(
                "UPDATE completion_group_slots SET status = 'running', run_id = ?, updated_at = ? WHERE slot_id = ?",
                (run_id, self._clock(), slot.slot_id),
            )
            status = "running"
        if status != "running" or run_id is None:
            return None
        expected = _report_id(group.team, slot.name, run_id)
        report = self._reports.team_report_in(self._tx, expected)
        if report is not None and report.run_id == run_id and report.lead_session_id == group.lead_session_id:
            self._set_reported(slot.slot_id, SlotReceipt.from_report(report))
            return None
        generation = self._generations.generation_in(self._tx, run_id)
        if generation is None or not generation.live:
            return (
                f"Completion slot {slot.slot_id} ({slot.name}) ran as {run_id}, which ended without a stored "
                "report; it stays unresolved (not restarted, not declared successful)."
            )
        return None

    def _slot_member_run(self, group: CompletionGroupRecord, slot: GroupSlotRecord) -> str | None:
        """The run of a team member created for `slot` (v3's `team_members.slot_id`), if any."""
        row = self._one(
            "SELECT run_id FROM team_members WHERE slot_id = ? AND lead_session_id = ? AND name = ?"
            " ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (slot.slot_id, group.lead_session_id, slot.name),
        )
        return None if row is None else str(row["run_id"])

    # --- helpers (inside a transaction) -------------------------------------------------------------

    def _group(self, group: str) -> CompletionGroupRecord | None:
        row = self._one("SELECT * FROM completion_groups WHERE group_id = ?", (group,))
        if row is None:
            return None
        slots = tuple(
            _slot_from_row(slot)
            for slot in self._all(
                "SELECT * FROM completion_group_slots WHERE group_id = ? ORDER BY slot_index", (group,)
            )
        )
        deliveries = tuple(
            _delivery_from_row(delivery)
            for delivery in self._all(
                "SELECT * FROM completion_group_deliveries WHERE group_id = ? ORDER BY created_at, rowid",
                (group,),
            )
        )
        return CompletionGroupRecord(
            group_id=row["group_id"],
            lead_session_id=row["lead_session_id"],
            team=row["team"],
            submission_id=row["submission_id"],
            policy=CompletionPolicy(delivery=row["delivery_mode"]),
            sealed=bool(row["sealed"]),
            created_at=row["created_at"],
            slots=slots,
            deliveries=deliveries,
        )

    def _require_group(self, group: str) -> CompletionGroupRecord:
        record = self._group(group)
        if record is None:
            raise TargetNotFoundError(
                f"No completion group {group}; check the group id.", ids={"groupId": group}
            )
        return record

    def _slot(self, slot: str) -> GroupSlotRecord | None:
        row = self._one("SELECT * FROM completion_group_slots WHERE slot_id = ?", (slot,))
        return None if row is None else _slot_from_row(row)

    def _require_slot(self, slot: str) -> GroupSlotRecord:
        record = self._slot(slot)
        if record is None:
            raise TargetNotFoundError(
                f"No completion group slot {slot}; check the slot id.", ids={"slotId": slot}
            )
        return record

    def _delivery(self, delivery: str) -> GroupDelivery | None:
        row = self._one("SELECT * FROM completion_group_deliveries WHERE delivery_id = ?", (delivery,))
        return None if row is None else _delivery_from_row(row)

    def _require_delivery(self, delivery: str) -> GroupDelivery:
        record = self._delivery(delivery)
        if record is None:
            raise TargetNotFoundError(
                f"No completion group delivery {delivery}; check the delivery id.",
                ids={"deliveryId": delivery},
            )
        return record

    def _set_reported(self, slot: str, receipt: SlotReceipt) -> None:
        self._execute(
            "UPDATE completion_group_slots SET status = 'reported', receipt = ?, updated_at = ? WHERE slot_id = ?",
            (stringify(receipt.to_json()), self._clock(), slot),
        )

    def _observe(self, delivery: GroupDelivery, entry_id: str) -> None:
        wake = delivery.wake
        if wake is not None and wake.state == "observed":
            if wake.entry_id == entry_id:
                return
            raise CompletionGroupBindingError(
                f"The wake of completion delivery {delivery.delivery_id} is already entry {wake.entry_id}, "
                f"not {entry_id}.",
                ids={"deliveryId": delivery.delivery_id},
            )
        now = self._clock()
        self._execute(
            "UPDATE completion_group_deliveries SET wake_state = 'observed', wake_entry_id = ?, observed_at = ?,"
            " reserved_at = COALESCE(reserved_at, ?) WHERE delivery_id = ?",
            (entry_id, now, now, delivery.delivery_id),
        )
        if delivery.message_id is not None:
            self._execute(
                "UPDATE team_messages SET delivered_entry_id = ?, read_at = COALESCE(read_at, ?)"
                " WHERE message_id = ? AND delivered_entry_id IS NULL",
                (entry_id, now, delivery.message_id),
            )

    def _plan(self, group: str) -> None:
        """Insert every delivery the group now owes, each with its inbox copy (enqueued)."""
        record = self._require_group(group)
        for kind, slot_ids in plan_deliveries(record):
            self._enqueue(record, kind, slot_ids)

    def _enqueue(self, group: CompletionGroupRecord, kind: DeliveryKind, slot_ids: tuple[str, ...]) -> None:
        reports: dict[str, TeamReportRecord | None] = {}
        for key in slot_ids:
            slot = group.slot(key)
            if slot is not None and slot.receipt is not None:
                reports[key] = self._reports.team_report_in(self._tx, slot.receipt.report_id)
        index = build_index(group, kind=kind, slot_ids=slot_ids, reports=reports)
        index_json = stringify(index)
        text = wake_text(index_json, kind=kind, count=len(slot_ids))
        delivery = cast("str", index["deliveryId"])
        if self._delivery(delivery) is not None:
            raise CompletionGroupJournalError(
                f"Completion delivery {delivery} was planned twice; inspect group {group.group_id}."
            )
        now = self._clock()
        self._execute(
            "INSERT INTO completion_group_deliveries (delivery_id, group_id, lead_session_id, kind, slot_ids,"
            " index_json, text, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                delivery,
                group.group_id,
                group.lead_session_id,
                kind,
                stringify(list(slot_ids)),
                index_json,
                text,
                now,
            ),
        )
        message_id = new_id()
        self._execute(
            "INSERT INTO team_messages (message_id, lead_session_id, recipient, sender, content, summary,"
            " delivery, created_at) VALUES (?, ?, ?, ?, ?, ?, 'inbox', ?)",
            (
                message_id,
                group.lead_session_id,
                TEAM_LEAD,
                GROUP_MESSAGE_SENDER,
                text,
                f"Completion group {kind}: {len(slot_ids)} result(s)",
                now,
            ),
        )
        self._execute(
            "UPDATE completion_group_deliveries SET status = 'enqueued', message_id = ? WHERE delivery_id = ?",
            (message_id, delivery),
        )


def _binding(message: str, slot: GroupSlotRecord) -> CompletionGroupBindingError:
    ids = {"slotId": slot.slot_id, "groupId": slot.group_id}
    if slot.run_id is not None:
        ids["runId"] = slot.run_id
    return CompletionGroupBindingError(message, ids=ids)


def _refuse_terminal(slot: GroupSlotRecord) -> None:
    if slot.terminal:
        raise CompletionSlotSettledError(
            f"Completion slot {slot.slot_id} ({slot.name}) is already settled ({slot.status}).",
            ids={"slotId": slot.slot_id, "groupId": slot.group_id},
        )
