"""User and project settings (TOML).

Settings come from two files, both optional:

1. the user file, `$XDG_CONFIG_HOME/corral/settings.toml` (else
   `~/.config/corral/settings.toml`);
2. the project file, the nearest `.corral/settings.toml` at or above the
   working directory.

Tables are merged key by key and the project file wins; any other value
(lists included) from the project file replaces the user's, except the lists
of `[permissions]` and `[hooks]`, which add up, and `[mcp_servers]`: whole
servers, the user's winning a name, resolved with the trusted project's
`.mcp.json` and `.codex/config.toml` and the `mcp_import`s into one catalog
(`Settings.mcp_catalog`; docs/mcp-servers.md). Keys are
snake_case; an unknown key or a wrong value is a `SettingsError` naming the
file and the key. Until the user trusts the project (`corral trust`, pinned to
the files' content, see `corral.trust`), only the keys in
`UNTRUSTED_PROJECT_KEYS` of the project file apply.

Example:

```toml
default_model = "local/qwen3:8b"
default_thinking = "low"

[retry]
max_retries = 5

[providers.local]
base_url = "http://localhost:11434/v1"
api = "openai-chat"

[[providers.local.models]]
id = "qwen3:8b"
context_window = 32768
```
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from corral._paths import config_home
from corral.errors import CorralError
from corral.llm._errors import ModelRefError
from corral.llm._model import ThinkingLevel
from corral.llm._refs import parse_model_ref
from corral.trust import FOREIGN_MCP_FILES, find_project_dir, trust_state

if TYPE_CHECKING:
    from corral._mcp_config import ForeignServer, McpServerCatalog, McpSource

__all__ = [
    "BUILTIN_PROVIDER_NAMES",
    "HOOK_EVENTS",
    "MCP_IMPORTS",
    "UNTRUSTED_PROJECT_KEYS",
    "ActivityColorsSettings",
    "AgentBudgetSettings",
    "BudgetSettings",
    "CompactionSettings",
    "HarnessSettings",
    "HookCommandSettings",
    "HookEvent",
    "HookGroupSettings",
    "HooksSettings",
    "McpServerSettings",
    "ModelPriceSettings",
    "ModelSettings",
    "PermissionsSettings",
    "ProviderSettings",
    "RetrySettings",
    "Settings",
    "SettingsError",
    "find_project_settings",
    "is_mcp_server_name",
    "load_settings",
    "read_settings_file",
    "user_settings_path",
]

MCP_IMPORTS = ("claude", "codex")
"""What `mcp_import` may name: Claude Code's `~/.claude.json` and Codex's `~/.codex/config.toml`."""

BUILTIN_PROVIDER_NAMES = ("anthropic", "openai", "scripted")
"""Providers corral knows without settings; a `[providers.<name>]` block for them extends them."""

QueueMode = Literal["one-at-a-time", "all"]


class SettingsError(CorralError):
    """A settings file is unreadable, not TOML, or holds an unknown key or a bad value."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class CompactionSettings(_Section):
    """`[compaction]`: summarise old context when it nears the model's window."""

    enabled: bool = True
    """Compact automatically (default `true`)."""
    reserve_tokens: int = Field(default=16384, ge=0)
    """Compact when the context exceeds `context_window - reserve_tokens` (default `16384`)."""
    keep_recent_tokens: int = Field(default=20000, ge=0)
    """Recent tokens kept verbatim after a compaction (default `20000`)."""


class RetrySettings(_Section):
    """`[retry]`: retry transient provider errors (overloaded, rate limits, 5xx …)."""

    enabled: bool = True
    """Retry automatically (default `true`)."""
    max_retries: int = Field(default=3, ge=0)
    """Retries after the first failure (default `3`)."""
    base_delay_ms: int = Field(default=2000, ge=0)
    """Delay before the first retry, doubled for each further one (default `2000`: 2 s, 4 s, 8 s)."""
    max_delay_ms: int = Field(default=60000, ge=0)
    """Upper bound of any delay (default `60000`)."""


