"""The orchestration store: one SQLite database per data root, and its repositories.

`Store` is a façade kept while call sites move to the repositories: it opens
the `Database`, builds one repository per aggregate over it — the kernel's
`Generations` (`kernel/_generations.py`) and the teams features' `Roster`,
`Reports`, `Checks`, `RepairLedgers`, `Groups` and `Checkpoints` (`teams/<feature>/_repository.py`) and
`Worktrees` (`worktrees/_repository.py`) —
registers the teams roster's `retire_in` as the kernel's finalize hook, and
exposes every repository verb under its old name. It has no base class and no
logic of its own: each verb is the repository's bound method, so each is still
one transaction with check-and-set (see `kernel/_generations.py` for the
contract). New code takes the repository it needs (`store.kernel`,
`store.roster`, ...).

Store calls are synchronous and short; async callers make them on the event
loop (see "Store calls and the event loop" in docs/development.md). A `Store`
may be shared between threads (one connection guarded by a lock); other
processes open their own `Store` on the same file (WAL mode, `busy_timeout`).
Only the store modules and the `_repository.py` modules import `sqlite3`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Self

from corral.orchestration.kernel._generations import Generations
from corral.orchestration.store._database import Database, Tracer
from corral.orchestration.teams.checkpoints._repository import Checkpoints
from corral.orchestration.teams.checks._repository import Checks
from corral.orchestration.teams.groups._repository import Groups
from corral.orchestration.teams.repair._repository import RepairLedgers
from corral.orchestration.teams.reports._repository import Reports
from corral.orchestration.teams.roster._repository import Roster
from corral.orchestration.worktrees._repository import Worktrees

__all__ = ["Store"]


class Store:
    """The orchestration database and its repositories. Open with `Store.open`; every verb is one transaction.

    Mutations raise `OrchestrationError` subclasses on identity or state
    mismatches and leave the database unchanged when they do.
    """

    def __init__(self, db: Database) -> None:
        """Build the repositories over an open database; use `Store.open` instead."""
        self.db = db
        self.kernel = Generations(db)
        self.roster = Roster(db, self.kernel)
        self.repair = RepairLedgers(db)
        self.checks = Checks(db, self.repair)
        self.reports = Reports(db, self.kernel, self.roster)
        self.groups = Groups(db, self.kernel, self.roster, self.reports)
        self.checkpoints = Checkpoints(db)
        self.worktrees_repository = Worktrees(db)
        self.kernel.add_finalize_hook(self.roster.retire_in)
        k = self.kernel
        self.create_generation = k.create_generation
        self.record_started = k.record_started
        self.transfer_runtime = k.transfer_runtime
        self.record_activity = k.record_activity
        self.mark_presence = k.mark_presence
        self.finalize_generation = k.finalize_generation
        self.submit_request = k.submit_request
        self.record_request_delivered = k.record_request_delivered
        self.record_ack = k.record_ack
        self.create_ask = k.create_ask
        self.answer_ask = k.answer_ask
        self.abandon_ask = k.abandon_ask
        self.mark_ask_delivered = k.mark_ask_delivered
        self.store_result = k.store_result
        self.record_result_error = k.record_result_error
        self.mark_delivered = k.mark_delivered
        self.materialize_artifact = k.materialize_artifact
        self.get_generation = k.get_generation
        self.generation_by_label = k.generation_by_label
        self.generations = k.generations
        self.get_request = k.get_request
        self.requests = k.requests
        self.unacknowledged_request = k.unacknowledged_request
        self.get_ask = k.get_ask
        self.pending_ask = k.pending_ask
        self.get_result = k.get_result
        self.result_text = k.result_text
        self.get_artifact = k.get_artifact
        self.undelivered_results = k.undelivered_results
        self.snapshot = k.snapshot
        r = self.roster
        self.create_team_generation = r.create_team_generation
        self.team_run_ids = r.team_run_ids
        self.team_member = r.team_member
        self.live_team_member = r.live_team_member
        self.team_members = r.team_members
        self.set_team_fence = r.set_team_fence
        self.set_session_context_path = r.set_session_context_path
        self.set_checkpoint_source = r.set_checkpoint_source
        reports = self.reports
        self.store_team_report = reports.store_team_report
        self.team_report = reports.team_report
        self.team_report_for_run = reports.team_report_for_run
        self.team_reports = reports.team_reports
        self.record_report_acceptance = reports.record_report_acceptance
        self.add_team_message = r.add_team_message
        self.read_team_inbox = r.read_team_inbox
        self.has_team_state = r.has_team_state
        self.undelivered_lead_messages = r.undelivered_lead_messages
        self.mark_lead_message_delivered = r.mark_lead_message_delivered
        self.claim_files = r.claim_files
        self.release_files = r.release_files
        self.release_all_claims = r.release_all_claims
        self.file_claims = r.file_claims
        c = self.checks
        self.claim_check = c.claim_check
        self.finish_check = c.finish_check
        self.get_check = c.get_check
        self.get_checks = c.get_checks
        self.claimed_checks = c.claimed_checks
        self.abandon_check = c.abandon_check
        repair = self.repair
        self.repair_ledger = repair.repair_ledger
        self.repair_ledgers = repair.repair_ledgers
        self.reserve_repair_stage = repair.reserve_repair_stage
        self.finish_repair_stage = repair.finish_repair_stage
        self.cancel_repair = repair.cancel_repair
        groups = self.groups
        self.create_completion_group = groups.create_completion_group
        self.completion_group = groups.completion_group
        self.completion_groups = groups.completion_groups
        self.seal_completion_group = groups.seal_completion_group
        self.completion_slot = groups.completion_slot
        self.group_slot_queued = groups.group_slot_queued
        self.group_slot_running = groups.group_slot_running
        self.group_slot_reported = groups.group_slot_reported
        self.group_slot_settled = groups.group_slot_settled
        self.group_delivery = groups.group_delivery
        self.reserve_group_wakes = groups.reserve_group_wakes
        self.observe_group_wake = groups.observe_group_wake
        self.fail_group_wake = groups.fail_group_wake
        self.recover_completion_group = groups.recover_completion_group
        p = self.checkpoints
        self.insert_checkpoint = p.insert_checkpoint
        self.get_checkpoint = p.get_checkpoint
        self.checkpoint_rows = p.checkpoint_rows
        self.retire_checkpoint = p.retire_checkpoint

        w = self.worktrees_repository
        self.insert_worktree = w.insert_worktree
        self.bind_worktree_run = w.bind_worktree_run
        self.has_worktrees = w.has_worktrees
        self.get_worktree = w.get_worktree
        self.worktree_for_run = w.worktree_for_run
        self.worktree_at = w.worktree_at
        self.worktrees = w.worktrees
        self.worktree_events = w.worktree_events
        self.worktree_committed = w.worktree_committed
        self.worktree_reactivated = w.worktree_reactivated
        self.begin_worktree_merge = w.begin_worktree_merge
        self.settle_worktree = w.settle_worktree

    @classmethod
    def open(
        cls,
        path: Path | None = None,
        *,
        readonly: bool = False,
        tracer: Tracer | None = None,
        clock: Callable[[], int] | None = None,
    ) -> Self:
        """Open (and create or migrate) the store; see `Database.open` for the arguments and errors."""
        return cls(Database.open(path, readonly=readonly, tracer=tracer, clock=clock))

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def path(self) -> Path:
        """The database file."""
        return self.db.path

    @property
    def results_dir(self) -> Path:
        """Where result artifact files live: `<data root>/results`."""
        return self.db.results_dir
