"""What corral tells a model about skills, in corral's words: the system prompt's section, the
`skill` tool's description, what it returns and its errors. One plain function per fact; the
caps and the reading are `_tool.py`'s (the discovery `_catalog.py`'s)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.skills._catalog import Skill, SkillFiles

__all__ = [
    "SECTION_INTRO",
    "TOOL_DESCRIPTION",
    "TOOL_NAME_PARAMETER",
    "TOOL_SNIPPET",
    "skill_loaded",
    "skills_section",
    "unknown_skill",
]

SECTION_INTRO = (
    "Skills are folders of instructions for particular tasks. When a task matches a skill's description, "
    "call the skill tool with the skill's name before you start, and follow the instructions it returns; "
    "it also lists the skill's other files, which you read with the read tool when the instructions call for "
    "them. Load a skill only when the task needs it."
)
"""The first paragraph of the system prompt's `# Skills` section."""

TOOL_DESCRIPTION = (
    "Load one of your skills by name: its full instructions, and the paths of the files in its folder. "
    "The system prompt's Skills section lists your skills and what each is for."
)

TOOL_SNIPPET = "Load a skill's instructions by name (your skills are listed under Skills)"
"""The skill tool's line in the system prompt's list of tools."""

TOOL_NAME_PARAMETER = "The skill's name, exactly as listed under Skills."


def skills_section(listed: Sequence[tuple[str, str]], unlisted: Sequence[str]) -> str:
    """The `# Skills` section: each listed skill's name and (shortened) description, then how many
    were left out by the cap, by name."""
    lines = ["# Skills", "", SECTION_INTRO, ""]
    lines += [f"- {name}: {description}" for name, description in listed]
    if unlisted:
        lines += [
            "",
            f"{len(unlisted)} more skill(s) are not described here, to keep this prompt short: "
            f"{', '.join(unlisted)}. Load one by name when its name fits the task.",
        ]
    return "\n".join(lines)


def skill_loaded(skill: Skill, files: SkillFiles) -> str:
    """What the skill tool returns: where the skill is, its instructions, and its folder's files."""
    folder = skill.directory
    parts = [
        f"Skill {skill.name} ({skill.path}). Follow these instructions; "
        f"relative paths in them are relative to {folder}.",
        skill.body or "(The skill's SKILL.md has no instructions after its frontmatter.)",
    ]
    if files.paths:
        listing = "\n".join(str(path) for path in files.paths)
        more = f"\n… and {files.more} more file(s); list the folder to see them" if files.more else ""
        parts.append(
            "Files in the skill's folder (read one with the read tool when the instructions call for it):\n"
            f"{listing}{more}"
        )
    else:
        parts.append("The skill's folder holds no other files.")
    if files.refused:
        parts.append(
            "Not listed, since they lead outside the project: "
            + ", ".join(str(path) for path in files.refused)
        )
    return "\n\n".join(parts)


def unknown_skill(name: str, names: Sequence[str]) -> str:
    """The skill tool's error for a name the agent does not have."""
    return f"You have no skill named {name!r}. Your skills: {', '.join(names) or '(none)'}."