class ModelPriceSettings(_Section):
    """`prices` of a model: USD per million tokens, each default `0`."""

    input: float = Field(default=0.0, ge=0)
    """Uncached input tokens."""
    output: float = Field(default=0.0, ge=0)
    """Output tokens (reasoning included)."""
    cache_read: float = Field(default=0.0, ge=0)
    """Input tokens read from the provider's cache."""
    cache_write: float = Field(default=0.0, ge=0)
    """Input tokens written to the provider's cache."""

    @field_validator("input", "output", "cache_read", "cache_write", mode="before")
    @classmethod
    def _int_is_float(cls, value: Any) -> Any:
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _float_of_int(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


class AgentBudgetSettings(_Section):
    """One agent's limits (docs/fleet.md, "Budgets"): `[budget]`'s `agent_*` keys, a definition's
    `budget:` frontmatter and `[teams.tier_budget.<tier>]`. Unset: no limit of that kind."""

    agent_tokens: int | None = Field(default=None, gt=0)
    """Tokens (input, output and cached, summed over its model requests) one agent may use."""
    agent_cost_usd: float | None = Field(default=None, gt=0)
    """USD (from the registry's prices) one agent may spend."""
    agent_minutes: float | None = Field(default=None, gt=0)
    """Minutes of wall time one agent may run, from its start."""

    @field_validator("agent_cost_usd", "agent_minutes", mode="before")
    @classmethod
    def _int_is_float(cls, value: Any) -> Any:
        return _float_of_int(value)


class BudgetSettings(AgentBudgetSettings):
    """`[budget]`: limits on the lead's whole tree of agents and on each agent (docs/fleet.md)."""

    tree_tokens: int | None = Field(default=None, gt=0)
    """Tokens every agent the lead owns (nested helpers included) may use together; the lead's own
    are not counted."""
    tree_cost_usd: float | None = Field(default=None, gt=0)
    """USD the lead's whole tree of agents may spend together."""
    tree_minutes: float | None = Field(default=None, gt=0)
    """Minutes of wall time from the tree's first agent start."""
    soft_threshold: float = Field(default=0.8, gt=0, le=1)
    """Share of a limit at which an agent gets one notice to wrap up (default `0.8`)."""

    @field_validator("tree_cost_usd", "tree_minutes", "soft_threshold", mode="before")
    @classmethod
    def _tree_float(cls, value: Any) -> Any:
        return _float_of_int(value)


def _text_only() -> list[Literal["text", "image"]]:
    return ["text"]


class ModelSettings(_Section):
    """`[[providers.<name>.models]]`: one model of a provider."""

    id: str = Field(min_length=1)
    """Model id as the endpoint knows it (required); the ref is `<provider>/<id>`."""
    name: str | None = None
    """Human-readable name (default: the id)."""
    context_window: int = Field(default=128000, gt=0)
    """Tokens the model accepts in one request (default `128000`)."""
    max_tokens: int = Field(default=16384, gt=0)
    """Most tokens in one reply (default `16384`)."""
    reasoning: bool = False
    """Whether the model supports thinking levels above `off` (default `false`)."""
    supports_xhigh: bool = False
    """Whether the model offers the `xhigh` thinking level (default `false`)."""
    input: list[Literal["text", "image"]] = Field(default_factory=_text_only)
    """Input modalities (default `["text"]`; add `"image"` for vision models)."""
    prices: ModelPriceSettings = Field(default_factory=ModelPriceSettings)
    """USD per million tokens (default all `0`)."""


class ProviderSettings(_Section):
    """`[providers.<name>]`: a custom provider, or additions to `openai`, `anthropic` or `scripted`.

    A custom provider (any other name) needs `base_url`. For `openai` and
    `anthropic` every key is optional and overrides the built-in value;
    their models are added to (or replace, by id) the built-in ones. For
    `scripted` only `models` is allowed: entries give names, windows and
    prices for `scripted/<id>`.
    """

    base_url: str | None = None
    """The endpoint, e.g. `http://localhost:8000/v1` (required for a custom provider)."""
    api_key_env: str | None = None
    """Environment variable holding the API key (default: none needed; `OPENAI_API_KEY` and
    `ANTHROPIC_API_KEY` for the built-ins)."""
    api: Literal["openai-chat", "openai-responses", "anthropic"] | None = None
    """Wire API (default `openai-chat` for a custom provider, the built-in's own otherwise)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra HTTP headers sent with every request (default none)."""
    max_tokens_field: Literal["max_tokens", "max_completion_tokens", "both"] | None = None
    """Which Chat Completions field carries the reply cap (default `max_completion_tokens` for
    `openai`, `max_tokens` for a custom provider: llama.cpp, Ollama, vLLM and LM Studio read only
    that one; `both` sends the two, for servers that accept either)."""
    stream: bool = True
    """Stream replies (default `true`); `false` asks for whole responses, which some local servers
    need to call tools or to report a context overflow."""
    models: list[ModelSettings] = Field(default_factory=list)
    """The provider's models."""
    max_concurrent_requests: int | None = Field(default=None, ge=1)
    """Requests in flight at once to this provider's endpoint with its key, across every agent of the
    host (default: no cap; a `429` lowers it adaptively either way, see docs/fleet.md)."""
    requests_per_minute: int | None = Field(default=None, ge=1)
    """Requests started per minute (a sliding minute) across every agent (default: no cap)."""
    tokens_per_minute: int | None = Field(default=None, ge=1)
    """Request tokens per minute, estimated from the request's size (4 bytes a token), across every
    agent (default: no cap)."""


class CapacitySettings(_Section):
    """`[teams.read_agents]`, `[teams.write_agents]`, `[teams.read_helpers]`: one kind's capacity."""

    max_concurrent: int | None = Field(default=None, ge=1)
    """How many agents of the kind run at once (default: read 25, write 100, helpers 10)."""
    queue_overflow: bool = True
    """Queue spawns beyond `max_concurrent` (default) instead of failing them."""


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


TeamTier = Literal[
    "read-collect",
    "read-review",
    "read-analyze",
    "read-critical",
    "write-patch",
    "write-feature",
    "write-system",
    "write-critical",
]
"""A teams intent tier, as `[teams.tier_*]` tables name them."""


class TeamsSettings(_Section):
    """`[teams]` table: the teams surface."""

    read_agents: CapacitySettings = Field(default_factory=CapacitySettings)
    """Read-tier agents' capacity."""
    write_agents: CapacitySettings = Field(default_factory=CapacitySettings)
    """Write-tier agents' capacity."""
    read_helpers: CapacitySettings = Field(default_factory=CapacitySettings)
    """Nested read helpers' capacity."""
    # --- the read agents' sandbox (docs/security.md) ---
    read_sandbox: Literal["auto", "required", "off"] = "auto"
    """`auto` (default): read agents' bash runs in the bubblewrap sandbox when it works, else unconfined
    with a warning; `required`: a read spawn fails when the sandbox does not work; `off`: read-only is
    an instruction only."""
    sandbox_env_passthrough: list[str] = Field(default_factory=list)
    """Environment variable names a read agent's bash gets besides the sandbox's allowlist (`PATH`, `HOME`,
    `LANG`, `LC_*`, `TERM`, …); exact, case-sensitive names."""
    sandbox_read_paths: list[str] = Field(default_factory=list)
    """Extra directories (toolchains, e.g. `~/.rustup`) a read agent's bash sees read-only."""
    sandbox_tmp_mib: int = Field(default=512, ge=1)
    """Size cap of a read agent's private temp dir, in MiB (default 512)."""
    sandbox_max_processes: int = Field(default=256, ge=8)
    """Processes (and threads) one sandboxed command may run at once (default 256)."""
    sandbox_memory_mib: int = Field(default=4096, ge=64)
    """Data memory each process of a sandboxed command may use, in MiB (default 4096)."""
    tier_isolation: dict[str, Literal["shared", "worktree"]] = Field(default_factory=dict)
    """`[teams.tier_isolation]`: isolation per write tier, e.g. `write-system = "worktree"` (a tier not
    listed follows the top-level `isolation`; read tiers never get a worktree)."""
    tier_budget: dict[TeamTier, AgentBudgetSettings] = Field(default_factory=dict)
    """`[teams.tier_budget.<tier>]`: `agent_*` limits for the agents of one tier (they replace the
    `[budget]` keys they set; docs/fleet.md)."""
    tier_permissions: dict[TeamTier, PermissionsSettings] = Field(default_factory=dict)
    """`[teams.tier_permissions.<tier>]`: `allow` / `ask` / `deny` rules (and `default`) that narrow
    what the agents of one tier may do beyond `[permissions]`: they add denials and questions, never
    loosen (docs/permissions.md). A project's lists add to the user's, as `[permissions]`' do."""

    @field_validator("sandbox_env_passthrough")
    @classmethod
    def _check_env_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if _ENV_NAME.fullmatch(name) is None:
                raise ValueError(
                    f"{name!r} is not an environment variable name (list exact names such as "
                    '"NPM_TOKEN"; patterns are not supported)'
                )
        return value

    @field_validator("tier_isolation")
    @classmethod
    def _check_tier_isolation(cls, value: dict[str, str]) -> dict[str, str]:
        for tier in value:
            if not tier.startswith("write-"):
                raise ValueError(f"{tier!r} is not a write tier (isolation applies to write-* tiers only)")
        return value


_COLOR_PATTERN = r"^(#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3}|rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\))$"
"""A colour given by value: `#rrggbb`, `#rgb` or `rgb(r, g, b)` (names are checked against Rich's)."""

COLOR_NAMES_URL = "https://rich.readthedocs.io/en/stable/appendix/colors.html"
"""Where the colour names `[activity_colors]` accepts are listed (the terminal's standard names)."""


def _check_color(color: str) -> None:
    """Raise `ValueError` unless `color` is a value (`_COLOR_PATTERN`) or a colour name Rich knows."""
    if re.match(_COLOR_PATTERN, color):
        return
    from rich.color import ANSI_COLOR_NAMES  # only when colours are set: Rich is the app's

    if color in ANSI_COLOR_NAMES:
        return
    close = difflib.get_close_matches(color.lower(), list(ANSI_COLOR_NAMES), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ValueError(
        f"{color!r} is not a colour: {hint}use #rrggbb, #rgb, rgb(r, g, b) or a colour name such as blue, "
        f"bright_red or grey50 (every name: {COLOR_NAMES_URL})"
    )


class ActivityColorsSettings(_Section):
    """`[activity_colors]`: the terminal app's palette for agent activity (unset: the theme's default).

    Each key is a colour (`#rrggbb`, `#rgb`, a name such as `blue`, or `rgb(r, g, b)`). Unset keys
    follow the app's theme: blue names, gold models, light-yellow thinking levels, pink tier shades
    (lighter for lower tiers), grey messages, the theme's warning and error colours.
    """

    names: str | None = None
    """Agent names (default blue)."""
    model: str | None = None
    """Model references (default gold)."""
    thinking: str | None = None
    """Thinking levels (default light yellow)."""
    tier: list[str] | None = Field(default=None, min_length=1, max_length=4)
    """Tier shades from level 1 (`read-collect`, `write-patch`) to level 4 (`*-critical`); a shorter list
    repeats its last colour (default four pink shades)."""
    text: str | None = None
    """Progress and other row text (default: the theme's text colour)."""
    messages: str | None = None
    """Message cards and secondary details (default grey)."""
    warning: str | None = None
    """Warnings: context at 75%, stale or stalled agents (default: the theme's warning colour)."""
    error: str | None = None
    """Errors: context at 90%, quarantined agents (default: the theme's error colour)."""

    @field_validator("names", "model", "thinking", "tier", "text", "messages", "warning", "error")
    @classmethod
    def _check_colors(cls, value: str | list[str] | None) -> str | list[str] | None:
        for color in [value] if isinstance(value, str) else value or ():
            _check_color(color)
        return value


class RaySettings(_Section):
    """`[ray]`: the Ray runtime (`runtime = "ray"`; see `docs/runtimes.md`)."""

    address: str = "auto"
    """The cluster: `auto` (the one this machine joined with `ray start`), `host:port` of its head, or
    `ray://host:port` (Ray client). Default `auto`."""
    namespace: str = Field(default="corral", min_length=1)
    """Ray namespace of corral's worker actors (default `corral`)."""
    num_cpus: float = Field(default=0.25, ge=0)
    """CPUs one agent reserves; a worker reserves this times its slots (default `0.25`)."""
    memory: int | None = Field(default=None, ge=0)
    """Bytes of memory one agent reserves, likewise multiplied (default: none)."""
    resources: dict[str, float] = Field(default_factory=dict)
    """Custom Ray resources one agent reserves, likewise multiplied, e.g. `{corral = 1}` (default none)."""
    agents_per_worker: int = Field(default=16, ge=1, le=1000)
    """The most agents one worker actor (one process on a node) hosts (default `16`); fewer when no
    node can hold that many agents' resources (`corral.runtime._ray.size_worker`)."""
    workspace: Literal["shared", "auto", "snapshot"] = "shared"
    """How a Ray agent gets its workspace (`docs/runtimes.md`, Workspaces): `shared` (default: in place;
    a node that does not share it refuses the agent), `auto` (in place where shared, else a snapshot
    whose changes come back as a patch) or `snapshot` (always a snapshot)."""
    forward_env: list[str] = Field(default_factory=list)
    """Names of environment variables (e.g. provider keys) the workers get from the host's environment;
    `CORRAL_HOME`, `CORRAL_SCRIPTS` and `XDG_CONFIG_HOME` always go. They cross the network unencrypted."""


class HarnessSettings(_Section):
    """`[harnesses.<name>]`: how corral starts the agents of a harness (`claude-code`, `codex`,
    `opencode`, `gemini`, `goose` or `acp`; docs/harnesses.md)."""

    command: list[str] | None = Field(default=None, min_length=1)
    """The program and its arguments, replacing the preset's (e.g. `["/opt/acp/bin/claude-agent-acp"]`);
    a definition's own `command` still wins (default: the preset's, found on `PATH`)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables set for the agent, over corral's environment and the preset's own
    settings (e.g. `ANTHROPIC_BASE_URL`; default none)."""


HookEvent = Literal["PreToolUse", "PostToolUse"]
"""The hook events corral runs (docs/hooks.md)."""

HOOK_EVENTS: tuple[HookEvent, ...] = ("PreToolUse", "PostToolUse")

_CLAUDE_ONLY_EVENTS = (
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
    "PostCompact",
    "Notification",
    "PermissionRequest",
    "PostToolUseFailure",
)
"""Claude Code's events corral does not run yet: named in the error, so a copied block says why."""


class HookCommandSettings(_Section):
    """One hook of a `[[hooks.<Event>]]` group: `{ type = "command", command = "…", timeout = 60 }`."""

    type: Literal["command"] = "command"
    """The hook's kind: `command` (a shell command; `http` is not supported yet)."""
    command: str = Field(min_length=1)
    """The shell command (run with `/bin/sh -c` in the agent's working directory); it reads the event
    as JSON on stdin."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds before the hook is stopped and counts as failed (default `60`)."""
    fail: Literal["closed", "open"] | None = None
    """When it fails (times out, crashes, prints malformed JSON): `closed` blocks the call, `open` lets
    it run (default: `[hooks] fail`)."""

    @field_validator("timeout", mode="before")
    @classmethod
    def _int_is_float(cls, value: Any) -> Any:
        return _float_of_int(value)

    @field_validator("type", mode="before")
    @classmethod
    def _known_type(cls, value: Any) -> Any:
        if isinstance(value, str) and value != "command":
            raise ValueError(f'hook type {value!r} is not supported yet: use type = "command"')
        return value


class HookGroupSettings(_Section):
    """`[[hooks.<Event>]]`: hooks for the tools whose names `matcher` matches."""

    matcher: str = ""
    """Which tools: a name (`bash`, `Bash`), names joined with `|` (`Edit|Write`), or a regular
    expression (`mcp__github__.*`); empty or `*`: every tool. corral's and Claude Code's tool names
    both match."""
    hooks: list[HookCommandSettings] = Field(min_length=1)
    """The hooks to run, in parallel."""

    @field_validator("matcher")
    @classmethod
    def _check_matcher(cls, value: str) -> str:
        if value and value != "*":
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"matcher {value!r} is not a regular expression: {exc}") from None
        return value


class HooksSettings(_Section):
    """`[hooks]`: commands run at agent events, in Claude Code's format (docs/hooks.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    pre_tool_use: list[HookGroupSettings] = Field(default_factory=list, alias="PreToolUse")
    """`[[hooks.PreToolUse]]`: before a tool call runs; a hook may deny it, ask for approval or allow it."""
    post_tool_use: list[HookGroupSettings] = Field(default_factory=list, alias="PostToolUse")
    """`[[hooks.PostToolUse]]`: after a tool call ran; a hook may add context for the model."""
    fail: Literal["closed", "open"] = "closed"
    """What a failing PreToolUse hook (timed out, crashed, malformed output) does to the call:
    `closed` (default) blocks it, `open` lets it run; either way the failure is reported."""

    @model_validator(mode="before")
    @classmethod
    def _known_events(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in data:
                if key in _CLAUDE_ONLY_EVENTS:
                    raise ValueError(
                        f"the {key} event is not supported yet (corral runs {', '.join(HOOK_EVENTS)} hooks)"
                    )
        return data

    def groups(self, event: HookEvent) -> list[HookGroupSettings]:
        """The groups of `event`."""
        return self.pre_tool_use if event == "PreToolUse" else self.post_tool_use

    @property
    def empty(self) -> bool:
        """Whether no hook is set."""
        return not (self.pre_tool_use or self.post_tool_use)


class PermissionsSettings(_Section):
    """`[permissions]`: which tool calls every agent may make, in Claude Code's rule syntax
    (docs/permissions.md). Deny rules win, then ask, then allow."""

    allow: list[str] = Field(default_factory=list)
    """Rules that allow a call (e.g. `"Bash(git status)"`, `"Read"`)."""
    ask: list[str] = Field(default_factory=list)
    """Rules that need an approval first; with no one to ask (a headless run), the call is denied."""
    deny: list[str] = Field(default_factory=list)
    """Rules that deny a call (e.g. `"Bash(git push:*)"`, `"Edit(/secrets/**)"`, `"mcp__github"`)."""
    default: Literal["allow", "ask", "deny"] = "allow"
    """What a call no rule matches gets (default `allow`, as before there were rules)."""

    @field_validator("allow", "ask", "deny")
    @classmethod
    def _check_rules(cls, value: list[str]) -> list[str]:
        if not value:
            return value
        from corral.permissions import RuleError, parse_rule  # only where rules are set: start-up cost

        for text in value:
            try:
                parse_rule(text)
            except RuleError as exc:
                raise ValueError(str(exc)) from None
        return value

    @property
    def empty(self) -> bool:
        """Whether every call is allowed without a look (no rule, default `allow`)."""
        return not (self.allow or self.ask or self.deny) and self.default == "allow"


@dataclass(frozen=True, slots=True)
class PermissionLayer:
    """Rules that narrow an agent's `[permissions]`: its definition's `permissions:` or its teams tier's
    `[teams.tier_permissions.<tier>]`, or an ancestor's (docs/permissions.md). Each layer is checked on
    its own and the strictest verdict wins, so a layer adds denials and questions but never loosens."""

    source: str
    """Where the rules come from, as a reason names it: ``definition `reviewer` `` or ``tier `read-review` ``."""
    rules: PermissionsSettings
    """The rules (checked when they were read)."""

    def to_json(self) -> dict[str, object]:
        """The layer as a JSON object (`from_json` reads it back)."""
        return {"source": self.source, "rules": self.rules.model_dump(mode="json")}

    @classmethod
    def from_json(cls, data: object) -> PermissionLayer:
        """The layer `to_json` wrote.

        Raises:
            ValueError: `data` is not such a layer (its rules included).
        """
        if not isinstance(data, dict) or not isinstance(data.get("source"), str):
            raise ValueError(f"not a permission layer: {data!r}")
        return cls(data["source"], PermissionsSettings.model_validate(data.get("rules", {})))


_MCP_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def is_mcp_server_name(name: str) -> bool:
    """Whether `name` can name an MCP server: letters, digits, `-` and single `_`, starting with a
    letter or digit (its tools are `mcp__<server>__<tool>`, so no `__`)."""
    return _MCP_SERVER_NAME.fullmatch(name) is not None and "__" not in name


class McpServerSettings(_Section):
    """`[mcp_servers.<name>]`: an MCP server whose tools corral's agents get as `mcp__<name>__<tool>`
    (docs/mcp-servers.md). Give `command` (a program corral starts and talks to over its stdin and
    stdout) or `url` (a streamable HTTP endpoint), not both."""

    command: str | None = Field(default=None, min_length=1)
    """The program of a stdio server, e.g. `"npx"` or `"/usr/local/bin/mcp-server-git"`."""
    args: list[str] = Field(default_factory=list)
    """Its arguments (stdio only; default none)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables it gets besides `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM` and `USER`,
    which it inherits (stdio only; default none)."""
    cwd: str | None = None
    """Its working directory (stdio only; default: the directory corral runs in)."""
    url: str | None = None
    """A streamable HTTP server's endpoint, `http://…` or `https://…`."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent with every request, e.g. `Authorization` (HTTP only; default none)."""
    enabled: bool = True
    """Whether agents get its tools (default `true`)."""
    startup_timeout_s: float = Field(default=30.0, gt=0)
    """Seconds it may take to start and list its tools (default `30`)."""
    tool_timeout_s: float = Field(default=120.0, gt=0)
    """Seconds one tool call may take before it fails (default `120`)."""

    @field_validator("startup_timeout_s", "tool_timeout_s", mode="before")
    @classmethod
    def _int_is_float(cls, value: Any) -> Any:
        return _float_of_int(value)

    @model_validator(mode="after")
    def _check_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "give `command` (a stdio server) or `url` (a streamable HTTP server), exactly one of them"
            )
        if self.url is not None:
            stdio_only = [key for key in ("args", "env", "cwd") if getattr(self, key)]
            if stdio_only:
                raise ValueError(f"`{stdio_only[0]}` is for a stdio server (`command`), not one with a `url`")
            if not self.url.startswith(("http://", "https://")):
                raise ValueError(f"url {self.url!r} must start with http:// or https://")
        elif self.headers:
            raise ValueError("`headers` is for an HTTP server (`url`), not one with a `command`")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """`stdio` (a `command`) or `http` (a `url`)."""
        return "stdio" if self.command is not None else "http"

    @property
    def target(self) -> str:
        """Its command line, or its URL."""
        return self.url if self.url is not None else " ".join([self.command or "", *self.args])


