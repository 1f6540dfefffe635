"""Finding skills: the `SKILL.md` folders of the user's and the project's skill directories.

A skill is a folder holding `SKILL.md` (agentskills.io): YAML frontmatter with `name` and
`description` (and optionally `allowed-tools`), then Markdown instructions. The folders are found
directly below six directories, in precedence order (a name found twice is the first's; the others
are `shadowed`):

1. `$XDG_CONFIG_HOME/corral/skills` (corral's own, `config_home()`),
2. `~/.claude/skills` (`$CLAUDE_CONFIG_DIR/skills` when that is set),
3. `~/.codex/skills` (`$CODEX_HOME/skills` when that is set),
4. the project's `.corral/skills`, 5. `.claude/skills`, 6. `.agents/skills` — in the agent's
   working directory, read only once that directory is trusted (`corral trust`); the trust is
   pinned to every file below them (`corral.trust.pinned_files`), so an edit untrusts the project.

The user's directories win over the project's, as the user's agent definitions do: a repository
cannot replace a skill the user wrote by shipping one of the same name.

Every file is read as `corral._confined` reads a planted file: a project skill's folder and its
`SKILL.md` must resolve inside the project (`project_root`: a link out of it is refused, never
followed), a user skill's anywhere but `/proc`, `/dev` and `/sys`; `SKILL.md` must be a regular
file of at most `SKILL_FILE_MAX_BYTES`. A malformed skill never breaks a run: it is left out and
reported as a `SkillIssue` (`corral skills list`, `corral doctor`).
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from pathlib import Path
from typing import Literal

from corral._confined import Refused, confined_target, project_root, read_confined
from corral._paths import config_home
from corral.trust import FOREIGN_SKILL_DIRS, TrustStoreError, trust_state

__all__ = [
    "PROJECT_SKILL_DIRS",
    "SKILL_FILE_MAX_BYTES",
    "Skill",
    "SkillCatalog",
    "SkillChoice",
    "SkillFiles",
    "SkillIssue",
    "SkillLayer",
    "discover_skills",
    "granted_names",
    "skill_files",
    "skill_roots",
]

SkillLayer = Literal["user", "project"]
"""Whose directory a skill came from."""

SkillChoice = Literal["inherit", "none"] | tuple[str, ...]
"""What a definition asks for (`skills:`): its owner's skills, none, or these names (never more than
its owner has)."""

PROJECT_SKILL_DIRS = (".corral/skills", *FOREIGN_SKILL_DIRS)
"""The project's skill directories, relative to the working directory, in precedence order: each is
pinned by trust (`.corral/skills` as a `PINNED_ENTRIES` entry, the others as `FOREIGN_SKILL_DIRS`)."""

SKILL_FILE_MAX_BYTES = 262144
"""The largest `SKILL.md` read (256 KiB); a larger one is reported and left out."""

_MAX_FOLDERS = 1000
"""Entries of one skills directory looked at, at most; the rest are reported, not read."""

_MAX_WALK = 2000
"""Files of one skill's folder the `skill` tool's listing looks at, at most."""

_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_NAME_MAX = 64


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill: its name and description (what the system prompt lists), where it lives, and
    its instructions (what the `skill` tool returns)."""

    name: str
    description: str
    """What it does and when to use it (the frontmatter's, whitespace folded to single spaces)."""
    path: Path
    """Its `SKILL.md`, as found (the folder is its parent)."""
    layer: SkillLayer
    root: Path
    """The skills directory it was found in (`~/.claude/skills`, `<cwd>/.agents/skills`, …)."""
    _: KW_ONLY
    body: str = ""
    """The Markdown after the frontmatter, read (and, for a project skill, trusted) with the rest."""
    allowed_tools: tuple[str, ...] | None = None
    """`allowed-tools` as written (`Read`, `Bash(git:*)`, …); `None` when absent."""
    model_invocable: bool = True
    """False for `disable-model-invocation: true` (Claude Code): listed for the user, never offered
    to an agent."""
    confined_to: Path | None = None
    """Where its files must resolve (a project skill's project); `None`: anywhere but `/proc`,
    `/dev` and `/sys` (a user skill)."""

    @property
    def directory(self) -> Path:
        """The skill's folder (its other files' paths in the body are relative to it)."""
        return self.path.parent


