"""The worktrees feature over real git repositories and a real store: isolate, commit, merge, discard,
crash recovery and orphans."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.orchestration import Repositories
from corral.orchestration.errors import InvalidRequestError, TargetAmbiguousError
from corral.orchestration.worktrees._git import NotAGitRepositoryError
from corral.orchestration.worktrees._merge import MergePlan, apply_merge, plan_merge
from corral.orchestration.worktrees._worktrees import Isolation, Worktrees, branch_name
from tests.orchestration.teams._git_helpers import GIT_ENV, git, make_repo

RUN_A = "0a1b2c3d-0000-4000-8000-000000000001"
RUN_B = "0b1b2c3d-0000-4000-8000-000000000002"


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(
        tmp_path / "repo",
        {"app.py": "a = 1\nb = 2\nc = 3\n", "README.md": "hello\n", ".gitignore": "build/\n"},
    )
    return root.resolve()


@pytest.fixture
def trees(tmp_path: Path) -> Iterator[Worktrees]:
    store = Repositories.open(tmp_path / "home" / "corral.db")
    try:
        yield Worktrees(store.worktrees, home=tmp_path / "home")
    finally:
        store.close()


def _status(repo: Path) -> str:
    return git(repo, "status", "--porcelain=v1", "--untracked-files=all")


def _writer_branch(
    repo: Path, trees: Worktrees, files: dict[str, str], *, ignore: str | None = None
) -> Isolation:
    """Agent `writer`'s finished branch, which writes `files` (relative path → text); with `ignore`,
    the user's `.gitignore` is that, committed before the branch starts."""
    if ignore is not None:
        (repo / ".gitignore").write_text(ignore)
        git(repo, "commit", "-q", "-am", "ignore")
    isolation = trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id=None)
    for name, text in files.items():
        path = isolation.cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    trees.finish(RUN_A, "the writer's branch")
    return isolation


def _head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def test_isolated_agent_sees_the_lead_tree_and_uncommitted_changes_without_touching_them(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    (repo / "app.py").write_text("a = 1\nb = 20\nc = 3\n")  # tracked modification, unstaged
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")
    (repo / "notes.txt").write_text("untracked\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("ignored\n")
    status_before = _status(repo)
    index_before = (repo / ".git" / "index").read_bytes()

    isolation = trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id="lead")

    record = isolation.record
    assert record.branch == "corral/writer-0a1b2c3d" == branch_name("writer", RUN_A)
    assert isolation.cwd == record.path
    assert repo not in record.path.parents and (tmp_path / "home") in record.path.parents
    assert (isolation.cwd / "app.py").read_text() == "a = 1\nb = 20\nc = 3\n"
    assert (isolation.cwd / "staged.txt").read_text() == "staged\n"
    assert (isolation.cwd / "notes.txt").read_text() == "untracked\n"
    assert not (isolation.cwd / "build").exists()
    assert record.snapshot and record.head == _head(repo)
    assert _status(repo) == status_before
    assert (repo / ".git" / "index").read_bytes() == index_before
    assert [e.outcome for e in trees.rows.worktree_events(record.branch)] == ["created"]


def test_isolation_maps_a_subdirectory_cwd_into_the_worktree(repo: Path, trees: Worktrees) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "m.py").write_text("x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pkg")
    isolation = trees.isolate(repo / "pkg", name="writer", run_id=RUN_A, owner_session_id=None)
    assert isolation.cwd == isolation.record.path / "pkg"
    assert not isolation.record.snapshot


def test_worktree_isolation_needs_a_git_repository_with_a_commit(tmp_path: Path, trees: Worktrees) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotAGitRepositoryError, match="not inside a git repository"):
        trees.isolate(plain, name="writer", run_id=RUN_A, owner_session_id=None)
    empty = make_repo(tmp_path / "empty")
    with pytest.raises(NotAGitRepositoryError, match="no commit yet"):
        trees.isolate(empty, name="writer", run_id=RUN_A, owner_session_id=None)
    assert isinstance(NotAGitRepositoryError("x"), InvalidRequestError)
    assert trees.rows.worktrees() == ()


