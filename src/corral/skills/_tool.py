"""The `skill` tool and the system prompt's `# Skills` section: what an agent gets of its skills.

The section lists each skill's name and description (about a line each, capped); the body and the
skill's other files reach the model only when it calls `skill` with the name. An agent has the
tool exactly when it has at least one skill, so the tool also says which skills an agent has
(`skill_names_of`): a nested helper's owner is never asked for more than it holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from corral.agent import AgentSession, AgentTool, ToolError, ToolResult, ToolUpdate

from . import texts
from ._catalog import Skill, SkillCatalog, skill_files

__all__ = [
    "DESCRIPTION_MAX_CHARS",
    "LISTED_MAX",
    "SECTION_MAX_CHARS",
    "SKILL_TOOL_NAME",
    "SkillTool",
    "skill_names_in",
    "skill_names_of",
    "skills_for_agent",
    "skills_section",
]

SKILL_TOOL_NAME = "skill"

LISTED_MAX = 64
"""Skills described in the system prompt, at most; the rest are named in one line."""
SECTION_MAX_CHARS = 8000
"""The descriptions' lines stop before the section passes this many characters (~2,000 tokens)."""
DESCRIPTION_MAX_CHARS = 300
"""A description longer than this is cut (with `…`) in the system prompt."""


def _short(description: str) -> str:
    if len(description) <= DESCRIPTION_MAX_CHARS:
        return description
    return description[: DESCRIPTION_MAX_CHARS - 1].rstrip() + "…"


def skills_section(skills: Sequence[Skill]) -> str | None:
    """The system prompt's `# Skills` section for `skills` (`None` when there are none): each
    skill's name and description, by name, until `LISTED_MAX` skills or `SECTION_MAX_CHARS`; the
    others are named in a last line."""
    if not skills:
        return None
    listed: list[tuple[str, str]] = []
    size = 0
    ordered = sorted(skills, key=lambda skill: skill.name)
    for skill in ordered:
        line = (skill.name, _short(skill.description))
        size += len(line[0]) + len(line[1]) + 4
        if len(listed) >= LISTED_MAX or size > SECTION_MAX_CHARS:
            break
        listed.append(line)
    unlisted = [skill.name for skill in ordered[len(listed) :]]
    return texts.skills_section(listed, unlisted)


class SkillTool(AgentTool):
    """`skill(name)`: one of the agent's skills, loaded: its instructions and its folder's files."""

    name = SKILL_TOOL_NAME
    label = "Skill"
    description = texts.TOOL_DESCRIPTION
    prompt_snippet = texts.TOOL_SNIPPET
    parameters: dict[str, Any] = {  # noqa: RUF012 - the tool's schema
        "type": "object",
        "properties": {"name": {"type": "string", "description": texts.TOOL_NAME_PARAMETER}},
        "required": ["name"],
        "additionalProperties": False,
    }

    def __init__(self, skills: Sequence[Skill]) -> None:
        self.skills = {skill.name: skill for skill in sorted(skills, key=lambda s: s.name)}

    @property
    def names(self) -> tuple[str, ...]:
        """The agent's skills, by name."""
        return tuple(self.skills)

    async def execute(
        self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
    ) -> ToolResult:
        """The skill's instructions and its folder's files; an unknown name is an error naming them all."""
        name = str(params.get("name", "")).strip()
        skill = self.skills.get(name)
        if skill is None:
            raise ToolError(texts.unknown_skill(name, self.names))
        files = await asyncio.to_thread(skill_files, skill)
        details = {
            "name": skill.name,
            "path": str(skill.path),
            "files": [str(path) for path in files.paths],
        }
        if skill.allowed_tools is not None:
            details["allowedTools"] = list(skill.allowed_tools)
        return ToolResult.text(texts.skill_loaded(skill, files), details=details)


def skills_for_agent(catalog: SkillCatalog) -> tuple[list[AgentTool], str | None]:
    """The `skill` tool and the system prompt's section for an agent with `catalog`'s skills (the
    ones it may be offered); neither when it has none."""
    offered = catalog.offered()
    if not offered:
        return [], None
    return [SkillTool(offered)], skills_section(offered)


def skill_names_in(tools: Iterable[AgentTool]) -> tuple[str, ...]:
    """The skills of an agent with `tools`: its `skill` tool's names (none without the tool)."""
    for tool in tools:
        if isinstance(tool, SkillTool):
            return tool.names
    return ()


def skill_names_of(agent: AgentSession) -> tuple[str, ...]:
    """The skills `agent` has (its `skill` tool's names; an ACP agent has none of corral's)."""
    return skill_names_in(agent.tools)
