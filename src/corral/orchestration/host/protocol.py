"""The host↔worker protocol: one frozen, versioned description of an agent to launch on a worker.

A host starts an agent on a worker runtime (a `corral worker` in a tmux pane, a Ray worker actor),
or moves a live one there (a handoff), by describing it in a `WorkerLaunch`. The description crosses
a process boundary as JSON (`to_json` / `from_json`): a tmux worker reads it from its launch file,
a Ray worker gets it in its `RayLaunch`. Every side imports these types, so a misspelt key is a type
error here, not a `KeyError` in another process.

What it holds, and who owns each part:

* **The agent** (`agent`): either `BuiltAgent`, the agent exactly as its host built it (model,
  thinking level, system prompt, built-in tools, read sandbox, skills; a handoff, a teams member),
  or `ManagedAgentSpec`, a definition's parts that the worker builds the agent from
  (`build_managed_agent`; `delegate`). Both name the agent's skills; the worker finds them itself.
* **How the run begins**: a new start acknowledges its task; a moved run (`resume_prompt` set)
  prompts that text once instead.
* **The harness** (`harness`): what program runs the agent — `corral`, corral's own agent loop, is
  the one there is. It is separate from the *runtime* (where the program runs: in-process, tmux,
  Ray), so an external agent over a protocol can be described later without a new runtime. A worker
  refuses a harness it does not run (`require_harness`).
* **Extension parts** (`parts`): what a feature adds, typed and owned by that feature, keyed by its
  extension name (`LaunchPart.extension`): the teams member (`teams/launch.py`), the workspace a
  remote node must share (`workspaces/records.py`). The host carries them without knowing them; a
  worker names the part types it understands when it parses (`from_json(parts=...)`).
* **What the start step adds**: the host's settings, the permission layers that narrow the agent's
  rules (its definition's or tier's and its ancestors', `host.permission_layers`) and (tmux) the
  heartbeat file.

Versioning: `version` is `LAUNCH_VERSION` when written. A reader refuses a description written by
a newer corral (an unknown version), an unknown part and an unknown agent kind with a `LaunchError`
that says what to do, instead of guessing.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol, Self, TypeVar

from corral.llm import THINKING_LEVELS, ThinkingLevel, as_thinking_level

if TYPE_CHECKING:
    from corral.mcp_servers import McpGrant
    from corral.settings import PermissionLayer, Settings

__all__ = [
    "CORRAL_HARNESS",
    "LAUNCH_VERSION",
    "BuiltAgent",
    "LaunchError",
    "LaunchPart",
    "ManagedAgentSpec",
    "WorkerLaunch",
]

LAUNCH_VERSION = 3
"""The version of the description this corral writes (and the newest it reads). 2: the agent's MCP
grant (`mcp`); a version-1 description (no grant) reads as an agent without MCP servers. 3: the
permission layers that narrow the agent's `[permissions]` (`permissions`); an older description
reads as none (the settings' rules alone)."""

CORRAL_HARNESS = "corral"
"""The harness of corral's own agent loop (`AgentSession`), the one both workers run."""


class LaunchError(ValueError):
    """A launch description this worker cannot run: not valid, written by a newer corral, or naming
    a harness, an agent kind or an extension part the worker does not know."""


class LaunchPart(Protocol):
    """An extension's own part of a launch: a frozen record the extension defines and parses."""

    extension: ClassVar[str]
    """The extension that owns the part; its key in the description's `parts`."""

    def to_json(self) -> dict[str, object]:
        """The part as a JSON object (`from_json` reads it back)."""
        ...

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Self:
        """The part `to_json` wrote.

        Raises:
            LaunchError: `data` is not such a part.
        """
        ...


P = TypeVar("P", bound=LaunchPart)


@dataclass(frozen=True, slots=True)
class BuiltAgent:
    """An agent exactly as its host built it: the worker rebuilds it from these parts
    (`agent_from_description`), no definition or context file is read again."""

    kind: ClassVar[str] = "built"
    model: str
    """The model reference, `provider/id`."""
    thinking: ThinkingLevel
    system_prompt: str
    """The exact system prompt."""
    tools: tuple[str, ...] | None
    """The built-in tools by name (`None`: all of them)."""
    _: KW_ONLY
    sandbox: bool = False
    """Whether its `bash` runs in the read-only sandbox (a read agent; probed on the worker first)."""
    ask_owner: bool = False
    """Whether it has the `ask_owner` tool."""
    skills: tuple[str, ...] = ()
    """Its skills by name (the system prompt already lists them): the worker gives it the `skill`
    tool over those it finds there (`corral.skills`)."""
    mcp: McpGrant | None = None
    """Its MCP servers (the worker opens its own sessions of them), or `None`: none."""

    def to_json(self) -> dict[str, object]:
        """The agent as a JSON object."""
        return {
            "kind": self.kind,
            "model": self.model,
            "thinking": self.thinking,
            "systemPrompt": self.system_prompt,
            "tools": None if self.tools is None else list(self.tools),
            "sandbox": self.sandbox,
            "askOwner": self.ask_owner,
            "skills": list(self.skills),
            "mcp": None if self.mcp is None else self.mcp.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> BuiltAgent:
        """The agent `to_json` wrote.

        Raises:
            LaunchError: A field is missing or of the wrong type.
        """
        return cls(
            model=_text(data, "model", "agent"),
            thinking=_thinking(data, "agent"),
            system_prompt=_text(data, "systemPrompt", "agent"),
            tools=_texts(data, "tools", "agent", optional=True),
            sandbox=_flag(data, "sandbox", "agent", default=False),
            ask_owner=_flag(data, "askOwner", "agent", default=False),
            skills=_texts(data, "skills", "agent", optional=True) or (),
            mcp=_grant(data),
        )


@dataclass(frozen=True, slots=True)
class ManagedAgentSpec:
    """What builds a managed agent of one definition (`build_managed_agent`), in plain data: the
    worker composes its system prompt in the agent's cwd, as the in-process path does."""

    kind: ClassVar[str] = "definition"
    ask_owner: ClassVar[bool] = True
    """A defined agent always has the `ask_owner` tool (a `BuiltAgent` when it had it where it ran)."""
    label: str
    definition: str
    """The definition's name."""
    model_ref: str
    """The model reference, `provider/id`."""
    thinking: ThinkingLevel
    tool_names: tuple[str, ...]
    """Its built-in tools."""
    body: str
    """The definition's body (its instructions)."""
    system_prompt_mode: str
    """`append` (the body after the default system prompt) or `replace`."""
    _: KW_ONLY
    skills: tuple[str, ...] = ()
    """The skills it was granted, by name (its definition's `skills`, never more than its owner's):
    the worker finds them in the agent's cwd and lists those it finds (`corral.skills`)."""
    mcp: McpGrant | None = None
    """Its MCP servers (the worker opens its own sessions of them), or `None`: none."""

    def to_json(self) -> dict[str, object]:
        """The spec as a JSON object."""
        return {
            "kind": self.kind,
            "label": self.label,
            "definition": self.definition,
            "modelRef": self.model_ref,
            "thinking": self.thinking,
            "toolNames": list(self.tool_names),
            "body": self.body,
            "systemPromptMode": self.system_prompt_mode,
            "skills": list(self.skills),
            "mcp": None if self.mcp is None else self.mcp.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ManagedAgentSpec:
        """The spec `to_json` wrote.

        Raises:
            LaunchError: A field is missing or of the wrong type.
        """
        return cls(
            label=_text(data, "label", "agent"),
            definition=_text(data, "definition", "agent"),
            model_ref=_text(data, "modelRef", "agent"),
            thinking=_thinking(data, "agent"),
            tool_names=_texts(data, "toolNames", "agent") or (),
            body=_text(data, "body", "agent"),
            system_prompt_mode=_text(data, "systemPromptMode", "agent"),
            skills=_texts(data, "skills", "agent", optional=True) or (),
            mcp=_grant(data),
        )


AgentDescription = BuiltAgent | ManagedAgentSpec
"""The agent a launch describes, tagged by `kind` in JSON."""

_AGENT_KINDS: dict[str, type[BuiltAgent] | type[ManagedAgentSpec]] = {
    BuiltAgent.kind: BuiltAgent,
    ManagedAgentSpec.kind: ManagedAgentSpec,
}


@dataclass(frozen=True, slots=True)
class WorkerLaunch:
    """One agent to launch on a worker (see the module docstring)."""

    agent: AgentDescription
    _: KW_ONLY
    resume_prompt: str | None = None
    """A live agent moved here by a handoff: the one prompt it continues with (its task is neither
    acknowledged nor sent again). `None`: a new start, which acknowledges its task."""
    context_retirement: bool = True
    """Honour `contextRetirement` (threshold compaction retires the session)."""
    parts: tuple[LaunchPart, ...] = ()
    """The extensions' own parts, at most one per extension (`part` finds one by its type)."""
    settings: Settings | None = None
    """The host's settings (added by the start step)."""
    heartbeat: str | None = None
    """The file a `corral worker` touches about once a second (tmux), or `None`."""
    permissions: tuple[PermissionLayer, ...] = ()
    """What narrows the agent's `[permissions]`: its ancestors' and its own definition or tier rules
    (added by the start step; the worker's gate checks each, the strictest verdict wins)."""
    harness: str = CORRAL_HARNESS
    """What program runs the agent (`corral`: corral's own agent loop); not where it runs."""
    version: int = LAUNCH_VERSION
    """The protocol version the description was written in."""

    def __post_init__(self) -> None:
        names = [part.extension for part in self.parts]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise LaunchError(f"a launch carries at most one part per extension; twice: {', '.join(twice)}")

    def part(self, kind: type[P]) -> P | None:
        """The part of `kind`'s extension, or `None` when the launch carries none."""
        for part in self.parts:
            if isinstance(part, kind):
                return part
        return None

    def with_part(self, part: LaunchPart) -> WorkerLaunch:
        """This launch with `part` added, replacing the part of the same extension."""
        kept = tuple(p for p in self.parts if p.extension != part.extension)
        return dataclasses.replace(self, parts=(*kept, part))

    def require_harness(self, *supported: str) -> None:
        """Refuse a harness the worker does not run.

        Raises:
            LaunchError: `harness` is not one of `supported`.
        """
        if self.harness not in supported:
            raise LaunchError(
                f"this worker runs agents with the {' or '.join(supported)} harness, not {self.harness!r}; "
                "start the agent where that harness is available, or with the corral harness"
            )

    def to_json(self) -> str:
        """The description as JSON text."""
        data: dict[str, object] = {
            "version": self.version,
            "harness": self.harness,
            "agent": self.agent.to_json(),
            "resumePrompt": self.resume_prompt,
            "contextRetirement": self.context_retirement,
            "parts": {part.extension: part.to_json() for part in self.parts},
            "settings": None if self.settings is None else self.settings.model_dump(mode="json"),
            "heartbeat": self.heartbeat,
            "permissions": [layer.to_json() for layer in self.permissions],
        }
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes, *, parts: Iterable[type[LaunchPart]] = ()) -> WorkerLaunch:
        """The description `to_json` wrote; `parts` are the extension part types the reader knows.

        Raises:
            LaunchError: Not valid JSON of a description, written by a newer corral (`version`),
                or carrying an agent kind or an extension part the reader does not know.
        """
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise LaunchError(f"not a launch description (invalid JSON: {exc})") from None
        if not isinstance(data, dict):
            raise LaunchError("not a launch description (not a JSON object)")
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise LaunchError("not a launch description (no valid `version`)")
        if version > LAUNCH_VERSION:
            raise LaunchError(
                f"the launch description is version {version}, newer than this corral reads "
                f"({LAUNCH_VERSION}); run the same corral version on the host and its workers"
            )
        agent = data.get("agent")
        if not isinstance(agent, dict):
            raise LaunchError("the launch description has no `agent` object")
        agent_kind = _AGENT_KINDS.get(str(agent.get("kind")))
        if agent_kind is None:
            raise LaunchError(
                f"unknown agent kind {agent.get('kind')!r} in the launch description "
                f"(this corral knows: {', '.join(sorted(_AGENT_KINDS))})"
            )
        known = {kind.extension: kind for kind in parts}
        raw_parts = data.get("parts", {})
        if not isinstance(raw_parts, dict):
            raise LaunchError("the launch description's `parts` is not an object")
        typed: list[LaunchPart] = []
        for name, value in raw_parts.items():
            kind = known.get(name)
            if kind is None:
                raise LaunchError(
                    f"the launch carries a part of extension {name!r} that this worker does not know; "
                    "run the same corral version on the host and its workers"
                )
            if not isinstance(value, dict):
                raise LaunchError(f"the launch part {name!r} is not an object")
            typed.append(kind.from_json(value))
        settings_data = data.get("settings")
        settings: Settings | None = None
        if settings_data is not None:
            from pydantic import ValidationError

            from corral.settings import Settings

            try:
                settings = Settings.model_validate(settings_data)
            except ValidationError as exc:
                raise LaunchError(f"the launch description's settings are not valid: {exc}") from None
        resume = data.get("resumePrompt")
        heartbeat = data.get("heartbeat")
        harness = data.get("harness", CORRAL_HARNESS)
        if not isinstance(harness, str) or not harness:
            raise LaunchError("the launch description's `harness` is not a name")
        if resume is not None and not isinstance(resume, str):
            raise LaunchError("the launch description's `resumePrompt` is not text")
        if heartbeat is not None and not isinstance(heartbeat, str):
            raise LaunchError("the launch description's `heartbeat` is not a path")
        return cls(
            agent_kind.from_json(agent),
            resume_prompt=resume,
            context_retirement=_flag(data, "contextRetirement", "launch", default=True),
            parts=tuple(typed),
            settings=settings,
            heartbeat=heartbeat,
            permissions=_layers(data),
            harness=harness,
            version=version,
        )


# --- field readers: the wrong type is a `LaunchError` naming the field -----------------------------


def _text(data: Mapping[str, object], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise LaunchError(f"the launch's {where} `{key}` is missing or not text")
    return value


def _layers(data: Mapping[str, object]) -> tuple[PermissionLayer, ...]:
    """The launch's permission layers (none in a description older than version 3)."""
    value = data.get("permissions")
    if not value:
        return ()
    if not isinstance(value, list):
        raise LaunchError("the launch's `permissions` is not a list of permission layers")
    from corral.settings import PermissionLayer

    try:
        return tuple(PermissionLayer.from_json(item) for item in value)
    except ValueError as exc:
        raise LaunchError(f"the launch's `permissions` are not valid: {exc}") from None


def _flag(data: Mapping[str, object], key: str, where: str, *, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise LaunchError(f"the launch's {where} `{key}` is not true or false")
    return value


def _texts(
    data: Mapping[str, object], key: str, where: str, *, optional: bool = False
) -> tuple[str, ...] | None:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise LaunchError(f"the launch's {where} `{key}` is not a list of names")
    return tuple(value)


def _grant(data: Mapping[str, object]) -> McpGrant | None:
    value = data.get("mcp")
    if value is None:
        return None
    from corral.mcp_servers import McpGrant

    try:
        return McpGrant.from_json(value)
    except ValueError as exc:
        raise LaunchError(f"the launch's agent `mcp`: {exc}") from None


def _thinking(data: Mapping[str, object], where: str) -> ThinkingLevel:
    level = as_thinking_level(data.get("thinking"))
    if level is not None:
        return level
    raise LaunchError(f"the launch's {where} `thinking` is not one of {', '.join(THINKING_LEVELS)}")