def test_finish_commits_as_corral_with_the_summary_and_reports_the_diff_stat(
    repo: Path, trees: Worktrees
) -> None:
    isolation = trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id=None)
    (isolation.cwd / "app.py").write_text("a = 1\nb = 2\nc = 30\nd = 4\n")
    (isolation.cwd / "new.py").write_text("new\n")

    report = trees.finish(RUN_A, "Added d and new.py\n\nDetails here.")

    assert report is not None and report.merge == "pending"
    assert report.branch == isolation.record.branch and report.base == isolation.record.base
    assert report.stat.files == ("app.py", "new.py")
    assert (report.stat.insertions, report.stat.deletions) == (3, 1)
    assert report.stat.text() == "2 files changed, 3 insertions(+), 1 deletion(-)"
    log = git(repo, "log", "-1", "--format=%an <%ae>|%s|%b", report.branch)
    assert log.startswith("corral <corral@localhost>|writer: Added d and new.py|Details here.")
    assert "Corral-Run: " + RUN_A in log
    stored = trees.rows.get_worktree(report.branch)
    assert stored.state == "pending" and stored.tip == git(repo, "rev-parse", report.branch).strip()
    assert trees.finish("not-isolated", "x") is None


def test_a_writer_that_changed_nothing_reports_nothing_to_merge(repo: Path, trees: Worktrees) -> None:
    isolation = trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id=None)

    report = trees.finish(RUN_A, "looked around")

    assert report is not None and report.merge == "nothing" and report.details()["merge"] == "nothing"
    assert "pending" not in report.note() and "nothing to merge" in report.note()
    assert isolation.record.path.is_dir()  # kept for `continue`
    assert trees.report_of(RUN_A) == report
    assert trees.merge("writer").outcome == "nothing"


def test_merge_fast_forwards_and_removes_the_worktree_and_branch(repo: Path, trees: Worktrees) -> None:
    isolation = trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id=None)
    (isolation.cwd / "new.py").write_text("new\n")
    trees.finish(RUN_A, "new file")
    tip = git(repo, "rev-parse", isolation.record.branch).strip()

    outcome = trees.merge("writer")

    assert outcome.outcome == "merged" and outcome.ok and outcome.kind == "fast-forward"
    assert _head(repo) == tip == outcome.commit
    assert (repo / "new.py").read_text() == "new\n"
    assert _status(repo) == ""
    assert not isolation.record.path.exists()
    assert git(repo, "branch", "--list", "corral/*") == ""
    assert trees.rows.get_worktree(isolation.record.branch).state == "merged"
    assert [e.outcome for e in trees.rows.worktree_events(isolation.record.branch)] == [
        "created",
        "committed",
        "merged",
    ]
    again = trees.merge(isolation.record.branch)
    assert again.outcome == "nothing" and "already merged" in again.message


def test_merge_makes_a_merge_commit_when_head_moved(repo: Path, trees: Worktrees) -> None:
    isolation = trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id=None)
    (isolation.cwd / "app.py").write_text("a = 1\nb = 2\nc = 300\n")
    trees.finish(RUN_A, "c")
    (repo / "README.md").write_text("hello again\n")
    git(repo, "commit", "-q", "-am", "user's own commit")
    before = _head(repo)

    outcome = trees.merge(isolation.record.branch)

    assert outcome.kind == "merge"
    parents = git(repo, "log", "-1", "--format=%P").split()
    assert parents[0] == before and len(parents) == 2
    assert (repo / "app.py").read_text().endswith("c = 300\n")
    assert (repo / "README.md").read_text() == "hello again\n"


def test_two_writers_on_one_file_first_merges_second_conflicts_and_keeps_its_branch(
    repo: Path, trees: Worktrees
) -> None:
    first = trees.isolate(repo, name="alpha", run_id=RUN_A, owner_session_id=None)
    second = trees.isolate(repo, name="beta", run_id=RUN_B, owner_session_id=None)
    (first.cwd / "app.py").write_text("a = 1\nb = 'alpha'\nc = 3\n")
    (second.cwd / "app.py").write_text("a = 1\nb = 'beta'\nc = 3\n")
    trees.finish(RUN_A, "alpha's b")
    trees.finish(RUN_B, "beta's b")
    assert (repo / "app.py").read_text() == "a = 1\nb = 2\nc = 3\n"  # untouched until merged

    assert trees.merge("alpha").outcome == "merged"
    head = _head(repo)
    conflict = trees.merge("beta")

    assert conflict.outcome == "conflict" and not conflict.ok
    assert conflict.paths == ("app.py",) and "app.py" in conflict.message
    assert _head(repo) == head and _status(repo) == ""
    assert (repo / "app.py").read_text() == "a = 1\nb = 'alpha'\nc = 3\n"
    assert second.record.path.is_dir()
    assert git(repo, "branch", "--list", second.record.branch).strip().endswith(second.record.branch)
    stored = trees.rows.get_worktree(second.record.branch)
    assert stored.state == "pending"
    last = trees.rows.worktree_events(second.record.branch)[-1]
    assert (last.outcome, last.paths) == ("conflict", ("app.py",))


