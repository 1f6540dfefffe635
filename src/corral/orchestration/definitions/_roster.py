"""Agent definitions: Markdown files with strict YAML frontmatter, in three layers.

A definition is configuration, never live identity: a name, what the agent is
for, its model and thinking level, a tool policy, optionally the definitions it
may delegate to, and a prompt (the Markdown body).

Three layers are read, lowest first:

1. bundled — `corral/orchestration/definitions/bundled/` in the package;
2. project — `<cwd>/.claude/agents/` (Claude Code files), `<cwd>/.pi/agents/`
   (Pi files), then `<cwd>/.corral/agents/`, counted only when the user trusted
   the project (`is_trusted`, `corral trust`); otherwise its definitions are
   listed disabled with the reason;
3. user — `~/.claude/agents/`, `~/.pi/agent/agents/`, then
   `$XDG_CONFIG_HOME/corral/agents/`.

Within a layer the directories are read in that order and overlay like layers
do, so a corral file can refine a Claude Code or Pi definition of the same
name. Claude Code and Pi files have their own fields, which are mapped onto
corral's (`_claude_fields`, `_pi_fields`): tool names to corral's tools, model
aliases (`sonnet`, `opus`, `haiku`) through `ModelNames.aliases` (the
`[model_aliases]` settings), `inherit` to no model.

Every `*.md` file below a layer's directory (recursively; `*.example.md` is
skipped) is one definition; the file name does not matter, `name` is the
identity. A higher layer's definition with an existing name overlays it:
omitted fields inherit, given fields (lists included) replace, an empty body
inherits and a non-empty body replaces, or with `bodyMode: append` is added
after the lower body. Body lines that are exactly `@./…` or `@../…` are
resolved against the declaring file before layering.

The walk is bounded and stays home: a project layer's directory, and every definition file in it,
must resolve inside the project (`corral._confined.project_root`), so a repository's
`.corral/agents -> /usr` loads nothing from `/usr` (and costs nothing); a user layer's may link
anywhere but `/proc`, `/dev` and `/sys`. A directory's walk stops after `_MAX_WALK_ENTRIES` entries.
Each refusal is a `DefinitionIssue` and is named once per process on stderr.

A bad file never breaks the roster: it is reported as a `DefinitionIssue`
with its path and the problem, and the rest loads. When the bad file still
names a definition, that definition is disabled rather than silently left at
its lower layer (an override that fails to load must not fall back to a
definition the user meant to change).
"""

from __future__ import annotations

import copy
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from corral._confined import Refused, confined_target, note_refused, project_root
from corral._paths import config_home
from corral.agent.tools import ALL_TOOL_NAMES
from corral.harness import CORRAL_HARNESS, harness_problem, is_acp
from corral.llm._errors import ModelRefError
from corral.llm._model import THINKING_LEVELS, ThinkingLevel, as_thinking_level
from corral.llm._refs import parse_model_ref
from corral.llm._registry import ModelRegistry
from corral.orchestration.errors import InvalidRequestError
from corral.settings import AgentBudgetSettings, PermissionsSettings
from corral.skills import SkillChoice
from corral.trust import TrustStoreError, is_trusted, trust_store_path

if TYPE_CHECKING:
    from corral.mcp_servers import McpChoice

__all__ = [
    "AgentDefinition",
    "DefinitionFormat",
    "DefinitionIssue",
    "DefinitionLayer",
    "ModelNames",
    "PromptMode",
    "Roster",
    "RuntimeKind",
    "SkillPolicy",
    "ToolPolicy",
    "bundled_definitions_dir",
    "is_delegating",
    "leaf_projection",
    "load_roster",
    "model_names",
    "project_definitions_dir",
    "user_definitions_dir",
]

DefinitionLayer = Literal["bundled", "project", "user"]
DefinitionFormat = Literal["corral", "claude", "pi"]
"""Whose file format a definition file is in: corral's, Claude Code's or Pi's."""
RuntimeKind = Literal["inprocess", "tmux", "ray"]
PromptMode = Literal["append", "replace"]

_LAYERS: tuple[DefinitionLayer, ...] = ("bundled", "project", "user")
_SOURCE_KEYS: dict[DefinitionLayer, str] = {
    "bundled": "extensionSource",
    "project": "projectSource",
    "user": "overrideSource",
}
_MAX_DEFINITION_BYTES = 1048576
_MAX_WALK_ENTRIES = 10000
"""Entries (files and directories) one layer directory's walk visits at most."""
_DELEGATION_TOOL = "agent"
_BODY_REF = re.compile(r"^@(\.\.?/.*)$")


@dataclass(frozen=True)
class ToolPolicy:
    """Which tools an agent gets (`tools`, `excludeTools`, `noTools`, `noBuiltinTools`).

    The name `agent` in these lists is a policy sentinel for delegation, never a callable tool.
    """

    _: KW_ONLY
    tools: tuple[str, ...] | None = None
    """Explicit allowlist; `None` when omitted (the defaults apply)."""
    exclude_tools: tuple[str, ...] = ()
    """Tools removed from whatever is allowed; exclusions win."""
    no_tools: bool = False
    """Start with no tools (only those named in `tools`)."""
    no_builtin_tools: bool = False
    """Start without the built-in tools."""