@dataclass(frozen=True, slots=True)
class SkillIssue:
    """A skill folder or directory that was not used as it is, and why."""

    path: Path
    problem: str
    """What is wrong and what to do, in one line."""
    _: KW_ONLY
    skipped: bool = True
    """Whether the skill was left out (`False`: it loads, with this note)."""

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


@dataclass(frozen=True, slots=True)
class SkillCatalog:
    """The skills of one working directory: the ones in effect, the ones a same-named skill of a
    higher directory hid, what could not be used, and whether the project's were skipped."""

    skills: tuple[Skill, ...] = ()
    """In effect, by name; one per name."""
    shadowed: tuple[Skill, ...] = ()
    """Found, but a skill of the same name in a directory that comes first won."""
    issues: tuple[SkillIssue, ...] = ()
    _: KW_ONLY
    untrusted: tuple[Path, ...] = ()
    """Project skill directories that exist but were not read: the project is not trusted."""
    untrusted_reason: str | None = None
    """Why (not trusted yet, or which pinned file changed since), when `untrusted` is not empty."""

    @property
    def names(self) -> tuple[str, ...]:
        """The names in effect, sorted."""
        return tuple(skill.name for skill in self.skills)

    def get(self, name: str) -> Skill | None:
        """The skill in effect called `name`."""
        return next((skill for skill in self.skills if skill.name == name), None)

    def offered(self) -> tuple[Skill, ...]:
        """The skills an agent may be offered (those whose model invocation is not disabled)."""
        return tuple(skill for skill in self.skills if skill.model_invocable)

    def only(self, names: Iterable[str] | None) -> SkillCatalog:
        """This catalog with only the skills named in `names` in effect (`None`: all of them)."""
        if names is None:
            return self
        wanted = set(names)
        return replace(self, skills=tuple(skill for skill in self.skills if skill.name in wanted))


def granted_names(
    choice: SkillChoice, ceiling: Sequence[str] | None, available: Iterable[str]
) -> tuple[str, ...]:
    """The skills an agent gets: what its definition asks for (`choice`), never more than its owner
    has (`ceiling`; `None`: no limit, the lead's), of the skills found where it runs (`available`).

    `inherit` gets the owner's; `none` gets none; a list gets the names on it the owner has.
    """
    if choice == "none":
        return ()
    found = sorted(set(available))
    allowed = found if ceiling is None else [name for name in found if name in set(ceiling)]
    if choice == "inherit":
        return tuple(allowed)
    return tuple(name for name in allowed if name in set(choice))


def _env_dir(variable: str, default: Path) -> Path:
    value = os.environ.get(variable)
    return Path(value).expanduser() if value else default


def skill_roots(
    cwd: Path, *, home: Path | None = None, config_dir: Path | None = None
) -> tuple[tuple[Path, SkillLayer], ...]:
    """The skill directories for `cwd`, in precedence order (see the module docstring)."""
    home = home if home is not None else Path.home()
    config = config_dir if config_dir is not None else config_home()
    user: list[tuple[Path, SkillLayer]] = [
        (config / "skills", "user"),
        (_env_dir("CLAUDE_CONFIG_DIR", home / ".claude") / "skills", "user"),
        (_env_dir("CODEX_HOME", home / ".codex") / "skills", "user"),
    ]
    real = Path(os.path.realpath(cwd))
    project: list[tuple[Path, SkillLayer]] = [(real / relative, "project") for relative in PROJECT_SKILL_DIRS]
    return (*user, *project)


