"""Definition directories that link out of the project, and the bound on the definition walk.

The attack (issue 27, item 14): a repository ships `.corral/agents -> /usr`; every command then
walks all of `/usr` (parsing each `*.md` there as a definition, and `corral trust` hashing its
files), 2 s became 13 s. Here the large directory is built in the test's temp dir, outside the
project, filled with definitions that would load (and files that would be reported as invalid) if
the walk went in.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.orchestration import load_roster, trust_project
from corral.orchestration.definitions import _roster
from corral.trust import pinned_files, trust_state

PLANTED = "---\nname: planted{n}\ndescription: from outside\n---\nbody\n"


@pytest.fixture(autouse=True)
def _private_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A large directory outside the project: 40 folders × 25 definitions, and broken files."""
    big = tmp_path / "usr"
    for folder in range(40):
        sub = big / f"share{folder:02d}" / "doc"
        sub.mkdir(parents=True)
        for n in range(25):
            (sub / f"def{n}.md").write_text(PLANTED.format(n=folder * 100 + n))
        (sub / "README.md").write_text("not a definition")
    return big


@pytest.fixture
def project(tmp_path: Path) -> Path:
    cwd = tmp_path / "project"
    (cwd / ".corral").mkdir(parents=True)
    return cwd


def _load(cwd: Path, tmp_path: Path, trust: bool | None = True):  # type: ignore[no-untyped-def]
    bundled, user = tmp_path / "bundled", tmp_path / "user"
    bundled.mkdir(exist_ok=True)
    user.mkdir(exist_ok=True)
    return load_roster(cwd, user_dir=user, bundled_dir=bundled, trust=trust)


def _warnings(err: str, path: Path) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("corral: warning:") and f" {path}:" in line]


def test_agents_dir_linked_outside_the_project_is_not_walked_and_named_once(
    project: Path, outside: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = project / ".corral" / "agents"
    link.symlink_to(outside)
    first = _load(project, tmp_path)
    second = _load(project, tmp_path)
    for roster in (first, second):
        assert not [name for name in roster.names if name.startswith("planted")]
        assert [issue.path for issue in roster.issues] == [link]
        assert f"outside {project}" in roster.issues[0].problem
    assert len(_warnings(capsys.readouterr().err, link)) == 1


def test_claude_agents_dir_linked_outside_is_refused_too(
    project: Path, outside: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / ".claude").mkdir()
    link = project / ".claude" / "agents"
    link.symlink_to(outside / "share00")
    roster = _load(project, tmp_path)
    assert not [name for name in roster.names if name.startswith("planted")]
    assert len(_warnings(capsys.readouterr().err, link)) == 1


def test_a_definition_file_linked_outside_is_refused_and_its_neighbours_load(
    project: Path, outside: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = project / ".corral" / "agents"
    agents.mkdir()
    (agents / "mine.md").write_text("---\nname: mine\n---\n")
    (agents / "theirs.md").symlink_to(outside / "share03" / "doc" / "def1.md")
    roster = _load(project, tmp_path)
    assert "mine" in roster.names and "planted301" not in roster.names
    assert [issue.path for issue in roster.issues] == [agents / "theirs.md"]
    assert len(_warnings(capsys.readouterr().err, agents / "theirs.md")) == 1


def test_links_that_stay_inside_the_project_load(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = project / "tools" / "agents"
    shared.mkdir(parents=True)
    (shared / "helper.md").write_text("---\nname: helper\n---\n")
    (project / ".corral" / "agents").symlink_to("../tools/agents")
    roster = _load(project, tmp_path)
    assert "helper" in roster.names and roster.issues == ()
    assert capsys.readouterr().err == ""


def test_the_walk_is_bounded(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_roster, "_MAX_WALK_ENTRIES", 30)
    agents = project / ".corral" / "agents"
    for d in range(10):
        (agents / f"d{d}").mkdir(parents=True)
        for n in range(10):
            (agents / f"d{d}" / f"a{n}.md").write_text(f"---\nname: a{d}{n}\n---\n")
    roster = _load(project, tmp_path)
    loaded = [name for name in roster.names if name.startswith("a")]
    assert loaded == [f"a{d}{n}" for d in range(2) for n in range(10)]  # the walk stopped in d2
    [issue] = roster.issues
    assert issue.path == agents and "more than 30 entries" in issue.problem
    assert len(_warnings(capsys.readouterr().err, agents)) == 1


def test_trust_does_not_walk_or_hash_a_directory_linked_outside(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    link = project / ".corral" / "agents"
    link.symlink_to(outside)
    files = pinned_files(project)
    assert files == {".corral/agents": f"link:{outside}"}
    trust_project(project)
    assert trust_state(project).trusted
    roster = _load(project, tmp_path, trust=None)
    assert roster.project_trusted and not [n for n in roster.names if n.startswith("planted")]
    link.unlink()
    link.symlink_to(outside / "share01")  # pointed elsewhere: trust must notice
    state = trust_state(project)
    assert not state.trusted and ".corral/agents was edited" in (state.changed or "")