@dataclass(frozen=True)
class SkillPolicy:
    """Which skills an agent gets (`skills: inherit | none | [names]`; Pi's `noSkills` and
    `inheritSkills` map onto it). docs/skills.md has the rule."""

    _: KW_ONLY
    no_skills: bool | None = None
    """Explicit `noSkills` (Pi); `None` when omitted. `true` gives no skills, whatever `skills` says."""
    inherit_skills: bool | None = None
    """Explicit `inheritSkills` (Pi); `None` when omitted. `false` without a `skills` list gives none."""
    skills: SkillChoice | None = None
    """`skills` as written: `inherit`, `none` or the names (a Claude Code file's list); `None` when omitted."""

    @property
    def choice(self) -> SkillChoice:
        """What the agent asks for: `noSkills: true` → `none`; else `skills` when given; else
        `inheritSkills: false` → `none`; else `inherit` (the default: its owner's skills)."""
        if self.no_skills:
            return "none"
        if self.skills is not None:
            return self.skills
        if self.inherit_skills is False:
            return "none"
        return "inherit"


@dataclass(frozen=True)
class ModelNames:
    """What a Claude Code or Pi definition's `model` may name, as the user configured it."""

    _: KW_ONLY
    aliases: Mapping[str, str] = field(default_factory=dict)
    """`[model_aliases]`: alias (`sonnet`, `opus`, `haiku`, …) → model ref; an unset alias inherits."""
    known: tuple[str, ...] = ()
    """Every `provider/id` corral knows; a Pi file's bare model id maps to the one ending in `/id`."""


@dataclass(frozen=True)
class DefinitionIssue:
    """A definition file that could not be used, or a definition that was not applied."""

    path: Path
    """The file (or the trust store) concerned."""
    problem: str
    """What is wrong and what to do, in one line."""

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


@dataclass(frozen=True)
class AgentDefinition:
    """One effective definition, after layering."""

    name: str
    """The identity (`name`)."""
    _: KW_ONLY
    description: str = ""
    """What the agent is for (`description`)."""
    model: str | None = None
    """Model ref `provider/model[:thinking]`; `None` inherits (fresh: the spawner's, continue: the saved one)."""
    thinking: ThinkingLevel | None = None
    """Thinking level; `None` inherits like `model`. `thinking: false` is `off`; `max` is `xhigh`."""
    tool_policy: ToolPolicy = field(default_factory=ToolPolicy)
    """The tool policy; after inference, a delegating definition's explicit list includes `agent`."""
    skill_policy: SkillPolicy = field(default_factory=SkillPolicy)
    """The skill policy."""
    agents: tuple[str, ...] = ()
    """Definitions this agent may delegate to (`agents`); non-empty makes it potentially delegating."""
    enabled: bool = True
    """Whether it may be used for new work. False for `enabled: false`, untrusted or broken definitions."""
    disabled_reason: str | None = None
    """Why it is disabled, when it is."""
    system_prompt_mode: PromptMode = "append"
    """Whether the body is appended to corral's base prompt or replaces it (`systemPromptMode`)."""
    inherit_project_context: bool = False
    """Whether project context files (AGENTS.md, …) reach the agent; default true only for `delegate`."""
    inherit_global_context: bool = False
    """Whether user-level context files reach the agent; defaults to `inherit_project_context`."""
    no_extensions: bool = False
    """Pi's `noExtensions`; kept for compatibility, corral has no extensions yet."""
    extensions: tuple[str, ...] = ()
    """Pi's `extensions`; kept for compatibility, corral has no extensions yet."""
    permission: Mapping[str, Any] | None = None
    """Opaque `permission` mapping, preserved for permission hooks and never evaluated."""
    runtime: RuntimeKind | None = None
    """Where its generations run (`inprocess` or `tmux`); `None` uses the configured default."""
    isolation: Literal["shared", "worktree"] | None = None
    """Where it writes: `worktree` (its own git worktree and branch) or `shared`; `None` follows the
    `isolation` setting. Only agents with `write` or `edit` are ever isolated."""
    harness: str = "corral"
    """What runs its agents (`harness`): `corral`'s own loop, `acp` (an ACP agent started with
    `command`) or a preset ACP agent (`claude-code`, `codex`, `opencode`, `gemini`, `goose`); see
    docs/harnesses.md. A definition naming another is disabled with the allowed values as its reason."""
    command: tuple[str, ...] = ()
    """The ACP agent's command (`command: [program, arg, …]`); a preset's when empty."""
    budget: AgentBudgetSettings | None = None
    """Its agents' limits (`budget:` with `agent_tokens`, `agent_cost_usd`, `agent_minutes`); they
    replace the `[budget]` keys they set (docs/fleet.md)."""
    mcp: McpChoice = "inherit"
    """Its MCP servers (`mcp:`): `inherit` (default: those of the agent that starts it), `none`, or
    the names of the ones it keeps of those (docs/mcp-servers.md). Claude Code's `mcpServers` maps here."""
    permissions: PermissionsSettings | None = None
    """Its agents' own permission rules (`permissions:` with `allow`, `ask`, `deny`, `default`), which
    narrow what they inherit from the agent that starts them (and `[permissions]`): never loosen
    (docs/permissions.md). `None`: none of its own."""
    body: str = ""
    """The prompt text (the Markdown body), with relative `@file` lines made absolute."""
    layer: DefinitionLayer = "bundled"
    """The highest layer that contributed to it."""
    path: Path | None = None
    """The file of that layer."""
    sources: Mapping[DefinitionLayer, Path] = field(default_factory=dict)
    """Every contributing file by layer."""
    format: DefinitionFormat = "corral"
    """The format of the highest file (`claude` and `pi` files are mapped onto corral's fields)."""
    model_alias: str | None = None
    """The alias a Claude Code or Pi file named as its model (`sonnet`, `inherit`, …), if any."""

    def metadata(self) -> dict[str, Any]:
        """The roster projection for `list` and session-start instructions (fields only when set)."""
        out: dict[str, Any] = {"name": self.name}
        if not self.enabled:
            out["enabled"] = False
        for layer, key in _SOURCE_KEYS.items():
            if layer in self.sources:
                out[key] = str(self.sources[layer])
        if self.description:
            out["description"] = self.description
        if self.format != "corral":
            out["format"] = self.format
        if self.model is not None:
            out["model"] = self.model
        if self.model_alias is not None:
            out["modelAlias"] = self.model_alias
        if self.thinking is not None:
            out["thinking"] = self.thinking
        policy = self.tool_policy
        if policy.no_tools:
            out["noTools"] = True
        if policy.no_builtin_tools:
            out["noBuiltinTools"] = True
        if policy.tools is not None:
            out["tools"] = list(policy.tools)
        if policy.exclude_tools:
            out["excludeTools"] = list(policy.exclude_tools)
        skills = self.skill_policy
        if skills.no_skills is not None:
            out["noSkills"] = skills.no_skills
        if skills.inherit_skills is not None:
            out["inheritSkills"] = skills.inherit_skills
        if skills.skills is not None:
            out["skills"] = skills.skills if isinstance(skills.skills, str) else list(skills.skills)
        if self.no_extensions:
            out["noExtensions"] = True
        if self.extensions:
            out["extensions"] = list(self.extensions)
        if self.agents:
            out["agents"] = list(self.agents)
        if self.runtime is not None:
            out["runtime"] = self.runtime
        if self.isolation is not None:
            out["isolation"] = self.isolation
        if self.harness != "corral":
            out["harness"] = self.harness
        if self.command:
            out["command"] = list(self.command)
        if self.budget is not None:
            out["budget"] = self.budget.model_dump(exclude_unset=True)
        if self.mcp != "inherit":
            out["mcp"] = self.mcp if isinstance(self.mcp, str) else list(self.mcp)
        if self.permissions is not None:
            out["permissions"] = self.permissions.model_dump(exclude_defaults=True)
        return out


