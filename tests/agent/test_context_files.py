"""Context files a cloned repository plants: links out of the project, system trees, FIFOs, devices, size.

The attack (issue 27, item 1): a repository's `AGENTS.md` links to `/proc/self/environ`, or its
`sub/CLAUDE.md` to `~/.ssh/id_rsa`, and the user's keys land in the system prompt of the lead and
of every agent. Each test builds the real prompt (`build_system_prompt`) over real files, links,
FIFOs and device nodes, and checks both that the secret is absent and that stderr names the
refused file exactly once however often prompts are built.
"""

from __future__ import annotations

import os
import stat
from datetime import datetime
from pathlib import Path

import pytest

from corral.agent import build_system_prompt
from corral.agent._system_prompt import CONTEXT_FILE_MAX_BYTES

NOW = datetime(2026, 3, 15, 12, 0)
SECRET = "sk-ant-CONTEXT-SECRET-4f1c"


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A user home with a key file, a config dir, and a cloned repository (with `.git`) to run in."""
    home = tmp_path / "userhome"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n")
    monkeypatch.setenv("HOME", str(home))
    config = tmp_path / "config"
    config.mkdir()
    repo = tmp_path / "clones" / "repo"
    (repo / ".git").mkdir(parents=True)
    return home, config, repo


def _prompt(cwd: Path, config: Path) -> str:
    return build_system_prompt(cwd=cwd, tools=[], global_config_dir=config, now=NOW)


def _named(err: str, path: Path) -> int:
    return sum(1 for line in err.splitlines() if line.startswith("corral: warning:") and f" {path}:" in line)


def test_agents_md_linked_to_proc_self_environ_is_refused_and_named_once(
    layout: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, config, repo = layout
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    (repo / "AGENTS.md").symlink_to("/proc/self/environ")
    (repo / "README.md").write_text("hello")
    first = _prompt(repo, config)
    second = _prompt(repo, config)
    assert SECRET not in first and SECRET not in second
    assert "ANTHROPIC_API_KEY" not in first
    assert "# Project Context" not in first
    err = capsys.readouterr().err
    assert _named(err, repo / "AGENTS.md") == 1, err
    assert "/proc" in err and "never reads" in err


def test_sub_claude_md_linked_to_the_users_ssh_key_is_refused(
    layout: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    home, config, repo = layout
    sub = repo / "sub"
    sub.mkdir()
    (sub / "CLAUDE.md").symlink_to(home / ".ssh" / "id_rsa")
    (repo / "AGENTS.md").write_text("repo rules")
    prompt = _prompt(sub, config)
    assert SECRET not in prompt and "PRIVATE KEY" not in prompt
    assert "repo rules" in prompt  # the rest of the context still loads
    err = capsys.readouterr().err
    assert _named(err, sub / "CLAUDE.md") == 1, err
    assert f"outside {repo}" in err


def test_a_refused_agents_md_falls_back_to_the_directorys_claude_md(
    layout: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    home, config, repo = layout
    (repo / "AGENTS.md").symlink_to(home / ".ssh" / "id_rsa")
    (repo / "CLAUDE.md").write_text("claude rules")
    prompt = _prompt(repo, config)
    assert "claude rules" in prompt and SECRET not in prompt
    assert _named(capsys.readouterr().err, repo / "AGENTS.md") == 1


def test_a_link_that_stays_inside_the_project_is_read(
    layout: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, config, repo = layout
    (repo / "docs").mkdir()
    (repo / "docs" / "agents.md").write_text("shared rules")
    sub = repo / "pkg" / "sub"
    sub.mkdir(parents=True)
    (sub / "CLAUDE.md").symlink_to("../../docs/agents.md")
    (repo / "AGENTS.md").symlink_to("docs/agents.md")
    prompt = _prompt(sub, config)
    assert prompt.count("shared rules") == 1  # the same real file is read once
    assert f"## {repo / 'AGENTS.md'}" in prompt
    assert capsys.readouterr().err == ""


def test_a_fifo_is_refused_without_blocking(
    layout: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, config, repo = layout
    os.mkfifo(repo / "AGENTS.md")
    prompt = _prompt(repo, config)
    assert "# Project Context" not in prompt
    err = capsys.readouterr().err
    assert _named(err, repo / "AGENTS.md") == 1 and "a FIFO" in err


def test_a_device_node_is_refused(
    layout: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, config, repo = layout
    try:
        os.mknod(repo / "AGENTS.md", stat.S_IFCHR | 0o644, os.makedev(1, 5))  # like /dev/zero
    except PermissionError:
        (repo / "AGENTS.md").symlink_to("/dev/zero")  # without CAP_MKNOD: a link to the device
    prompt = _prompt(repo, config)
    assert "# Project Context" not in prompt
    err = capsys.readouterr().err
    assert _named(err, repo / "AGENTS.md") == 1
    assert "character device" in err or "/dev" in err


def test_an_oversized_file_is_refused_and_one_at_the_cap_is_read(
    layout: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, config, repo = layout
    sub = repo / "sub"
    sub.mkdir()
    (repo / "AGENTS.md").write_text("x" * (CONTEXT_FILE_MAX_BYTES + 1))
    (sub / "AGENTS.md").write_text("y" * CONTEXT_FILE_MAX_BYTES)
    prompt = _prompt(sub, config)
    assert "x" * 1000 not in prompt
    assert "y" * CONTEXT_FILE_MAX_BYTES in prompt
    err = capsys.readouterr().err
    assert _named(err, repo / "AGENTS.md") == 1 and f"more than the {CONTEXT_FILE_MAX_BYTES}" in err
    assert _named(err, sub / "AGENTS.md") == 0


def test_the_global_context_file_may_link_into_the_home_directory_but_not_a_system_tree(
    layout: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    home, config, repo = layout
    (home / "dotfiles").mkdir()
    (home / "dotfiles" / "AGENTS.md").write_text("my global rules")
    (config / "AGENTS.md").symlink_to(home / "dotfiles" / "AGENTS.md")
    assert "my global rules" in _prompt(repo, config)
    (config / "AGENTS.md").unlink()
    (config / "AGENTS.md").symlink_to("/proc/self/environ")
    assert "# Project Context" not in _prompt(repo, config)
    assert _named(capsys.readouterr().err, config / "AGENTS.md") == 1


def test_an_unpacked_repository_under_a_home_kept_in_git_is_not_part_of_the_home_project(
    layout: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A home directory in git (dotfiles) must not widen an unpacked archive's project to the home."""
    home, config, _ = layout
    (home / ".git").mkdir()
    unpacked = home / "downloads" / "tarball"
    unpacked.mkdir(parents=True)
    (unpacked / "AGENTS.md").symlink_to(home / ".ssh" / "id_rsa")
    assert SECRET not in _prompt(unpacked, config)
    assert _named(capsys.readouterr().err, unpacked / "AGENTS.md") == 1


def test_project_system_md_of_a_trusted_project_may_not_link_out(
    layout: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from corral.trust import trust_project

    home, config, repo = layout
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    (repo / ".corral").mkdir()
    (repo / ".corral" / "SYSTEM.md").symlink_to(home / ".ssh" / "id_rsa")
    trust_project(repo)
    prompt = _prompt(repo, config)
    assert SECRET not in prompt
    assert prompt.startswith("You are an expert coding assistant")
    assert _named(capsys.readouterr().err, repo / ".corral" / "SYSTEM.md") == 1
