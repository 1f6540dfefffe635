"""Finding and listing sessions: --continue, --session <path|id prefix>, listings; the public surface."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import corral.session
from corral.session import (
    SessionManager,
    SessionNotFoundError,
    encode_cwd,
    find_recent_session,
    list_sessions,
    resolve_session_arg,
)

from ._helpers import FIXTURES, assistant, user


def make_session(
    cwd: Path, root: Path, *texts: str, managed: bool = False, mtime: float | None = None
) -> Path:
    extra = {"corral": {"managed": True}} if managed else None
    with SessionManager.create(cwd, sessions_root=root, header_extra=extra) as manager:
        for text in texts:
            manager.append_message(user(text))
            manager.append_message(assistant(f"re: {text}"))
        manager.flush()
        assert manager.path is not None
        path = manager.path
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_find_recent_session_by_mtime_skipping_managed_and_invalid(
    tmp_path: Path, sessions_root: Path
) -> None:
    cwd = tmp_path / "proj"
    old = make_session(cwd, sessions_root, "old", mtime=1_000_000)
    new = make_session(cwd, sessions_root, "new", mtime=2_000_000)
    managed = make_session(cwd, sessions_root, "managed", managed=True, mtime=3_000_000)
    invalid = sessions_root / encode_cwd(str(cwd)) / "zzz.jsonl"
    invalid.write_text("not a session\n")
    os.utime(invalid, (4_000_000, 4_000_000))
    assert find_recent_session(cwd, sessions_root=sessions_root) == new
    assert find_recent_session(cwd, sessions_root=sessions_root, include_managed=True) == managed
    assert find_recent_session(tmp_path / "empty", sessions_root=sessions_root) is None
    assert old.exists()


def test_list_sessions_fields(tmp_path: Path, sessions_root: Path) -> None:
    cwd = tmp_path / "proj"
    path = make_session(cwd, sessions_root, "first question", "second")
    with SessionManager.open(path) as manager:
        manager.append_session_info("My session")
    make_session(cwd, sessions_root, "hidden", managed=True)
    make_session(tmp_path / "other", sessions_root, "elsewhere")
    infos = list_sessions(cwd, sessions_root=sessions_root)
    assert len(infos) == 1
    info = infos[0]
    assert info.path == path and info.cwd == str(cwd) and info.name == "My session"
    assert info.message_count == 4 and info.first_message == "first question"
    assert info.all_messages_text == "first question re: first question second re: second"
    assert info.parent_session_path is None and not info.is_managed
    assert info.created <= info.modified or info.modified.year == 1970
    assert len(list_sessions(cwd, sessions_root=sessions_root, include_managed=True)) == 2
    assert len(list_sessions(sessions_root=sessions_root)) == 2


def test_list_sessions_of_pi_file(tmp_path: Path, sessions_root: Path) -> None:
    directory = sessions_root / encode_cwd("/src/proj")
    directory.mkdir(parents=True)
    shutil.copy(FIXTURES / "pi_v3_full.jsonl", directory / "2026-03-15T10-00-00-000Z_0b6f6a52.jsonl")
    (info,) = list_sessions(Path("/src/proj"), sessions_root=sessions_root)
    assert info.id == "0b6f6a52-7c1e-4f43-9b0e-2a4f3c5d6e7f"
    assert info.first_message == "Read the README and fix the typo."
    assert info.modified.year == 2026 and int(info.modified.timestamp() * 1000) == 1773568823000


def test_resolve_session_arg_paths(tmp_path: Path, sessions_root: Path) -> None:
    path = make_session(tmp_path, sessions_root, "x")
    assert resolve_session_arg(str(path), tmp_path, sessions_root=sessions_root) == path
    relative = os.path.relpath(path, tmp_path)
    assert resolve_session_arg(relative, tmp_path, sessions_root=sessions_root) == path
    with pytest.raises(SessionNotFoundError, match="does not exist"):
        resolve_session_arg("missing.jsonl", tmp_path, sessions_root=sessions_root)


def test_resolve_session_arg_id_prefix(tmp_path: Path, sessions_root: Path) -> None:
    here = tmp_path / "here"
    local = make_session(here, sessions_root, "local")
    remote = make_session(tmp_path / "there", sessions_root, "remote")
    local_id = SessionManager.open(local, read_only=True).session_id
    remote_id = SessionManager.open(remote, read_only=True).session_id
    assert resolve_session_arg(local_id[:8], here, sessions_root=sessions_root) == local
    # Not in this project: found across all projects.
    assert resolve_session_arg(remote_id, here, sessions_root=sessions_root) == remote
    with pytest.raises(SessionNotFoundError, match="no session id starts with"):
        resolve_session_arg("not-an-id", here, sessions_root=sessions_root)


def test_resolve_ambiguous_prefix_names_candidates(tmp_path: Path, sessions_root: Path) -> None:
    directory = sessions_root / encode_cwd(str(tmp_path))
    directory.mkdir(parents=True)
    for suffix in ("1", "2"):
        (directory / f"s{suffix}.jsonl").write_text(
            f'{{"type":"session","version":3,"id":"abc-{suffix}","timestamp":"t","cwd":"{tmp_path}"}}\n'
        )
    with pytest.raises(SessionNotFoundError, match=r"ambiguous.*s1\.jsonl.*s2\.jsonl"):
        resolve_session_arg("abc", tmp_path, sessions_root=sessions_root)
    assert resolve_session_arg("abc-2", tmp_path, sessions_root=sessions_root) == directory / "s2.jsonl"


def test_default_sessions_root_follows_corral_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_HOME", str(tmp_path / "home"))
    manager = SessionManager.create(tmp_path / "proj", persist=True)
    assert manager.path is not None
    assert manager.path.parent.parent == (tmp_path / "home" / "sessions").resolve()


def test_all_is_sorted_and_complete() -> None:
    exported = corral.session.__all__
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), n))
    public = {name for name in dir(corral.session) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(corral.session, name)).__name__ == "module"}
    assert set(exported) == public - modules
