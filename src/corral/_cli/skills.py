"""`corral skills list`: the skills agents here get, where each comes from, and what could not be used.

The same look as an agent's (`corral.skills.discover_skills` in the directory): the user's skill
directories, then the project's once it is trusted. A skill hidden by a same-named one that comes
first is listed as shadowed; a malformed one as INVALID with its path and the problem.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from corral.skills import Skill, SkillCatalog, discover_skills, skill_roots

__all__ = ["skills_list", "skills_problems"]


def _record(skill: Skill) -> dict[str, Any]:
    record: dict[str, Any] = {
        "name": skill.name,
        "description": skill.description,
        "layer": skill.layer,
        "root": str(skill.root),
        "path": str(skill.path),
    }
    if skill.allowed_tools is not None:
        record["allowedTools"] = list(skill.allowed_tools)
    if not skill.model_invocable:
        record["modelInvocable"] = False
    return record


def _json(catalog: SkillCatalog) -> dict[str, Any]:
    return {
        "skills": [_record(skill) for skill in catalog.skills],
        "shadowed": [_record(skill) for skill in catalog.shadowed],
        "issues": [
            {"path": str(issue.path), "problem": issue.problem, "skipped": issue.skipped}
            for issue in catalog.issues
        ],
        "untrusted": [str(path) for path in catalog.untrusted],
        "untrustedReason": catalog.untrusted_reason,
    }


def skills_problems(catalog: SkillCatalog) -> list[str]:
    """One line per skill that could not be used as it is, and for project skills not used."""
    lines = [
        f"{'INVALID' if issue.skipped else 'note'} {issue.path}: {' '.join(issue.problem.split())}"
        for issue in catalog.issues
    ]
    if catalog.untrusted:
        where = ", ".join(str(path) for path in catalog.untrusted)
        lines.append(f"not used: the skills in {where}: {catalog.untrusted_reason}")
    return lines


def skills_list(*, cwd: Path, as_json: bool, out: IO[str]) -> int:
    """`corral skills list [--json]`: one line per skill (name, where from, description)."""
    catalog = discover_skills(cwd)
    if as_json:
        out.write(json.dumps(_json(catalog), indent=2) + "\n")
        return 0
    if not catalog.skills and not catalog.issues and not catalog.untrusted:
        roots = ", ".join(str(root) for root, _ in skill_roots(cwd))
        out.write(f"No skills found. A skill is a folder holding SKILL.md in one of: {roots}\n")
        return 0
    width = max((len(skill.name) for skill in catalog.skills), default=0)
    for skill in catalog.skills:
        hidden = " (hidden from agents: disable-model-invocation)" if not skill.model_invocable else ""
        out.write(f"{skill.name.ljust(width)}  {skill.layer:<7}  {skill.root}  {skill.description}{hidden}\n")
    for skill in catalog.shadowed:
        winner = catalog.get(skill.name)
        by = f"; the one in {winner.root} is used" if winner is not None else ""
        out.write(f"shadowed {skill.name}: {skill.path}{by}\n")
    for line in skills_problems(catalog):
        out.write(line + "\n")
    return 0
