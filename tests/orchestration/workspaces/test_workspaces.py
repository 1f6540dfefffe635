"""Workspaces of remote agents over real git: the shared-filesystem check, snapshot → unpack → edit →
patch → apply, conflicts and claims refused whole with the workspace unchanged."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from pathlib import Path

import pytest

from corral.orchestration.errors import InvalidRequestError
from corral.orchestration.teams.roster.records import FileClaimRecord
from corral.orchestration.workspaces._apply import apply_patch
from corral.orchestration.workspaces._snapshot import (
    WorkspaceNotSharedError,
    check_shared,
    collect_patch,
    discard,
    identify,
    needs_snapshot,
    take_snapshot,
    unpack,
)
from corral.orchestration.workspaces.records import SharedCheck, Unpacked
from tests.orchestration.teams._git_helpers import GIT_ENV, git, make_repo

RUN = "0a1b2c3d-0000-4000-8000-000000000001"
OTHER = "0b1b2c3d-0000-4000-8000-000000000002"
PNG = bytes(range(256)) * 8 + b"\x00\r\n\x00"  # binary: NULs, CR LF, every byte value


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(
        tmp_path / "lead",
        {
            "app.py": "a = 1\nb = 2\nc = 3\n",
            "README.md": "hello\n",
            ".gitignore": "build/\n*.log\n",
            "src/lib.py": "def f():\n    return 1\n",
            "old.txt": "to be deleted\n",
        },
    )
    (root / "logo.png").write_bytes(PNG)
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("src/lib.py", root / "lib-link")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "binary, executable, symlink")
    return root.resolve()


def _dirty(repo: Path) -> None:
    """Uncommitted changes of every kind, and ignored files that must not travel."""
    (repo / "app.py").write_text("a = 1\nb = 20\nc = 3\n")  # modified, unstaged
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")  # staged
    (repo / "notes.txt").write_text("untracked\n")  # untracked, not ignored
    (repo / "data.bin").write_bytes(PNG[::-1])  # untracked binary
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("ignored\n")
    (repo / "debug.log").write_text("ignored\n")


def _tree_state(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under `root` (outside .git): content digest and mode bits, symlinks by target."""
    state: dict[str, tuple[str, int]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                state[rel] = ("-> " + os.readlink(path), 0)
            else:
                state[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode & 0o111)
    return state


def _index(repo: Path) -> bytes:
    return (repo / ".git" / "index").read_bytes()


def _node(tmp_path: Path) -> Path:
    return tmp_path / "node" / "workspaces"


def test_a_snapshot_carries_head_and_every_uncommitted_change_and_unpacks_identically(
    repo: Path, tmp_path: Path
) -> None:
    _dirty(repo)
    index_before = _index(repo)
    status_before = git(repo, "status", "--porcelain=v1", "--untracked-files=all")

    snapshot = pickle.loads(pickle.dumps(take_snapshot(repo)))  # what crosses the network
    unpacked = unpack(snapshot, _node(tmp_path))

    assert snapshot.head == git(repo, "rev-parse", "HEAD").strip()
    assert snapshot.base != snapshot.head  # a commit of the uncommitted changes
    lead = {k: v for k, v in _tree_state(repo).items() if not k.startswith("build/") and k != "debug.log"}
    assert _tree_state(unpacked.root) == lead  # binary, exec bit, symlink, staged, untracked alike
    assert not (unpacked.root / "build").exists() and not (unpacked.root / "debug.log").exists()
    assert unpacked.root.stat().st_mode & 0o777 == 0o700
    assert git(unpacked.root, "status", "--porcelain").strip() == ""  # a clean private repository
    assert git(unpacked.root, "rev-parse", "HEAD^{tree}").strip() == snapshot.tree
    # The lead's workspace is untouched by taking the snapshot.
    assert _index(repo) == index_before
    assert git(repo, "status", "--porcelain=v1", "--untracked-files=all") == status_before


def test_round_trip_a_write_agents_changes_come_back_as_a_patch_and_land_in_the_workspace(
    repo: Path, tmp_path: Path
) -> None:
    _dirty(repo)
    index_before = _index(repo)
    head_before = git(repo, "rev-parse", "HEAD")
    unpacked = unpack(take_snapshot(repo), _node(tmp_path))
    node = unpacked.root
    # The agent edits text and binary files, creates, deletes, and commits part of its work.
    (node / "app.py").write_text("a = 1\nb = 20\nc = 30\n")
    (node / "logo.png").write_bytes(PNG + b"more")
    (node / "notes.txt").write_text("untracked\nand edited\n")
    (node / "new").mkdir()
    (node / "new" / "module.py").write_text("x = 1\n")
    (node / "new" / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    (node / "old.txt").unlink()
    git(node, "add", "src/lib.py")
    (node / "src" / "lib.py").write_text("def f():\n    return 2\n")
    git(node, "commit", "-q", "-am", "the agent's own commit")
    (node / "build").mkdir()
    (node / "build" / "artifact").write_text("ignored output\n")  # never comes back

    patch = pickle.loads(pickle.dumps(collect_patch(unpacked)))
    assert patch.files == (
        "app.py",
        "logo.png",
        "new/blob.bin",
        "new/module.py",
        "notes.txt",
        "old.txt",
        "src/lib.py",
    )
    assert patch.base == unpacked.base

    outcome = apply_patch(repo, patch, run_id=RUN)

    assert outcome.kind == "applied" and outcome.applied, outcome
    expected = {k: v for k, v in _tree_state(node).items() if not k.startswith("build/")}
    lead = {k: v for k, v in _tree_state(repo).items() if not k.startswith("build/") and k != "debug.log"}
    assert lead == expected
    assert (repo / "build" / "out.o").read_text() == "ignored\n"  # the lead's ignored files stay
    assert _index(repo) == index_before and git(repo, "rev-parse", "HEAD") == head_before


def test_a_conflicting_patch_is_refused_whole_with_each_path_named_and_nothing_changes(
    repo: Path, tmp_path: Path
) -> None:
    unpacked = unpack(take_snapshot(repo), _node(tmp_path))
    (unpacked.root / "app.py").write_text("a = 1\nb = 2\nc = 300\n")
    (unpacked.root / "README.md").write_text("hello, agent\n")  # would apply on its own
    (unpacked.root / "logo.png").write_bytes(b"agent's logo")
    (unpacked.root / "fresh.txt").write_text("from the agent\n")
    patch = collect_patch(unpacked)
    # Meanwhile the user edits the same line, replaces the binary and creates the same new file.
    (repo / "app.py").write_text("a = 1\nb = 2\nc = 3000\n")
    (repo / "logo.png").write_bytes(b"user's logo")
    (repo / "fresh.txt").write_text("the user's own\n")
    before = _tree_state(repo)
    index_before = _index(repo)

    outcome = apply_patch(repo, patch, run_id=RUN)

    assert outcome.kind == "conflict" and not outcome.applied
    assert [p.path for p in outcome.problems] == ["app.py", "fresh.txt", "logo.png"]
    assert all(p.why for p in outcome.problems)
    assert "already exists" in next(p.why for p in outcome.problems if p.path == "fresh.txt")
    assert "app.py" in outcome.message and "nothing in the workspace changed" in outcome.message
    assert _tree_state(repo) == before  # README.md too: no partial application
    assert _index(repo) == index_before


def test_a_text_patch_merges_around_the_users_edits_elsewhere_in_the_same_file(
    repo: Path, tmp_path: Path
) -> None:
    lines = [f"line {n}\n" for n in range(40)]
    (repo / "long.txt").write_text("".join(lines))
    git(repo, "add", "long.txt")
    git(repo, "commit", "-q", "-m", "long")
    unpacked = unpack(take_snapshot(repo), _node(tmp_path))
    agent = list(lines)
    agent[35] = "line 35, by the agent\n"
    (unpacked.root / "long.txt").write_text("".join(agent))
    patch = collect_patch(unpacked)
    user = list(lines)
    user[2] = "line 2, by the user\n"
    (repo / "long.txt").write_text("".join(user))

    outcome = apply_patch(repo, patch, run_id=RUN)

    assert outcome.kind == "applied"
    text = (repo / "long.txt").read_text()
    assert "line 2, by the user\n" in text and "line 35, by the agent\n" in text


def test_paths_claimed_by_another_agent_are_refused_and_the_agents_own_claims_are_not(
    repo: Path, tmp_path: Path
) -> None:
    unpacked = unpack(take_snapshot(repo), _node(tmp_path))
    (unpacked.root / "app.py").write_text("changed\n")
    (unpacked.root / "src" / "lib.py").write_text("changed\n")
    (unpacked.root / "README.md").write_text("changed\n")
    patch = collect_patch(unpacked)

    def claim(path: str, agent: str, run_id: str) -> FileClaimRecord:
        return FileClaimRecord(lead_session_id="lead", path=path, agent=agent, run_id=run_id, since=1)

    claims = [claim("src", "reviewer", OTHER), claim("app.py", "writer", RUN)]
    before = _tree_state(repo)

    refused = apply_patch(repo, patch, claims=claims, run_id=RUN)

    assert refused.kind == "claimed" and not refused.applied
    assert [(p.path, p.why) for p in refused.problems] == [("src/lib.py", "claimed by reviewer")]
    assert "src/lib.py (claimed by reviewer)" in refused.message
    assert _tree_state(repo) == before

    allowed = apply_patch(repo, patch, claims=[claim("app.py", "writer", RUN)], run_id=RUN)
    assert allowed.kind == "applied"
    assert (repo / "src" / "lib.py").read_text() == "changed\n"


def test_a_read_agent_leaves_nothing_behind_and_an_untouched_snapshot_gives_an_empty_patch(
    repo: Path, tmp_path: Path
) -> None:
    unpacked = unpack(take_snapshot(repo), _node(tmp_path))
    patch = collect_patch(unpacked)
    assert patch.empty and patch.diff == b""
    before = _tree_state(repo)
    assert apply_patch(repo, patch).kind == "empty"
    assert _tree_state(repo) == before
    (unpacked.root / "src").chmod(0o500)  # a read-only directory does not stop the clean-up
    discard(unpacked)
    assert not unpacked.root.exists()
    assert list(_node(tmp_path).iterdir()) == []


def test_an_agent_started_in_a_subdirectory_works_in_the_same_subdirectory_of_the_snapshot(
    repo: Path, tmp_path: Path
) -> None:
    snapshot = take_snapshot(repo / "src")
    unpacked = unpack(snapshot, _node(tmp_path))
    assert snapshot.subdir == "src"
    assert unpacked.cwd == unpacked.root / "src"
    (unpacked.cwd / "lib.py").write_text("edited from the subdirectory\n")
    assert apply_patch(Path(snapshot.top), collect_patch(unpacked)).kind == "applied"
    assert (repo / "src" / "lib.py").read_text() == "edited from the subdirectory\n"


def test_the_shared_check_passes_only_for_the_same_path_head_and_uncommitted_changes(
    repo: Path, tmp_path: Path
) -> None:
    _dirty(repo)
    identity = identify(repo)
    assert check_shared(identity) == SharedCheck(True, "")

    (repo / "notes.txt").write_text("changed after the lead looked\n")
    changed = check_shared(identity)
    assert not changed.shared and "uncommitted changes" in changed.reason
    identity = identify(repo)
    git(repo, "commit", "-q", "--allow-empty", "-m", "moved")
    moved = check_shared(identity)
    assert not moved.shared and "HEAD" in moved.reason

    elsewhere = identify(repo)
    elsewhere = type(elsewhere)(str(tmp_path / "gone"), elsewhere.top, elsewhere.head, elsewhere.tree)
    missing = check_shared(elsewhere)
    assert not missing.shared and "does not exist on this node" in missing.reason

    plain = tmp_path / "plain"
    plain.mkdir()
    assert check_shared(identify(plain)).shared  # outside git only the directory can be checked


def test_the_workspace_mode_decides_between_in_place_and_a_snapshot() -> None:
    shared, not_shared = SharedCheck(True, ""), SharedCheck(False, "/w does not exist on this node")
    assert needs_snapshot("auto", shared) is False
    assert needs_snapshot("auto", not_shared) is True
    assert needs_snapshot("snapshot", shared) is True
    assert needs_snapshot("shared", shared) is False
    with pytest.raises(WorkspaceNotSharedError, match=r"/w does not exist on this node; use workspace"):
        needs_snapshot("shared", not_shared)


def test_a_workspace_outside_git_or_too_large_cannot_be_shipped(repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InvalidRequestError, match="not inside a git repository with a commit"):
        take_snapshot(plain)
    with pytest.raises(InvalidRequestError, match="shared filesystem"):
        take_snapshot(repo, limit=64)


def test_unpacking_a_corrupt_snapshot_fails_and_leaves_no_directory(repo: Path, tmp_path: Path) -> None:
    snapshot = take_snapshot(repo)
    broken = type(snapshot)(
        **{**{f: getattr(snapshot, f) for f in snapshot.__slots__}, "pack": snapshot.pack[:-40]}
    )
    with pytest.raises(Exception, match="index-pack"):
        unpack(broken, _node(tmp_path))
    assert list(_node(tmp_path).iterdir()) == []
    assert isinstance(unpack(snapshot, _node(tmp_path)), Unpacked)


def test_files_arrive_as_the_snapshots_blobs_even_where_gitattributes_would_convert_them(
    repo: Path, tmp_path: Path
) -> None:
    (repo / ".gitattributes").write_text("*.id ident\n")
    (repo / "version.id").write_text("$Id$\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "ident")
    snapshot = take_snapshot(repo)
    assert snapshot.attributes
    unpacked = unpack(snapshot, _node(tmp_path))
    assert (unpacked.root / "version.id").read_text() == "$Id$\n"  # not "$Id: <blob id> $"
    assert collect_patch(unpacked).empty


def test_the_quick_identity_compares_path_and_head_only_and_survives_json(repo: Path) -> None:
    quick = identify(repo, tree=False)
    assert quick.tree is None and quick.head == git(repo, "rev-parse", "HEAD").strip()
    assert type(quick).from_json(json.loads(json.dumps(quick.to_json()))) == quick
    (repo / "notes.txt").write_text("uncommitted changes are not compared\n")
    assert check_shared(quick).shared
    git(repo, "commit", "-q", "--allow-empty", "-m", "moved")
    assert "HEAD" in check_shared(quick).reason


async def test_the_host_lands_a_patch_from_the_session_once_and_a_second_landing_is_a_no_op(
    repo: Path, tmp_path: Path
) -> None:
    from corral.orchestration.workspaces._extension import PATCH_ENTRY, WorkspacesExtension, patch_entry_data

    unpacked = unpack(take_snapshot(repo), _node(tmp_path))
    (unpacked.root / "app.py").write_text("a = 1\nb = 2\nc = 3\nd = 4\n")
    (unpacked.root / "added.txt").write_text("new\n")
    patch = collect_patch(unpacked)
    session = tmp_path / "session.jsonl"
    entry = {"type": "custom", "customType": PATCH_ENTRY, "data": patch_entry_data(patch, str(repo))}
    session.write_text(json.dumps({"type": "session"}) + "\n" + json.dumps(entry) + "\n")
    extension = WorkspacesExtension()

    first = await extension.remote_result("run", session)
    # A host that crashed after landing but before storing the result collects it again.
    second = await extension.remote_result("run", session)

    assert first is not None and "were applied to the workspace" in first
    assert second is not None and "are in the workspace" in second
    assert (repo / "app.py").read_text() == "a = 1\nb = 2\nc = 3\nd = 4\n"
    assert (repo / "added.txt").read_text() == "new\n"
    assert await extension.remote_result("run", tmp_path / "absent.jsonl") is None


def _patch_session(repo: Path, tmp_path: Path, edits: dict[str, str]) -> Path:
    """A remote agent's session file carrying its patch (`edits` made on a snapshot of `repo`)."""
    from corral.orchestration.workspaces._extension import PATCH_ENTRY, patch_entry_data

    unpacked = unpack(take_snapshot(repo), _node(tmp_path))
    for name, text in edits.items():
        (unpacked.root / name).write_text(text)
    entry = {
        "type": "custom",
        "customType": PATCH_ENTRY,
        "data": patch_entry_data(collect_patch(unpacked), str(repo)),
    }
    session = tmp_path / "session.jsonl"
    session.write_text(json.dumps({"type": "session"}) + "\n" + json.dumps(entry) + "\n")
    return session


async def test_the_host_lands_a_remote_patch_under_the_teams_file_claims(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The composed host's landing reads the claims of the agent's team (its root lead's): a path
    another agent claims refuses the whole patch and changes nothing; the agent's own claim does not."""
    from corral.orchestration.workspaces._extension import WorkspacesExtension
    from tests.orchestration._host_helpers import prepare_env, team, write_script
    from tests.orchestration._store_helpers import new_generation
    from tests.orchestration.teams.roster.test_store_teams import spawn

    prepare_env(tmp_path, monkeypatch)
    write_script(tmp_path, "lead", {"steps": [{"text": "noted"}]})
    async with team(tmp_path, "lead") as t:
        lead = t.caller.session_id
        store = t.host.repositories
        alice, _, _ = spawn(store, "alice", kind="write", lead=lead)
        store.teams.roster.claim_files(lead, run_id=alice.run_id, agent="alice", paths=("src",))
        # A Ray agent owned by a delegating agent of this lead: its team is the lead's.
        parent, _ = new_generation(store.kernel, session_id="s-parent", owner=lead, delegating=True)
        remote, _ = new_generation(
            store.kernel, session_id="s-remote", owner=parent.session_id, parent_run_id=parent.run_id
        )
        (extension,) = [e for e in t.host.extensions if isinstance(e, WorkspacesExtension)]
        before = _tree_state(repo)

        refused = await extension.remote_result(
            remote.run_id, _patch_session(repo, tmp_path, {"app.py": "changed\n", "src/lib.py": "x = 1\n"})
        )

        assert refused is not None and "src/lib.py (claimed by alice)" in refused, refused
        assert "nothing in the workspace changed" in refused
        assert _tree_state(repo) == before

        # The claim's holder itself lands its change to the claimed path.
        store.teams.roster.release_files(lead, run_id=alice.run_id, paths=("src",))
        store.teams.roster.claim_files(lead, run_id=alice.run_id, agent="alice", paths=("src/lib.py",))
        own = await extension.remote_result(
            alice.run_id, _patch_session(repo, tmp_path, {"src/lib.py": "x = 2\n"})
        )
        assert own is not None and "were applied" in own, own
        assert (repo / "src" / "lib.py").read_text() == "x = 2\n"