class Settings(_Section):
    """All settings, with their defaults. Build with [`load_settings`][corral.settings.load_settings]."""

    default_model: str | None = None
    """Model ref used when none is given, e.g. `anthropic/claude-sonnet-4-5` (default: none)."""
    default_thinking: ThinkingLevel = "medium"
    """Thinking level used when none is given (default `medium`; clamped to the model's levels)."""
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    """`[compaction]` table."""
    retry: RetrySettings = Field(default_factory=RetrySettings)
    """`[retry]` table."""
    shell_path: str | None = None
    """Shell for the bash tool (default: `/bin/bash` if present, else `sh`)."""
    runtime: Literal["inprocess", "tmux", "ray"] = "inprocess"
    """Where managed agents run when their definition names no `runtime`: `inprocess` (default, tasks
    of the host process), `tmux` (worker processes in panes of a private tmux server that outlive the
    host) or `ray` (worker actors on a Ray cluster, `[ray]`); see `docs/runtimes.md`."""
    ray: RaySettings = Field(default_factory=RaySettings)
    """`[ray]` table."""
    steering_mode: QueueMode = "one-at-a-time"
    """How queued steering messages are delivered: `one-at-a-time` (default) or `all`."""
    follow_up_mode: QueueMode = "one-at-a-time"
    """How queued follow-up messages are delivered: `one-at-a-time` (default) or `all`."""
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    """`[providers.<name>]` tables: custom providers and their models."""
    surfaces: list[Literal["agent", "teams"]] = Field(
        default_factory=lambda: list[Literal["agent", "teams"]](["agent"])
    )
    """Tool surfaces the lead gets (default `["agent"]`)."""
    teams: TeamsSettings = Field(default_factory=TeamsSettings)
    """`[teams]` table (capacity per kind, the read sandbox)."""
    favorite_models: dict[str, dict[str, str]] = Field(default_factory=dict)
    """`[favorite_models.<tier>]` tables with `model` (and optional `thinking`) per intent tier; read from
    the user settings file only, so the picker and spawning agree (validated when a spawn resolves a tier)."""
    model_aliases: dict[str, str] = Field(default_factory=dict)
    """`[model_aliases]` table: what a Claude Code or Pi definition's `model: sonnet|opus|haiku` means here,
    e.g. `sonnet = "anthropic/claude-sonnet-4-5"`. An alias that is not set inherits the spawner's model."""
    activity_colors: ActivityColorsSettings = Field(default_factory=ActivityColorsSettings)
    """`[activity_colors]` table: the terminal app's activity palette (unset keys follow the theme)."""
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    """`[budget]` table: limits on the lead's tree of agents and on each agent (docs/fleet.md)."""
    harnesses: dict[str, HarnessSettings] = Field(default_factory=dict)
    """`[harnesses.<name>]` tables: the command and environment of a harness's agents
    (docs/harnesses.md)."""
    mcp_servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    """`[mcp_servers.<name>]` tables: MCP servers whose tools the agents get (docs/mcp-servers.md).
    After `load_settings`, every server in effect: the user's, the imported ones (`mcp_import`) and a
    trusted project's (its settings, `.mcp.json` and `.codex/config.toml`); `mcp_catalog` says where
    each came from."""
    mcp_tool_search: Literal["auto", "on", "off"] = "auto"
    """Whether an agent gets its MCP tools through the `mcp_tool_search` tool, which loads them on
    demand, instead of all in every request: `auto` (default) when they would take more than
    `mcp_tool_search_threshold` of the agent's context window, `on` always, `off` never
    (docs/mcp-servers.md, "Tool search")."""
    mcp_tool_search_threshold: float = Field(default=0.1, gt=0, le=1)
    """With `mcp_tool_search = "auto"`: the share of the context window (0.1 = 10%) above which the
    MCP tools are searched for instead of sent."""
    mcp_import: list[Literal["claude", "codex"]] = Field(default_factory=list)
    """Other programs whose user-level MCP servers agents get too: `claude` (`~/.claude.json`, its
    top-level and this project's `mcpServers`), `codex` (`~/.codex/config.toml`); read from the user
    settings file only (default none)."""
    _mcp_catalog: McpServerCatalog | None = PrivateAttr(default=None)
    isolation: Literal["shared", "worktree"] = "shared"
    """Where write agents work: `shared` (default: the lead's working tree) or `worktree` (each gets
    its own git worktree and branch `corral/<name>-<run>`, merged back with `corral merge`; see
    `docs/teams.md`, "Isolated writers"). Definitions (`isolation:`) and `[teams.tier_isolation]`
    override it."""
    merge: Literal["manual", "on-accept"] = "manual"
    """When an isolated writer's branch is merged: `manual` (default: `corral merge`) or `on-accept`
    (teams: when the lead records the report's acceptance)."""
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    """`[hooks]`: commands run before and after every agent's tool calls (docs/hooks.md)."""
    permissions: PermissionsSettings = Field(default_factory=PermissionsSettings)
    """`[permissions]`: allow / ask / deny rules for every agent's tool calls (docs/permissions.md)."""
    agent_tool_style: Literal["multiplexed", "per-operation"] = "multiplexed"
    """Shape of the agent surface: `multiplexed` (default) offers one `agent` tool with an
    `action` field; `per-operation` offers `agent_list`, `agent_delegate`, … each with only its
    own fields (for providers that mishandle a flattened multi-action schema)."""

    @field_validator("default_model")
    @classmethod
    def _check_model_ref(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_model_ref(value)
            except ModelRefError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("mcp_servers")
    @classmethod
    def _check_mcp_server_names(cls, value: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name in value:
            if not is_mcp_server_name(name):
                raise ValueError(
                    f"{name!r} is not a server name: use letters, digits, `-` and single `_` (its tools are "
                    "named mcp__<server>__<tool>)"
                )
        return value

    @field_validator("mcp_import", mode="before")
    @classmethod
    def _check_mcp_import(cls, value: Any) -> Any:
        if not isinstance(value, list) or not all(item in MCP_IMPORTS for item in value):
            raise ValueError(
                f'give a list of "claude" and "codex" (the programs whose MCP servers to import), got {value!r}'
            )
        return value

    @property
    def mcp_catalog(self) -> McpServerCatalog:
        """Every MCP server `load_settings` found, where it came from and its state (settings made
        otherwise: `mcp_servers`, as user settings)."""
        if self._mcp_catalog is not None:
            return self._mcp_catalog
        from corral._mcp_config import McpServerCatalog, McpServerEntry

        return McpServerCatalog(
            tuple(
                McpServerEntry(
                    name,
                    "user settings",
                    "settings",
                    "used" if server.enabled else "disabled",
                    server.transport,
                    server.target,
                )
                for name, server in sorted(self.mcp_servers.items())
            )
        )

    @model_validator(mode="after")
    def _check_providers(self, info: ValidationInfo) -> Settings:
        if isinstance(info.context, dict) and info.context.get("partial"):
            return self
        for name, provider in self.providers.items():
            if name == "scripted":
                given = provider.model_fields_set - {"models"}
                if given:
                    raise ValueError(
                        f"providers.scripted.{sorted(given)[0]}: only `models` may be set for scripted"
                    )
            elif name not in BUILTIN_PROVIDER_NAMES and provider.base_url is None:
                raise ValueError(f"providers.{name}.base_url: required for a custom provider")
        return self

    @property
    def tool_policy(self) -> bool:
        """Whether `[permissions]` or `[hooks]` say anything: without them agents get no tool gate."""
        return not (self.permissions.empty and self.hooks.empty)

    def resolved_shell_path(self) -> str:
        """The shell for the bash tool: `shell_path`, else `/bin/bash` if present, else `sh`."""
        if self.shell_path:
            return self.shell_path
        return "/bin/bash" if Path("/bin/bash").exists() else (shutil.which("sh") or "sh")


def user_settings_path() -> Path:
    """The user settings file: `corral._paths.config_home() / "settings.toml"` (may not exist)."""
    return config_home() / "settings.toml"


def find_project_settings(cwd: Path) -> Path | None:
    """The nearest `.corral/settings.toml` at or above `cwd`, or `None`."""
    start = cwd.expanduser().resolve()
    for directory in (start, *start.parents):
        candidate = directory / ".corral" / "settings.toml"
        if candidate.is_file():
            return candidate
    return None


def _ignored_names(data: dict[str, Any]) -> list[str]:
    """The keys of a project file that an untrusted project may not set, as `key` or `table.key`."""
    names: list[str] = []
    for key, value in data.items():
        if key in UNTRUSTED_PROJECT_KEYS:
            continue
        if isinstance(value, dict) and value:
            names.extend(f"{key}.{sub}" for sub in value)
        else:
            names.append(key)
    return names


def _trust_notice(
    path: Path | None,
    project_dir: Path,
    ignored: list[str],
    files: tuple[str, ...],
    changed: str | None,
    mcp_files: tuple[str, ...] = (),
) -> str | None:
    """One line: what of an untrusted project's `.corral/` is ignored, why, and what to do."""
    what: list[str] = []
    if ignored:
        what.append(f"{', '.join(ignored)} in {path}")
    others = sorted(
        {
            name.split("/")[1]
            for name in files
            if name != ".corral/settings.toml" and name not in FOREIGN_MCP_FILES and "/" in name
        }
    )
    if others:
        what.append(f"its .corral/ {', '.join(others)}")
    if mcp_files:
        what.append(f"the MCP servers of its {' and '.join(mcp_files)}")
    if not what and not changed:
        return None
    ignoring = f"; ignoring {' and '.join(what)}" if what else ""
    why = f"is no longer trusted: {changed}" if changed else "is not trusted"
    return (
        f"the project {project_dir} {why}{ignoring}; review with `corral trust --show {project_dir}`, "
        f"then run `corral trust {project_dir}` if you trust it"
    )


def read_settings_file(path: Path) -> Settings:
    """One settings file on its own, validated key by key (`model_fields_set` says what it sets).

    Raises:
        SettingsError: the file is unreadable, not TOML, or has an unknown key or a bad value.
    """
    return _validate(_read_toml(path), str(path), partial=True)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise SettingsError(f"{path}: not UTF-8 text (byte {exc.start}): save the file as UTF-8") from None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read settings: {exc.strerror or exc}") from None


def _describe(exc: ValidationError, source: str) -> SettingsError:
    error = exc.errors()[0]
    key = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        return SettingsError(
            f"{source}: unknown key '{key}': remove it or check its spelling (see docs/settings.md)"
        )
    message = error["msg"].removeprefix("Value error, ")
    where = f" '{key}'" if key else ""
    return SettingsError(f"{source}: invalid value for{where}: {message}")


def _validate(data: dict[str, Any], source: str, *, partial: bool) -> Settings:
    try:
        return Settings.model_validate(data, context={"partial": partial})
    except ValidationError as exc:
        raise _describe(exc, source) from None


_JOINED_LISTS = ("hooks", "permissions", "tier_permissions")
"""Tables whose lists the project file adds to the user's instead of replacing them (as Claude Code
merges rules and hooks across its settings files), and whose choices it may only make stricter
(`_STRICTER`): a project cannot drop the user's deny rules or hooks, nor loosen them."""

_STRICTER = {"default": ("allow", "ask", "deny"), "fail": ("open", "closed")}
"""In a joined table, these keys' values from least to most strict: `[permissions] default` and
`[hooks] fail`; the merge keeps the stricter of the user's and the project's."""


def _deep_merge(base: dict[str, Any], override: dict[str, Any], *, join: bool = False) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value, join=join or key in _JOINED_LISTS)
        elif join and isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = [*merged[key], *value]
        elif join and key in _STRICTER and {value, merged.get(key)} <= set(_STRICTER[key]):
            merged[key] = max(value, merged[key], key=_STRICTER[key].index)
        else:
            merged[key] = value
    return merged


UNTRUSTED_PROJECT_KEYS = ("steering_mode", "follow_up_mode", "agent_tool_style", "activity_colors")
"""The only keys a project file may set before the user trusts the project (`corral trust`).

None of them can run code, choose a model, provider or runtime, spend more, or send data anywhere:
they change how queued messages are delivered, the shape of the agent tool's schema, and the
terminal app's colours. Every other key of an untrusted project's file is ignored (and named once
on stderr), including keys corral adds later."""


def load_settings(
    cwd: Path | None = None,
    *,
    trusted: bool | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> Settings:
    """Load and merge the user file and the nearest project file (project wins).

    A project file is part of a repository someone else may have written, so
    until the user trusts the project directory (the one holding `.corral/`,
    see `corral.trust`) only the keys in `UNTRUSTED_PROJECT_KEYS` apply; the
    rest are ignored, and `on_warning` is told once, in one line, which keys
    (and which other `.corral/` files) are ignored and why. Trust is pinned to
    the files' content: an edited file untrusts the project again, and the
    line says which file changed. An untrusted project's ignored keys are not
    validated either. `favorite_models` is read from the user file only.

    Args:
        cwd: Where to look for `.corral/settings.toml` (and above); `None`
            means the current directory.
        trusted: Whether the project is trusted; `None` asks the trust store.
        on_warning: Called with a one-line message about what was ignored.

    Raises:
        SettingsError: a file is unreadable, not TOML, or has an unknown key
            or a bad value; the message names the file and the key.
        TrustStoreError: the trust store is unreadable or malformed (asked only
            when a project has a `.corral/` directory).
    """
    start = cwd if cwd is not None else Path.cwd()
    user = user_settings_path()
    project = find_project_settings(start)
    if project is not None and project.resolve() == user.resolve():
        project = None
    merged: dict[str, Any] = {}
    sources: list[str] = []
    imports: list[str] = []
    if user.is_file():
        data = _read_toml(user)
        imports = list(_validate(data, str(user), partial=True).mcp_import)
        merged = data
        sources.append(str(user))
    project_dir = project.parent.parent if project is not None else find_project_dir(start)
    mcp_dir = Path(os.path.realpath(project_dir if project_dir is not None else start))
    mcp_files = tuple(name for name in FOREIGN_MCP_FILES if os.path.lexists(mcp_dir / name))  # stat only
    if project_dir is None and mcp_files:
        project_dir = mcp_dir  # a project with no .corral/ whose .mcp.json needs trust
    state = trust_state(project_dir) if project_dir is not None and trusted is None else None
    project_trusted = bool(trusted) if state is None else state.trusted
    try:
        project_data = _read_toml(project) if project is not None else {}
    except SettingsError as exc:
        if project_trusted:
            raise
        project_data = {}  # an untrusted file has no effect, not even an error
        if on_warning is not None:
            on_warning(f"{str(exc).rstrip('.')}; ignored, as the project is not trusted")
    for user_only, why in (
        ("favorite_models", "favorites are read from the user settings only"),
        ("mcp_import", "imports of other programs' MCP servers are read from the user settings only"),
    ):
        if user_only in project_data:
            project_data = {k: v for k, v in project_data.items() if k != user_only}
            if on_warning is not None:
                on_warning(f"{project}: ignoring `{user_only}`; {why}")
    untrusted_mcp: str | None = None
    if project_dir is not None and not project_trusted:
        ignored = _ignored_names(project_data)
        ignored_mcp = (".corral/settings.toml",) if "mcp_servers" in project_data else ()
        project_data = {k: v for k, v in project_data.items() if k in UNTRUSTED_PROJECT_KEYS}
        files = state.files if state is not None else ()
        changed = state.changed if state is not None else None
        notice = _trust_notice(project, project_dir, ignored, files, changed, mcp_files)
        if on_warning is not None and notice is not None:
            on_warning(notice)
        if ignored_mcp or mcp_files:
            why = f"is no longer trusted: {changed}" if changed else "is not trusted"
            untrusted_mcp = (
                f"the MCP servers of {', '.join((*ignored_mcp, *mcp_files))} are ignored: the project "
                f"{project_dir} {why}; review with `corral trust --show {project_dir}`, then run "
                f"`corral trust {project_dir}` if you trust it"
            )
    if project is not None:
        _validate(project_data, str(project), partial=True)
    user_servers = merged.pop("mcp_servers", None) or {}
    project_servers = project_data.pop("mcp_servers", None) or {}
    if project is not None:
        merged = _deep_merge(merged, project_data)
        sources.append(str(project))
    catalog = None
    if user_servers or project_servers or imports or mcp_files or untrusted_mcp:
        servers, catalog = _resolve_mcp_servers(
            [
                ("user settings", str(user), user_servers),
                ("project settings", str(project), project_servers),
            ],
            imports,
            mcp_dir,
            mcp_files if project_trusted else (),
            untrusted_mcp,
        )
        merged["mcp_servers"] = servers
        for problem in catalog.problems:
            if on_warning is not None:
                on_warning(f"{problem}; its MCP servers are not used")
    if not sources and catalog is None:
        return Settings()
    settings = _validate(merged, " + ".join(sources) or "settings", partial=False)
    settings._mcp_catalog = catalog
    return settings


def _resolve_mcp_servers(
    own: list[tuple[McpSource, str, dict[str, Any]]],
    imports: list[str],
    project: Path,
    project_files: tuple[str, ...],
    untrusted: str | None,
) -> tuple[dict[str, Any], McpServerCatalog]:
    """Every MCP server, by precedence: the user's `[mcp_servers]`, the imports in `mcp_import`'s
    order, the (trusted) project's settings, `.mcp.json` and `.codex/config.toml`. The first of a name
    wins and the others are shadowed; an entry that cannot be used is ignored with the reason.
    Returns the tables of the servers in effect (the disabled ones included) and the catalog."""
    from corral._mcp_config import (
        FileServers,
        ForeignServer,
        McpServerCatalog,
        McpServerEntry,
        claude_json_path,
        codex_config_path,
        read_claude_json,
        read_codex_config,
        read_mcp_json,
    )

    user_source, user_file, user_servers = own[0]
    layers: list[tuple[McpSource, str, tuple[ForeignServer, ...]]] = [
        (user_source, user_file, tuple(ForeignServer(n, t) for n, t in user_servers.items()))
    ]
    problems: list[str] = []
    for kind in dict.fromkeys(imports):
        if kind == "claude":
            path = claude_json_path()
            got: FileServers = read_claude_json(path, project)
        else:
            path = codex_config_path()
            got = read_codex_config(path, None)
        layers.append(("imported claude" if kind == "claude" else "imported codex", str(path), got.servers))
        problems += [got.problem] if got.problem else []
    project_source, project_file, project_servers = own[1]
    layers.append(
        (project_source, project_file, tuple(ForeignServer(n, t) for n, t in project_servers.items()))
    )
    for name in project_files:
        path = project / name
        got = read_mcp_json(path, project) if name == ".mcp.json" else read_codex_config(path, project)
        layers.append((".mcp.json" if name == ".mcp.json" else ".codex/config.toml", str(path), got.servers))
        problems += [got.problem] if got.problem else []
    winners: dict[str, tuple[str, str, dict[str, Any]]] = {}
    entries: list[McpServerEntry] = []
    for source, file, servers in layers:
        for server in servers:
            name = server.name
            if server.table is None:
                entries.append(
                    McpServerEntry(name, source, file, "ignored", server.transport, None, server.problem)
                )
                continue
            if not is_mcp_server_name(name):
                reason = f"{name!r} is not a server name for corral: use letters, digits, `-` and single `_`"
                entries.append(McpServerEntry(name, source, file, "ignored", server.transport, None, reason))
                continue
            try:
                config = McpServerSettings.model_validate(server.table)
            except ValidationError as exc:
                error = exc.errors()[0]
                key = ".".join(str(part) for part in error["loc"])
                reason = f"{key + ': ' if key else ''}{error['msg'].removeprefix('Value error, ')}"
                entries.append(McpServerEntry(name, source, file, "ignored", server.transport, None, reason))
                continue
            if name in winners:
                first, first_file, _ = winners[name]
                reason = f"by the server of that name in {first} ({first_file})"
                entries.append(
                    McpServerEntry(name, source, file, "shadowed", config.transport, config.target, reason)
                )
                continue
            winners[name] = (source, file, server.table)
            entries.append(
                McpServerEntry(
                    name,
                    source,
                    file,
                    "used" if config.enabled else "disabled",
                    config.transport,
                    config.target,
                )
            )
    tables = {name: table for name, (_, _, table) in winners.items()}
    return tables, McpServerCatalog(tuple(entries), tuple(problems), untrusted)
