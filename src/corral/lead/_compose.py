"""The composition root: turn a front end's choices into a ready lead and its host.

Every front end builds its lead here — `corral run` in every mode, the app,
the Python API (`corral.open_lead`) and `corral mcp` — so the rules for
picking the session, the model and the thinking level, and the way the store,
host and tool surfaces are put together, live in one place:

* session: `--session <path|id prefix>` opens that file (a path that does not
  exist is an error), `--continue` opens this directory's newest session
  (or starts one), `--no-session` keeps everything in memory, otherwise a new
  session file is created;
* model: `--model`, else the model the opened session last used, else the
  `default_model` setting, else the default model of the first built-in
  provider whose key is set (`DEFAULT_MODELS`); with none of them it is an
  error that says what to set;
* thinking: `--thinking`, else the `:level` suffix of the model ref, else the
  opened session's level, else the `default_thinking` setting — clamped to
  what the model supports;
* a *program lead* (`program=True`: the Python API, `corral mcp`) needs no
  model: without `--model` its session carries the `default_model` (the model
  managed agents inherit when their definition names none) or, with none
  configured, a placeholder that cannot answer; deliveries (results, asks,
  reports) are appended to its session without starting a turn, and it gets
  no built-in tools.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from corral._paths import corral_home, ensure_private_dir
from corral.agent import AgentSession, AgentTool, build_system_prompt
from corral.agent.tools import ALL_TOOL_NAMES, create_builtin_tools
from corral.errors import CorralError, UsageError
from corral.llm import (
    CustomMessage,
    LlmError,
    Model,
    ModelInfo,
    ModelRegistry,
    ThinkingLevel,
    clamp_thinking_level,
    parse_model_ref,
)
from corral.session import SessionManager, find_recent_session, resolve_session_arg
from corral.settings import Settings, load_settings

from ._agents import LeadAgents

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from corral.llm import AssistantMessageEvent, LlmContext, StreamOptions
    from corral.mcp_servers import McpReport, McpServers
    from corral.orchestration import Caller, GenerationRecord

    from ._host import ComposedHost as Host

SURFACE_NAMES = ("agent", "teams")
"""Surfaces `corral run` can give the lead: `agent` (managed agents) and `teams` (a team of spawned agents)."""

__all__ = [
    "PROGRAM_MODEL_REF",
    "LaunchOptions",
    "Launched",
    "ProgramLeadSession",
    "PromptOverrides",
    "announce_default_model",
    "launch_session",
    "warn",
]

PROGRAM_MODEL_REF = "corral/program"
"""The placeholder model of a program lead with no model and no `default_model`."""

NO_AGENT_MODEL = (
    "agents need a model: set `default_model` in settings.toml or pass `model=` to open_lead "
    "(`--model` for `corral mcp`), or name one in the agent's definition"
)
"""What a delegation of a program lead with no model (and no `default_model`) is refused with."""

NO_MODEL_HINT = (
    "no model configured: pass --model provider/model (`corral models` lists them), "
    "set default_model in settings.toml, or set ANTHROPIC_API_KEY or OPENAI_API_KEY "
    "(offline, in any directory: --model scripted/tour)"
)

ModelSource = Literal["flag", "session", "setting", "default", "program"]
"""Where the lead's model came from: `--model`, the opened session, `default_model`, `DEFAULT_MODELS`,
or nowhere (`program`: a program lead without a model carries the placeholder)."""


@dataclass
class LaunchOptions:
    """What the user chose on the command line."""

    cwd: Path
    _: KW_ONLY
    model: str | None = None
    thinking: ThinkingLevel | None = None
    session: str | None = None
    continue_recent: bool = False
    no_session: bool = False
    tools: list[str] | None = None
    """Tool names to activate; `None` means all built-in tools."""
    surfaces: list[str] | None = None
    """Tool surfaces for the lead; `None` means the `surfaces` setting."""
    program: bool = False
    """A program leads (see the module docstring): the model is optional, deliveries start no turn."""
    front: str | None = None
    """A program lead's front end (`api`, `mcp`): a new session's header records it as `corral.lead`,
    so `corral sessions` can name a lead that has no prompt."""
    prompt: PromptOverrides = field(default_factory=lambda: PromptOverrides())
    """`--system-prompt` / `--append-system-prompt` (Pi's flags), already read."""


@dataclass(frozen=True)
class PromptOverrides:
    """Pi's `--system-prompt` and `--append-system-prompt`, as text."""

    system: str | None = None
    """Replaces the base system prompt (and any `SYSTEM.md`)."""
    append: str | None = None
    """Appended to it (replaces any `APPEND_SYSTEM.md`)."""


@dataclass
class Launched:
    """A ready agent session and what it was built from."""

    agent: AgentSession
    session: SessionManager
    settings: Settings
    registry: ModelRegistry
    model_info: ModelInfo
    model_source: ModelSource
    surfaces: list[str]
    """The orchestration surfaces the lead gets (empty: a plain coding agent)."""
    tool_names: list[str] = field(default_factory=lambda: list(ALL_TOOL_NAMES))
    """The built-in tools the agent was given."""
    cwd: Path = field(default_factory=Path.cwd)
    """The working directory the tools run in."""
    host: Host | None = None
    """The orchestration host, once `attach_host` ran (only when `surfaces` is not empty)."""
    caller: Caller | None = None
    """The lead's controller identity, once `attach_host` ran."""
    has_model: bool = True
    """Whether the lead can take a turn (a program lead opened without a model cannot)."""
    terminated: bool = False
    """SIGTERM arrived: the run was aborted, whatever its last message says."""
    failed: str | None = None
    """Why the run stopped on a write failure (a full disk), when it did."""
    settings_warnings: tuple[str, ...] = ()
    """What loading the settings ignored (an untrusted project's keys, …), already printed on stderr;
    the terminal app shows them as notices too."""
    prompt: PromptOverrides = field(default_factory=lambda: PromptOverrides())
    """The system prompt overrides the agent was built with."""
    mcp_servers: McpServers | None = None
    """This process's MCP servers (`[mcp_servers]`), shared by the lead and its in-process agents;
    `None` when none is configured. They start on the lead's first run."""
    mcp_report: McpReport | None = None
    """What the lead got of its MCP servers, once its first run started them."""
    mcp_notice: Callable[[str], None] = field(default=lambda line: warn(line), repr=False)
    """Where a line naming a server the lead did not get goes (default: stderr; the app shows a notice)."""
    _agents: LeadAgents | None = field(default=None, init=False, repr=False)

    @property
    def agents(self) -> LeadAgents | None:
        """The lead's agents as a front end reads and controls them, once `attach_host` ran."""
        if self.host is None or self.caller is None:
            return None
        if self._agents is None or self._agents.caller is not self.caller:
            self._agents = LeadAgents(self.host, self.caller)
        return self._agents

    async def replace_session(self, session: SessionManager) -> None:
        """Continue in another session (RPC `new_session`, `switch_session`, `fork`, `clone`).

        The new agent keeps the current model (a session that recorded a usable
        model gets that one back), the thinking level (a recorded level wins),
        the tools and the surfaces. The current agent must be idle, and with
        surfaces nothing may still be able to arrive for its session; the old
        session is closed.

        Raises:
            UsageError: the agent is busy or the lead still has agents that can deliver to it.
        """
        old = self.agent
        if not old.is_idle:
            session.close()
            raise UsageError(
                "the agent is busy: abort it or wait for agent_settled before switching sessions"
            )
        if self.host is not None and not self.host.can_detach(old.session.session_id):
            session.close()
            raise UsageError(
                "this session's agents are still working and will report to it: wait until they "
                "finish (or close them with `corral agents close`) before switching sessions"
            )
        try:
            restored = session.build_context()
            model = old.model
            if restored.model is not None:
                ref = f"{restored.model.provider}/{restored.model.model_id}"
                if (restored.model.provider, restored.model.model_id) != (model.info.provider, model.info.id):
                    try:
                        info = self.registry.resolve(ref)
                        self.registry.api_key_for(info)
                        model = self.registry.create_model(info, cwd=self.cwd)
                    except CorralError as exc:
                        warn(f"the session's model is not usable ({exc}); keeping {model.info.ref}")
            level = restored.thinking_level if session.entries else old.thinking_level
            agent = _build_agent(
                session, model, level, self.tool_names, self.settings, self.cwd, prompt=self.prompt
            )
            self._give_mcp(agent)
        except BaseException:
            session.close()
            raise
        if self.host is not None:
            self.host.detach_lead(old.session.session_id)
            self.caller = None
        self.agent, previous = agent, self.session
        self.session = session
        self.model_info = model.info
        previous.close()
        if self.host is not None:
            self.caller = await self.host.attach_lead(agent, surfaces=self.surfaces)

    async def attach_host(self) -> None:
        """Open the store, give the lead its surfaces and recover its managed agents.

        Undelivered results of a resumed session are delivered now; generations
        whose host process died are marked lost.
        """
        if not self.surfaces or self.host is not None:
            return
        from corral.orchestration import Repositories, default_store_path

        from ._host import ComposedHost

        repositories = Repositories.open(default_store_path())
        self.host = ComposedHost(
            repositories=repositories,
            registry=self.registry,
            settings=self.settings,
            mcp_servers=self.mcp_servers,
        )
        no_model = NO_AGENT_MODEL if self.model_source == "program" else None
        self.caller = await self.host.attach_lead(self.agent, surfaces=self.surfaces, no_model=no_model)

    def switch_model(self, info: ModelInfo) -> None:
        """Run the lead on the model `info` from its next model request (recorded in its session).

        Raises:
            CorralError: the model cannot be made (its key is not set, …).
        """
        self.registry.api_key_for(info)
        model = self.registry.create_model(info, cwd=self.cwd)
        self.agent.set_model(model)
        self.model_info = info

    async def set_surfaces(self, surfaces: list[str]) -> None:
        """Give the lead the tool surfaces `surfaces` instead of its own, from its next model request.

        The tools of the surfaces it had are removed and those of `surfaces` registered (the host is
        opened first if the lead had none; it stays open when `surfaces` is empty, so agents already
        started still deliver their results).

        Raises:
            UsageError: a surface is not one of `SURFACE_NAMES`.
        """
        _check_surfaces(surfaces)
        if surfaces == self.surfaces:
            return
        old, self.surfaces = self.surfaces, list(surfaces)
        if self.host is None:
            try:
                await self.attach_host()
            except BaseException:
                self.surfaces = old
                raise
            return
        if self.caller is None or self.host.tools is None:
            return
        for tool in self.host.tools.lead_tools(self.caller, old):
            self.agent.unregister_tool(tool.name)
        self.host.install_surfaces(self.agent, self.caller, self.surfaces)

    async def wait_until_quiet(self) -> None:
        """Return once the lead is idle and nothing more can arrive for it (results, questions)."""
        if self.host is not None:
            await self.host.wait_until_quiet(self.session.session_id)
        else:
            await self.agent.wait_for_idle()

    def left_waiting(self) -> list[str]:
        """One line per managed agent left blocked on a question or lost."""
        if self.host is None:
            return []
        lines = []
        resume = f"`corral run --session {self.session.session_id} -p ...`"
        for generation in self.host.blocked_or_lost(self.session.session_id):
            state = "lost" if generation.presence == "lost" or self.host.host_gone(generation) else "blocked"
            who = f"agent {generation.label} ({generation.definition})"
            if state == "blocked" and generation.runtime_kind == "inprocess":
                # It runs in this process: it ends with this run, and a later `reply` cannot reach it.
                lines.append(
                    f"{who} asked a question and runs in this process, so it is lost when this run exits "
                    f"(its question and transcript are kept): {resume} lets the lead `close` it and "
                    f"`continue` its session {generation.session_id} with the answer"
                )
            elif state == "blocked":
                lines.append(f"{who} is waiting for your reply in its own pane; reply with {resume}")
            else:
                lines.append(_lost_line(who, resume, generation))
        return lines

    def interrupted(self) -> list[str]:
        """What an interrupt (Ctrl-C) leaves behind, taken just before the run stops its agents: one
        line per managed agent of this lead not settled. An agent running in this process is lost with
        the run (the line a normal exit prints for a lost agent); one in a pane or on Ray goes on."""
        if self.host is None:
            return []
        lines = []
        resume = f"`corral run --session {self.session.session_id} -p ...`"
        for generation in self.host.tree(self.session.session_id):
            who = f"agent {generation.label} ({generation.definition})"
            if generation.phase == "completed":
                lines.append(f"{who}: its result is stored but was not delivered; {resume} receives it")
            elif generation.phase not in ("starting", "active"):
                continue
            elif generation.runtime_kind == "inprocess" or generation.presence == "lost":
                lines.append(_lost_line(who, resume, generation))
            else:
                lines.append(
                    f"{who} goes on in its {generation.runtime_kind} worker; {resume} receives its result"
                )
        return lines

    def unsettled(self) -> list[str]:
        """One line per managed agent of this lead not settled (finalized) and not named by `left_waiting`,
        and one per agent whose result could not be stored (whatever its state since)."""
        if self.host is None:
            return []
        lines = []
        resume = f"resume with `corral run --session {self.session.session_id} -p ...`"
        for generation in self.host.tree(self.session.session_id):
            name = f"agent {generation.label} ({generation.definition})"
            if generation.run_id in self.host.unstored_results:
                lines.append(f"{name} ended without a stored result (a write failed); its transcript remains")
                continue
            if generation.presence == "lost" or self.host.kernel.pending_ask(generation.run_id) is not None:
                continue  # named by `left_waiting`
            if generation.phase == "completed":
                lines.append(f"{name}: its result is stored but was not delivered; {resume} to receive it")
            elif generation.phase in ("starting", "active"):
                lines.append(
                    f"{name} did not finish; it stops with this run (its transcript remains, see `corral agents list`)"
                )
        return lines

    def _give_mcp(self, agent: AgentSession) -> None:
        """The lead gets every enabled MCP server: their tools join before its first model request
        (the servers start then); a server that failed is named on stderr once."""
        servers = self.mcp_servers
        if servers is None or not self.has_model:
            return
        grant = servers.lead_grant()
        servers.remember(agent.session.session_id, grant)

        def got(report: McpReport) -> None:
            from corral.mcp_servers.texts import failed_servers

            self.mcp_report = report
            for line in failed_servers(report.to_details()):
                self.mcp_notice(line)

        agent.add_tool_source(servers.source(agent, grant, got))

    async def aclose(self) -> None:
        """Stop managed agents that run in this process and close the store (and the MCP servers)."""
        if self.host is not None:
            await self.host.aclose()
        if self.mcp_servers is not None:
            await self.mcp_servers.aclose()


def _lost_line(who: str, resume: str, generation: GenerationRecord) -> str:
    """What a lost agent leaves, with why it was lost when that is known (a full disk, a gone pane)."""
    why = f" ({generation.diagnostic})" if generation.diagnostic else ""
    return (
        f"{who} was lost before it finished{why}; its transcript is kept: {resume} lets the lead "
        f"`close` it and `continue` its session {generation.session_id}; `corral agents list` shows it"
    )


def warn(message: str) -> None:
    """Print a one-line warning on stderr."""
    print(f"corral: warning: {message}", file=sys.stderr)


class ProgramLeadSession(AgentSession):
    """The lead session of a program: a delivered message never starts a turn by itself.

    Results, questions and reports are appended to the session at once while it is idle (the
    program reads them as items); during a turn the program asked for (`prompt`) they steer it,
    as for any lead.
    """

    def send_custom_message(
        self,
        message: CustomMessage,
        *,
        deliver_as: Literal["steer", "followUp", "nextTurn", "context"] = "steer",
        trigger_turn: bool = False,
    ) -> None:
        """Deliver a message like `AgentSession.send_custom_message`, but never start a turn."""
        super().send_custom_message(message, deliver_as=deliver_as, trigger_turn=False)


class _NoModel(Model):
    """The placeholder model of a program lead: it has no provider and cannot answer."""

    def __init__(self) -> None:
        provider, model_id = PROGRAM_MODEL_REF.split("/")
        super().__init__(ModelInfo(provider=provider, id=model_id, api="scripted", name="program lead"))

    def stream(self, context: LlmContext, options: StreamOptions) -> AsyncIterator[AssistantMessageEvent]:
        """Refuse: a program lead without a model takes no turns."""
        raise LlmError("this lead is a program without a model; open it with a model to prompt it")


def _open_session(opts: LaunchOptions) -> SessionManager:
    chosen = sum([opts.session is not None, opts.continue_recent, opts.no_session])
    if chosen > 1:
        raise UsageError("choose one of --session, --continue and --no-session")
    if opts.no_session:
        return SessionManager.create(opts.cwd, persist=False)
    if opts.session is not None:
        return SessionManager.open(resolve_session_arg(opts.session, opts.cwd))
    if opts.continue_recent:
        recent = find_recent_session(opts.cwd)
        if recent is not None:
            return SessionManager.open(recent)
    if opts.front is not None:
        return SessionManager.create(opts.cwd, header_extra={"corral": {"lead": opts.front}})
    return SessionManager.create(opts.cwd)


def _default_model_ref(registry: ModelRegistry) -> str:
    ref = registry.default_model_ref()
    if ref is None:
        raise UsageError(NO_MODEL_HINT)
    return ref


DEFAULT_NOTICE_FILE = "default-model"
"""Under the data root: the built-in default model the user was last told about."""


def announce_default_model(launched: Launched, *, remember: bool) -> None:
    """Say on stderr which built-in default model the lead runs on, the first time it is chosen.

    The ref is remembered in `$CORRAL_HOME/default-model` (unless `remember` is false, as with
    `--no-session`, which writes nothing), so the line appears once per data root and again
    only when the default changes.
    """
    if launched.model_source != "default":
        return
    ref = launched.model_info.ref
    marker = corral_home() / DEFAULT_NOTICE_FILE
    try:
        if marker.read_text(encoding="utf-8").strip() == ref:
            return
    except (OSError, UnicodeDecodeError):
        pass
    print(
        f"corral: using the default model {ref} (its API key is set); "
        "choose another with --model or default_model in settings.toml (`corral models` lists them)",
        file=sys.stderr,
    )
    if remember:
        with contextlib.suppress(OSError):
            ensure_private_dir(marker.parent)
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(ref + "\n")


def launch_session(opts: LaunchOptions) -> Launched:
    """Build the agent session the options describe.

    Raises:
        CorralError: for anything the user can fix (the message says how).
    """
    notes: list[str] = []

    def note(message: str) -> None:
        warn(message)
        notes.append(message)

    launched = _launch_session(opts, note)
    launched.settings_warnings = tuple(notes)
    return launched


def _launch_session(opts: LaunchOptions, note: Callable[[str], None]) -> Launched:
    cwd = opts.cwd.expanduser().resolve()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {opts.cwd}: not a directory")
    opts.cwd = cwd
    settings = load_settings(cwd, on_warning=note)
    registry = ModelRegistry(settings, cwd=cwd)
    session = _open_session(opts)
    if session.torn_fragment is not None:
        warn(
            f"the session file ended in a torn line (an interrupted write); its bytes were moved to "
            f"{session.torn_fragment} and the session goes on from the last complete entry"
        )
    try:
        if opts.program and opts.model is None:
            return _program_lead(opts, session, settings, registry)
        restored = session.build_context()
        ref_text = opts.model
        source: ModelSource = "flag"
        if ref_text is None and restored.model is not None:
            candidate = f"{restored.model.provider}/{restored.model.model_id}"
            try:
                registry.api_key_for(registry.resolve(candidate))
                ref_text = candidate
                source = "session"
            except LlmError as exc:
                print(
                    f"corral: warning: the session's model is not usable ({exc}); using the default",
                    file=sys.stderr,
                )
        if ref_text is None:
            ref_text = _default_model_ref(registry)
            source = "setting" if settings.default_model else "default"
        ref = parse_model_ref(ref_text)
        info = registry.resolve(ref)
        registry.api_key_for(info)  # fails early, naming the variable to set
        model = registry.create_model(info, cwd=cwd)

        has_history = bool(session.entries)
        level: ThinkingLevel = (
            opts.thinking
            or ref.thinking
            or (restored.thinking_level if has_history and restored.thinking_level_set else None)
            or settings.default_thinking
        )
        level = clamp_thinking_level(info, level)

        names = list(ALL_TOOL_NAMES) if opts.tools is None else opts.tools
        unknown = [name for name in names if name not in ALL_TOOL_NAMES]
        if unknown:
            raise UsageError(f"unknown tool {unknown[0]!r}: choose from {', '.join(ALL_TOOL_NAMES)}")
        surfaces = _surfaces(opts, settings)
        agent = _build_agent(
            session, model, level, names, settings, cwd, program=opts.program, prompt=opts.prompt, note=note
        )
    except BaseException:
        session.close()
        raise
    launched = Launched(
        agent=agent,
        session=session,
        settings=settings,
        registry=registry,
        model_info=info,
        model_source=source,
        surfaces=surfaces,
        tool_names=names,
        cwd=cwd,
        prompt=opts.prompt,
    )
    if settings.mcp_servers:
        from corral.mcp_servers import McpServers, preload_sdk

        launched.mcp_servers = McpServers.from_settings(settings, cwd=cwd)
        launched._give_mcp(agent)
        preload_sdk()  # the servers start with the lead's first run: their SDK loads meanwhile
    return launched


def _surfaces(opts: LaunchOptions, settings: Settings) -> list[str]:
    surfaces = list(settings.surfaces if opts.surfaces is None else opts.surfaces)
    _check_surfaces(surfaces)
    return surfaces


def _check_surfaces(surfaces: list[str]) -> None:
    for surface in surfaces:
        if surface not in SURFACE_NAMES:
            raise UsageError(
                f"unknown surface {surface!r}: choose from {', '.join(SURFACE_NAMES)} (or none with --surfaces '')"
            )


def _program_lead(
    opts: LaunchOptions, session: SessionManager, settings: Settings, registry: ModelRegistry
) -> Launched:
    """A lead for a program without a model: the `default_model` to inherit, else the placeholder."""
    cwd = opts.cwd
    model: Model = _NoModel()
    if settings.default_model:
        ref = parse_model_ref(settings.default_model)
        model = registry.create_model(registry.resolve(ref), cwd=cwd)
    level = clamp_thinking_level(model.info, opts.thinking or settings.default_thinking)
    surfaces = _surfaces(opts, settings)
    agent = ProgramLeadSession(
        session=session,
        model=model,
        thinking_level=level,
        tools=[],
        cwd=cwd,
        settings=settings,
        system_prompt="",
    )
    _bind_policy(agent, settings)
    return Launched(
        agent=agent,
        session=session,
        settings=settings,
        registry=registry,
        model_info=model.info,
        model_source="setting" if settings.default_model else "program",
        surfaces=surfaces,
        tool_names=[],
        cwd=cwd,
        has_model=False,
    )


def _build_agent(
    session: SessionManager,
    model: Model,
    level: ThinkingLevel,
    tool_names: list[str],
    settings: Settings,
    cwd: Path,
    *,
    program: bool = False,
    prompt: PromptOverrides | None = None,
    note: Callable[[str], None] | None = None,
) -> AgentSession:
    from corral.skills import agent_catalog, skills_for_agent

    prompt = prompt or PromptOverrides()
    tools: list[AgentTool] = list(create_builtin_tools(cwd, shell_path=settings.shell_path, names=tool_names))
    catalog = agent_catalog(cwd)  # the lead gets every skill found
    if note is not None:  # a malformed skill is named once per start, never fatal
        for issue in catalog.issues:
            if issue.skipped:
                note(f"skill {issue}; `corral skills list` lists the skills in use")
    skill_tools, skills = skills_for_agent(catalog)
    tools += skill_tools
    agent = (ProgramLeadSession if program else AgentSession)(
        session=session,
        model=model,
        thinking_level=level,
        tools=tools,
        cwd=cwd,
        settings=settings,
        system_prompt=build_system_prompt(
            cwd=cwd,
            tools=tools,
            custom_prompt=prompt.system,
            append=prompt.append,
            sections=() if skills is None else (skills,),
        ),
    )
    _bind_policy(agent, settings)
    return agent


def _bind_policy(agent: AgentSession, settings: Settings) -> None:
    """The user's rules and hooks bind the lead — its model's calls, and a program's through
    `Lead.call` — as they bind every agent it starts (corral/_compose.py)."""
    if settings.tool_policy:
        from corral.hooks import AgentIdentity, install_tool_policy

        lead = agent.session.session_id
        install_tool_policy(agent, settings, AgentIdentity(lead, "lead", "lead", None, lead))
