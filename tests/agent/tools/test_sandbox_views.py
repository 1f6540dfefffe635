"""The read sandbox's view of a directory is built once and reused while what it is built from is
unchanged (queued read agents and every command used to build their own, ~4 ms of CPU each); a hidden
path that appears in the meantime makes a new view that masks it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from corral.agent._tool import ToolError
from corral.agent.tools import _sandbox
from corral.agent.tools._sandbox import ReadOnlySandbox, SandboxPolicy


def _counting_views(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    built: list[Path] = []
    real = _sandbox._View

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, policy: SandboxPolicy, cwd: Path) -> None:
            built.append(cwd)
            super().__init__(policy, cwd)

    monkeypatch.setattr(_sandbox, "_View", Counted)
    return built


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "notes.md").write_text("hello\n")
    return project


def test_agents_and_commands_in_one_directory_share_its_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _counting_views(monkeypatch)
    project = _project(tmp_path)
    sandbox = ReadOnlySandbox(bwrap="/usr/bin/bwrap")
    guards = [sandbox.read_guard(project) for _ in range(5)]
    lines: list[Any] = [sandbox.wrap(["true"], project) for _ in range(3)]
    assert built == [project]
    for guard in guards:
        guard.check(project / "notes.md")
    assert lines[0] == lines[2]
    other = project / "sub"
    other.mkdir()
    sandbox.read_guard(other)
    assert built == [project, other]  # a view per directory


def test_a_hidden_path_created_after_a_view_is_masked_from_then_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _counting_views(monkeypatch)
    project = _project(tmp_path)
    secrets = project / "secrets"
    sandbox = ReadOnlySandbox(bwrap="/usr/bin/bwrap", policy=SandboxPolicy(hidden_paths=(secrets,)))
    before = sandbox.read_guard(project)
    before.check(secrets / "key")  # nothing there to hide yet
    secrets.mkdir()
    (secrets / "key").write_text("s3cret\n")
    after = sandbox.read_guard(project)
    with pytest.raises(ToolError):
        after.check(secrets / "key")
    assert "secrets" in " ".join(sandbox.wrap(["true"], project))
    assert len(built) == 2


def test_a_bound_directory_pointed_elsewhere_after_a_view_gets_a_new_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bwrap binds a path by the name the view resolved it to; were that name made a link to another
    # directory, a reused view would bind that directory without the masks a new view puts in it.
    built = _counting_views(monkeypatch)
    project = _project(tmp_path)
    tools = tmp_path / "tools"
    tools.mkdir()
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "secrets").mkdir(parents=True)
    policy = SandboxPolicy(read_paths=(tools,), hidden_paths=(elsewhere / "secrets",))
    sandbox = ReadOnlySandbox(bwrap="/usr/bin/bwrap", policy=policy)
    before = sandbox.wrap(["true"], project)
    assert str(tools / "secrets") not in before
    tools.rmdir()
    tools.symlink_to(elsewhere)

    after = sandbox.wrap(["true"], project)

    assert after == ReadOnlySandbox(bwrap="/usr/bin/bwrap", policy=policy).wrap(["true"], project)
    assert str(tools / "secrets") in after  # masked where the bound directory now shows it
    assert len(built) == 3
