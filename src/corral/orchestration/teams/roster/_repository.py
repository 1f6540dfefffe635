"""The teams roster in the orchestration store: members and file claims.

`Roster` is a repository over the shared database: every public verb is one
transaction through `_write`/`_read`, re-reads what it depends on and checks
identity inside it, and raises an `OrchestrationError` subclass (changing
nothing) on a mismatch.

A teams agent is an ordinary generation (no row in `labels`: teams names are
unique per team among live members, which the partial unique index
`team_members_live_name` enforces) plus a `team_members` row, written in one
transaction through the kernel's `*_in` pieces. Its report lives in
`teams/reports/_repository.py`. `retire_in`, the kernel's finalize hook,
releases the run's file claims and marks its member not live (freeing the
name) inside `finalize_generation`'s transaction.

Tables: `team_members`, `file_claims` (`team_messages` is `teams/messages/`').

Claims are all-or-nothing: the conflict check and the inserts run in one
`BEGIN IMMEDIATE` transaction, so two writers can never both hold a path.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from corral.orchestration.errors import (
    AgentLabelExistsError,
    InvalidRequestError,
    TargetNotFoundError,
)
from corral.orchestration.kernel._generations import Generations
from corral.orchestration.kernel.records import (
    GenerationRecord,
    NewGeneration,
    RequestRecord,
)
from corral.orchestration.store._database import Database, Row, Tx, require_text
from corral.orchestration.store._repository import Repository
from corral.orchestration.teams.roster.records import (
    TEAM_LEAD,
    TEAM_NAME_PATTERN,
    ClaimOutcome,
    FileClaimRecord,
    NewTeamMember,
    TeamMemberRecord,
    _check_choice,
    _check_member,
    _encode_assignments,
    _unique_claim_paths,
    normalize_claim_path,
)

__all__ = ["TEAM_LEAD", "TEAM_NAME_PATTERN", "Roster", "normalize_claim_path"]


_RUNNING_PHASES = ("starting", "active")


# --- rows → records -----------------------------------------------------------------------------


def _member_from_row(row: Row) -> TeamMemberRecord:
    metadata = row["metadata"]
    return TeamMemberRecord(
        run_id=row["run_id"],
        lead_session_id=row["lead_session_id"],
        name=row["name"],
        tier=row["tier"],
        requested_tier=row["requested_tier"],
        kind=row["kind"],
        depth=row["depth"],
        parent_run_id=row["parent_run_id"],
        allow_nested=bool(row["allow_nested"]),
        model=row["model"],
        thinking=row["thinking"],
        model_source=row["model_source"],
        session_context=row["session_context"],
        session_context_path=row["session_context_path"],
        sandbox=row["sandbox"],
        metadata=None if metadata is None else json.loads(metadata),
        prompt=row["prompt"],
        live=bool(row["live"]),
        fence=row["fence"],
        fence_reason=row["fence_reason"],
        created_at=row["created_at"],
        assigned_checks=_json_column(row["assigned_checks"]),
        repair_policy=_json_column(row["repair_policy"]),
        checkpoint_policy=_json_column(row["checkpoint_policy"]),
        continue_from=row["continue_from"],
        group_id=row["group_id"],
        slot_id=row["slot_id"],
        checkpoint_source=_json_column(row["checkpoint_source"]),
    )


def _json_column(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _claim_from_row(row: Row) -> FileClaimRecord:
    return FileClaimRecord(
        lead_session_id=row["lead_session_id"],
        path=row["path"],
        agent=row["agent"],
        run_id=row["run_id"],
        since=row["since"],
    )


class Roster(Repository):
    """Teams members and file claims; every public verb is one transaction.

    A member is a kernel generation plus its `team_members` row, written together
    through `Generations`' `*_in` pieces; `retire_in` is the kernel's finalize hook.
    """

    def __init__(self, db: Database, generations: Generations) -> None:
        """Work over `db`, writing generations through `generations` (same database)."""
        super().__init__(db)
        self._generations = generations

    # --- members ----------------------------------------------------------------------------------

    def create_team_generation(
        self, new: NewGeneration, member: NewTeamMember
    ) -> tuple[GenerationRecord, RequestRecord, TeamMemberRecord]:
        """Record a teams agent: its generation, its task request and its membership, in one transaction.

        The generation's label is the member's name and its definition the tier;
        no `labels` row is claimed (teams names are unique per team). A nested
        helper (depth 1) names its writer as `parent_run_id`; the writer must be
        a live, unfenced, active depth-0 edit member of the same team allowed
        to spawn helpers, and the core's parent rules apply.

        Raises:
            InvalidRequestError: Blank fields, an invalid name, inconsistent member fields, or a
                parent that may not spawn helpers.
            AgentLabelExistsError: A live member of the team already has the name.
            TargetNotFoundError: The parent run is not live or not the owner session's.
            ManagedAgentBusyError: The session is already represented by a live generation.
            TargetAmbiguousError: The session is represented more than once.

        `create_team_generation_in` does the same inside the caller's transaction.
        """
        return self._write(lambda: self.create_team_generation_in(self._tx, new, member))

    def create_team_generation_in(
        self, tx: Tx, new: NewGeneration, member: NewTeamMember
    ) -> tuple[GenerationRecord, RequestRecord, TeamMemberRecord]:
        """`create_team_generation` inside `tx`: a swarm's admission records all its members in one
        transaction (`host._launch.Launcher.launch_many`).

        Raises:
            The errors of `create_team_generation`; the caller's transaction then rolls back.
        """
        self._inside(tx)
        metadata = _check_member(new, member)
        checks, repair, checkpoint = _encode_assignments(member)
        if new.parent_run_id is not None:
            self._check_writer(new.parent_run_id, member.lead_session_id)
        parent = self._generations.check_new_in(self._tx, new)
        if self._live_member(member.lead_session_id, member.name) is not None:
            raise AgentLabelExistsError(
                f"Agent {member.name} is still live in this team; stop it and let its cleanup settle, "
                "or choose another name.",
                ids={"label": member.name},
            )
        now = self._tx.now
        run_id, request_id = self._generations.insert_generation_in(
            self._tx, new, label=member.name, parent=parent
        )
        self._execute(
            "INSERT INTO team_members (run_id, lead_session_id, name, tier, requested_tier, kind, depth,"
            " parent_run_id, allow_nested, model, thinking, model_source, session_context, sandbox,"
            " metadata, prompt, created_at, assigned_checks, repair_policy, checkpoint_policy, continue_from,"
            " group_id, slot_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                member.lead_session_id,
                member.name,
                member.tier,
                member.requested_tier,
                member.kind,
                member.depth,
                member.parent_run_id,
                int(member.allow_nested),
                member.model,
                member.thinking,
                member.model_source,
                member.session_context,
                member.sandbox,
                metadata,
                member.prompt,
                now,
                checks,
                repair,
                checkpoint,
                member.continue_from,
                member.group_id,
                member.slot_id,
            ),
        )
        generation = self._generations.generation_in(self._tx, run_id)
        request = self._generations.request_in(self._tx, request_id)
        record = self._team_member(run_id)
        assert generation is not None and request is not None and record is not None
        return generation, request, record

    def team_run_ids(self) -> frozenset[str]:
        """Run ids of every generation that belongs to a team (the `agent` surface hides them)."""
        return self._read(
            lambda: frozenset(row["run_id"] for row in self._all("SELECT run_id FROM team_members"))
        )

    def team_member(self, run_id: str) -> TeamMemberRecord | None:
        """The membership of run `run_id` (live or not), or `None`."""
        return self._read(lambda: self._team_member(run_id))

    def live_team_member(self, lead_session_id: str, name: str) -> TeamMemberRecord | None:
        """The live member of the team called `name`, or `None`."""
        return self._read(lambda: self._live_member(lead_session_id, name))

    def team_members(
        self, lead_session_id: str, *, live_only: bool = True, parent_run_id: str | None = None
    ) -> tuple[TeamMemberRecord, ...]:
        """The team's members, oldest first (live only by default; a writer's helpers with `parent_run_id`)."""
        sql = "SELECT * FROM team_members WHERE lead_session_id = ?"
        params: list[object] = [lead_session_id]
        if live_only:
            sql += " AND live = 1"
        if parent_run_id is not None:
            sql += " AND parent_run_id = ?"
            params.append(parent_run_id)
        sql += " ORDER BY created_at, rowid"
        return self._read(lambda: tuple(_member_from_row(row) for row in self._all(sql, params)))

    def set_team_fence(
        self, run_id: str, *, fence: Literal["none", "quarantined"], reason: str | None
    ) -> TeamMemberRecord:
        """Quarantine a member whose teardown did not settle, or lift the fence (the reason is dropped).

        Works on finalized members too, so a deferred cleanup can lift the fence afterwards.

        Raises:
            InvalidRequestError: An unknown fence.
            TargetNotFoundError: `run_id` is not a teams agent.
        """
        _check_choice(fence, ("none", "quarantined"), "Fence")
        stored_reason = reason if fence == "quarantined" and reason and reason.strip() else None

        def body() -> TeamMemberRecord:
            self._require_member(run_id)
            self._execute(
                "UPDATE team_members SET fence = ?, fence_reason = ? WHERE run_id = ?",
                (fence, stored_reason, run_id),
            )
            return self._require_member(run_id)

        return self._write(body)

    def set_session_context_path(self, run_id: str, path: str | None) -> None:
        """Record (or clear, with `None`) the lazy session-context file of a member.

        Raises:
            InvalidRequestError: A blank path, or a member spawned without `session_context: "lazy"`.
            TargetNotFoundError: `run_id` is not a teams agent.
        """
        if path is not None:
            require_text(path, "session context path")

        def body() -> None:
            member = self._require_member(run_id)
            if path is not None and member.session_context != "lazy":
                raise InvalidRequestError(
                    f"Agent {member.name} was spawned without lazy session context; it has no snapshot file.",
                    ids={"label": member.name, "runId": run_id},
                )
            self._execute("UPDATE team_members SET session_context_path = ? WHERE run_id = ?", (path, run_id))

        self._write(body)

    def set_checkpoint_source(self, run_id: str, source: dict[str, Any]) -> None:
        """Keep a checkpointed member's admission-time source observation (set once).

        Raises:
            InvalidRequestError: The member has no checkpoint policy, or a different source is stored.
            TargetNotFoundError: `run_id` is not a teams agent.
        """
        text = json.dumps(source, separators=(",", ":"), sort_keys=True)

        def body() -> None:
            member = self._require_member(run_id)
            if member.checkpoint_policy is None:
                raise InvalidRequestError(f"Agent {member.name} has no checkpoint policy.")
            if member.checkpoint_source is not None:
                if json.dumps(member.checkpoint_source, separators=(",", ":"), sort_keys=True) != text:
                    raise InvalidRequestError(f"Agent {member.name}'s checkpoint source is already recorded.")
                return
            self._execute("UPDATE team_members SET checkpoint_source = ? WHERE run_id = ?", (text, run_id))

        self._write(body)

    def has_team_state(self, lead_session_id: str) -> bool:
        """Whether the teams core has anything to recover for this lead: members, messages or checkpoints.

        Checkpoints count for any lead, since their expiry is retired at a lead's attach.
        """

        def body() -> bool:
            row = self._one(
                "SELECT EXISTS (SELECT 1 FROM team_members WHERE lead_session_id = ?)"
                " OR EXISTS (SELECT 1 FROM team_messages WHERE lead_session_id = ?)"
                " OR EXISTS (SELECT 1 FROM checkpoints WHERE state = 'ready') AS found",
                (lead_session_id, lead_session_id),
            )
            return row is not None and bool(row["found"])

        return self._read(body)

    # --- file claims ------------------------------------------------------------------------------

    def claim_files(
        self, lead_session_id: str, *, run_id: str, agent: str, paths: Sequence[str]
    ) -> ClaimOutcome:
        """Claim every path for a live edit member, or none of them.

        Re-claiming a path the run already holds keeps its `since`. Paths are
        normalized again (`normalize_claim_path`; idempotent).

        Returns:
            The run's claims on the paths, or no claims and `(path, held_by)` for each conflict.

        Raises:
            InvalidRequestError: No paths, a path that cannot be claimed, or a read agent.
            TargetNotFoundError: `run_id` is not a live member `agent` of this team.
        """
        wanted = _unique_claim_paths(paths)

        def body() -> ClaimOutcome:
            member = self._claiming_member(lead_session_id, run_id)
            if member.name != agent:
                raise TargetNotFoundError(
                    f"Run {run_id} is agent {member.name}, not {agent}.", ids={"label": member.name}
                )
            if member.kind != "write":
                raise InvalidRequestError(
                    f"Agent {agent} is a read agent; only edit agents claim files.", ids={"label": agent}
                )
            conflicts: list[tuple[str, str]] = []
            for path in wanted:
                held = self._claim(lead_session_id, path)
                if held is not None and held.run_id != run_id:
                    conflicts.append((path, held.agent))
            if conflicts:
                return ClaimOutcome(granted=(), conflicts=tuple(conflicts))
            now = self._clock()
            for path in wanted:
                self._execute(
                    "INSERT INTO file_claims (lead_session_id, path, agent, run_id, since) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT (lead_session_id, path) DO NOTHING",
                    (lead_session_id, path, agent, run_id, now),
                )
            granted = []
            for path in wanted:
                claim = self._claim(lead_session_id, path)
                assert claim is not None and claim.run_id == run_id
                granted.append(claim)
            return ClaimOutcome(granted=tuple(granted), conflicts=())

        return self._write(body)

    def release_files(self, lead_session_id: str, *, run_id: str, paths: Sequence[str]) -> tuple[str, ...]:
        """Release those of `paths` the run holds; returns the released paths (others are left alone).

        Raises:
            InvalidRequestError: No paths, or a path that cannot be claimed.
            TargetNotFoundError: `run_id` is not a live member of this team.
        """
        wanted = _unique_claim_paths(paths)

        def body() -> tuple[str, ...]:
            self._claiming_member(lead_session_id, run_id)
            released = []
            for path in wanted:
                changed = self._execute(
                    "DELETE FROM file_claims WHERE lead_session_id = ? AND path = ? AND run_id = ?",
                    (lead_session_id, path, run_id),
                )
                if changed == 1:
                    released.append(path)
            return tuple(released)

        return self._write(body)

    def release_all_claims(self, run_id: str) -> tuple[str, ...]:
        """Release every claim of a run (idempotent); returns the released paths, sorted."""

        def body() -> tuple[str, ...]:
            return self._release_all_claims(run_id)

        return self._write(body)

    def file_claims(self, lead_session_id: str) -> tuple[FileClaimRecord, ...]:
        """Every claim of the team, by path."""
        return self._read(
            lambda: tuple(
                _claim_from_row(row)
                for row in self._all(
                    "SELECT * FROM file_claims WHERE lead_session_id = ? ORDER BY path", (lead_session_id,)
                )
            )
        )

    # --- helpers (inside a transaction) -------------------------------------------------------------

    def _team_member(self, run_id: str) -> TeamMemberRecord | None:
        row = self._one("SELECT * FROM team_members WHERE run_id = ?", (run_id,))
        return None if row is None else _member_from_row(row)

    def _require_member(self, run_id: str) -> TeamMemberRecord:
        member = self._team_member(run_id)
        if member is None:
            raise TargetNotFoundError(
                f"Run {run_id} is not a teams agent; refresh with get_agent_status.", ids={"runId": run_id}
            )
        return member

    def _live_member(self, lead_session_id: str, name: str) -> TeamMemberRecord | None:
        row = self._one(
            "SELECT * FROM team_members WHERE lead_session_id = ? AND name = ? AND live = 1",
            (lead_session_id, name),
        )
        return None if row is None else _member_from_row(row)

    def _check_writer(self, run_id: str, lead_session_id: str) -> None:
        """A nested helper's parent must be an active, unfenced depth-0 writer of the team allowed to nest."""
        writer = self._team_member(run_id)
        generation = self._generations.generation_in(self._tx, run_id)
        if (
            writer is None
            or generation is None
            or not writer.live
            or writer.lead_session_id != lead_session_id
            or writer.depth != 0
            or writer.kind != "write"
            or not writer.allow_nested
            or writer.fence != "none"
            or generation.phase != "active"
        ):
            name = run_id if writer is None else writer.name
            raise InvalidRequestError(
                f"Nested read spawning is no longer authorized for {name}: it is not an active, unfenced "
                "writer of this team that may spawn read helpers.",
                ids={"runId": run_id},
            )

    def _claiming_member(self, lead_session_id: str, run_id: str) -> TeamMemberRecord:
        member = self._team_member(run_id)
        if member is None or not member.live or member.lead_session_id != lead_session_id:
            raise TargetNotFoundError(
                f"Run {run_id} is not a live member of this team; only running edit agents hold file claims.",
                ids={"runId": run_id},
            )
        return member

    def _claim(self, lead_session_id: str, path: str) -> FileClaimRecord | None:
        row = self._one(
            "SELECT * FROM file_claims WHERE lead_session_id = ? AND path = ?", (lead_session_id, path)
        )
        return None if row is None else _claim_from_row(row)

    def _release_all_claims(self, run_id: str) -> tuple[str, ...]:
        rows = self._all("SELECT path FROM file_claims WHERE run_id = ? ORDER BY path", (run_id,))
        self._execute("DELETE FROM file_claims WHERE run_id = ?", (run_id,))
        return tuple(row["path"] for row in rows)

    def team_member_in(self, tx: Tx, run_id: str) -> TeamMemberRecord | None:
        """The member record of `run_id` (live or not), or `None`, inside `tx`."""
        self._inside(tx)
        return self._team_member(run_id)

    def running_member_in(self, tx: Tx, lead_session_id: str, name: str) -> TeamMemberRecord | None:
        """The live, unfenced member `name` of the lead's team whose generation is still running
        (`starting` or `active`), or `None`, inside `tx` (who may be sent a message)."""
        self._inside(tx)
        member = self._live_member(lead_session_id, name)
        if member is None or member.fence != "none":
            return None
        generation = self._generations.generation_in(tx, member.run_id)
        return None if generation is None or generation.phase not in _RUNNING_PHASES else member

    def require_member_in(self, tx: Tx, run_id: str) -> TeamMemberRecord:
        """The member record of `run_id` inside `tx`; raises `TargetNotFoundError` when there is none."""
        self._inside(tx)
        return self._require_member(run_id)

    def retire_in(self, tx: Tx, run_id: str) -> None:
        """Release the run's claims and free its name: the kernel's finalize hook, inside its `tx`."""
        self._inside(tx)
        self._release_all_claims(run_id)
        self._execute("UPDATE team_members SET live = 0 WHERE run_id = ?", (run_id,))
