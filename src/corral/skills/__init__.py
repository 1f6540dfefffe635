"""Skills (agentskills.io `SKILL.md` folders) for every agent, lead to leaf: docs/skills.md.

`_catalog.py` finds them (the user's and, once trusted, the project's skill directories) and
decides which an agent gets (`granted_names`: its definition's `skills`, never more than its
owner); `_tool.py` gives an agent the `skill` tool and its system prompt's `# Skills` section;
`texts.py` holds the words. The package ranks above `agent` (its tool is an `AgentTool`) and below
`harness` and the core, which import it where agents are built. YAML loads only when a `SKILL.md`
is read (`corral._frontmatter`).
"""

from collections.abc import Sequence
from pathlib import Path

from ._catalog import (
    PROJECT_SKILL_DIRS,
    SKILL_FILE_MAX_BYTES,
    Skill,
    SkillCatalog,
    SkillChoice,
    SkillFiles,
    SkillIssue,
    SkillLayer,
    discover_skills,
    granted_names,
    skill_files,
    skill_roots,
)
from ._tool import (
    SKILL_TOOL_NAME,
    SkillTool,
    skill_names_in,
    skill_names_of,
    skills_for_agent,
    skills_section,
)

__all__ = [
    "PROJECT_SKILL_DIRS",
    "SKILL_FILE_MAX_BYTES",
    "SKILL_TOOL_NAME",
    "Skill",
    "SkillCatalog",
    "SkillChoice",
    "SkillFiles",
    "SkillIssue",
    "SkillLayer",
    "SkillTool",
    "agent_catalog",
    "discover_skills",
    "granted_names",
    "skill_files",
    "skill_names_in",
    "skill_names_of",
    "skill_roots",
    "skills_for_agent",
    "skills_section",
]


def agent_catalog(
    cwd: Path, *, choice: SkillChoice = "inherit", ceiling: Sequence[str] | None = None
) -> SkillCatalog:
    """The skills an agent working in `cwd` gets: those found there (`discover_skills`), as its
    definition's `choice` grants them, never more than `ceiling` (its owner's; `None`: no limit)."""
    catalog = discover_skills(cwd)
    return catalog.only(granted_names(choice, ceiling, catalog.names))
