"""Project trust: pinned to the content of `.corral/` files, stored privately, fails closed."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from corral.errors import UsageError
from corral.trust import (
    TrustStoreError,
    find_project_dir,
    is_trusted,
    pinned_files,
    trust_project,
    trust_state,
    trust_store_path,
    untrust_project,
)


@pytest.fixture(autouse=True)
def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".corral" / "scripts").mkdir(parents=True)
    (root / ".corral" / "settings.toml").write_text('runtime = "tmux"\n')
    (root / ".corral" / "scripts" / "a.yaml").write_text("steps: [{text: a}]\n")
    return root


def test_pinned_files_are_the_documented_ones(project: Path) -> None:
    dot = project / ".corral"
    (dot / "SYSTEM.md").write_text("s")
    (dot / "APPEND_SYSTEM.md").write_text("a")
    (dot / "agents" / "sub").mkdir(parents=True)
    (dot / "agents" / "sub" / "x.md").write_text("x")
    (dot / "notes.txt").write_text("not pinned")
    (dot / "cache").mkdir()
    (dot / "cache" / "y").write_text("not pinned")
    assert sorted(pinned_files(project)) == [
        ".corral/APPEND_SYSTEM.md",
        ".corral/SYSTEM.md",
        ".corral/agents/sub/x.md",
        ".corral/scripts/a.yaml",
        ".corral/settings.toml",
    ]
    assert all(digest.startswith("sha256:") for digest in pinned_files(project).values())


def test_a_symlinked_directory_is_pinned_through_the_link(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "b.yaml").write_text("steps: [{text: b}]\n")
    (project / ".corral" / "scripts" / "linked").symlink_to(outside)
    (project / ".corral" / "scripts" / "loop").symlink_to(project / ".corral" / "scripts")
    trust_project(project)
    assert ".corral/scripts/linked/b.yaml" in pinned_files(project)
    (outside / "b.yaml").write_text("steps: [{text: changed}]\n")
    state = trust_state(project)
    assert not state.trusted
    assert state.changed == ".corral/scripts/linked/b.yaml was edited since it was trusted"


def test_trust_is_pinned_to_content_and_names_the_change(project: Path) -> None:
    assert trust_state(project).trusted is False and trust_state(project).changed is None
    trust_project(project)
    assert is_trusted(project)
    (project / ".corral" / "scripts" / "a.yaml").write_text("steps: [{text: A}]\n")
    (project / ".corral" / "settings.toml").unlink()
    state = trust_state(project)
    assert not state.trusted
    assert state.changed == (".corral/scripts/a.yaml was edited (and 1 more change(s)) since it was trusted")
    trust_project(project)
    assert is_trusted(project)


def test_trusting_refuses_files_that_changed_while_they_were_reviewed(project: Path) -> None:
    reviewed = pinned_files(project)
    (project / ".corral" / "scripts" / "b.yaml").write_text("steps: [{text: b}]\n")
    with pytest.raises(UsageError, match=r"\.corral/scripts/b\.yaml was added while it was being reviewed"):
        trust_project(project, expected=reviewed)
    assert not trust_store_path().exists()


def test_an_entry_from_before_content_pinning_is_not_trusted(project: Path) -> None:
    store = trust_store_path()
    store.parent.mkdir(parents=True)
    entry = {"trustedAt": "2025-01-01T00:00:00Z"}
    store.write_text(json.dumps({"version": 1, "projects": {str(project.resolve()): entry}}))
    state = trust_state(project)
    assert not state.trusted and state.changed is not None and "pinned" in state.changed


def test_store_and_its_directory_are_private(project: Path) -> None:
    trust_project(project)
    store = trust_store_path()
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    assert untrust_project(project) and not is_trusted(project)


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "[]",
        '{"version": 2, "projects": {}}',
        '{"version": 1, "projects": {"/p": 1}}',
        '{"version": 1, "projects": {"/p": {"files": ["x"]}}}',
        '{"version": 1, "projects": {"/p": {"files": {"x": 1}}}}',
    ],
)
def test_a_malformed_store_is_an_error_and_is_left_alone(project: Path, text: str) -> None:
    store = trust_store_path()
    store.parent.mkdir(parents=True)
    store.write_text(text)
    with pytest.raises(TrustStoreError) as info:
        is_trusted(project)
    assert str(store) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(TrustStoreError):
        trust_project(project)
    assert store.read_text() == text


def test_the_project_of_a_subdirectory_is_the_nearest_holding_dot_corral(
    project: Path, tmp_path: Path
) -> None:
    nested = project / "src" / "pkg"
    nested.mkdir(parents=True)
    assert find_project_dir(nested) == project.resolve()
    assert find_project_dir(tmp_path) is None
