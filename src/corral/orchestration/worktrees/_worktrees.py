"""`Worktrees`: the feature's one object: isolate an agent, commit its work, merge or discard it,
settle interrupted merges, find and reap orphans.

Git work is synchronous (subprocesses); async callers run these methods in a
thread. Every outcome is written to the store (`worktree_events`) before the
method returns, and a merge is journaled in the store before the user's tree
changes (see `_merge.py` for why the two git steps are each safe).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from corral._paths import corral_home, ensure_private_dir
from corral.orchestration.errors import InvalidRequestError, TargetAmbiguousError, TargetNotFoundError
from corral.orchestration.kernel._faults import fault_point
from corral.orchestration.worktrees._git import GitError, git, is_ancestor, repo_toplevel, rev_parse
from corral.orchestration.worktrees._merge import (
    MergeBlocked,
    MergeKind,
    apply_merge,
    plan_merge,
    settle_merge,
)
from corral.orchestration.worktrees._tree import (
    DiffStat,
    commit_worktree,
    create_worktree,
    diff_stat,
    disk_usage,
    remove_worktree,
)
from corral.orchestration.worktrees.records import WorktreeOutcome, WorktreeRecord

if TYPE_CHECKING:
    from corral.orchestration.worktrees._repository import Worktrees as WorktreeRows

__all__ = [
    "Isolation",
    "MergeOutcome",
    "Orphan",
    "WorktreeReport",
    "WorktreeUsage",
    "Worktrees",
    "branch_name",
]

BRANCH_PREFIX = "corral/"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def branch_name(name: str, run_id: str) -> str:
    """`corral/<label or name>-<short run id>` (the name's characters git dislikes become `-`)."""
    slug = _UNSAFE.sub("-", name).strip("-")[:64] or "agent"
    return f"{BRANCH_PREFIX}{slug}-{run_id.replace('-', '')[:8]}"


@dataclass(frozen=True, slots=True)
class Isolation:
    """An isolated agent's worktree, made before its generation starts."""

    record: WorktreeRecord
    """The stored row (state `active`)."""
    cwd: Path
    """The agent's working directory: the lead's cwd mapped into the worktree."""


@dataclass(frozen=True, slots=True)
class WorktreeReport:
    """What an isolated agent's result or report carries about its branch."""

    branch: str
    """The agent's branch."""
    base: str
    """The commit it started from."""
    stat: DiffStat
    """What it changed since `base`."""
    merge: Literal["pending", "nothing", "merged", "discarded"]
    """`pending` until `corral merge` (or acceptance with `merge = "on-accept"`) applies it;
    `nothing` when the branch holds no change since its base (there is nothing to merge)."""

    def details(self) -> dict[str, object]:
        """The fields a result's or report's details carry: `branch`, `base`, `diffStat`, `merge`."""
        return {
            "branch": self.branch,
            "base": self.base,
            "diffStat": {
                "files": list(self.stat.files),
                "insertions": self.stat.insertions,
                "deletions": self.stat.deletions,
                "summary": self.stat.text(),
            },
            "merge": self.merge,
        }

    def note(self) -> str:
        """One line for the result text: where the work is and how to take it."""
        if self.merge == "nothing":
            return (
                f"No changes on branch {self.branch}: nothing to merge (its worktree is kept for `continue`; "
                f"`corral merge --discard {self.branch}` removes it)."
            )
        if self.merge != "pending":
            return f"Branch {self.branch}: {self.merge}."
        return (
            f"Work committed on branch {self.branch} ({self.stat.text()}); merge pending: "
            f"`corral merge {self.branch}` applies it to your working tree, `--discard` drops it."
        )


@dataclass(frozen=True, slots=True)
class MergeOutcome:
    """The result of one `merge` or `discard` (already recorded in the store)."""

    branch: str
    """The agent's branch."""
    outcome: WorktreeOutcome
    """`merged`, `nothing`, `conflict`, `refused` or `discarded`."""
    message: str
    """One sentence for the user."""
    paths: tuple[str, ...] = ()
    """Conflicting paths (`conflict`) or paths with uncommitted changes in the way (`refused`)."""
    commit: str | None = None
    """The lead's new HEAD after a merge."""
    kind: MergeKind | None = None
    """How it merged: `fast-forward`, `merge` or `squash`."""

    @property
    def ok(self) -> bool:
        """Whether the branch is settled (merged, had nothing to merge, or discarded)."""
        return self.outcome in ("merged", "nothing", "discarded")


@dataclass(frozen=True, slots=True)
class Orphan:
    """A worktree or `corral/*` branch no running agent and no pending merge accounts for."""

    repo: Path
    """The repository it belongs to."""
    branch: str | None
    """Its branch, when there is one."""
    path: Path | None
    """Its worktree directory, when there is one."""
    reason: str
    """Why it is an orphan."""
    unmerged: bool
    """Whether removing it would lose work (uncommitted changes, or commits HEAD does not hold)."""
    bytes: int
    """Disk use of its worktree directory."""


@dataclass(frozen=True, slots=True)
class WorktreeUsage:
    """A kept worktree and the disk it uses."""

    record: WorktreeRecord
    """Its row."""
    bytes: int
    """Bytes its directory uses (0 when the directory is gone)."""


class Worktrees:
    """Per-agent git worktrees over their rows in the orchestration database."""

    def __init__(self, rows: WorktreeRows, *, home: Path | None = None) -> None:
        """Args:
        rows: The worktrees' repository (their rows, events and merge journal).
        home: The data root worktrees go under (default `corral_home()`).
        """
        self.rows = rows
        self.home = home or corral_home()

    # --- creation and commit -------------------------------------------------------------------

    def root_for(self, repo: Path) -> Path:
        """Where `repo`'s agent worktrees go: under the data root, or the git dir if that is inside `repo`."""
        home = self.home.resolve()
        if home == repo or repo in home.parents:
            common = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir").stdout.strip())
            return common / "corral-worktrees"
        digest = hashlib.sha256(str(repo).encode()).hexdigest()[:8]
        return home / "worktrees" / f"{_UNSAFE.sub('-', repo.name) or 'repo'}-{digest}"

    def isolate(self, cwd: Path, *, name: str, run_id: str, owner_session_id: str | None) -> Isolation:
        """Make the worktree and branch an isolated agent runs in (before its generation starts).

        Raises:
            NotAGitRepositoryError: `cwd` is not in a git repository with a commit.
            GitError: git failed; nothing is left behind.
        """
        repo = repo_toplevel(cwd)
        branch = branch_name(name, run_id)
        root = ensure_private_dir(self.root_for(repo))
        path = root / branch.removeprefix(BRANCH_PREFIX)
        made = create_worktree(repo, path=path, branch=branch)
        try:
            record = self.rows.insert_worktree(
                WorktreeRecord(
                    branch=branch,
                    name=name,
                    repo=repo,
                    path=path,
                    head=made.head,
                    base=made.base,
                    state="active",
                    created_at=0,
                    updated_at=0,
                    run_id=run_id,
                    owner_session_id=owner_session_id,
                )
            )
        except BaseException:
            remove_worktree(repo, path, branch)
            raise
        inner = path / cwd.resolve().relative_to(repo)
        inner.mkdir(parents=True, exist_ok=True)
        return Isolation(record=record, cwd=inner)

    def finish(self, run_id: str, summary: str) -> WorktreeReport | None:
        """Commit an ended agent's work on its branch; `None` when the run is not isolated.

        Args:
            run_id: The generation that ended.
            summary: Its result or report summary (the commit message).
        """
        record = self.rows.worktree_for_run(run_id)
        if record is None:
            return None
        if record.state == "merged" or record.state == "discarded":
            return WorktreeReport(record.branch, record.base, DiffStat((), 0, 0), record.state)
        if record.state in ("active", "pending") and record.path.is_dir():
            # Also when pending: a teams repair attempt commits again after its first report.
            tip = commit_worktree(record.path, _commit_message(record, summary))
        else:
            tip = rev_parse(record.repo, f"refs/heads/{record.branch}^{{commit}}")
        stat = diff_stat(record.repo, record.base, tip)
        if record.state == "active" or (record.state == "pending" and tip != record.tip):
            self.rows.worktree_committed(
                record.branch, tip, f"committed {tip[:12]} on {record.branch}: {stat.text()}"
            )
        return WorktreeReport(record.branch, record.base, stat, "pending" if stat.files else "nothing")

    def abandon(self, branch: str, reason: str) -> None:
        """Remove a worktree whose agent never started (a failed launch); recorded as discarded."""
        record = self.rows.get_worktree(branch)
        if record.state != "active":
            return
        remove_worktree(record.repo, record.path, record.branch)
        self.rows.settle_worktree(branch, "discarded", "discarded", f"discarded {branch}: {reason}")

    async def work_done(self, run_id: str, summary: str) -> str | None:
        """`ManagedChild.on_work_done`: commit an isolated run's work (in a thread); its result's line."""
        if not self.rows.has_worktrees() or self.rows.worktree_for_run(run_id) is None:
            return None
        report = await asyncio.to_thread(self.finish, run_id, summary)
        return None if report is None else report.note()

    def report_of(self, run_id: str) -> WorktreeReport | None:
        """The branch facts of a run (no commit made), or `None` when it is not isolated."""
        record = self.rows.worktree_for_run(run_id)
        if record is None:
            return None
        if record.state == "merged" or record.state == "discarded":
            return WorktreeReport(record.branch, record.base, DiffStat((), 0, 0), record.state)
        tip = record.tip or record.base
        stat = diff_stat(record.repo, record.base, tip)
        return WorktreeReport(record.branch, record.base, stat, "pending" if stat.files else "nothing")

    # --- lookup --------------------------------------------------------------------------------

    def resolve(self, ref: str) -> WorktreeRecord:
        """The worktree `ref` names: a branch, or an agent's label or name (its unsettled worktree).

        Raises:
            InvalidRequestError: `ref` is blank.
            TargetNotFoundError: Nothing matches.
            TargetAmbiguousError: The name has several unsettled worktrees.
        """
        ref = ref.strip()
        if not ref:
            raise InvalidRequestError("Name an agent (label or team name) or its corral/... branch.")
        rows = self.rows.worktrees()
        exact = [r for r in rows if r.branch == ref or r.branch == BRANCH_PREFIX + ref]
        if exact:
            return exact[0]
        named = [r for r in rows if r.name == ref]
        open_rows = [r for r in named if r.state in ("active", "pending", "merging")]
        if len(open_rows) > 1:
            raise TargetAmbiguousError(
                f"{ref} has {len(open_rows)} unmerged branches ({', '.join(r.branch for r in open_rows)}); name the branch."
            )
        if open_rows:
            return open_rows[0]
        if named:
            return named[-1]
        raise TargetNotFoundError(
            f"No corral worktree for {ref!r}; `corral doctor` lists the branches awaiting a merge."
        )

    # --- merge and discard ---------------------------------------------------------------------

    def merge(self, ref: str) -> MergeOutcome:
        """Apply an agent's branch to the lead's working tree (see `_merge.py`); record the outcome.

        Raises:
            InvalidRequestError: The agent is still running, or its repository is gone.
            ManagedAgentBusyError: Another merge into the repository is in flight.
        """
        self.recover()
        record = self.resolve(ref)
        if record.state == "merged":
            return MergeOutcome(record.branch, "nothing", f"{record.branch} is already merged.")
        if record.state == "discarded":
            return MergeOutcome(
                record.branch, "nothing", f"{record.branch} was discarded; there is nothing to merge."
            )
        if record.state == "active":
            raise InvalidRequestError(
                f"{record.name} is still running in {record.branch}; wait for its result (or stop it), then merge."
            )
        if not record.repo.is_dir():
            raise InvalidRequestError(
                f"The repository {record.repo} is gone; discard {record.branch} instead."
            )
        subject = git(record.repo, "log", "-1", "--format=%s", f"refs/heads/{record.branch}").stdout.strip()
        plan = plan_merge(
            record.repo,
            branch=record.branch,
            base=record.base,
            snapshot=record.snapshot,
            message=f"corral: merge {record.branch}\n\n{subject}\n",
        )
        if isinstance(plan, MergeBlocked):
            return self._blocked(record, plan)
        self.rows.begin_worktree_merge(record.branch, head=plan.head, commit=plan.commit, paths=plan.paths)
        fault_point("worktree_merge_journaled")
        blocked = apply_merge(plan)
        if blocked is not None:
            self.rows.settle_worktree(record.branch, "pending", "refused", blocked.message, blocked.paths)
            return MergeOutcome(record.branch, "refused", blocked.message, blocked.paths)
        fault_point("worktree_merge_ref")
        message = f"merged {record.branch} into {record.repo} ({plan.kind}, {len(plan.paths)} file(s)); HEAD is {plan.commit[:12]}"
        self.rows.settle_worktree(record.branch, "merged", "merged", message, plan.paths, expect=("merging",))
        return MergeOutcome(
            record.branch, "merged", self._cleanup(record, message), commit=plan.commit, kind=plan.kind
        )

    def _blocked(self, record: WorktreeRecord, blocked: MergeBlocked) -> MergeOutcome:
        if blocked.kind == "nothing":
            self.rows.settle_worktree(record.branch, "merged", "nothing", blocked.message)
            return MergeOutcome(record.branch, "nothing", self._cleanup(record, blocked.message))
        outcome: WorktreeOutcome = "conflict" if blocked.kind == "conflict" else "refused"
        self.rows.settle_worktree(record.branch, "pending", outcome, blocked.message, blocked.paths)
        return MergeOutcome(record.branch, outcome, blocked.message, blocked.paths)

    def _cleanup(self, record: WorktreeRecord, message: str) -> str:
        try:
            remove_worktree(record.repo, record.path, record.branch)
        except GitError as exc:
            return f"{message} (the worktree could not be removed: {exc}; `corral agents reap` retries)"
        return message

    def discard(self, ref: str) -> MergeOutcome:
        """Remove an agent's worktree and branch without merging; record it.

        Raises:
            InvalidRequestError: The agent is still running, or a merge of it is in flight.
        """
        self.recover()
        record = self.resolve(ref)
        if record.state == "active":
            raise InvalidRequestError(
                f"{record.name} is still running in {record.branch}; stop it first, then discard."
            )
        if record.state in ("merged", "discarded"):
            return MergeOutcome(record.branch, "nothing", f"{record.branch} is already {record.state}.")
        if record.repo.is_dir():
            remove_worktree(record.repo, record.path, record.branch)
        message = f"discarded {record.branch} and its worktree"
        self.rows.settle_worktree(record.branch, "discarded", "discarded", message, expect=("pending",))
        return MergeOutcome(record.branch, "discarded", message)

    def recover(self) -> list[str]:
        """Settle merges a killed process left journaled; one sentence per merge, saying which tree is left."""
        notes: list[str] = []
        for record in self.rows.worktrees(states=("merging",)):
            assert record.merge_head is not None and record.merge_commit is not None
            try:
                state = settle_merge(
                    record.repo, head=record.merge_head, commit=record.merge_commit, paths=record.merge_paths
                )
            except GitError as exc:  # the repository is gone or broken: say so, settle the others
                notes.append(f"The interrupted merge of {record.branch} could not be settled: {exc}")
                continue
            if state == "merged":
                note = (
                    f"The merge of {record.branch} was interrupted after it changed your files; it is now complete "
                    f"(HEAD is {record.merge_commit[:12]})."
                )
                self.rows.settle_worktree(
                    record.branch, "merged", "merged", note, record.merge_paths, expect=("merging",)
                )
                notes.append(self._cleanup(record, note))
            else:
                note = (
                    f"The merge of {record.branch} was interrupted before it changed anything; your tree is as it "
                    f"was. Run `corral merge {record.branch}` again."
                    if state == "old"
                    else f"The merge of {record.branch} was interrupted and HEAD has moved since; nothing was changed. "
                    f"Run `corral merge {record.branch}` again."
                )
                self.rows.settle_worktree(record.branch, "pending", "interrupted", note, expect=("merging",))
                notes.append(note)
        return notes

    # --- hygiene -------------------------------------------------------------------------------

    def usage(self) -> tuple[WorktreeUsage, ...]:
        """Every kept worktree (running or awaiting a merge) and its disk use."""
        return tuple(
            WorktreeUsage(r, disk_usage(r.path) if r.path.is_dir() else 0)
            for r in self.rows.worktrees(states=("active", "pending", "merging"))
        )

    def orphans(self, *, live_runs: frozenset[str], repos: tuple[Path, ...] = ()) -> tuple[Orphan, ...]:
        """Worktrees and `corral/*` branches nothing accounts for.

        Args:
            live_runs: Run ids of generations still running (their `active` worktrees are not orphans).
            repos: Repositories to scan besides those the store knows (e.g. the current one).
        """
        records = self.rows.worktrees()
        by_branch = {r.branch: r for r in records}
        known_repos = {r.repo for r in records} | set(repos)
        found: list[Orphan] = []
        for repo in sorted(known_repos):
            if not repo.is_dir():
                continue
            root = self.root_for(repo)
            every = _all_worktrees(repo)
            worktree_paths = {p: b for p, b in every.items() if root in p.parents}
            # A branch checked out somewhere else (another data root's worktree, or by the user) is not ours to reap.
            elsewhere = {b for p, b in every.items() if b and root not in p.parents}
            branches = _corral_branches(repo) - elsewhere
            seen: set[str] = set()
            for branch in sorted(branches | {b for b in worktree_paths.values() if b}):
                seen.add(branch)
                path = next((p for p, b in worktree_paths.items() if b == branch), None)
                record = by_branch.get(branch)
                reason = _orphan_reason(record, live_runs)
                if reason is None:
                    continue
                found.append(self._orphan(repo, branch if branch in branches else None, path, reason, record))
            for path, branch in worktree_paths.items():
                if branch == "" and path.is_dir():
                    found.append(self._orphan(repo, None, path, "a corral worktree without a branch", None))
        for record in records:
            if record.state in ("active", "pending") and record.repo.is_dir() and not record.path.is_dir():
                branch_there = record.branch in _corral_branches(record.repo)
                if not branch_there:
                    found.append(
                        Orphan(
                            record.repo,
                            None,
                            None,
                            f"{record.branch}: worktree and branch are gone",
                            False,
                            0,
                        )
                    )
        return tuple(found)

    def _orphan(
        self, repo: Path, branch: str | None, path: Path | None, reason: str, record: WorktreeRecord | None
    ) -> Orphan:
        unmerged = False
        if record is not None and record.state in ("merged", "discarded"):
            unmerged = False  # the user settled it already; only leftovers remain
        else:
            if path is not None and path.is_dir():
                status = git(path, "status", "--porcelain", "--untracked-files=normal", check=False)
                unmerged = status.returncode != 0 or bool(status.stdout.strip())
            if branch is not None and not unmerged:
                tip = rev_parse(repo, f"refs/heads/{branch}^{{commit}}")
                base = record.base if record is not None else None
                unmerged = tip != base and not is_ancestor(repo, tip, "HEAD")
        size = disk_usage(path) if path is not None and path.is_dir() else 0
        return Orphan(repo, branch, path, reason, unmerged, size)

    def reap(
        self, *, live_runs: frozenset[str], force: bool = False, repos: tuple[Path, ...] = ()
    ) -> tuple[tuple[Orphan, ...], tuple[Orphan, ...]]:
        """Remove orphans: `(removed, kept)`; one with unmerged work is kept unless `force`."""
        removed: list[Orphan] = []
        kept: list[Orphan] = []
        for orphan in self.orphans(live_runs=live_runs, repos=repos):
            if orphan.unmerged and not force:
                kept.append(orphan)
                continue
            if orphan.path is not None or orphan.branch is not None:
                remove_worktree(orphan.repo, orphan.path or Path("/nonexistent"), orphan.branch)
            record = next(
                (r for r in self.rows.worktrees() if orphan.branch is not None and r.branch == orphan.branch),
                None,
            )
            if record is None and orphan.branch is None and orphan.path is None:
                record = next(
                    (r for r in self.rows.worktrees() if orphan.reason.startswith(r.branch + ":")), None
                )
            if record is not None and record.state in ("active", "pending"):
                self.rows.settle_worktree(
                    record.branch, "discarded", "reaped", f"reaped {record.branch}: {orphan.reason}"
                )
            removed.append(orphan)
        return tuple(removed), tuple(kept)


def _commit_message(record: WorktreeRecord, summary: str) -> str:
    lines = [line.strip() for line in summary.strip().splitlines() if line.strip()]
    subject = (lines[0] if lines else "no summary")[:72]
    body = "\n".join(lines[1:])[:4000]
    trailer = f"Corral-Agent: {record.name}\nCorral-Run: {record.run_id or '-'}"
    return f"{record.name}: {subject}\n\n{body + chr(10) + chr(10) if body else ''}{trailer}\n"


def _corral_branches(repo: Path) -> set[str]:
    output = git(repo, "for-each-ref", "--format=%(refname:short)", f"refs/heads/{BRANCH_PREFIX}").stdout
    return {line for line in output.splitlines() if line}


def _all_worktrees(repo: Path) -> dict[Path, str]:
    """Every worktree of `repo`: path → branch (`""` when detached)."""
    output = git(repo, "worktree", "list", "--porcelain").stdout
    found: dict[Path, str] = {}
    path: Path | None = None
    branch = ""
    for line in [*output.splitlines(), ""]:
        if line.startswith("worktree "):
            path, branch = Path(line.removeprefix("worktree ")), ""
        elif line.startswith("branch ") and path is not None:
            branch = line.removeprefix("branch refs/heads/")
        elif not line and path is not None:
            found[path] = branch
            path = None
    return found


def _orphan_reason(record: WorktreeRecord | None, live_runs: frozenset[str]) -> str | None:
    if record is None:
        return "no corral record (left by a crash, or by another data root)"
    if record.state in ("merged", "discarded"):
        return f"already {record.state}; leftovers of an interrupted clean-up"
    if record.state == "active" and (record.run_id is None or record.run_id not in live_runs):
        return "its agent is no longer running and never committed its work"
    return None