def test_merge_refuses_to_overwrite_uncommitted_changes_and_names_the_paths(
    repo: Path, trees: Worktrees
) -> None:
    isolation = trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id=None)
    (isolation.cwd / "app.py").write_text("a = 100\nb = 2\nc = 3\n")
    (isolation.cwd / "fresh.txt").write_text("agent\n")
    trees.finish(RUN_A, "edits")
    (repo / "app.py").write_text("a = 1\nb = 2\nc = 3\n# mine\n")  # the user's edit, uncommitted
    (repo / "fresh.txt").write_text("user's own\n")  # untracked, in the way

    refused = trees.merge("writer")

    assert refused.outcome == "refused" and refused.paths == ("app.py", "fresh.txt")
    assert "commit or stash" in refused.message
    assert (repo / "app.py").read_text().endswith("# mine\n")
    assert (repo / "fresh.txt").read_text() == "user's own\n"
    assert trees.rows.get_worktree(isolation.record.branch).state == "pending"

    (repo / "fresh.txt").unlink()
    git(repo, "checkout", "--", "app.py")
    assert trees.merge("writer").outcome == "merged"
    assert (repo / "app.py").read_text().startswith("a = 100\n")


def test_merge_refuses_to_replace_an_ignored_file_the_branch_adds(repo: Path, trees: Worktrees) -> None:
    """A branch that un-ignores `.env` and adds one must not replace the user's own ignored `.env`."""
    isolation = _writer_branch(
        repo,
        trees,
        {
            ".gitignore": "# nothing ignored\n",
            ".env": "API_KEY=agent-placeholder\n",
            "build/keep.txt": "agent\n",  # the user's build/ is ignored and holds a file of the same name
        },
        ignore="build/\n.env\n",
    )
    (repo / ".env").write_text("API_KEY=the-users-secret\n")  # ignored, untracked, the user's own
    (repo / "build").mkdir()
    (repo / "build" / "keep.txt").write_text("the user's build output\n")
    head = _head(repo)

    refused = trees.merge("writer")

    assert refused.outcome == "refused" and not refused.ok
    assert refused.paths == (".env", "build/keep.txt")
    assert ".env" in refused.message and "move" in refused.message
    assert (repo / ".env").read_text() == "API_KEY=the-users-secret\n"
    assert (repo / "build" / "keep.txt").read_text() == "the user's build output\n"
    assert (repo / ".gitignore").read_text() == "build/\n.env\n"
    assert _head(repo) == head
    assert trees.rows.get_worktree(isolation.record.branch).state == "pending"
    last = trees.rows.worktree_events(isolation.record.branch)[-1]
    assert (last.outcome, last.paths) == ("refused", (".env", "build/keep.txt"))

    # A file identical to the branch's is not lost by the merge: it goes through.
    (repo / ".env").write_text("API_KEY=agent-placeholder\n")
    (repo / "build" / "keep.txt").unlink()
    assert trees.merge("writer").outcome == "merged"
    assert (repo / ".env").read_text() == "API_KEY=agent-placeholder\n"
    assert (repo / "build" / "keep.txt").read_text() == "agent\n"


def test_merge_refuses_an_ignored_file_where_the_branch_adds_a_directory(
    repo: Path, trees: Worktrees
) -> None:
    _writer_branch(repo, trees, {".gitignore": "build/\n", "out/a.txt": "agent\n"}, ignore="build/\nout\n")
    (repo / "out").write_text("the user's ignored file\n")

    refused = trees.merge("writer")

    assert refused.outcome == "refused" and refused.paths == ("out",)
    assert (repo / "out").read_text() == "the user's ignored file\n"


def test_merge_refuses_a_directory_of_ignored_files_where_the_branch_adds_a_file(
    repo: Path, trees: Worktrees
) -> None:
    _writer_branch(repo, trees, {".gitignore": "# nothing ignored\n", "build": "now a file\n"})
    (repo / "build" / "deep").mkdir(parents=True)
    (repo / "build" / "deep" / "cache.bin").write_text("the user's ignored cache\n")

    refused = trees.merge("writer")

    assert refused.outcome == "refused" and refused.paths == ("build/deep/cache.bin",)
    assert (repo / "build" / "deep" / "cache.bin").read_text() == "the user's ignored cache\n"