def is_delegating(defn: AgentDefinition) -> bool:
    """Whether a definition may delegate (§5.3).

    True iff `agents` is non-empty, `excludeTools` does not name `agent`, `noTools`
    is not set without `agent` in `tools`, and `tools` is not an explicit empty list.
    """
    policy = defn.tool_policy
    if not defn.agents or _DELEGATION_TOOL in policy.exclude_tools:
        return False
    if policy.no_tools and _DELEGATION_TOOL not in (policy.tools or ()):
        return False
    return policy.tools != ()


def leaf_projection(defn: AgentDefinition) -> AgentDefinition:
    """The definition as an agent started by an agent sees it: a leaf.

    `agents` is removed and `agent` is stripped from `tools`; an explicit tool list
    that becomes empty turns into `noTools`.
    """
    policy = defn.tool_policy
    if policy.tools is not None and _DELEGATION_TOOL in policy.tools:
        tools = tuple(name for name in policy.tools if name != _DELEGATION_TOOL)
        policy = replace(policy, tools=tools, no_tools=policy.no_tools or not tools)
    return replace(defn, agents=(), tool_policy=policy)


@dataclass(frozen=True)
class Roster:
    """The effective definitions of one working directory, with what could not be loaded."""

    definitions: tuple[AgentDefinition, ...]
    """Every effective definition, disabled ones included, sorted by name."""
    issues: tuple[DefinitionIssue, ...] = ()
    """Files that could not be used, and definitions that were not applied."""
    _: KW_ONLY
    project_dir: Path | None = None
    """The project layer's directory (`<cwd>/.corral/agents`)."""
    project_trusted: bool = False
    """Whether the project layer was counted."""

    @property
    def names(self) -> tuple[str, ...]:
        """Every definition name, sorted."""
        return tuple(defn.name for defn in self.definitions)

    def get(self, name: str) -> AgentDefinition | None:
        """The definition called `name`, enabled or not."""
        return next((defn for defn in self.definitions if defn.name == name), None)

    def enabled(self) -> tuple[AgentDefinition, ...]:
        """The definitions that may be used for new work."""
        return tuple(defn for defn in self.definitions if defn.enabled)

    def disabled_reasons(self) -> dict[str, str]:
        """Name → reason for every disabled definition."""
        return {
            defn.name: defn.disabled_reason or "disabled" for defn in self.definitions if not defn.enabled
        }

    def resolve(self, name: str, *, allowed: Sequence[str] | None = None) -> AgentDefinition:
        """The definition to start new work with, checked as `delegate` and `continue` need.

        Args:
            name: The requested definition.
            allowed: A delegating agent's allowlist; `None` for the lead (any definition).

        Raises:
            InvalidRequestError: the name is unknown, not in `allowed`, disabled, or one of
                the definitions it may delegate to is missing or disabled.
        """
        defn = self.get(name)
        if defn is None:
            raise InvalidRequestError(
                f"Agent definition {name} was not found",
                next_action="Use `list` to see the available agent definitions.",
            )
        if allowed is not None and name not in allowed:
            raise InvalidRequestError(
                f"Agent definition {name} is not allowed for this delegating agent",
                next_action=f"Choose one of: {', '.join(allowed) or '(none)'}.",
            )
        if not defn.enabled:
            raise InvalidRequestError(
                f"Agent definition {name} is disabled: {defn.disabled_reason or 'disabled'}",
                next_action=f"Enable {name} (or fix its definition file), or choose another definition.",
            )
        if is_delegating(defn):
            for child in defn.agents:
                target = self.get(child)
                if target is None or not target.enabled:
                    state = "was not found" if target is None else "is disabled"
                    raise InvalidRequestError(
                        f"Agent definition {name} may delegate to {child}, which {state}",
                        next_action=f"Fix or enable {child}, or remove it from the `agents` of {name}.",
                    )
        return defn


