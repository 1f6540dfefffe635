"""Skills through the real `corral` command: `corral skills list` (text and JSON), `corral doctor`'s
line, `corral trust --show` naming a project's skills, and a run whose lead loads one."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Env, RunCorral


def _skill(root: Path, name: str, frontmatter: str, body: str = "Steps.") -> Path:
    path = root / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{frontmatter}\n---\n{body}\n")
    return path


def test_skills_list_doctor_and_trust_show(corral: RunCorral, cli_env: Env) -> None:
    claude = cli_env.root / "claude"
    env = {"CLAUDE_CONFIG_DIR": str(claude)}
    _skill(claude / "skills", "pdf", "name: pdf\ndescription: Read PDF files.")
    _skill(cli_env.config / "corral" / "skills", "review", "name: review\ndescription: Review a diff.")
    bad = _skill(cli_env.config / "corral" / "skills", "broken", "name: broken")
    _skill(cli_env.project / ".claude" / "skills", "deploy", "name: deploy\ndescription: Ship it.")

    listed = corral("skills", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == f"pdf     user     {claude / 'skills'}  Read PDF files."
    assert lines[1] == f"review  user     {cli_env.config / 'corral' / 'skills'}  Review a diff."
    assert f"INVALID {bad}: description is missing or empty" in listed.stdout
    assert "not used: the skills in" in listed.stdout and "is not trusted" in listed.stdout

    data = json.loads(corral("skills", "list", "--json", env=env).stdout)
    assert [s["name"] for s in data["skills"]] == ["pdf", "review"]
    assert data["skills"][0] == {
        "name": "pdf",
        "description": "Read PDF files.",
        "layer": "user",
        "root": str(claude / "skills"),
        "path": str(claude / "skills" / "pdf" / "SKILL.md"),
    }
    assert data["issues"][0]["path"] == str(bad) and data["issues"][0]["skipped"] is True
    assert data["untrusted"] == [str(cli_env.project / ".claude" / "skills")]

    doctor = json.loads(corral("doctor", "--json", env=env).stdout)
    skills = [c for c in doctor["checks"] if c["name"] == "skills"]
    assert skills[0]["status"] == "ok" and skills[0]["message"].startswith("2 skills found")
    assert any(c["status"] == "warn" and c["message"].startswith(f"INVALID {bad}") for c in skills)

    shown = corral("trust", "--show", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "  skills (every agent may load their instructions and run their scripts): deploy" in shown.stdout
    assert ".claude/skills/deploy/SKILL.md" in shown.stdout
    assert corral("trust", env=env).returncode == 0
    trusted = json.loads(corral("skills", "list", "--json", env=env).stdout)
    assert [s["name"] for s in trusted["skills"]] == ["deploy", "pdf", "review"]


def test_a_run_whose_lead_loads_a_skill_and_names_a_malformed_one(corral: RunCorral, cli_env: Env) -> None:
    _skill(
        cli_env.config / "corral" / "skills", "house", "name: house\ndescription: House rules.", "ALWAYS-TABS"
    )
    cli_env.script(
        "lead",
        "steps:\n"
        "  - expect: {tools_include: [skill], context_excludes: [ALWAYS-TABS]}\n"
        "    tool_calls: [{name: skill, args: {name: house}}]\n"
        "  - expect: {context_contains: [ALWAYS-TABS]}\n"
        "    text: loaded the house rules\n",
    )
    bad = _skill(cli_env.config / "corral" / "skills", "broken", "name: broken")
    run = corral("run", "--model", "scripted/lead", "--no-session", "-p", "go")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "loaded the house rules"
    # a malformed skill never breaks the run: it is named on stderr
    assert f"corral: warning: skill {bad}: description is missing or empty" in run.stderr
