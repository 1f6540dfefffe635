"""The repository of the worktrees feature: one transaction a verb, state rechecked inside it.

Every outcome is written with its event in the same transaction, so the
history in `worktree_events` and the row's state never disagree. A merge is
journaled (`merging`, with the old HEAD, the new commit and the paths) before
the user's tree changes and settled after, which is what lets the next run say
whether a killed merge left the old tree or the merged one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from corral.orchestration.errors import InvalidRequestError, ManagedAgentBusyError, TargetNotFoundError
from corral.orchestration.store._database import Row
from corral.orchestration.store._repository import Repository
from corral.orchestration.worktrees.records import (
    WorktreeEvent,
    WorktreeOutcome,
    WorktreeRecord,
    WorktreeState,
)

__all__ = ["Worktrees"]


def _worktree_from_row(row: Row) -> WorktreeRecord:
    paths = row["merge_paths"]
    return WorktreeRecord(
        branch=row["branch"],
        name=row["name"],
        repo=Path(row["repo"]),
        path=Path(row["path"]),
        head=row["head"],
        base=row["base"],
        state=row["state"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        run_id=row["run_id"],
        owner_session_id=row["owner_session_id"],
        tip=row["tip"],
        merge_head=row["merge_head"],
        merge_commit=row["merge_commit"],
        merge_paths=tuple(json.loads(paths)) if paths else (),
        outcome=row["outcome"],
    )


def _event_from_row(row: Row) -> WorktreeEvent:
    return WorktreeEvent(
        event_id=row["event_id"],
        branch=row["branch"],
        outcome=row["outcome"],
        detail=row["detail"],
        paths=tuple(json.loads(row["paths"])),
        at=row["at"],
    )


class Worktrees(Repository):
    """Agent worktrees and their history (tables `worktrees`, `worktree_events`)."""

    def _worktree_row(self, branch: str) -> WorktreeRecord:
        row = self._one("SELECT * FROM worktrees WHERE branch = ?", (branch,))
        if row is None:
            raise TargetNotFoundError(f"No corral worktree has branch {branch}; `corral doctor` lists them.")
        return _worktree_from_row(row)

    def _worktree_event(
        self, branch: str, outcome: WorktreeOutcome, detail: str, paths: Sequence[str] = ()
    ) -> None:
        self._execute(
            "INSERT INTO worktree_events (branch, outcome, detail, paths, at) VALUES (?, ?, ?, ?, ?)",
            (branch, outcome, detail, json.dumps(list(paths)), self._clock()),
        )

    def _worktree_state(
        self,
        record: WorktreeRecord,
        state: WorktreeState,
        outcome: WorktreeOutcome,
        detail: str,
        paths: Sequence[str] = (),
    ) -> WorktreeRecord:
        self._execute(
            "UPDATE worktrees SET state = ?, outcome = ?, updated_at = ?,"
            " merge_head = NULL, merge_commit = NULL, merge_paths = NULL WHERE branch = ?",
            (state, detail, self._clock(), record.branch),
        )
        self._worktree_event(record.branch, outcome, detail, paths)
        return self._worktree_row(record.branch)

    def insert_worktree(self, record: WorktreeRecord) -> WorktreeRecord:
        """Record a worktree just made (state `active`) and its `created` event."""

        def body() -> WorktreeRecord:
            now = self._clock()
            self._execute(
                "INSERT INTO worktrees (branch, run_id, name, owner_session_id, repo, path, head, base, state,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?)",
                (
                    record.branch,
                    record.run_id,
                    record.name,
                    record.owner_session_id,
                    str(record.repo),
                    str(record.path),
                    record.head,
                    record.base,
                    now,
                    now,
                ),
            )
            detail = f"worktree {record.path} on {record.branch}" + (
                " (with the lead's uncommitted changes)" if record.snapshot else ""
            )
            self._worktree_event(record.branch, "created", detail)
            return self._worktree_row(record.branch)

        return self._write(body)

    def bind_worktree_run(self, branch: str, run_id: str) -> None:
        """Attach the generation that runs in the worktree (a continuation rebinds it)."""
        self._write(
            lambda: self._execute(
                "UPDATE worktrees SET run_id = ?, updated_at = ? WHERE branch = ?",
                (run_id, self._clock(), branch),
            )
        )

    def has_worktrees(self) -> bool:
        """Whether any agent ever got a worktree in this data root (cheap; skips the feature otherwise)."""
        return self._read(lambda: self._one("SELECT 1 FROM worktrees LIMIT 1") is not None)

    def get_worktree(self, branch: str) -> WorktreeRecord:
        """The row of `branch` (raises `TargetNotFoundError`)."""
        return self._read(lambda: self._worktree_row(branch))

    def worktree_for_run(self, run_id: str) -> WorktreeRecord | None:
        """The worktree generation `run_id` runs in, or `None`."""

        def body() -> WorktreeRecord | None:
            row = self._one("SELECT * FROM worktrees WHERE run_id = ?", (run_id,))
            return None if row is None else _worktree_from_row(row)

        return self._read(body)

    def worktree_at(self, path: Path) -> WorktreeRecord | None:
        """The worktree whose directory is `path` (or holds it), or `None`."""

        def body() -> WorktreeRecord | None:
            for row in self._all("SELECT * FROM worktrees WHERE state IN ('active', 'pending', 'merging')"):
                record = _worktree_from_row(row)
                if path == record.path or record.path in path.parents:
                    return record
            return None

        return self._read(body)

    def worktrees(self, *, states: Sequence[WorktreeState] = ()) -> tuple[WorktreeRecord, ...]:
        """Every worktree row (only those in `states` when given), oldest first."""

        def body() -> tuple[WorktreeRecord, ...]:
            rows = self._all("SELECT * FROM worktrees ORDER BY created_at, branch")
            found = (_worktree_from_row(row) for row in rows)
            return tuple(r for r in found if not states or r.state in states)

        return self._read(body)

    def worktree_events(self, branch: str) -> tuple[WorktreeEvent, ...]:
        """Every recorded outcome of `branch`, oldest first."""
        return self._read(
            lambda: tuple(
                _event_from_row(row)
                for row in self._all(
                    "SELECT * FROM worktree_events WHERE branch = ? ORDER BY event_id", (branch,)
                )
            )
        )

    def worktree_committed(self, branch: str, tip: str, detail: str) -> WorktreeRecord:
        """The agent ended: its work is committed at `tip` and awaits a merge (`pending`)."""

        def body() -> WorktreeRecord:
            record = self._worktree_row(branch)
            if record.state not in ("active", "pending"):
                raise InvalidRequestError(f"{branch} is {record.state}; its work cannot be committed again.")
            self._execute("UPDATE worktrees SET tip = ? WHERE branch = ?", (tip, branch))
            return self._worktree_state(record, "pending", "committed", detail)

        return self._write(body)

    def worktree_reactivated(self, branch: str, run_id: str) -> WorktreeRecord:
        """A continuation runs in the worktree again (`pending` → `active`)."""

        def body() -> WorktreeRecord:
            record = self._worktree_row(branch)
            if record.state not in ("active", "pending"):
                raise InvalidRequestError(f"{branch} was {record.state}; it cannot run again.")
            self._execute(
                "UPDATE worktrees SET state = 'active', run_id = ?, updated_at = ? WHERE branch = ?",
                (run_id, self._clock(), branch),
            )
            return self._worktree_row(branch)

        return self._write(body)

    def begin_worktree_merge(
        self, branch: str, *, head: str, commit: str, paths: Sequence[str]
    ) -> WorktreeRecord:
        """Journal a merge about to change the user's tree (`pending` → `merging`).

        Raises:
            ManagedAgentBusyError: Another merge into the same repository is in flight.
            InvalidRequestError: The worktree is not pending a merge.
        """

        def body() -> WorktreeRecord:
            record = self._worktree_row(branch)
            if record.state != "pending":
                raise InvalidRequestError(f"{branch} is {record.state}, not waiting for a merge.")
            other = self._one(
                "SELECT branch FROM worktrees WHERE repo = ? AND state = 'merging'", (str(record.repo),)
            )
            if other is not None:
                raise ManagedAgentBusyError(
                    f"{other['branch']} is being merged into {record.repo}; wait for it (or run `corral doctor`)."
                )
            self._execute(
                "UPDATE worktrees SET state = 'merging', merge_head = ?, merge_commit = ?, merge_paths = ?,"
                " updated_at = ? WHERE branch = ?",
                (head, commit, json.dumps(list(paths)), self._clock(), branch),
            )
            return self._worktree_row(branch)

        return self._write(body)

    def settle_worktree(
        self,
        branch: str,
        state: WorktreeState,
        outcome: WorktreeOutcome,
        detail: str,
        paths: Sequence[str] = (),
        *,
        expect: Sequence[WorktreeState] = (),
    ) -> WorktreeRecord:
        """Record an outcome and move the row to `state` (only from a state in `expect`, when given)."""

        def body() -> WorktreeRecord:
            record = self._worktree_row(branch)
            if expect and record.state not in expect:
                raise InvalidRequestError(f"{branch} is {record.state}; expected {' or '.join(expect)}.")
            return self._worktree_state(record, state, outcome, detail, paths)

        return self._write(body)
