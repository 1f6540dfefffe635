"""Source fingerprints on real git repositories (§6.4 of the teams notes)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from corral.orchestration import InvalidRequestError
from corral.orchestration.teams.checks._fingerprint import (
    SourceCaptureError,
    SourceFingerprint,
    capture_fingerprint,
    capture_fingerprint_sync,
    same_tested_source,
)
from tests.orchestration.teams._git_helpers import git, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path / "repo",
        {"a.txt": "alpha\n", "src/b.py": "print('b')\n", ".gitignore": "*.log\nbuild/\n"},
    )


def _js(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_fingerprint_is_stable_across_two_captures_of_an_unchanged_tree(repo: Path) -> None:
    first = capture_fingerprint_sync(repo)
    second = capture_fingerprint_sync(repo)
    assert first == second
    assert same_tested_source(first, second)
    assert first.file_count == 3
    assert first.inputs == (".",)
    assert first.head == git(repo, "rev-parse", "HEAD").strip()
    assert first.repository_root == os.path.realpath(repo)


def test_fingerprint_format_is_the_sha256_of_the_header_and_file_records(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"x.txt": "hi\n"})
    (repo / "x.txt").chmod(0o640)
    captured = capture_fingerprint_sync(repo)
    entry = git(repo, "ls-files", "--stage").split("\t")[0]
    header = {
        "version": 1,
        "head": git(repo, "rev-parse", "HEAD").strip(),
        "inputs": ["."],
        "index": [{"file": "x.txt", "index": entry}],
    }
    record = ["x.txt", 0o640, hashlib.sha256(b"hi\n").hexdigest()]
    expected = hashlib.sha256((_js(header) + _js(record)).encode()).hexdigest()
    assert captured.fingerprint == expected


def test_unstaged_and_staged_changes_change_different_parts(repo: Path) -> None:
    clean = capture_fingerprint_sync(repo)
    (repo / "a.txt").write_text("alpha changed\n")
    unstaged = capture_fingerprint_sync(repo)
    assert unstaged.fingerprint != clean.fingerprint
    git(repo, "add", "a.txt")
    staged = capture_fingerprint_sync(repo)
    # Same bytes on disk as `unstaged`: only the index entry (the blob id) changed.
    assert staged.fingerprint not in (clean.fingerprint, unstaged.fingerprint)
    assert staged.head == unstaged.head == clean.head
    git(repo, "commit", "-q", "-m", "change")
    committed = capture_fingerprint_sync(repo)
    assert committed.head != staged.head
    assert committed.fingerprint != staged.fingerprint


def test_untracked_files_count_and_ignored_files_do_not(repo: Path) -> None:
    clean = capture_fingerprint_sync(repo)
    (repo / "debug.log").write_text("noise\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("obj\n")
    assert capture_fingerprint_sync(repo) == clean
    (repo / "new.txt").write_text("new\n")
    with_untracked = capture_fingerprint_sync(repo)
    assert with_untracked.fingerprint != clean.fingerprint
    assert with_untracked.file_count == clean.file_count + 1
    (repo / "new.txt").write_text("newer\n")
    assert capture_fingerprint_sync(repo).fingerprint != with_untracked.fingerprint


def test_permission_bit_change_counts(repo: Path) -> None:
    clean = capture_fingerprint_sync(repo)
    (repo / "src" / "b.py").chmod(0o600)
    assert capture_fingerprint_sync(repo).fingerprint != clean.fingerprint


def test_deleted_tracked_file_is_recorded_as_missing(repo: Path) -> None:
    clean = capture_fingerprint_sync(repo)
    (repo / "a.txt").unlink()
    deleted = capture_fingerprint_sync(repo)
    assert deleted.fingerprint != clean.fingerprint
    assert deleted.file_count == clean.file_count


def test_symlink_is_hashed_by_its_target_text_and_retargeting_counts(repo: Path) -> None:
    (repo / "c.txt").write_text("alpha\n")
    (repo / "link").symlink_to("a.txt")
    to_a = capture_fingerprint_sync(repo)
    (repo / "link").unlink()
    (repo / "link").symlink_to("c.txt")  # same bytes behind it: only the link text differs
    to_c = capture_fingerprint_sync(repo)
    assert to_c.fingerprint != to_a.fingerprint
    # Not followed: editing the target changes the target's record, the link's stays.
    (repo / "link").unlink()
    (repo / "link").symlink_to("a.txt")
    assert capture_fingerprint_sync(repo) == to_a


def test_symlink_out_of_the_captured_set_is_refused(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("x\n")
    (repo / "escape").symlink_to(outside)
    with pytest.raises(SourceCaptureError, match="must point to a regular source file"):
        capture_fingerprint_sync(repo)


def test_a_file_changing_during_capture_is_refused(repo: Path) -> None:
    def append(file: str) -> None:
        if file == "a.txt":
            with open(repo / "a.txt", "a") as handle:
                handle.write("more\n")

    with pytest.raises(SourceCaptureError, match="Source input changed during capture"):
        capture_fingerprint_sync(repo, on_file_hashed=append)


def test_inventory_change_between_the_two_passes_is_refused(repo: Path) -> None:
    with pytest.raises(SourceCaptureError, match="Source input inventory changed during capture"):
        capture_fingerprint_sync(repo, before_recheck=lambda: (repo / "late.txt").write_text("x\n"))


def test_index_change_between_the_two_passes_is_refused(repo: Path) -> None:
    def stage() -> None:
        (repo / "a.txt").write_text("staged mid-capture\n")
        git(repo, "add", "a.txt")

    with pytest.raises(SourceCaptureError, match="inventory changed"):
        capture_fingerprint_sync(repo, before_recheck=stage)


def test_non_git_directory_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(SourceCaptureError, match="not inside a Git repository") as caught:
        capture_fingerprint_sync(plain)
    assert isinstance(caught.value, InvalidRequestError)


def test_repository_without_commits_has_no_head(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fresh", {"a.txt": "a\n"}, commit=False)
    captured = capture_fingerprint_sync(repo)
    assert captured.head is None
    assert captured.file_count == 1


def test_scoped_inputs_ignore_changes_outside_the_scope(repo: Path) -> None:
    scoped = capture_fingerprint_sync(repo / "src", ["."])
    assert scoped.inputs == ("src",)
    assert scoped.file_count == 1
    assert scoped.cwd == os.path.realpath(repo / "src")
    (repo / "a.txt").write_text("outside the scope\n")
    assert capture_fingerprint_sync(repo / "src", ["."]) == scoped
    (repo / "src" / "b.py").write_text("print('changed')\n")
    assert capture_fingerprint_sync(repo / "src", ["."]).fingerprint != scoped.fingerprint


def test_whole_repository_is_covered_from_a_subdirectory(repo: Path) -> None:
    from_sub = capture_fingerprint_sync(repo / "src")
    assert from_sub.inputs == (".",)
    assert from_sub.file_count == 3


def test_inputs_are_deduplicated_and_sorted(repo: Path) -> None:
    captured = capture_fingerprint_sync(repo, ["src/b.py", "a.txt", "./a.txt"])
    assert captured.inputs == ("a.txt", "src/b.py")
    assert captured.file_count == 2


def test_input_outside_the_repository_is_refused(repo: Path) -> None:
    with pytest.raises(SourceCaptureError, match="Source input is outside the repository"):
        capture_fingerprint_sync(repo, ["../elsewhere"])


def test_scope_matching_no_file_is_refused(repo: Path) -> None:
    (repo / "ignored.log").write_text("x\n")
    with pytest.raises(SourceCaptureError, match="No tracked or nonignored source inputs captured for scope"):
        capture_fingerprint_sync(repo, ["ignored.log"])


def test_submodule_gitlink_is_covered_by_its_index_entry(tmp_path: Path) -> None:
    inner = make_repo(tmp_path / "inner", {"i.txt": "i\n"})
    outer = make_repo(tmp_path / "outer", {"o.txt": "o\n"})
    git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    git(outer, "commit", "-q", "-m", "submodule")
    captured = capture_fingerprint_sync(outer)
    assert captured.file_count == 3  # .gitmodules, o.txt, sub
    assert capture_fingerprint_sync(outer) == captured


def test_fingerprint_json_round_trips(repo: Path) -> None:
    captured = capture_fingerprint_sync(repo)
    data = captured.to_json()
    assert set(data) == {"version", "cwd", "repositoryRoot", "head", "fingerprint", "inputs", "fileCount"}
    assert SourceFingerprint.from_json(json.loads(json.dumps(data))) == captured
    with pytest.raises(ValueError, match="missing"):
        SourceFingerprint.from_json({"version": 1})


async def test_async_capture_matches_the_sync_core(repo: Path) -> None:
    assert await capture_fingerprint(repo) == capture_fingerprint_sync(repo)


def test_same_tested_source_ignores_scope_but_not_cwd(repo: Path) -> None:
    top = capture_fingerprint_sync(repo)
    sub = capture_fingerprint_sync(repo / "src")
    assert top.fingerprint == sub.fingerprint
    assert not same_tested_source(top, sub)