# --- where definitions live ------------------------------------------------------------------


def bundled_definitions_dir() -> Path:
    """The package's own definitions."""
    return Path(__file__).resolve().parent / "bundled"


def project_definitions_dir(cwd: Path) -> Path:
    """The project layer of a working directory: `<cwd>/.corral/agents`."""
    return Path(os.path.realpath(cwd)) / ".corral" / "agents"


def user_definitions_dir() -> Path:
    """The user layer: `$XDG_CONFIG_HOME/corral/agents`."""
    return config_home() / "agents"


def model_names(aliases: Mapping[str, str], registry: ModelRegistry) -> ModelNames:
    """What Claude Code and Pi files' `model` may name: the `[model_aliases]` settings and the models
    that have credentials here (for a Pi file's bare model id)."""
    known = tuple(f"{info.provider}/{info.id}" for info in registry.available_models())
    return ModelNames(aliases=dict(aliases), known=known)


def foreign_definition_dirs(base: Path, layer: DefinitionLayer) -> tuple[tuple[Path, DefinitionFormat], ...]:
    """The Claude Code and Pi directories of a layer: `base` is the project (`cwd`) or the home directory."""
    pi = base / ".pi" / ("agents" if layer == "project" else "agent/agents")
    return ((base / ".claude" / "agents", "claude"), (pi, "pi"))


# --- loading -----------------------------------------------------------------------------------


def load_roster(
    cwd: Path,
    *,
    user_dir: Path | None = None,
    bundled_dir: Path | None = None,
    trust: bool | None = None,
    home: Path | None = None,
    models: ModelNames | None = None,
) -> Roster:
    """Load the effective definitions for `cwd`. Never raises for a bad definition file.

    Args:
        cwd: The working directory whose `.corral/agents/` (and `.claude/agents/`,
            `.pi/agents/`) make the project layer.
        user_dir: The user layer; defaults to `user_definitions_dir()`.
        bundled_dir: The bundled layer; defaults to the package's definitions.
        trust: Whether the project counts; `None` asks the trust store (`is_trusted(cwd)`).
        home: Where `~/.claude/agents` and `~/.pi/agent/agents` are looked for; defaults to the
            home directory, or to none of them when `user_dir` is given.
        models: Model aliases and known refs for Claude Code and Pi files' `model`.

    Returns:
        The roster: definitions sorted by name (disabled ones included) and issues.
    """
    issues: list[DefinitionIssue] = []
    project_dir = project_definitions_dir(cwd)
    if trust is None:
        try:
            trust = is_trusted(cwd)
        except TrustStoreError as exc:
            issues.append(DefinitionIssue(trust_store_path(), str(exc)))
            trust = False
    if home is None and user_dir is None:
        home = Path.home()
    real_cwd = Path(os.path.realpath(cwd))
    project = project_root(real_cwd)
    dirs: dict[DefinitionLayer, list[tuple[Path, DefinitionFormat]]] = {
        "bundled": [(bundled_dir if bundled_dir is not None else bundled_definitions_dir(), "corral")],
        "project": [*foreign_definition_dirs(real_cwd, "project"), (project_dir, "corral")],
        "user": [
            *(foreign_definition_dirs(home, "user") if home is not None else ()),
            (user_dir if user_dir is not None else user_definitions_dir(), "corral"),
        ],
    }
    names = models if models is not None else ModelNames()
    merged: dict[str, _Merged] = {}
    broken: dict[str, str] = {}
    untrusted: list[_Raw] = []
    for layer, directory, fmt in [(name, d, f) for name in _LAYERS for d, f in dirs[name]]:
        root = project if layer == "project" else None
        raws, poisoned = _read_layer(layer, directory, issues, fmt, names, root)
        if layer == "project" and not trust:
            untrusted += raws
            continue
        for name, reason in poisoned.items():
            broken.setdefault(name, reason)
        for raw in raws:
            lower = merged.get(raw.name)
            if lower is None:
                if "bodyMode" in raw.fields:
                    problem = "bodyMode is only allowed when overriding a definition from a lower layer"
                    issues.append(DefinitionIssue(raw.path, f"{problem}; remove it"))
                    continue
                merged[raw.name] = _Merged.start(raw)
            else:
                lower.overlay(raw)
    definitions = {name: entry.finish() for name, entry in merged.items()}
    for name, reason in broken.items():
        if name in definitions:
            definitions[name] = replace(definitions[name], enabled=False, disabled_reason=reason)
    _check_agent_references(definitions, issues)
    if untrusted:
        reason = f"the project {real_cwd} is not trusted; run `corral trust` there to use its definitions"
        for raw in untrusted:
            if raw.name in definitions:
                issues.append(DefinitionIssue(raw.path, f"not applied: {reason}"))
            else:
                defn = _Merged.start(raw).finish()
                definitions[raw.name] = replace(defn, enabled=False, disabled_reason=reason)
    return Roster(
        tuple(definitions[name] for name in sorted(definitions)),
        tuple(issues),
        project_dir=project_dir,
        project_trusted=bool(trust),
    )


