"""Completion groups for the teams core (`spawn_swarm_agents(completion_group=...)`, §8).

`CompletionGroups` is the one object the teams core calls. It holds no state:
every call is one store transaction (the `Groups` repository), and the journal in the
store owns delivery to the lead once a grouped member reported.

The flow: `parse_completion_group` validates the policy before anything is
stored; `create` binds the members (one slot each); the core reports each
member's progress (`queued`, `running`, `reported` or `settled`) and `seal`s
the group once every member was admitted or refused. Each change plans the
deliveries the group now owes and stores each index in the lead's inbox.
The host then calls `reserve_wakes`, sends each returned delivery's `message`
(a hidden `corral-team-group` custom message that triggers a turn) through
the core's `deliver_message` keyed by `delivery_id`, and records the entry
with `observed`. A reserved wake is never sent again: after a restart,
`recover` marks the wakes found in the lead's session observed and returns a
warning for each one that is not, pointing at the saved index (`read_inbox`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from corral.llm import CustomMessage
from corral.orchestration.errors import OrchestrationError, TargetNotFoundError
from corral.orchestration.teams.groups.records import (
    CompletionGroupRecord,
    CompletionPolicy,
    GroupDelivery,
    GroupHandle,
    parse_completion_group,
)
from corral.session import CustomMessageEntry

if TYPE_CHECKING:
    from corral.orchestration.teams.groups._repository import Groups
    from corral.orchestration.teams.roster.records import TeamReportRecord

__all__ = ["GROUP_MESSAGE_TYPE", "CompletionGroups", "parse_completion_group"]

GROUP_MESSAGE_TYPE = "corral-team-group"
"""`customType` of the hidden message that brings a group index to the lead (and wakes it)."""


class CompletionGroups:
    """The completion-group journal, as the teams core uses it."""

    def __init__(self, rows: Groups) -> None:
        """Keep every group in `rows`, the groups' repository (no state is kept here)."""
        self._rows = rows

    # --- journal events -------------------------------------------------------------------------

    def create(
        self,
        *,
        lead_session_id: str,
        team: str,
        submission_id: str,
        policy: CompletionPolicy,
        members: Sequence[str],
    ) -> GroupHandle:
        """Create the group of one spawn call and bind its members, before any admission.

        Args:
            lead_session_id: The lead session (the team).
            team: The team name (`session-<lead session id>`); part of the group id.
            submission_id: The spawning tool call id; part of the group id.
            policy: From `parse_completion_group`.
            members: The agents' names, in spawn order (one slot each).

        Returns:
            The group id and slot ids (member order). The same call again returns the same handle
            (`created=False`).

        Raises:
            InvalidRequestError: No members, a bad or repeated name, blank ids.
            CompletionGroupBindingError: The group exists with another policy or member list.
        """
        return self._rows.create_completion_group(
            lead_session_id=lead_session_id,
            team=team,
            submission_id=submission_id,
            policy=policy,
            members=members,
        )

    def queued(self, slot_id: str, queue_id: str) -> None:
        """The member waits in the capacity queue (only from `pending`; a repeat is a no-op).

        Raises:
            CompletionGroupBindingError: The slot is past `pending` or queued under another id.
            CompletionSlotSettledError: The slot already settled.
        """
        self._rows.group_slot_queued(slot_id, queue_id)

    def running(self, slot_id: str, run_id: str) -> None:
        """Bind the member's run, once, before it launches.

        Raises:
            CompletionGroupBindingError: Another run is bound ("Completion run binding has changed.").
            CompletionSlotSettledError: The slot already settled.
        """
        self._rows.group_slot_running(slot_id, run_id)

    def reported(self, slot_id: str, report: TeamReportRecord) -> None:
        """Record the member's stored report (the receipt is taken from the stored row), then plan.

        Raises:
            CompletionGroupBindingError: The report is not the one of the slot's run
                ("Conflicting completion report binding." for a second, different report).
            CompletionSlotSettledError: The slot settled without a report.
        """
        self._rows.group_slot_reported(slot_id, report.report_id)

    def settled(
        self,
        slot_id: str,
        status: Literal["rejected", "cancelled", "interrupted"],
        reason: str,
        *,
        run_id: str | None = None,
        queue_id: str | None = None,
    ) -> None:
        """Settle the member without a report, by its queue id, its run id, or (never bound) neither.

        Raises:
            InvalidRequestError: Bad status or reason, both ids, or `interrupted` by queue id.
            CompletionGroupBindingError: The queue or run identity does not match the slot's.
            CompletionSlotSettledError: The slot already settled differently.
        """
        self._rows.group_slot_settled(slot_id, status, reason, run_id=run_id, queue_id=queue_id)

    def seal(self, group_id: str) -> None:
        """No member joins any more: `all-settled` may deliver once every slot is terminal."""
        self._rows.seal_completion_group(group_id)

    # --- wakes ----------------------------------------------------------------------------------

    def reserve_wakes(self, lead_session_id: str) -> list[GroupDelivery]:
        """Reserve and return the planned deliveries whose wake was never reserved (each at most once)."""
        return list(self._rows.reserve_group_wakes(lead_session_id))

    def message(self, delivery: GroupDelivery) -> CustomMessage:
        """The hidden `corral-team-group` message of a delivery: its index and the instructions."""
        details: dict[str, Any] = {
            "group_id": delivery.group_id,
            "delivery_id": delivery.delivery_id,
            "kind": delivery.kind,
            "slot_ids": list(delivery.slot_ids),
        }
        return CustomMessage(
            custom_type=GROUP_MESSAGE_TYPE, content=delivery.text, display=False, details=details
        )

    def observed(self, delivery_id: str, entry_id: str) -> None:
        """The lead's session holds the wake as `entry_id` (its inbox copy becomes read).

        Raises:
            CompletionGroupBindingError: The wake was already observed as another entry.
        """
        self._rows.observe_group_wake(delivery_id, entry_id)

    def wake_failed(self, delivery_id: str, error: str) -> None:
        """Record why sending a reserved wake failed (it is not retried; the inbox copy stays unread)."""
        self._rows.fail_group_wake(delivery_id, error)

    def find_wakes(self, lead_session_id: str, entries: Iterable[object]) -> dict[str, str]:
        """Delivery id → entry id for each group wake in the lead's session entries.

        An entry counts only when its `details.delivery_id` names a delivery of
        this lead and its content equals the delivery's text exactly.
        """
        found: dict[str, str] = {}
        for entry in entries:
            if not (
                isinstance(entry, CustomMessageEntry)
                and entry.custom_type == GROUP_MESSAGE_TYPE
                and isinstance(entry.details, dict)
                and isinstance(entry.details.get("delivery_id"), str)
            ):
                continue
            key = entry.details["delivery_id"]
            delivery = self._rows.group_delivery(key)
            if (
                delivery is not None
                and delivery.lead_session_id == lead_session_id
                and entry.content == delivery.text
                and key not in found
            ):
                found[key] = entry.id
        return found

    # --- restart and status ---------------------------------------------------------------------

    def recover(self, lead_session_id: str, *, delivered: Mapping[str, str]) -> list[str]:
        """Reconcile the lead's groups after a host restart; returns warnings for the lead.

        `delivered` maps delivery ids to the entries found in the lead's session
        (`find_wakes`); those wakes become observed. Slots never bound to a run
        are interrupted ("Assignment was not retained across restart; no work
        was restarted."), a created member's run is bound, a stored report is
        recorded; every group is sealed and planned. One warning is returned
        per wake that was reserved but never observed (it is not retried) with
        its saved index, plus one per group or slot that could not be resolved.
        Call it only after a restart: it interrupts slots still waiting for admission.
        """
        groups = self._rows.completion_groups(lead_session_id)
        known = {delivery.delivery_id for group in groups for delivery in group.deliveries}
        warnings = [
            f"Completion group wake {key} (session entry {entry}) is not a delivery of this team; ignored."
            for key, entry in delivered.items()
            if key not in known
        ]
        for group in groups:
            try:
                recovered, group_warnings = self._rows.recover_completion_group(
                    group.group_id, delivered=delivered
                )
            except OrchestrationError as exc:
                warnings.append(f"Completion group {group.group_id} could not be recovered: {exc}")
                continue
            warnings.extend(group_warnings)
            warnings.extend(
                _unconfirmed(recovered, delivery)
                for delivery in recovered.deliveries
                if delivery.wake is not None and delivery.wake.state == "pending"
            )
        return warnings

    def index(self, group_id: str) -> dict[str, Any]:
        """The group's journal as JSON (§8.3: policy, sealed, members with status and receipts, deliveries).

        Raises:
            TargetNotFoundError: No such group.
        """
        group = self._rows.completion_group(group_id)
        if group is None:
            raise TargetNotFoundError(
                f"No completion group {group_id}; check the group id.", ids={"groupId": group_id}
            )
        return group.to_journal()


def _unconfirmed(group: CompletionGroupRecord, delivery: GroupDelivery) -> str:
    wake = delivery.wake
    error = f" Sending failed: {wake.error}." if wake is not None and wake.error else ""
    return (
        f"Completion group {delivery.kind} wake {delivery.delivery_id} (group {group.group_id}) was sent but "
        f"never confirmed in this session; it is not retried.{error} Use read_inbox for the saved index:\n"
        f"{delivery.index}"
    )
