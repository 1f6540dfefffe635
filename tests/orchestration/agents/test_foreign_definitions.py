"""Claude Code and Pi definition files: field mapping and the INVALID rule, through `load_roster`."""

from __future__ import annotations

from pathlib import Path

from corral.orchestration import ModelNames, load_roster


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _roster(tmp_path: Path, **models: object):  # type: ignore[no-untyped-def]
    names = ModelNames(**models)  # type: ignore[arg-type]
    return load_roster(
        tmp_path / "project", user_dir=tmp_path / "none", home=tmp_path / "home", trust=False, models=names
    )


def test_claude_fields_map_and_unknown_ones_are_invalid(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    agents = tmp_path / "home" / ".claude" / "agents"
    _write(
        agents / "a.md",
        "---\nname: guard\ndescription: d\ntools: [Read, Edit, MultiEdit, TodoWrite]\n"
        "disallowedTools: Bash\nmodel: opus\npermissionMode: plan\n---\nbody\n",
    )
    _write(agents / "b.md", "---\nname: odd\nhooks: {}\n---\nx\n")
    roster = _roster(tmp_path, aliases={"opus": "anthropic/claude-opus-4-1"})
    guard = roster.get("guard")
    assert guard is not None and guard.enabled and guard.format == "claude"
    assert guard.tool_policy.tools == ("read", "edit") and guard.tool_policy.exclude_tools == ("bash",)
    assert (guard.model, guard.model_alias, guard.body) == ("anthropic/claude-opus-4-1", "opus", "body")
    [issue] = roster.issues
    assert issue.path == agents / "b.md"
    assert issue.problem.startswith("unknown field(s) hooks for a Claude Code definition; allowed fields are")


def test_pi_bare_model_ids_resolve_against_known_models(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    agents = tmp_path / "home" / ".pi" / "agent" / "agents"
    _write(agents / "a.md", "---\nname: pi-a\nmodel: claude-sonnet-4-5\ntools: read, grep\n---\nx\n")
    _write(agents / "b.md", "---\nname: pi-b\nmodel: gpt-unknown\n---\nx\n")
    _write(agents / "c.md", "---\nname: pi-c\ntools: read, Teleport\n---\nx\n")
    roster = _roster(tmp_path, known=("anthropic/claude-sonnet-4-5", "openai/gpt-5"))
    a = roster.get("pi-a")
    assert (
        a is not None and a.model == "anthropic/claude-sonnet-4-5" and a.tool_policy.tools == ("read", "grep")
    )
    problems = {issue.path.name: issue.problem for issue in roster.issues}
    assert problems["b.md"].startswith("model 'gpt-unknown' is not a model corral knows")
    assert (
        problems["c.md"]
        == "tools: Teleport is not a tool corral has; use read, bash, edit, write, grep, find, ls"
    )