def test_an_ignored_file_that_appears_after_the_plan_stops_the_merge(repo: Path, trees: Worktrees) -> None:
    isolation = _writer_branch(
        repo, trees, {".gitignore": "build/\n", ".env": "placeholder\n"}, ignore="build/\n.env\n"
    )
    plan = plan_merge(
        repo, branch=isolation.record.branch, base=isolation.record.base, snapshot=False, message="m"
    )
    assert isinstance(plan, MergePlan)
    (repo / ".env").write_text("the user's secret\n")

    blocked = apply_merge(plan)

    assert blocked is not None and blocked.paths == (".env",)
    assert (repo / ".env").read_text() == "the user's secret\n"
    assert _head(repo) == plan.head


def test_merge_keeps_unrelated_uncommitted_changes(repo: Path, trees: Worktrees) -> None:
    isolation = trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id=None)
    (isolation.cwd / "app.py").write_text("a = 100\nb = 2\nc = 3\n")
    trees.finish(RUN_A, "a")
    (repo / "README.md").write_text("user's draft\n")
    (repo / "scratch.txt").write_text("scratch\n")
    git(repo, "add", "scratch.txt")

    assert trees.merge("writer").outcome == "merged"

    assert (repo / "README.md").read_text() == "user's draft\n"
    assert git(repo, "diff", "--cached", "--name-only").split() == ["scratch.txt"]
    assert (repo / "app.py").read_text().startswith("a = 100\n")


def test_a_writer_started_on_uncommitted_changes_merges_only_its_own_work(
    repo: Path, trees: Worktrees
) -> None:
    (repo / "app.py").write_text("a = 1\nb = 2\nc = 3\nwip = True\n")  # the user's work in progress
    isolation = trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id=None)
    assert (isolation.cwd / "app.py").read_text().endswith("wip = True\n")
    (isolation.cwd / "README.md").write_text("hello from the agent\n")
    report = trees.finish(RUN_A, "readme")
    assert report is not None and report.stat.files == ("README.md",)
    head = _head(repo)

    outcome = trees.merge("writer")

    assert outcome.outcome == "merged" and outcome.kind == "squash"
    assert git(repo, "log", "-1", "--format=%P").split() == [head]
    assert (repo / "README.md").read_text() == "hello from the agent\n"
    assert (repo / "app.py").read_text().endswith("wip = True\n")  # still there, still uncommitted
    assert git(repo, "show", "HEAD:app.py") == "a = 1\nb = 2\nc = 3\n"
    assert _status(repo).split() == ["M", "app.py"]


def test_a_writer_that_edited_the_users_uncommitted_file_waits_for_the_user_to_commit(
    repo: Path, trees: Worktrees
) -> None:
    (repo / "app.py").write_text("a = 1\nb = 2\nc = 3\nwip = True\n")
    isolation = trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id=None)
    (isolation.cwd / "app.py").write_text("a = 'agent'\nb = 2\nc = 3\nwip = True\n")
    trees.finish(RUN_A, "a")

    refused = trees.merge("writer")
    assert refused.outcome == "refused" and refused.paths == ("app.py",)
    assert (repo / "app.py").read_text() == "a = 1\nb = 2\nc = 3\nwip = True\n"

    git(repo, "commit", "-q", "-am", "wip")
    assert trees.merge("writer").outcome == "merged"
    assert (repo / "app.py").read_text() == "a = 'agent'\nb = 2\nc = 3\nwip = True\n"


def test_discard_removes_the_branch_and_worktree_and_is_recorded(repo: Path, trees: Worktrees) -> None:
    isolation = trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id=None)
    (isolation.cwd / "x.txt").write_text("x\n")
    with pytest.raises(InvalidRequestError, match="still running"):
        trees.discard("writer")
    trees.finish(RUN_A, "x")

    outcome = trees.discard("writer")

    assert outcome.outcome == "discarded"
    assert not isolation.record.path.exists() and git(repo, "branch", "--list", "corral/*") == ""
    assert not (repo / "x.txt").exists()
    assert trees.rows.get_worktree(isolation.record.branch).state == "discarded"
    again = trees.merge(isolation.record.branch)  # settled: nothing left to merge, not an error
    assert again.ok and again.outcome == "nothing"
    assert again.message == f"{isolation.record.branch} was discarded; there is nothing to merge."
    assert trees.merge("writer").ok