@dataclass
class _Raw:
    """One definition file, validated field by field."""

    name: str
    fields: dict[str, Any]
    body: str
    path: Path
    layer: DefinitionLayer
    format: DefinitionFormat = "corral"
    model_alias: str | None = None


@dataclass
class _Merged:
    """A definition while layers are applied."""

    name: str
    fields: dict[str, Any]
    body: str
    sources: dict[DefinitionLayer, Path]
    layer: DefinitionLayer
    path: Path
    format: DefinitionFormat = "corral"
    model_alias: str | None = None

    @classmethod
    def start(cls, raw: _Raw) -> _Merged:
        fields = {key: value for key, value in raw.fields.items() if key != "bodyMode"}
        return cls(
            raw.name,
            fields,
            raw.body,
            {raw.layer: raw.path},
            raw.layer,
            raw.path,
            raw.format,
            raw.model_alias,
        )

    def overlay(self, raw: _Raw) -> None:
        if "model" in raw.fields or raw.model_alias is not None:
            self.model_alias = raw.model_alias
            if "model" not in raw.fields:
                self.fields.pop("model", None)  # `model: inherit` over a lower layer's model
        self.format = raw.format
        mode = raw.fields.get("bodyMode", "replace")
        self.fields.update({key: value for key, value in raw.fields.items() if key != "bodyMode"})
        if raw.body:
            self.body = f"{self.body}\n\n{raw.body}" if mode == "append" and self.body else raw.body
        self.sources[raw.layer] = raw.path
        self.layer = raw.layer
        self.path = raw.path

    def finish(self) -> AgentDefinition:
        f = self.fields
        enabled = bool(f.get("enabled", True))
        project_context = f.get("inheritProjectContext", self.name == "delegate")
        tool_policy = ToolPolicy(
            tools=f.get("tools"),
            exclude_tools=f.get("excludeTools", ()),
            no_tools=f.get("noTools", False),
            no_builtin_tools=f.get("noBuiltinTools", False),
        )
        defn = AgentDefinition(
            self.name,
            description=f.get("description", ""),
            model=f.get("model"),
            thinking=f.get("thinking"),
            tool_policy=tool_policy,
            skill_policy=SkillPolicy(
                no_skills=f.get("noSkills"), inherit_skills=f.get("inheritSkills"), skills=f.get("skills")
            ),
            agents=f.get("agents", ()),
            enabled=enabled,
            disabled_reason=None if enabled else f"disabled by `enabled: false` in {self.path}",
            system_prompt_mode=f.get("systemPromptMode", "append"),
            inherit_project_context=project_context,
            inherit_global_context=f.get("inheritGlobalContext", project_context),
            no_extensions=f.get("noExtensions", False),
            extensions=f.get("extensions", ()),
            permission=f.get("permission"),
            runtime=f.get("runtime"),
            isolation=f.get("isolation"),
            harness=f.get("harness", CORRAL_HARNESS),
            command=f.get("command", ()),
            budget=f.get("budget"),
            mcp=f.get("mcp", "inherit"),
            permissions=f.get("permissions"),
            body=self.body,
            layer=self.layer,
            path=self.path,
            sources=dict(self.sources),
            format=self.format,
            model_alias=self.model_alias,
        )
        problem = harness_problem(defn.harness, defn.command)
        if problem is None and is_acp(defn.harness) and defn.agents:
            problem = "an ACP agent cannot delegate; remove agents or use harness: corral"
        if problem is not None and defn.enabled:
            defn = replace(defn, enabled=False, disabled_reason=f"{problem} ({self.path})")
        tools = tool_policy.tools
        if is_delegating(defn) and tools and _DELEGATION_TOOL not in tools:
            defn = replace(defn, tool_policy=replace(tool_policy, tools=(*tools, _DELEGATION_TOOL)))
        return defn


def _check_agent_references(definitions: dict[str, AgentDefinition], issues: list[DefinitionIssue]) -> None:
    for name, defn in sorted(definitions.items()):
        missing = [child for child in defn.agents if child not in definitions]
        if not missing:
            continue
        problem = (
            f"agents names unknown definition(s) {', '.join(missing)}; define them or remove them from agents"
        )
        issues.append(DefinitionIssue(defn.path or Path(name), problem))
        if defn.enabled:
            definitions[name] = replace(defn, enabled=False, disabled_reason=problem)


def _read_layer(
    layer: DefinitionLayer,
    directory: Path,
    issues: list[DefinitionIssue],
    fmt: DefinitionFormat = "corral",
    models: ModelNames | None = None,
    root: Path | None = None,
) -> tuple[list[_Raw], dict[str, str]]:
    """Parse every definition file of a layer's directory; returns the good ones and the names made unusable."""
    raws: list[_Raw] = []
    poisoned: dict[str, str] = {}
    by_name: dict[str, Path] = {}
    for path in _discover(directory, issues, root):
        try:
            raws.append(_parse_file(path, layer, fmt, models or ModelNames()))
        except _DefinitionFileError as exc:
            issues.append(DefinitionIssue(path, exc.problem))
            if exc.name is not None:
                poisoned.setdefault(exc.name, f"its definition file {path} is invalid: {exc.problem}")
    unique: list[_Raw] = []
    duplicated: set[str] = set()
    for raw in raws:
        first = by_name.setdefault(raw.name, raw.path)
        if first != raw.path:
            duplicated.add(raw.name)
            problem = f"definition {raw.name} is also defined in {first}; names must be unique within a layer"
            issues.append(DefinitionIssue(raw.path, f"{problem}, so remove or rename one"))
            poisoned.setdefault(raw.name, f"it is defined twice in the {layer} layer ({first}, {raw.path})")
    for raw in raws:
        if raw.name not in duplicated and raw.name not in poisoned:
            unique.append(raw)
    return unique, poisoned


