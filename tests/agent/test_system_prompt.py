"""System prompt assembly: base prompt, SYSTEM.md, APPEND_SYSTEM.md, context files, date and cwd."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from corral.agent import build_system_prompt
from corral.agent.tools import create_builtin_tools
from corral.trust import trust_project

NOW = datetime(2026, 3, 15, 12, 0)


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "config"
    config.mkdir()
    cwd = tmp_path / "repo" / "pkg" / "sub"
    cwd.mkdir(parents=True)
    return config, cwd


def test_base_prompt_lists_tools_guidelines_date_and_cwd(tmp_path: Path) -> None:
    config, cwd = _layout(tmp_path)
    tools = create_builtin_tools(cwd, names=["read", "bash", "edit", "write"])
    prompt = build_system_prompt(cwd=cwd, tools=tools, global_config_dir=config, now=NOW)
    assert prompt.startswith("You are an expert coding assistant operating inside corral")
    tool_lines = [line for line in prompt.splitlines() if line.startswith("- ") and ":" in line.split()[1]]
    assert [line.split(":")[0] for line in tool_lines] == ["- read", "- bash", "- edit", "- write"]
    guidelines = prompt.split("Guidelines:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert guidelines[-2:] == [
        "- Keep your answers concise",
        "- Show file paths clearly whenever you work with files",
    ]
    assert prompt.endswith(f"Current date: 2026-03-15\nCurrent working directory: {cwd}\n")
    assert "# Project Context" not in prompt


def test_context_files_global_first_then_root_to_cwd_one_per_directory(tmp_path: Path) -> None:
    config, cwd = _layout(tmp_path)
    (config / "CLAUDE.md").write_text("global rules")
    (tmp_path / "repo" / "AGENTS.md").write_text("repo agents")
    (tmp_path / "repo" / "CLAUDE.md").write_text("repo claude (ignored)")
    (tmp_path / "repo" / "pkg" / "CLAUDE.md").write_text("pkg claude")
    (cwd / "AGENTS.md").write_text("sub agents")
    prompt = build_system_prompt(cwd=cwd, tools=[], global_config_dir=config, now=NOW)
    context = prompt.split("# Project Context\n\n", 1)[1]
    headings = [line for line in context.splitlines() if line.startswith("## ")]
    assert headings == [
        f"## {config / 'CLAUDE.md'}",
        f"## {tmp_path / 'repo' / 'AGENTS.md'}",
        f"## {tmp_path / 'repo' / 'pkg' / 'CLAUDE.md'}",
        f"## {cwd / 'AGENTS.md'}",
    ]
    assert "repo claude (ignored)" not in prompt
    assert context.index("global rules") < context.index("repo agents") < context.index("pkg claude")
    assert context.index("sub agents") < context.index("Current date: 2026-03-15")


def test_system_md_replaces_base_and_project_wins_over_global_once_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    config, cwd = _layout(tmp_path)
    (config / "SYSTEM.md").write_text("GLOBAL SYSTEM")
    prompt = build_system_prompt(cwd=cwd, tools=[], global_config_dir=config, now=NOW)
    assert prompt.startswith("GLOBAL SYSTEM\n\n")
    (cwd / ".corral").mkdir()
    (cwd / ".corral" / "SYSTEM.md").write_text("PROJECT SYSTEM")
    (cwd / ".corral" / "APPEND_SYSTEM.md").write_text("PROJECT APPEND")
    untrusted = build_system_prompt(cwd=cwd, tools=[], global_config_dir=config, now=NOW)
    assert untrusted.startswith("GLOBAL SYSTEM\n\n") and "PROJECT" not in untrusted
    trust_project(cwd)
    prompt = build_system_prompt(cwd=cwd, tools=[], global_config_dir=config, now=NOW)
    assert prompt.startswith("PROJECT SYSTEM\n\n") and "GLOBAL SYSTEM" not in prompt
    assert "PROJECT APPEND" in prompt
    custom = build_system_prompt(cwd=cwd, tools=[], global_config_dir=config, now=NOW, custom_prompt="CUSTOM")
    assert custom.startswith("CUSTOM\n\n") and "PROJECT SYSTEM" not in custom


def test_append_system_md_and_append_argument_come_after_base_before_context(tmp_path: Path) -> None:
    config, cwd = _layout(tmp_path)
    (config / "APPEND_SYSTEM.md").write_text("APPENDED")
    (cwd / "AGENTS.md").write_text("ctx")
    prompt = build_system_prompt(cwd=cwd, tools=[], global_config_dir=config, now=NOW)
    assert prompt.index("Guidelines:") < prompt.index("APPENDED") < prompt.index("# Project Context")
    explicit = build_system_prompt(cwd=cwd, tools=[], global_config_dir=config, now=NOW, append="FLAG")
    assert "FLAG" in explicit and "APPENDED" not in explicit


def test_session_builds_the_prompt_and_rebuilds_it_when_tools_change(tmp_path: Path) -> None:
    from corral.agent import AgentSession
    from corral.session import SessionManager

    from .helpers import EchoTool, PlannedModel

    cwd = tmp_path / "p"
    cwd.mkdir()
    session = SessionManager.create(cwd, persist=False)
    agent = AgentSession(session=session, model=PlannedModel(), thinking_level="off", tools=[], cwd=cwd)
    assert "- echo:" not in agent.system_prompt
    agent.register_tool(EchoTool())
    assert "- echo: Echo text back" in agent.system_prompt