def test_a_name_with_two_pending_branches_must_be_named_by_branch(repo: Path, trees: Worktrees) -> None:
    trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id=None)
    trees.isolate(repo, name="writer", run_id=RUN_B, owner_session_id=None)
    with pytest.raises(TargetAmbiguousError, match="corral/writer-0a1b2c3d"):
        trees.merge("writer")


_DRIVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from corral.orchestration import Repositories
    from corral.orchestration.worktrees._worktrees import Worktrees
    home = Path(sys.argv[1])
    with Repositories.open(home / "corral.db") as store:
        print(Worktrees(store.worktrees, home=home).merge(sys.argv[2]).outcome)
    """
)


@pytest.mark.parametrize(
    ("point", "left"),
    [
        ("worktree_merge_journaled", "old"),
        ("worktree_merge_tree", "merged"),
        ("worktree_merge_ref", "merged"),
    ],
)
def test_sigkill_during_a_merge_leaves_the_old_or_the_merged_tree_and_the_next_run_says_which(
    repo: Path, trees: Worktrees, tmp_path: Path, point: str, left: str
) -> None:
    isolation = trees.isolate(repo, name="writer", run_id=RUN_A, owner_session_id=None)
    (isolation.cwd / "app.py").write_text("a = 'merged'\nb = 2\nc = 3\n")
    trees.finish(RUN_A, "a")
    (repo / "README.md").write_text("user's uncommitted draft\n")
    old_head = _head(repo)

    driver = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(tmp_path / "home"), "writer"],
        env={**os.environ, "CORRAL_FAULTS": point},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert driver.returncode == -9, driver.stderr
    assert trees.rows.get_worktree(isolation.record.branch).state == "merging"

    notes = trees.recover()

    assert len(notes) == 1
    record = trees.rows.get_worktree(isolation.record.branch)
    if left == "old":
        assert "before it changed anything" in notes[0]
        assert _head(repo) == old_head and (repo / "app.py").read_text() == "a = 1\nb = 2\nc = 3\n"
        assert record.state == "pending"
        assert trees.rows.worktree_events(record.branch)[-1].outcome == "interrupted"
        assert trees.merge("writer").outcome == "merged"
    else:
        assert "now complete" in notes[0]
        assert record.state == "merged" and _head(repo) != old_head
        assert not isolation.record.path.exists()
    assert (repo / "app.py").read_text() == "a = 'merged'\nb = 2\nc = 3\n"
    assert (repo / "README.md").read_text() == "user's uncommitted draft\n"
    assert _status(repo).split() == ["M", "README.md"]
    assert trees.recover() == []


def test_orphans_are_listed_with_disk_use_and_reap_keeps_unmerged_work_without_force(
    repo: Path, trees: Worktrees
) -> None:
    # 1. a running agent's worktree: not an orphan while its run is live
    live = trees.isolate(repo, name="live", run_id=RUN_A, owner_session_id=None)
    # 2. an agent that died without committing: its uncommitted work is unmerged
    dead = trees.isolate(repo, name="dead", run_id=RUN_B, owner_session_id=None)
    (dead.cwd / "half.txt").write_text("half-written\n")
    # 3. a corral branch with no record at all, already merged into HEAD (nothing to lose)
    git(repo, "branch", "corral/stray-12345678")
    live_runs = frozenset({RUN_A})

    orphans = trees.orphans(live_runs=live_runs)

    by_branch = {o.branch: o for o in orphans}
    assert set(by_branch) == {dead.record.branch, "corral/stray-12345678"}
    assert by_branch[dead.record.branch].unmerged and by_branch[dead.record.branch].bytes > 0
    assert not by_branch["corral/stray-12345678"].unmerged
    assert {u.record.branch for u in trees.usage()} == {live.record.branch, dead.record.branch}
    assert all(u.bytes > 0 for u in trees.usage())

    removed, kept = trees.reap(live_runs=live_runs)
    assert [o.branch for o in removed] == ["corral/stray-12345678"]
    assert [o.branch for o in kept] == [dead.record.branch]
    assert (dead.cwd / "half.txt").exists() and live.cwd.exists()

    removed, kept = trees.reap(live_runs=live_runs, force=True)
    assert [o.branch for o in removed] == [dead.record.branch] and kept == ()
    assert not dead.record.path.exists() and live.record.path.exists()
    assert trees.rows.get_worktree(dead.record.branch).state == "discarded"
    assert trees.rows.worktree_events(dead.record.branch)[-1].outcome == "reaped"