def _discover(directory: Path, issues: list[DefinitionIssue], root: Path | None = None) -> list[Path]:
    """The definition files below `directory`, sorted, walked at most `_MAX_WALK_ENTRIES` entries deep.

    With `root` (a project layer), the directory and each file must resolve inside it; without, they
    may resolve anywhere but `/proc`, `/dev` and `/sys`. Symlinked subdirectories are not entered.
    """
    if not directory.is_dir():
        return []
    roots = [root] if root is not None else None

    def refuse(path: Path, refused: Refused) -> None:
        problem = f"not read: {refused.reason}"
        if root is not None:
            problem += "; keep agent definitions inside the project"
        issues.append(DefinitionIssue(path, problem))
        note_refused(path, problem.removeprefix("not read: "), what="agent definition path")

    try:
        confined_target(directory, roots)
    except Refused as refused:
        refuse(directory, refused)
        return []
    found: list[Path] = []

    def on_error(exc: OSError) -> None:
        issues.append(
            DefinitionIssue(Path(exc.filename or directory), f"cannot list directory: {exc.strerror}")
        )

    visited = 0
    for top, dirnames, filenames in os.walk(directory, onerror=on_error):
        visited += len(dirnames) + len(filenames)
        if visited > _MAX_WALK_ENTRIES:
            problem = (
                f"more than {_MAX_WALK_ENTRIES} entries below it; only the definitions found before were "
                "read, so keep definition directories small"
            )
            issues.append(DefinitionIssue(directory, problem))
            note_refused(directory, problem, what="agent definition directory")
            break
        dirnames.sort()
        for filename in sorted(filenames):
            if filename.endswith(".md") and not filename.endswith(".example.md"):
                path = Path(top) / filename
                try:
                    confined_target(path, roots)
                except Refused as refused:
                    refuse(path, refused)
                    continue
                found.append(path)
    return found