def discover_skills(
    cwd: Path,
    *,
    home: Path | None = None,
    config_dir: Path | None = None,
    trusted: bool | None = None,
) -> SkillCatalog:
    """The skills for an agent working in `cwd`. Never raises for a bad skill or directory.

    Args:
        cwd: The agent's working directory (its project skill directories are below it).
        home: Where `~/.claude` and `~/.codex` are (default: the home directory).
        config_dir: corral's configuration directory (default `config_home()`).
        trusted: Whether the project's skills count; `None` asks the trust store, and only when a
            project skill directory exists.
    """
    real = Path(os.path.realpath(cwd))
    project = project_root(real, home=home)
    found: list[Skill] = []
    issues: list[SkillIssue] = []
    untrusted: list[Path] = []
    reason: str | None = None
    for root, layer in skill_roots(real, home=home, config_dir=config_dir):
        if not os.path.isdir(root):
            continue
        if layer == "project":
            if trusted is None:
                trusted, reason = _project_trusted(real)
            if not trusted:
                untrusted.append(root)
                continue
        found += _read_root(root, layer, [project] if layer == "project" else None, issues)
    winners: dict[str, Skill] = {}
    shadowed: list[Skill] = []
    for skill in found:
        if skill.name in winners:
            shadowed.append(skill)
        else:
            winners[skill.name] = skill
    if untrusted and reason is None:
        reason = f"the project {real} is not trusted; run `corral trust` there to use its skills"
    return SkillCatalog(
        tuple(winners[name] for name in sorted(winners)),
        tuple(shadowed),
        tuple(issues),
        untrusted=tuple(untrusted),
        untrusted_reason=reason if untrusted else None,
    )


def _project_trusted(cwd: Path) -> tuple[bool, str | None]:
    """Whether the project at `cwd` is trusted now, and if not why (fails closed)."""
    try:
        state = trust_state(cwd)  # once: it hashes every pinned file
    except TrustStoreError as exc:
        return False, f"the trust store cannot be read ({exc}), so the project's skills are not used"
    if state.trusted:
        return True, None
    changed = state.changed
    if changed:
        return False, f"the project {cwd} is no longer trusted: {changed}; run `corral trust` there again"
    return False, None


def _read_root(
    root: Path, layer: SkillLayer, roots: list[Path] | None, issues: list[SkillIssue]
) -> list[Skill]:
    """The skills of one directory: each folder directly below it that holds a `SKILL.md`, by name."""
    try:
        confined_target(root, roots)
    except Refused as refused:
        issues.append(SkillIssue(root, f"not read: {refused.reason}{_keep_inside(roots)}"))
        return []
    try:
        entries = sorted(os.listdir(root))
    except OSError as exc:
        issues.append(SkillIssue(root, f"cannot list the directory: {exc.strerror or exc}"))
        return []
    if len(entries) > _MAX_FOLDERS:
        issues.append(
            SkillIssue(
                root,
                f"more than {_MAX_FOLDERS} entries; only the first {_MAX_FOLDERS} (by name) were read",
                skipped=False,
            )
        )
        entries = entries[:_MAX_FOLDERS]
    skills: list[Skill] = []
    for entry in entries:
        if entry.startswith("."):
            continue
        folder = root / entry
        path = folder / "SKILL.md"
        if not os.path.isdir(folder) or not os.path.lexists(path):
            continue
        skill = _read_skill(path, layer, root, roots, issues)
        if skill is not None:
            skills.append(skill)
    return skills


def _keep_inside(roots: list[Path] | None) -> str:
    return "; keep project skills inside the project" if roots is not None else ""


def _read_skill(
    path: Path, layer: SkillLayer, root: Path, roots: list[Path] | None, issues: list[SkillIssue]
) -> Skill | None:
    from corral._frontmatter import FrontmatterError, load_frontmatter, split_frontmatter

    try:
        confined_target(path.parent, roots)
        data = read_confined(path, roots=roots, limit=SKILL_FILE_MAX_BYTES)
    except Refused as refused:
        issues.append(SkillIssue(path, f"not read: {refused.reason}{_keep_inside(roots)}"))
        return None
    except OSError as exc:
        issues.append(SkillIssue(path, f"cannot read the file: {exc.strerror or exc}"))
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        issues.append(SkillIssue(path, "not valid UTF-8; save it as UTF-8"))
        return None
    try:
        head, body = split_frontmatter(text)
        fields = copy.deepcopy(load_frontmatter(head))
    except FrontmatterError as exc:
        issues.append(SkillIssue(path, exc.problem))
        return None
    if not isinstance(fields, dict):
        issues.append(SkillIssue(path, "the frontmatter must be a YAML mapping (name: …, description: …)"))
        return None
    try:
        return _skill(path, layer, root, fields, body.strip(), issues, roots[0] if roots else None)
    except _Malformed as exc:
        issues.append(SkillIssue(path, exc.problem))
        return None


