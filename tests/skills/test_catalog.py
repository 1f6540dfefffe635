"""Finding skills: the directories and their precedence, malformed skills reported, project skills only
once trusted and pinned by trust, confined reads; the system prompt's section and the `skill` tool."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from corral.agent import ToolError
from corral.skills import (
    Skill,
    SkillCatalog,
    SkillTool,
    discover_skills,
    granted_names,
    skill_files,
    skills_for_agent,
    skills_section,
    texts,
)
from corral.trust import is_trusted, pinned_files, trust_project


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private home (Claude Code's and Codex's homes inside it), config directory and project."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "home" / ".claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home" / ".codex"))
    (tmp_path / "project" / ".git").mkdir(parents=True)
    return tmp_path


def write_skill(root: Path, folder: str, frontmatter: str, body: str = "Do the thing.") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{frontmatter.strip()}\n---\n{body}\n", encoding="utf-8")
    return path


def discover(world: Path, *, trusted: bool | None = None) -> SkillCatalog:
    return discover_skills(world / "project", home=world / "home", trusted=trusted)


def test_user_skills_from_corral_claude_and_codex_with_the_documented_precedence(world: Path) -> None:
    corral = world / "config" / "corral" / "skills"
    claude = world / "home" / ".claude" / "skills"
    codex = world / "home" / ".codex" / "skills"
    write_skill(corral, "review", "name: review\ndescription: corral's review")
    write_skill(claude, "review", "name: review\ndescription: Claude's review")
    write_skill(claude, "pdf", "name: pdf\ndescription: Read PDFs.\nallowed-tools: Read Bash(pdftotext:*)")
    write_skill(codex, "pdf", "name: pdf\ndescription: Codex's pdf")
    write_skill(codex, "git-log", "name: git-log\ndescription: |\n  Summarise\n  the log.")
    catalog = discover_skills(world / "project", home=world / "home")
    assert catalog.names == ("git-log", "pdf", "review")
    assert catalog.get("review").description == "corral's review"  # type: ignore[union-attr]
    pdf = catalog.get("pdf")
    assert pdf is not None and pdf.description == "Read PDFs." and pdf.root == claude
    assert pdf.allowed_tools == ("Read", "Bash(pdftotext:*)") and pdf.body == "Do the thing."
    assert catalog.get("git-log").description == "Summarise the log."  # type: ignore[union-attr]
    assert sorted((s.name, s.root) for s in catalog.shadowed) == [("pdf", codex), ("review", claude)]
    assert catalog.issues == ()


def test_malformed_skills_are_reported_and_the_rest_load(world: Path) -> None:
    root = world / "config" / "corral" / "skills"
    write_skill(root, "good", "name: good\ndescription: fine")
    (root / "no-frontmatter").mkdir()
    (root / "no-frontmatter" / "SKILL.md").write_text("# just text\n")
    write_skill(root, "bad-yaml", "name: [unclosed\ndescription: x")
    write_skill(root, "no-description", "name: no-description")
    write_skill(root, "Bad_Name", "name: Bad_Name\ndescription: x")
    write_skill(root, "tools", "name: tools\ndescription: x\nallowed-tools: 3")
    write_skill(root, "folder", "name: other-name\ndescription: loads under its own name")
    write_skill(root, "nameless", "description: takes its folder's name")
    (root / "not-a-skill").mkdir()  # no SKILL.md: not a skill, not an issue
    catalog = discover(world)
    assert catalog.names == ("good", "nameless", "other-name")
    problems = {issue.path.parent.name: (issue.problem, issue.skipped) for issue in catalog.issues}
    assert set(problems) == {"no-frontmatter", "bad-yaml", "no-description", "Bad_Name", "tools", "folder"}
    assert problems["no-frontmatter"][0].startswith("must start with a `---` line")
    assert "description is missing" in problems["no-description"][0]
    assert "is not a skill name" in problems["Bad_Name"][0]
    assert problems["folder"] == (
        "name 'other-name' differs from its folder 'folder'; it loads as other-name",
        False,
    )
    assert all(skipped for name, (_, skipped) in problems.items() if name != "folder")


def test_project_skills_count_only_once_trusted_and_an_edit_untrusts(world: Path) -> None:
    project = world / "project"
    write_skill(project / ".claude" / "skills", "deploy", "name: deploy\ndescription: Ship it.")
    write_skill(project / ".agents" / "skills", "lint", "name: lint\ndescription: Lint it.")
    write_skill(project / ".corral" / "skills", "deploy", "name: deploy\ndescription: corral's deploy")
    untrusted = discover(world)
    assert untrusted.names == ()
    assert len(untrusted.untrusted) == 3
    assert "not trusted" in (untrusted.untrusted_reason or "")

    pinned = pinned_files(project)
    assert {
        ".claude/skills/deploy/SKILL.md",
        ".agents/skills/lint/SKILL.md",
        ".corral/skills/deploy/SKILL.md",
    } <= set(pinned)
    trust_project(project)
    trusted = discover(world)
    assert trusted.names == ("deploy", "lint")
    assert trusted.get("deploy").description == "corral's deploy"
    assert {s.layer for s in trusted.skills} == {"project"}

    (project / ".agents" / "skills" / "lint" / "scripts").mkdir()
    (project / ".agents" / "skills" / "lint" / "scripts" / "run.sh").write_text("rm -rf /\n")
    assert not is_trusted(project)
    again = discover(world)
    assert again.names == ()
    assert "lint/scripts/run.sh was added" in (again.untrusted_reason or "")


def test_a_user_skill_wins_over_a_project_skill_of_the_same_name(world: Path) -> None:
    project = world / "project"
    write_skill(project / ".claude" / "skills", "review", "name: review\ndescription: the repository's")
    write_skill(world / "home" / ".claude" / "skills", "review", "name: review\ndescription: mine")
    catalog = discover(world, trusted=True)
    assert catalog.get("review").description == "mine"
    assert [s.layer for s in catalog.shadowed] == ["project"]


def test_a_project_skill_that_links_out_of_the_project_is_refused(world: Path) -> None:
    project = world / "project"
    outside = write_skill(world / "elsewhere", "secret", "name: secret\ndescription: planted")
    skills = project / ".claude" / "skills"
    skills.mkdir(parents=True)
    os.symlink(outside.parent, skills / "secret")
    (skills / "linked").mkdir()
    os.symlink(outside, skills / "linked" / "SKILL.md")
    catalog = discover(world, trusted=True)
    assert catalog.names == ()
    assert len(catalog.issues) == 2
    assert all("outside" in issue.problem for issue in catalog.issues)


def test_the_skill_files_listing_stays_in_the_project(world: Path) -> None:
    project = world / "project"
    path = write_skill(project / ".agents" / "skills", "pdf", "name: pdf\ndescription: x")
    (path.parent / "scripts").mkdir()
    (path.parent / "scripts" / "extract.py").write_text("print()\n")
    (path.parent / "REFERENCE.md").write_text("ref\n")
    (path.parent / ".hidden").write_text("no\n")
    (world / "outside.txt").write_text("secret\n")
    os.symlink(world / "outside.txt", path.parent / "leak.txt")
    skill = discover(world, trusted=True).get("pdf")
    files = skill_files(skill)
    assert files.paths == (path.parent / "REFERENCE.md", path.parent / "scripts" / "extract.py")
    assert files.refused == (path.parent / "leak.txt",)


@pytest.mark.parametrize(
    ("choice", "ceiling", "expected"),
    [
        ("inherit", None, ("a", "b", "c")),
        ("inherit", ("a", "c", "gone"), ("a", "c")),
        ("none", None, ()),
        (("b", "c", "missing"), None, ("b", "c")),
        (("b", "c"), ("a", "b"), ("b",)),  # never more than the owner has
        ((), None, ()),
    ],
)
def test_granted_names(choice: object, ceiling: tuple[str, ...] | None, expected: tuple[str, ...]) -> None:
    assert granted_names(choice, ceiling, ["c", "a", "b"]) == expected


def _skill(name: str, description: str = "what it does") -> Skill:
    return Skill(name, description, Path(f"/skills/{name}/SKILL.md"), "user", Path("/skills"))


def test_the_section_lists_names_and_descriptions_and_caps_with_a_note() -> None:
    section = skills_section([_skill("b", "B things."), _skill("a", "A things.")])
    assert section == "\n".join(["# Skills", "", texts.SECTION_INTRO, "", "- a: A things.", "- b: B things."])
    many = skills_section([_skill(f"s{i:03d}", "x" * 400) for i in range(100)])
    assert many is not None
    assert many.count("\n- s") < 100 and len(many) < 9000
    assert "more skill(s) are not described here" in many and "s099" in many.splitlines()[-1]
    assert "x" * 300 not in many  # descriptions are cut
    assert skills_section([]) is None


async def test_the_tool_returns_the_body_and_the_files_and_names_the_skills_on_a_wrong_name(
    world: Path,
) -> None:
    path = write_skill(
        world / "config" / "corral" / "skills", "pdf", "name: pdf\ndescription: x", "Run scripts/go.sh."
    )
    (path.parent / "scripts").mkdir()
    (path.parent / "scripts" / "go.sh").write_text("echo\n")
    tools, section = skills_for_agent(discover(world))
    assert section is not None and "- pdf: x" in section
    [tool] = tools
    assert isinstance(tool, SkillTool) and tool.names == ("pdf",)
    result = await tool.execute("c1", {"name": "pdf"})
    text = result.content[0].text  # type: ignore[union-attr]
    assert "Run scripts/go.sh." in text and str(path.parent / "scripts" / "go.sh") in text
    assert result.details == {
        "name": "pdf",
        "path": str(path),
        "files": [str(path.parent / "scripts" / "go.sh")],
    }
    with pytest.raises(ToolError, match=re.escape("You have no skill named 'nope'. Your skills: pdf.")):
        await tool.execute("c2", {"name": "nope"})


def test_a_skill_hidden_from_the_model_is_listed_but_never_offered(world: Path) -> None:
    write_skill(
        world / "config" / "corral" / "skills",
        "deploy",
        "name: deploy\ndescription: x\ndisable-model-invocation: true",
    )
    catalog = discover(world)
    assert catalog.names == ("deploy",)
    assert skills_for_agent(catalog) == ([], None)