class _DefinitionFileError(Exception):
    def __init__(self, problem: str, name: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.name = name


def _parse_file(path: Path, layer: DefinitionLayer, fmt: DefinitionFormat, models: ModelNames) -> _Raw:
    text = _read_text(path)
    from corral._frontmatter import FrontmatterError, load_frontmatter, split_frontmatter

    try:
        head, rest = split_frontmatter(text)
    except FrontmatterError as exc:
        raise _DefinitionFileError(exc.problem) from None
    try:
        data = copy.deepcopy(load_frontmatter(head))
    except FrontmatterError as exc:
        raise _DefinitionFileError(f"the frontmatter is not valid YAML: {exc.problem}") from None
    if not isinstance(data, dict):
        raise _DefinitionFileError(
            "the frontmatter must be a YAML mapping of fields (name: …, description: …)"
        )
    raw_name = data.get("name")
    name = raw_name.strip() if isinstance(raw_name, str) and raw_name.strip() else None
    alias: str | None = None
    try:
        if fmt != "corral":
            data, alias = _foreign_fields(data, fmt, models)
        fields = _validate_fields(data)
    except _DefinitionFileError as exc:
        raise _DefinitionFileError(exc.problem, name) from None
    body = _absolute_body_refs(rest.strip(), path.parent)
    return _Raw(fields["name"], fields, body, path, layer, fmt, alias)


def _read_text(path: Path) -> str:
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise _DefinitionFileError("not a regular file; definitions must be regular Markdown files")
        if info.st_size > _MAX_DEFINITION_BYTES:
            raise _DefinitionFileError(f"larger than {_MAX_DEFINITION_BYTES} bytes; keep definitions short")
        data = path.read_bytes()
    except OSError as exc:
        raise _DefinitionFileError(f"cannot read the file: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _DefinitionFileError("not valid UTF-8; save it as UTF-8") from None


def _absolute_body_refs(body: str, base: Path) -> str:
    out: list[str] = []
    for line in body.split("\n"):
        match = _BODY_REF.match(line.strip())
        if match:
            line = "@" + os.path.normpath(base / match.group(1))
        out.append(line)
    return "\n".join(out)


# --- field validation --------------------------------------------------------------------------


def _bool(key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise _DefinitionFileError(f"{key} must be true or false, got {value!r}")
    return value


def _string(key: str, value: object) -> str:
    if isinstance(value, bool):
        raise _DefinitionFileError(
            f"{key} must be a string, got {value!r}; quote it (YAML reads yes/no/on/off/true/false as booleans)"
        )
    if not isinstance(value, str):
        raise _DefinitionFileError(f"{key} must be a string, got {value!r}")
    return value


def _non_empty(key: str, value: object) -> str:
    text = _string(key, value).strip()
    if not text:
        raise _DefinitionFileError(f"{key} must not be empty")
    return text


def _string_list(key: str, value: object, *, comma: bool = False, unique: bool = False) -> tuple[str, ...]:
    if comma and isinstance(value, str):
        value = [part for part in value.split(",") if part.strip()] or [value]
    if not isinstance(value, list):
        raise _DefinitionFileError(f"{key} must be a list of strings, got {value!r}")
    items: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise _DefinitionFileError(f"{key} must hold non-empty strings, got {item!r}")
        items.append(item.strip())
    if comma:
        items = [part.strip() for item in items for part in item.split(",") if part.strip()]
    if unique and len(set(items)) != len(items):
        twice = sorted({item for item in items if items.count(item) > 1})
        raise _DefinitionFileError(f"{key} names {', '.join(twice)} more than once")
    return tuple(dict.fromkeys(items))


def _skills(key: str, value: object, *, comma: bool = False) -> SkillChoice:
    """`skills`: `inherit`, `none`, or a list of skill names (Claude Code's may be a comma list)."""
    if value in ("inherit", "none"):
        return "inherit" if value == "inherit" else "none"
    if isinstance(value, str) and not comma:
        raise _DefinitionFileError(f"{key} must be inherit, none or a list of skill names, got {value!r}")
    return _string_list(key, value, comma=comma)


def _argv(key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(item, str) and item for item in value):
        raise _DefinitionFileError(
            f"{key} must be a non-empty list of non-empty strings (program, arguments), got {value!r}"
        )
    return tuple(value)


def _choice(key: str, value: object, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise _DefinitionFileError(f"{key} must be one of {', '.join(choices)}, got {value!r}")
    return value


def _model(key: str, value: object) -> str:
    text = _non_empty(key, value)
    try:
        parse_model_ref(text)
    except ModelRefError as exc:
        raise _DefinitionFileError(f"{key}: {exc}") from None
    return text


def _thinking(key: str, value: object) -> ThinkingLevel:
    if value is False:
        return "off"
    if value == "max":
        return "xhigh"
    if (level := as_thinking_level(value)) is not None:
        return level
    levels = ", ".join((*THINKING_LEVELS, "max"))
    raise _DefinitionFileError(f"{key} must be one of {levels} or false, got {value!r}")


def _budget(key: str, value: object) -> AgentBudgetSettings:
    """`budget:` — a mapping of `agent_tokens`, `agent_cost_usd`, `agent_minutes` (positive numbers)."""
    if not isinstance(value, dict):
        raise _DefinitionFileError(
            f"{key} must be a mapping of agent_tokens, agent_cost_usd, agent_minutes, got {value!r}"
        )
    try:
        return AgentBudgetSettings.model_validate(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":
            raise _DefinitionFileError(
                f"{key}.{where} is not a budget key; use agent_tokens, agent_cost_usd or agent_minutes"
            ) from None
        raise _DefinitionFileError(f"{key}.{where}: {error['msg']}") from None


_MCP_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def _mcp(key: str, value: object) -> McpChoice:
    """`mcp:` — `inherit`, `none`, or a list of `[mcp_servers]` names."""
    if value in ("inherit", "none"):
        return value  # type: ignore[return-value]
    if not isinstance(value, list):
        raise _DefinitionFileError(
            f"{key} must be inherit, none or a list of MCP server names (from [mcp_servers]), got {value!r}"
        )
    names = _string_list(key, value, unique=True)
    for name in names:
        if _MCP_SERVER_NAME.fullmatch(name) is None or "__" in name:
            raise _DefinitionFileError(f"{key}: {name!r} is not an MCP server name")
    return names


def _permissions(key: str, value: object) -> PermissionsSettings:
    """`permissions:` — a mapping of `allow`, `ask`, `deny` (lists of rules in Claude Code's syntax) and
    `default` (`allow`, `ask` or `deny`); a bad rule is named in the one-line error."""
    if not isinstance(value, dict):
        raise _DefinitionFileError(
            f"{key} must be a mapping of allow, ask, deny (rule lists) and default, got {value!r}"
        )
    try:
        return PermissionsSettings.model_validate(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":
            raise _DefinitionFileError(
                f"{key}.{where} is not a permissions key; use allow, ask, deny or default"
            ) from None
        message = str(error["msg"]).removeprefix("Value error, ")
        raise _DefinitionFileError(f"{key}.{where}: {message}") from None


def _mapping(key: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _DefinitionFileError(f"{key} must be a mapping, got {value!r}")
    return dict(value)


_Validator = Callable[[str, object], Any]

_FIELDS: dict[str, _Validator] = {
    "name": _non_empty,
    "description": _string,
    "enabled": _bool,
    "model": _model,
    "thinking": _thinking,
    "systemPromptMode": lambda k, v: _choice(k, v, ("append", "replace")),
    "bodyMode": lambda k, v: _choice(k, v, ("append", "replace")),
    "noTools": _bool,
    "noBuiltinTools": _bool,
    "tools": lambda k, v: _string_list(k, v, comma=True),
    "excludeTools": lambda k, v: _string_list(k, v, comma=True),
    "permission": _mapping,
    "noSkills": _bool,
    "inheritSkills": _bool,
    "skills": lambda k, v: _skills(k, v),
    "noExtensions": _bool,
    "extensions": _string_list,
    "agents": lambda k, v: _string_list(k, v, unique=True),
    "inheritProjectContext": _bool,
    "inheritGlobalContext": _bool,
    "runtime": lambda k, v: _choice(k, v, ("inprocess", "tmux", "ray")),
    "isolation": lambda k, v: _choice(k, v, ("shared", "worktree")),
    "budget": _budget,
    "mcp": _mcp,
    "permissions": _permissions,
    "harness": _non_empty,
    "command": _argv,
}


def _validate_fields(data: Mapping[object, object]) -> dict[str, Any]:
    unknown = [str(key) for key in data if key not in _FIELDS]
    if unknown:
        raise _DefinitionFileError(
            f"unknown field(s) {', '.join(sorted(unknown))}; allowed fields are {', '.join(sorted(_FIELDS))}"
        )
    if "name" not in data:
        raise _DefinitionFileError("the required field name is missing")
    fields: dict[str, Any] = {}
    for key, value in data.items():
        assert isinstance(key, str)
        if value is None:
            raise _DefinitionFileError(f"{key} has no value; give one or remove the line")
        fields[key] = _FIELDS[key](key, value)
    return fields


# --- Claude Code and Pi definition files ---------------------------------------------------------

_CLAUDE_TOOLS: dict[str, str] = {
    "Read": "read",
    "Write": "write",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Bash": "bash",
    "Grep": "grep",
    "Glob": "find",
    "LS": "ls",
}
"""Claude Code tools with a corral counterpart."""

_CLAUDE_IGNORED_TOOLS: tuple[str, ...] = (
    "BashOutput",
    "ExitPlanMode",
    "KillBash",
    "KillShell",
    "NotebookEdit",
    "NotebookRead",
    "SlashCommand",
    "Skill",
    "Task",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
)
"""Claude Code tools corral has no counterpart for (and `mcp__…` tools): dropped from the list."""

_CLAUDE_FIELDS: tuple[str, ...] = (
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "color",
    "permissionMode",
    "skills",
    "mcpServers",
)
_PI_FIELDS: tuple[str, ...] = ("name", "description", "tools", "model", "thinking")
_INHERIT_ALIASES: tuple[str, ...] = ("sonnet", "opus", "haiku")
"""Claude Code's model aliases: unset in `[model_aliases]`, they inherit the spawner's model."""


def _foreign_fields(
    data: Mapping[object, object], fmt: DefinitionFormat, models: ModelNames
) -> tuple[dict[str, Any], str | None]:
    """A Claude Code or Pi frontmatter as corral fields, and the model alias it named."""
    allowed = _CLAUDE_FIELDS if fmt == "claude" else _PI_FIELDS
    owner = "Claude Code" if fmt == "claude" else "Pi"
    unknown = [str(key) for key in data if key not in allowed]
    if unknown:
        raise _DefinitionFileError(
            f"unknown field(s) {', '.join(sorted(unknown))} for a {owner} definition; "
            f"allowed fields are {', '.join(allowed)}"
        )
    out: dict[str, Any] = {}
    alias: str | None = None
    for key, value in data.items():
        assert isinstance(key, str)
        if value is None:
            raise _DefinitionFileError(f"{key} has no value; give one or remove the line")
        if key in ("name", "description", "thinking"):
            out[key] = value
        elif key == "tools":
            out["tools"] = list(_foreign_tools(key, value, fmt))
        elif key == "disallowedTools":
            out["excludeTools"] = list(_foreign_tools(key, value, fmt))
        elif key == "skills":
            choice = _skills(key, value, comma=True)
            out["skills"] = choice if isinstance(choice, str) else list(choice)
        elif key == "mcpServers":
            out["mcp"] = list(_claude_mcp_servers(key, value))  # validated again as corral's `mcp`
        elif key == "model":
            ref, alias = _foreign_model(key, value, models)
            if ref is not None:
                out["model"] = ref
        else:  # color, permissionMode: Claude Code's presentation and permission prompts
            _string(key, value)
    return out, alias


def _claude_mcp_servers(key: str, value: object) -> tuple[str, ...]:
    """Claude Code's `mcpServers`: the names of configured servers (a name alone, or a one-key mapping
    is an inline server, which corral does not take from a definition)."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise _DefinitionFileError(f"{key} must be a list of MCP server names, got {value!r}")
    for item in value:
        if isinstance(item, dict):
            names = ", ".join(str(name) for name in item)
            raise _DefinitionFileError(
                f"{key}: the inline server {names} is not supported; configure it as [mcp_servers.{names}] "
                "in corral's settings and list its name here"
            )
    chosen = _mcp(key, value)  # a list: names
    return chosen if isinstance(chosen, tuple) else ()


def _foreign_tools(key: str, value: object, fmt: DefinitionFormat) -> tuple[str, ...]:
    mapped: list[str] = []
    for tool in _string_list(key, value, comma=True):
        if fmt == "pi":
            if tool not in ALL_TOOL_NAMES:
                raise _DefinitionFileError(
                    f"{key}: {tool} is not a tool corral has; use {', '.join(ALL_TOOL_NAMES)}"
                )
            mapped.append(tool)
        elif tool in _CLAUDE_TOOLS:
            mapped.append(_CLAUDE_TOOLS[tool])
        elif tool not in _CLAUDE_IGNORED_TOOLS and not tool.startswith("mcp__"):
            raise _DefinitionFileError(
                f"{key}: {tool} is not a Claude Code tool corral knows; use "
                f"{', '.join(_CLAUDE_TOOLS)} (or one corral drops: {', '.join(_CLAUDE_IGNORED_TOOLS)})"
            )
    return tuple(dict.fromkeys(mapped))


def _foreign_model(key: str, value: object, models: ModelNames) -> tuple[str | None, str | None]:
    """`(model ref or None to inherit, the alias named)` for a Claude Code or Pi `model`."""
    text = _non_empty(key, value)
    if text == "inherit":
        return None, "inherit"
    if "/" in text:
        return _model(key, text), None
    if text in models.aliases:
        return _model(f"[model_aliases] {text}", models.aliases[text]), text
    if text in _INHERIT_ALIASES:
        return None, text
    matches = [ref for ref in models.known if ref.split("/", 1)[-1] == text]
    if len(matches) == 1:
        return matches[0], text
    raise _DefinitionFileError(
        f"{key} {text!r} is not a model corral knows; write provider/model or inherit, "
        f"or map it in [model_aliases] in your settings"
    )
