"""`delegate` and `continue`: start a generation for one assignment (§2.2, §2.3).

`Delegation` (the controller's delegation service) validates the request and
hands the host's launch pipeline (`host._launch`) a plan: an isolated writer's
worktree stage, the record step (the session and the generation), and how the
agent is built in-process or described to a worker. Both return after the
generation was recorded atomically (store) and its
task was acknowledged by the child, not after completion. Managed sessions
are created with the header extra `{"corral": {"managed": true, "definition",
"label"}}` and a `corral-agent-definition` entry `{sessionId, definition,
label}`; they are kept after their generation ends (continuation identity).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from corral import _paths
from corral.agent import AgentSession, AgentTool, build_system_prompt
from corral.agent.tools import ALL_TOOL_NAMES, create_builtin_tools
from corral.harness import is_acp
from corral.llm import Model, ThinkingLevel, parse_model_ref
from corral.orchestration.agents.results import DelegateResult
from corral.orchestration.definitions._roster import (
    AgentDefinition,
    RuntimeKind,
    is_delegating,
    leaf_projection,
)
from corral.orchestration.errors import (
    InvalidRequestError,
    ManagedAgentBusyError,
    error_context,
)
from corral.orchestration.host._launch import LaunchDraft, LaunchPlan, LaunchStage, LaunchSteps, Recorded
from corral.orchestration.kernel._caller import Caller
from corral.orchestration.kernel._child import RETIRED_ENTRY, ManagedChild
from corral.orchestration.kernel._delivery import ASK_TYPE, RESULT_TYPE
from corral.orchestration.kernel._files import prepare_files
from corral.orchestration.kernel.records import GenerationRecord, NewGeneration, RequestRecord
from corral.orchestration.worktrees._extension import IsolationStage
from corral.orchestration.worktrees._repository import Worktrees as WorktreeRows
from corral.session import CustomEntry, CustomMessageEntry, SessionError, SessionManager, fork_from

if TYPE_CHECKING:
    from corral.llm import ModelRegistry
    from corral.mcp_servers import McpGrant, McpReport, McpServers
    from corral.orchestration.agents.commands import ContinueParams, DelegateParams
    from corral.orchestration.host._host import Host
    from corral.orchestration.host.protocol import AgentDescription, ManagedAgentSpec, WorkerLaunch
    from corral.orchestration.kernel._files import MessageHeading
    from corral.orchestration.workspaces._extension import SnapshotStage
    from corral.settings import Settings
    from corral.skills import SkillCatalog

__all__ = [
    "DEFINITION_ENTRY",
    "Delegation",
    "build_launched_agent",
    "build_managed_agent",
    "managed_agent_spec",
    "managed_header",
    "mcp_grant",
]

DEFINITION_ENTRY = "corral-agent-definition"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_DEFAULT_STARTUP_MS = 302000
_MANAGED_GUIDANCE = (
    "You are the managed agent {label} (definition {definition}). You work on exactly one assignment "
    "from your owner. When you are done, end with a final answer: your last assistant text is your "
    "result. If you cannot continue without your owner's decision, call ask_owner alone and stop."
)


def managed_header(definition: str, label: str | None) -> dict[str, Any]:
    """The session header extra of a managed session."""
    corral: dict[str, Any] = {"managed": True, "definition": definition}
    if label is not None:
        corral["label"] = label
    return {"corral": corral}


def _tool_names(defn: AgentDefinition) -> list[str]:
    policy = defn.tool_policy
    builtin = list(ALL_TOOL_NAMES)
    if policy.no_tools:
        names = [name for name in (policy.tools or ()) if name in builtin]
    elif policy.tools is not None:
        names = [name for name in policy.tools if name in builtin]
    elif policy.no_builtin_tools:
        names = []
    else:
        names = builtin
    return [name for name in names if name not in policy.exclude_tools]


def managed_agent_spec(
    defn: AgentDefinition,
    label: str,
    model: Model,
    thinking: ThinkingLevel,
    *,
    skills: tuple[str, ...] = (),
    mcp: McpGrant | None = None,
) -> ManagedAgentSpec:
    """The spec of a managed agent of definition `defn` on `model`, granted `skills` (and the MCP
    servers of `mcp`)."""
    from corral.orchestration.host.protocol import ManagedAgentSpec

    return ManagedAgentSpec(
        label=label,
        definition=defn.name,
        model_ref=f"{model.info.provider}/{model.info.id}",
        thinking=thinking,
        tool_names=tuple(_tool_names(defn)),
        body=defn.body.strip(),
        system_prompt_mode=defn.system_prompt_mode,
        skills=skills,
        mcp=mcp,
    )


def build_managed_agent(
    spec: ManagedAgentSpec,
    *,
    session: SessionManager,
    model: Model,
    cwd: Path,
    settings: Settings,
    skills: SkillCatalog | None = None,
) -> AgentSession:
    """The managed agent's `AgentSession` (tools, system prompt); used in-process and by the tmux worker.

    Its skills are `skills` (found by the host), else those of `spec.skills` found in `cwd` now (a
    worker's own look: a granted skill missing here is left out).
    """
    from corral.skills import agent_catalog, skills_for_agent

    tools: list[AgentTool] = create_builtin_tools(
        cwd, shell_path=settings.shell_path, names=list(spec.tool_names)
    )
    catalog = skills if skills is not None else agent_catalog(cwd, choice=spec.skills)
    skill_tools, skills_text = skills_for_agent(catalog)
    tools += skill_tools
    guidance = _MANAGED_GUIDANCE.format(label=spec.label, definition=spec.definition)
    body = spec.body
    replace = spec.system_prompt_mode == "replace"
    system_prompt = build_system_prompt(
        cwd=cwd,
        tools=tools,
        custom_prompt=body if replace and body else None,
        append="\n\n".join(part for part in (body if not replace else "", guidance) if part),
        sections=() if skills_text is None else (skills_text,),
    )
    return AgentSession(
        session=session,
        model=model,
        thinking_level=spec.thinking,
        tools=tools,
        cwd=cwd,
        settings=settings,
        system_prompt=system_prompt,
        agent_name=spec.label,
    )


async def build_launched_agent(
    described: AgentDescription,
    *,
    session: SessionManager,
    registry: ModelRegistry,
    settings: Settings,
    cwd: Path,
    label: str,
    mcp_servers: McpServers | None = None,
) -> tuple[AgentSession, McpReport | None]:
    """The agent of a worker launch (`WorkerLaunch.agent`), on the tmux and Ray workers alike: built
    from its definition's spec (`build_managed_agent`), or rebuilt from its exact parts
    (`agent_from_description`: a teams member, an agent moved there by a handoff); with the tools of
    its MCP servers from the worker's own sessions (`mcp_servers`), and what it got of them.

    Raises:
        ValueError: A read agent's sandbox does not work here (it never runs without it).
    """
    from corral.orchestration.host._worker import agent_from_description
    from corral.orchestration.host.protocol import ManagedAgentSpec

    if isinstance(described, ManagedAgentSpec):
        model = registry.create_model(registry.resolve(described.model_ref), cwd=cwd)
        agent = build_managed_agent(described, session=session, model=model, cwd=cwd, settings=settings)
    else:
        agent = await agent_from_description(
            described, session=session, registry=registry, settings=settings, cwd=cwd, label=label
        )
    report = None
    if described.mcp is not None and described.mcp.servers and mcp_servers is not None:
        report = await mcp_servers.give(agent, described.mcp)
    return agent, report


def _session_path_of(session_id: str, cwd: Path) -> str | None:
    """The file of a session given its full id (this directory's sessions first, then all), or `None`."""
    from corral.session import resolve_session_arg

    try:
        return str(resolve_session_arg(session_id, cwd))
    except SessionError:
        return None


def _definition_entry(session: SessionManager) -> dict[str, Any] | None:
    for entry in session.entries:
        if (
            isinstance(entry, CustomEntry)
            and entry.custom_type == DEFINITION_ENTRY
            and isinstance(entry.data, dict)
        ):
            return entry.data
    return None


class Delegation:
    """`delegate` and `continue`: the controller's delegation service (one per controller).

    Args:
        host: The host whose launch pipeline starts the generations.
        resolve_result_ref: `result:<request-id>` → the durable result artifact (for `files`).
    """

    def __init__(
        self,
        host: Host,
        *,
        resolve_result_ref: Callable[[str], Path | str | None],
    ) -> None:
        self.host = host
        self.resolve_result_ref = resolve_result_ref

    # --- delegate ------------------------------------------------------------------------------

    async def delegate(self, caller: Caller, params: DelegateParams) -> DelegateResult:
        """Start a new agent generation for one assignment (§2.2)."""
        with error_context("delegate"), self.host.one_roster():
            host = self.host
            allowed = self.allowed(caller)
            host.extensions.admitting(caller.session_id)
            roster = host.roster_loader(caller.cwd)
            defn = roster.resolve(params.definition, allowed=allowed)
            if caller.scope == "managed-agent":
                defn = leaf_projection(defn)
            own_cwd = Path(os.path.realpath(caller.cwd))
            cwd = own_cwd
            if params.cwd is not None:
                candidate = Path(params.cwd).expanduser()
                cwd = Path(os.path.realpath(candidate if candidate.is_absolute() else own_cwd / candidate))
                if not cwd.is_dir():
                    raise InvalidRequestError(
                        f"cwd {params.cwd!r} is not a directory; pass an existing directory."
                    )
            if defn.layer == "project" and cwd != own_cwd:
                raise InvalidRequestError(f"Project agent {defn.name} belongs to {own_cwd}; omit cwd.")
            if is_acp(defn.harness):
                from corral.orchestration.agents._acp import check_acp_launch

                runtime = self._runtime_for(defn, delegating=False)
                check_acp_launch(defn.name, defn.harness, runtime=runtime, fork=params.fork is not None)
            if caller.scope == "managed-agent" and cwd != own_cwd:
                raise InvalidRequestError("A delegating agent's agents must run in its own cwd; omit cwd.")
            fork_source: Path | None = None
            if params.fork is not None:
                fork_source = self._session_ref(params.fork)
                self._refuse_retired(fork_source, "fork")
            task_text = self.render(caller, params.files, "Task", params.task)
            stages: list[LaunchStage] = []
            if self._isolated(defn):
                stages.append(
                    IsolationStage(
                        host.extensions,
                        host.kernel.db,
                        name=params.label or defn.name,
                        owner_session_id=caller.session_id,
                        failure="the delegation failed",
                    )
                )

            def record(draft: LaunchDraft) -> tuple[Recorded, Model, ThinkingLevel]:
                return self._record_new(caller, params.label, defn, draft, fork_source, task_text)

            return await self._launch("delegate", caller, defn, record, cwd, stages, params.timeout_ms)

    def _record_new(
        self,
        caller: Caller,
        label: str | None,
        defn: AgentDefinition,
        draft: LaunchDraft,
        fork_source: Path | None,
        task_text: str,
    ) -> tuple[Recorded, Model, ThinkingLevel]:
        """`delegate`'s record step: the new (or forked) session and the generation, in the draft's cwd."""
        host = self.host
        cwd = draft.cwd
        if is_acp(defn.harness):  # the agent runs its own model
            from corral.harness.acp import AcpModel

            model: Model = AcpModel(defn.harness)
            thinking: ThinkingLevel = "off"
        else:
            model, thinking = self._model_for(
                defn, caller.inherited_model_ref, caller.thinking_level, cwd, caller
            )
        delegating = caller.scope == "lead" and is_delegating(defn)
        runtime_kind = self._runtime_for(defn, delegating=delegating)
        if fork_source is not None:
            session = self._fork_session(fork_source, cwd, defn.name)
        else:
            session = SessionManager.create(
                cwd, sessions_root=host.sessions_root, header_extra=managed_header(defn.name, None)
            )
        try:
            generation, task = host.kernel.create_generation(
                NewGeneration(
                    definition=defn.name,
                    owner_session_id=caller.session_id,
                    cwd=str(cwd),
                    session_id=session.session_id,
                    task=task_text,
                    label=label,
                    session_path=None if session.path is None else str(session.path),
                    parent_run_id=caller.run_id if caller.scope == "managed-agent" else None,
                    delegating=delegating,
                    runtime_kind=runtime_kind,
                    run_id=draft.run_id,
                )
            )
        except BaseException:
            session.close()
            raise
        session.header.corral = managed_header(defn.name, generation.label)["corral"]  # type: ignore[attr-defined]
        session.append_custom(
            DEFINITION_ENTRY,
            {"sessionId": session.session_id, "definition": defn.name, "label": generation.label},
        )
        return Recorded(generation, task, session), model, thinking

    # --- continue ------------------------------------------------------------------------------

    async def continue_(self, caller: Caller, params: ContinueParams) -> DelegateResult:
        """A new generation on a saved managed session owned by the caller's tree (§2.3)."""
        with error_context("continue"), self.host.one_roster():
            host = self.host
            host.extensions.admitting(caller.session_id)
            ref = params.session.strip()
            own = caller.agent.session
            if ref == caller.session_id or (
                own.path is not None and not _UUID.match(ref) and _same_file(Path(ref), own.path, caller.cwd)
            ):
                raise InvalidRequestError(
                    "The controller's own active session cannot be continued; use delegate with fork for a "
                    "separate derived context."
                )
            if not _UUID.match(ref) and not ref.endswith(".jsonl"):
                raise InvalidRequestError(
                    f"session {ref!r} is neither a full session UUID nor a session .jsonl path; prefixes are not allowed."
                )
            owned = self._owned_sessions(caller)
            target: tuple[str, Path, str, str] | None = None
            for session_id, (path, definition, label) in owned.items():
                if ref == session_id or (not _UUID.match(ref) and _same_file(Path(ref), path, caller.cwd)):
                    target = (session_id, path, definition, label)
                    break
            if target is None:
                raise InvalidRequestError(
                    "Assignment source is outside the caller's proven session ownership tree."
                )
            session_id, path, definition, label = target
            with SessionManager.open(path, read_only=True) as saved:
                saved_cwd = saved.header.cwd
                context = saved.build_context()
            if not saved_cwd:
                raise InvalidRequestError(f"Saved session {session_id} has no cwd; it cannot be continued.")
            self._refuse_retired(path, "continue")
            defn = host.roster_loader(caller.cwd).resolve(definition, allowed=self.allowed(caller))
            if is_acp(defn.harness):
                from corral.orchestration.agents._acp import check_acp_launch

                runtime = self._runtime_for(defn, delegating=False)
                check_acp_launch(defn.name, defn.harness, runtime=runtime, fork=False)
            if caller.scope == "managed-agent":
                defn = leaf_projection(defn)
            saved_ref = (
                f"{context.model.provider}/{context.model.model_id}"
                if context.model is not None
                else caller.inherited_model_ref
            )
            cwd = Path(saved_cwd)
            rows = WorktreeRows(host.kernel.db)
            kept = rows.worktree_at(cwd) if rows.has_worktrees() else None
            if kept is None and rows.has_worktrees() and not cwd.is_dir():
                raise InvalidRequestError(
                    f"Session {session_id} ran in a worktree that was merged or discarded ({saved_cwd}); "
                    "delegate a new agent (with fork to keep its context) instead."
                )
            if is_acp(defn.harness):  # the agent runs its own model
                from corral.harness.acp import AcpModel

                model: Model = AcpModel(defn.harness)
                thinking: ThinkingLevel = "off"
            else:
                model, thinking = self._model_for(defn, saved_ref, context.thinking_level, cwd, caller)
            task_text = self.render(caller, params.files, "Task", params.task)

            def record(draft: LaunchDraft) -> tuple[Recorded, Model, ThinkingLevel]:
                delegating = caller.scope == "lead" and is_delegating(defn)
                generation, task = host.kernel.create_generation(
                    NewGeneration(
                        definition=defn.name,
                        owner_session_id=caller.session_id,
                        cwd=saved_cwd,
                        session_id=session_id,
                        task=task_text,
                        label=label,
                        session_path=str(path),
                        parent_run_id=caller.run_id if caller.scope == "managed-agent" else None,
                        delegating=delegating,
                        runtime_kind=self._runtime_for(defn, delegating=delegating),
                    )
                )
                if kept is not None:
                    rows.worktree_reactivated(kept.branch, generation.run_id)
                try:
                    session = SessionManager.open(path)
                except SessionError as exc:
                    host.kernel.finalize_generation(generation.run_id, owner_session_id=caller.session_id)
                    raise ManagedAgentBusyError(
                        f"The exact session {session_id} cannot be opened for writing: {exc}",
                        rollback_occurred=True,
                    ) from None
                return Recorded(generation, task, session), model, thinking

            return await self._launch("continue", caller, defn, record, cwd, [], params.timeout_ms)

    # --- shared -----------------------------------------------------------------------------------

    async def _launch(
        self,
        action: Literal["delegate", "continue"],
        caller: Caller,
        defn: AgentDefinition,
        record: Callable[[LaunchDraft], tuple[Recorded, Model, ThinkingLevel]],
        cwd: Path,
        stages: list[LaunchStage],
        timeout_ms: int | None,
    ) -> DelegateResult:
        """Launch a managed generation of `defn` for `caller` through the host's pipeline — `stages`,
        then a Ray agent's workspace snapshot, then `record` — granted its skills and MCP servers
        under `caller`'s; the `delegate` or `continue` result."""
        host = self.host
        steps = _ManagedSteps(
            host,
            defn,
            record,
            skill_ceiling=_skill_ceiling(caller),
            mcp=mcp_grant(host.mcp_servers, caller, defn),
        )
        stages = [*stages, *self._workspace_stages(steps, caller.scope == "lead" and is_delegating(defn))]
        plan = LaunchPlan(action, cwd, stages=stages, startup_s=_startup_s(timeout_ms))
        generation = await host.launcher.launch(plan, steps)
        return _delegate_result(action, generation, steps.task, steps.skill_names, steps.mcp_report)

    def _isolated(self, defn: AgentDefinition) -> bool:
        """Whether a new agent of `defn` gets its own worktree: it can write (`write` or `edit`)
        and its `isolation` (else the `isolation` setting) is `worktree`."""
        choice = defn.isolation or self.host.settings.isolation
        return choice == "worktree" and bool({"write", "edit"} & set(_tool_names(defn)))

    def _workspace_stages(self, steps: _ManagedSteps, delegating: bool) -> list[LaunchStage]:
        """A snapshot of the workspace for a Ray agent when `[ray] workspace` is `auto` or `snapshot`."""
        mode = self.host.settings.ray.workspace
        if mode == "shared" or self._runtime_for(steps.defn, delegating=delegating) != "ray":
            return []
        from corral.orchestration.workspaces._extension import SnapshotStage

        steps.snapshot_stage = SnapshotStage(mode)
        return [steps.snapshot_stage]

    def _runtime_for(self, defn: AgentDefinition, *, delegating: bool) -> RuntimeKind:
        """The definition's `runtime`, else the `runtime` setting; delegating agents run in-process."""
        kind: RuntimeKind = defn.runtime or self.host.settings.runtime
        return "inprocess" if delegating else kind

    def allowed(self, caller: Caller) -> tuple[str, ...] | None:
        """The definitions `caller` may delegate (`None`: any, for the lead).

        Raises:
            InvalidRequestError: `caller` is neither the lead nor a delegating agent.
        """
        if caller.scope == "lead":
            return None
        if caller.allowed is None or caller.run_id is None:
            raise InvalidRequestError(
                "The agent tool is available only to the lead controller or a delegation-enabled agent controller."
            )
        return caller.allowed

    def render(self, caller: Caller, files: Sequence[str] | None, heading: MessageHeading, text: str) -> str:
        """`text` under its `heading` (`Task:`, `Steer:`, ...) with the prepared `files` (from the caller's cwd) first."""
        host = self.host
        prepared = prepare_files(
            files,
            cwd=caller.cwd,
            limits=host.file_limits,
            resolve_result_ref=self.resolve_result_ref,
        )
        return prepared.render(heading, text).text

    def _model_for(
        self,
        defn: AgentDefinition,
        fallback_ref: str | None,
        fallback_thinking: ThinkingLevel,
        cwd: Path,
        caller: Caller,
    ) -> tuple[Model, ThinkingLevel]:
        """The definition's model, else `fallback_ref` (the caller's, or the continued session's).

        Raises:
            InvalidRequestError: neither names a model (the caller's `no_model` says what to set).
        """
        chosen = defn.model or fallback_ref
        if chosen is None:
            raise InvalidRequestError(
                caller.no_model or f"Definition {defn.name} names no model and the caller has none.",
                next_action="Give the agents a model as the message says, then delegate again.",
            )
        ref = parse_model_ref(chosen)
        info = self.host.registry.resolve(ref)
        thinking = defn.thinking or ref.thinking or fallback_thinking
        return self.host.registry.create_model(info, cwd=cwd), thinking

    def _session_ref(self, ref: str) -> Path:
        """An exact session `.jsonl` path or full UUID (searched under the sessions root)."""
        ref = ref.strip()
        if _UUID.match(ref):
            root = self.host.sessions_root or _paths.sessions_root()
            matches = sorted(root.glob(f"*/*_{ref}.jsonl")) if root.is_dir() else []
            if len(matches) != 1:
                raise InvalidRequestError(f"No saved session with id {ref}; pass its exact .jsonl path.")
            return matches[0]
        path = Path(ref).expanduser()
        if not ref.endswith(".jsonl") or not path.is_file():
            raise InvalidRequestError(
                f"fork {ref!r} is neither a full session UUID nor an existing session .jsonl path."
            )
        return Path(os.path.realpath(path))

    def _refuse_retired(self, path: Path, action: str) -> None:
        if not self.host.context_retirement:
            return
        with SessionManager.open(path, read_only=True) as saved:
            retired = saved.is_managed and any(
                isinstance(entry, CustomEntry) and entry.custom_type == RETIRED_ENTRY
                for entry in saved.entries
            )
        if retired:
            raise InvalidRequestError(
                f"Session {path} is retired after context pressure; {action} is not allowed. Delegate a fresh "
                "agent and pass the previous result/handoff and relevant files."
            )

    def _fork_session(self, source: Path, cwd: Path, definition: str) -> SessionManager:
        return fork_from(
            source,
            cwd,
            sessions_root=self.host.sessions_root or _paths.sessions_root(),
            header_extra=managed_header(definition, None),
            write_now=False,
        )

    def _owned_sessions(self, caller: Caller) -> dict[str, tuple[Path, str, str]]:
        """Sessions proven owned: delivered results in the caller's history, recursively — and
        agents whose question (`ask_owner`) was delivered there, so an agent lost while waiting
        for a reply can be continued with the answer."""
        found: dict[str, tuple[Path, str, str]] = {}
        frontier: list[tuple[str, list[Any]]] = [(caller.session_id, caller.agent.session.entries)]
        while frontier:
            owner_id, entries = frontier.pop()
            for entry in entries:
                if not (
                    isinstance(entry, CustomMessageEntry) and entry.custom_type in (RESULT_TYPE, ASK_TYPE)
                ):
                    continue
                details = entry.details if isinstance(entry.details, dict) else {}
                child_id, child_path = details.get("session_id"), details.get("session_path")
                if entry.custom_type == ASK_TYPE:  # asked of this owner: its history is the proof
                    if not isinstance(child_id, str) or not _UUID.match(child_id):
                        continue
                    child_path = _session_path_of(child_id, caller.cwd)
                elif details.get("owner_session_id") != owner_id:
                    continue
                if not child_id or not child_path:
                    continue
                if child_id in found or child_id == caller.session_id:
                    continue
                try:
                    with SessionManager.open(Path(child_path), read_only=True) as child:
                        data = _definition_entry(child)
                        child_entries = child.entries
                        ok = (
                            child.session_id == child_id
                            and data is not None
                            and data.get("sessionId") == child_id
                        )
                except SessionError:
                    continue
                if not ok or data is None:
                    continue
                found[child_id] = (Path(child_path), str(data.get("definition")), str(data.get("label")))
                frontier.append((child_id, child_entries))
        return found


class _ManagedSteps(LaunchSteps):
    """`delegate`'s and `continue`'s part of a launch: a managed agent of one definition.

    Args:
        host: The host (settings, tools, the owners registry).
        defn: The agent's definition.
        record: The record step; it also picks the agent's model and thinking level.
    """

    def __init__(
        self,
        host: Host,
        defn: AgentDefinition,
        record: Callable[[LaunchDraft], tuple[Recorded, Model, ThinkingLevel]],
        *,
        skill_ceiling: tuple[str, ...] | None = None,
        mcp: tuple[McpGrant, tuple[str, ...]] | None = None,
    ) -> None:
        self.host = host
        self.defn = defn
        self._record = record
        self.skill_ceiling = skill_ceiling
        """The most skills the agent may get: its owner's (`None`: the lead's, every skill found)."""
        self._skills: SkillCatalog | None = None
        self.mcp = mcp
        """The agent's MCP grant and the servers its definition names that it does not get, or `None`
        (no server configured)."""
        self.mcp_report: McpReport | None = None
        """What the agent got of its MCP servers, once built (or, on a worker, as this host lists them)."""
        self._recorded: Recorded | None = None
        self._model: Model | None = None
        self._thinking: ThinkingLevel = "off"
        self.snapshot_stage: SnapshotStage | None = None
        """`delegate` on Ray with `[ray] workspace` `auto` or `snapshot`: the workspace's snapshot."""

    @property
    def task(self) -> RequestRecord:
        """The recorded generation's task request."""
        assert self._recorded is not None
        return self._recorded.task

    def record(self, draft: LaunchDraft) -> Recorded:
        """The session and the generation (see `Delegation`)."""
        self._recorded, self._model, self._thinking = self._record(draft)
        return self._recorded

    def skills(self, recorded: Recorded) -> SkillCatalog:
        """The agent's skills, found in its cwd once: its definition's `skills`, never more than
        its owner's. An ACP agent gets none of them (it has its own)."""
        if self._skills is None:
            from corral.skills import SkillCatalog, agent_catalog

            if is_acp(self.defn.harness):
                self._skills = SkillCatalog()
            else:
                self._skills = agent_catalog(
                    Path(recorded.generation.cwd),
                    choice=self.defn.skill_policy.choice,
                    ceiling=self.skill_ceiling,
                )
        return self._skills

    @property
    def skill_names(self) -> tuple[str, ...]:
        """The skills the agent got, by name (the delegate result names them)."""
        return () if self._skills is None else tuple(s.name for s in self._skills.offered())

    def _spec(self, recorded: Recorded) -> ManagedAgentSpec:
        assert self._model is not None
        skills = tuple(skill.name for skill in self.skills(recorded).offered())
        grant = None if self.mcp is None else self.mcp[0]
        return managed_agent_spec(
            self.defn, recorded.generation.label, self._model, self._thinking, skills=skills, mcp=grant
        )

    async def build(self, recorded: Recorded) -> ManagedChild:
        """The managed agent's session and child (its result gets the extensions' `work_done` lines)."""
        host = self.host
        generation = recorded.generation
        assert self._model is not None
        if is_acp(self.defn.harness):
            return self._acp_child(recorded)
        agent = build_managed_agent(
            self._spec(recorded),
            session=recorded.session,
            model=self._model,
            cwd=Path(generation.cwd),
            settings=host.settings,
            skills=self.skills(recorded),
        )
        servers = host.mcp_servers
        if self.mcp is not None and servers is not None:
            grant, missing = self.mcp
            self.mcp_report = await servers.give(agent, grant, missing=missing)
        child = ManagedChild(
            store=host.kernel,
            agent=agent,
            generation=generation,
            task=recorded.task,
            hooks=host,
            delegating=generation.delegating,
            context_retirement=host.context_retirement,
        )
        child.on_work_done = host.work_done
        return child

    def _acp_child(self, recorded: Recorded) -> ManagedChild:
        """The child of an ACP agent (`_acp.py`): its permission requests are the child's questions,
        answered through `on_reply`; its process tree ends with the run (`on_ended`)."""
        from corral.harness.acp import SessionConfig
        from corral.orchestration.agents._acp import OwnerPermissions, acp_agent

        host = self.host
        generation = recorded.generation
        permissions = OwnerPermissions(abandon_ask=host.kernel.abandon_ask)
        agent = acp_agent(
            self.defn.harness,
            self.defn.command,
            label=generation.label,
            session=recorded.session,
            cwd=Path(generation.cwd),
            settings=host.settings,
            permissions=permissions,
            config=SessionConfig(self.defn.model, self.defn.thinking),
            writable=_writes(self.defn),
            mcp=None if self.mcp is None else self.mcp[0],
        )
        child = ManagedChild(
            store=host.kernel, agent=agent, generation=generation, task=recorded.task, hooks=host
        )
        permissions.record_ask = lambda question: child.record_ask(question, mid_turn=True)
        permissions.ask_ended = child.end_mid_turn_ask
        child.on_reply = permissions.reply
        child.on_ended = agent.kill
        child.on_work_done = host.work_done
        return child

    def attach(self, child: ManagedChild) -> None:
        """A delegating agent gets the `agent` surface as a controller of its own."""
        generation = child.generation
        if generation.delegating:
            caller = Caller(
                child.agent,
                scope="managed-agent",
                allowed=self.defn.agents,
                run_id=generation.run_id,
                label=generation.label,
            )
            self.host.install_surfaces(child.agent, caller, ("agent",))

    async def before_worker(self, recorded: Recorded) -> None:
        """An agent on a worker opens its own MCP sessions there; its result names the servers and
        tools as this host's sessions list them (they are started here for that, if they were not)."""
        servers = self.host.mcp_servers
        if self.mcp is None or servers is None:
            return
        import dataclasses

        grant, missing = self.mcp
        toolset = await servers.toolset(grant, missing=missing)
        servers.remember(recorded.session.session_id, grant)
        self.mcp_report = dataclasses.replace(toolset.report, listed_here=False)

    def worker_launch(self, recorded: Recorded) -> WorkerLaunch:
        """The worker builds the agent from its spec; a remote worker first checks that its node
        shares the agent's workspace (workspaces' part: the cwd's path, git top and HEAD, and the
        snapshot when `[ray] workspace` may use one)."""
        from corral.orchestration.host.protocol import WorkerLaunch
        from corral.orchestration.workspaces._snapshot import identify
        from corral.orchestration.workspaces.records import WorkspaceLaunch

        stage = self.snapshot_stage
        workspace = WorkspaceLaunch(
            identify(Path(recorded.generation.cwd), tree=False),
            mode=self.host.settings.ray.workspace,
            writes=_writes(self.defn),
            snapshot=None if stage is None else stage.snapshot,
        )
        return WorkerLaunch(
            self._spec(recorded), context_retirement=self.host.context_retirement, parts=(workspace,)
        )


_WRITING_TOOLS = frozenset({"edit", "write", "bash"})


def _writes(defn: AgentDefinition) -> bool:
    """Whether an agent of `defn` may change files (edit, write or bash among its tools)."""
    policy = defn.tool_policy
    tools = set(policy.tools) if policy.tools is not None else set(ALL_TOOL_NAMES)
    return bool((tools - set(policy.exclude_tools)) & _WRITING_TOOLS)


def _startup_s(timeout_ms: int | None) -> float:
    return (timeout_ms or _DEFAULT_STARTUP_MS) / 1000


def _same_file(given: Path, actual: Path, base: Path) -> bool:
    path = given.expanduser()
    if not path.is_absolute():
        path = base / path
    try:
        return os.path.realpath(path) == os.path.realpath(actual)
    except OSError:
        return False


def _skill_ceiling(caller: Caller) -> tuple[str, ...] | None:
    """The most skills an agent `caller` starts may get: the lead's are not limited (it has every
    skill found), a delegating agent's are the skills it has itself."""
    from corral.skills import skill_names_of

    return None if caller.scope == "lead" else skill_names_of(caller.agent)


def mcp_grant(
    servers: McpServers | None, caller: Caller, defn: AgentDefinition
) -> tuple[McpGrant, tuple[str, ...]] | None:
    """The MCP servers an agent of `defn` started by `caller` gets: narrowed from the caller's (the
    lead's: every enabled server; a delegating agent's: its own), read-only tools only for an agent
    that cannot change files; with the names its definition asks for that the caller lacks. `None`
    when no server is configured. An ACP agent gets the same grant: its servers are passed to its
    program in `session/new` (`orchestration/agents/_acp.py`; none for a read agent)."""
    if servers is None:
        return None
    from corral.mcp_servers import NO_MCP, narrow

    parent = servers.lead_grant() if caller.scope == "lead" else servers.grant_of(caller.session_id) or NO_MCP
    return narrow(parent, defn.mcp, read_only=not _writes(defn))


def _delegate_result(
    action: Any,
    generation: GenerationRecord,
    task: RequestRecord,
    skills: tuple[str, ...] = (),
    mcp: McpReport | None = None,
) -> DelegateResult:
    """The `delegate`/`continue` result of a started, acknowledged generation."""
    return DelegateResult(
        action,
        agent=generation.label,
        definition=generation.definition,
        owner_session_id=generation.owner_session_id,
        pane_id=generation.pane_id,
        session_id=generation.session_id,
        session_path=generation.session_path,
        request_id=task.request_id,
        run_id=generation.run_id,
        skills=skills,
        mcp=mcp,
    )