class _Malformed(Exception):
    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def _skill(
    path: Path,
    layer: SkillLayer,
    root: Path,
    fields: dict[object, object],
    body: str,
    issues: list[SkillIssue],
    confined_to: Path | None,
) -> Skill:
    folder = path.parent.name
    name = fields.get("name", folder)
    if not isinstance(name, str) or not name.strip():
        raise _Malformed(f"name must be a non-empty string, got {name!r}")
    name = name.strip()
    if len(name) > _NAME_MAX or not _NAME.match(name):
        raise _Malformed(
            f"name {name!r} is not a skill name: at most {_NAME_MAX} lowercase letters, digits and single "
            "hyphens, neither first nor last (agentskills.io)"
        )
    if name != folder:
        issues.append(
            SkillIssue(
                path, f"name {name!r} differs from its folder {folder!r}; it loads as {name}", skipped=False
            )
        )
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise _Malformed("description is missing or empty; say what the skill does and when to use it")
    allowed = fields.get("allowed-tools")
    tools: tuple[str, ...] | None = None
    if isinstance(allowed, str):
        tools = tuple(allowed.split())
    elif isinstance(allowed, list) and all(isinstance(item, str) and item.strip() for item in allowed):
        tools = tuple(item.strip() for item in allowed)
    elif allowed is not None:
        raise _Malformed(
            f"allowed-tools must be a space-separated string or a list of names, got {allowed!r}"
        )
    hidden = fields.get("disable-model-invocation", False)
    if not isinstance(hidden, bool):
        raise _Malformed(f"disable-model-invocation must be true or false, got {hidden!r}")
    return Skill(
        name,
        " ".join(description.split()),
        path,
        layer,
        root,
        body=body,
        allowed_tools=tools,
        model_invocable=not hidden,
        confined_to=confined_to,
    )


@dataclass(frozen=True, slots=True)
class SkillFiles:
    """The files of a skill's folder besides `SKILL.md`, as the `skill` tool lists them."""

    paths: tuple[Path, ...] = ()
    """Sorted, at most the listing's cap."""
    more: int = 0
    """Files found past the cap (or past the walk's limit)."""
    refused: tuple[Path, ...] = ()
    """Entries left out because they lead outside where the skill may read (a project skill's link
    out of the project)."""


def skill_files(skill: Skill, *, limit: int = 100) -> SkillFiles:
    """The files of `skill`'s folder (below it, hidden entries skipped), without `SKILL.md`.

    A project skill's entries must resolve inside the project (`Skill.confined_to`); a link out of
    it is named in `refused`, never followed. The walk looks at most `_MAX_WALK` entries.
    """
    roots = None if skill.confined_to is None else [skill.confined_to]
    top = skill.directory
    found: list[Path] = []
    refused: list[Path] = []
    seen = 0
    walked: set[str] = set()
    for current, dirs, names in os.walk(top, followlinks=True):
        real = os.path.realpath(current)
        if real in walked:  # a link back to a folder already listed
            dirs[:] = []
            continue
        walked.add(real)
        kept: list[str] = []
        for name in sorted(dirs):
            seen += 1
            if name.startswith("."):
                continue
            try:
                confined_target(Path(current) / name, roots)
            except Refused:
                refused.append(Path(current) / name)
                continue
            kept.append(name)
        dirs[:] = kept
        for name in sorted(names):
            path = Path(current) / name
            if name.startswith(".") or path == skill.path:
                continue
            seen += 1
            try:
                confined_target(path, roots)
            except Refused:
                refused.append(path)
                continue
            found.append(path)
        if seen > _MAX_WALK:
            break
    found.sort()
    more = max(0, len(found) - limit)
    if seen > _MAX_WALK:
        more += 1
    return SkillFiles(tuple(found[:limit]), more, tuple(refused))
