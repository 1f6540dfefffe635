"""`delegate` and `continue`: start a generation for one assignment (§2.2, §2.3).

Both return after the generation was recorded atomically (store) and its
task was acknowledged by the child, not after completion. Managed sessions
are created with the header extra `{"corral": {"managed": true, "definition",
"label"}}` and a `corral-agent-definition` entry `{sessionId, definition,
label}`; they are kept after their generation ends (continuation identity).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral import _paths
from corral.agent import AgentSession, AgentTool, build_system_prompt
from corral.agent.tools import ALL_TOOL_NAMES, create_builtin_tools
from corral.llm import Model, ThinkingLevel, parse_model_ref
from corral.orchestration.agents.results import DelegateResult
from corral.orchestration.definitions._roster import (
    AgentDefinition,
    RuntimeKind,
    is_delegating,
    leaf_projection,
)
from corral.orchestration.errors import (
    InternalFailureError,
    InvalidRequestError,
    ManagedAgentBusyError,
    OrchestrationError,
    PaneNotReadyError,
    RollbackFailureError,
    error_context,
)
from corral.orchestration.host._worker import worker_argv, worker_env, write_launch_file
from corral.orchestration.kernel._caller import Caller
from corral.orchestration.kernel._child import RETIRED_ENTRY, ManagedChild
from corral.orchestration.kernel._delivery import ASK_TYPE, RESULT_TYPE
from corral.orchestration.kernel._faults import fault_point
from corral.orchestration.kernel._files import prepare_files
from corral.orchestration.kernel.records import GenerationRecord, NewGeneration, RequestRecord
from corral.orchestration.worktrees._extension import worktrees_of
from corral.runtime import LaunchSpec, PaneNotReady, RollbackFailed, RuntimeError_, RuntimeHandle
from corral.session import CustomEntry, CustomMessageEntry, SessionError, SessionManager, fork_from

if TYPE_CHECKING:
    from corral.orchestration.agents.commands import ContinueParams, DelegateParams
    from corral.orchestration.host._host import Host
    from corral.orchestration.worktrees import Isolation
    from corral.settings import Settings

__all__ = [
    "DEFINITION_ENTRY",
    "DelegateMixin",
    "ManagedAgentSpec",
    "build_managed_agent",
    "managed_agent_spec",
    "managed_header",
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


@dataclass(frozen=True, slots=True)
class ManagedAgentSpec:
    """What builds a managed agent's session, in plain data (a tmux worker reads it from a file)."""

    label: str
    definition: str
    model_ref: str
    thinking: ThinkingLevel
    tool_names: tuple[str, ...]
    body: str
    system_prompt_mode: str

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (`from_json` reads it back)."""
        data = asdict(self)
        data["tool_names"] = list(self.tool_names)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ManagedAgentSpec:
        """The spec written by `to_json`."""
        return cls(**{**data, "tool_names": tuple(data["tool_names"])})


def managed_agent_spec(
    defn: AgentDefinition, label: str, model: Model, thinking: ThinkingLevel
) -> ManagedAgentSpec:
    """The spec of a managed agent of definition `defn` on `model`."""
    return ManagedAgentSpec(
        label=label,
        definition=defn.name,
        model_ref=f"{model.info.provider}/{model.info.id}",
        thinking=thinking,
        tool_names=tuple(_tool_names(defn)),
        body=defn.body.strip(),
        system_prompt_mode=defn.system_prompt_mode,
    )


def build_managed_agent(
    spec: ManagedAgentSpec, *, session: SessionManager, model: Model, cwd: Path, settings: Settings
) -> AgentSession:
    """The managed agent's `AgentSession` (tools, system prompt); used in-process and by the tmux worker."""
    tools: list[AgentTool] = create_builtin_tools(
        cwd, shell_path=settings.shell_path, names=list(spec.tool_names)
    )
    guidance = _MANAGED_GUIDANCE.format(label=spec.label, definition=spec.definition)
    body = spec.body
    replace = spec.system_prompt_mode == "replace"
    system_prompt = build_system_prompt(
        cwd=cwd,
        tools=tools,
        custom_prompt=body if replace and body else None,
        append="\n\n".join(part for part in (body if not replace else "", guidance) if part),
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


class DelegateMixin:
    """`delegate` and `continue_` of the `Controller`."""

    host: Host

    if TYPE_CHECKING:
        # Provided by `Controller`.
        def resolve_result_ref(self, request_id: str) -> Path | str | None: ...

    # --- delegate ------------------------------------------------------------------------------

    async def delegate(self, caller: Caller, params: DelegateParams) -> DelegateResult:
        """Start a new agent generation for one assignment (§2.2)."""
        with error_context("delegate"):
            host = self.host
            allowed = self._allowed(caller)
            host.admit_agent(caller.session_id)
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
            if caller.scope == "managed-agent" and cwd != own_cwd:
                raise InvalidRequestError("A delegating agent's agents must run in its own cwd; omit cwd.")
            fork_source: Path | None = None
            if params.fork is not None:
                fork_source = self._session_ref(params.fork)
                self._refuse_retired(fork_source, "fork")
            task_text = self._render(caller, params.files, "Task", params.task)
            isolation = None
            if self._isolated(defn):
                isolation = await asyncio.to_thread(
                    worktrees_of(host.extensions, host.store).isolate,
                    cwd,
                    name=params.label or defn.name,
                    run_id=str(uuid.uuid4()),
                    owner_session_id=caller.session_id,
                )
                cwd = isolation.cwd
            try:
                return await self._delegate_in(caller, params, defn, cwd, fork_source, task_text, isolation)
            except BaseException:
                if isolation is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.to_thread(
                            worktrees_of(host.extensions, host.store).abandon,
                            isolation.record.branch,
                            "the delegation failed",
                        )
                raise

    async def _delegate_in(
        self,
        caller: Caller,
        params: DelegateParams,
        defn: AgentDefinition,
        cwd: Path,
        fork_source: Path | None,
        task_text: str,
        isolation: Isolation | None,
    ) -> DelegateResult:
        """The rest of `delegate`, once the cwd (an isolated agent's worktree) is known."""
        host = self.host
        model, thinking = self._model_for(defn, caller.model_ref, caller.thinking_level, cwd)
        delegating = caller.scope == "lead" and is_delegating(defn)
        runtime_kind = self._runtime_for(defn, delegating=delegating)
        if fork_source is not None:
            session = self._fork_session(fork_source, cwd, defn.name)
        else:
            session = SessionManager.create(
                cwd, sessions_root=host.sessions_root, header_extra=managed_header(defn.name, None)
            )
        try:
            generation, task = host.store.create_generation(
                NewGeneration(
                    definition=defn.name,
                    owner_session_id=caller.session_id,
                    cwd=str(cwd),
                    session_id=session.session_id,
                    task=task_text,
                    label=params.label,
                    session_path=None if session.path is None else str(session.path),
                    parent_run_id=caller.run_id if caller.scope == "managed-agent" else None,
                    delegating=delegating,
                    runtime_kind=runtime_kind,
                    run_id=None if isolation is None else isolation.record.run_id,
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
        return await self._launch(
            "delegate", caller, generation, task, session, model, thinking, defn, params.timeout_ms
        )

    # --- continue ------------------------------------------------------------------------------

    async def continue_(self, caller: Caller, params: ContinueParams) -> DelegateResult:
        """A new generation on a saved managed session owned by the caller's tree (§2.3)."""
        with error_context("continue"):
            host = self.host
            host.admit_agent(caller.session_id)
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
            defn = host.roster_loader(caller.cwd).resolve(definition, allowed=self._allowed(caller))
            if caller.scope == "managed-agent":
                defn = leaf_projection(defn)
            saved_ref = (
                f"{context.model.provider}/{context.model.model_id}"
                if context.model is not None
                else caller.model_ref
            )
            cwd = Path(saved_cwd)
            kept = host.store.worktree_at(cwd) if host.store.has_worktrees() else None
            if kept is None and host.store.has_worktrees() and not cwd.is_dir():
                raise InvalidRequestError(
                    f"Session {session_id} ran in a worktree that was merged or discarded ({saved_cwd}); "
                    "delegate a new agent (with fork to keep its context) instead."
                )
            model, thinking = self._model_for(defn, saved_ref, context.thinking_level, cwd)
            task_text = self._render(caller, params.files, "Task", params.task)
            generation, task = host.store.create_generation(
                NewGeneration(
                    definition=defn.name,
                    owner_session_id=caller.session_id,
                    cwd=saved_cwd,
                    session_id=session_id,
                    task=task_text,
                    label=label,
                    session_path=str(path),
                    parent_run_id=caller.run_id if caller.scope == "managed-agent" else None,
                    delegating=caller.scope == "lead" and is_delegating(defn),
                    runtime_kind=self._runtime_for(
                        defn, delegating=caller.scope == "lead" and is_delegating(defn)
                    ),
                )
            )
            if kept is not None:
                host.store.worktree_reactivated(kept.branch, generation.run_id)
            try:
                session = SessionManager.open(path)
            except SessionError as exc:
                host.store.finalize_generation(generation.run_id, owner_session_id=caller.session_id)
                raise ManagedAgentBusyError(
                    f"The exact session {session_id} cannot be opened for writing: {exc}",
                    rollback_occurred=True,
                ) from None
            return await self._launch(
                "continue", caller, generation, task, session, model, thinking, defn, params.timeout_ms
            )

    # --- shared -----------------------------------------------------------------------------------

    def _isolated(self, defn: AgentDefinition) -> bool:
        """Whether a new agent of `defn` gets its own worktree: it can write (`write` or `edit`)
        and its `isolation` (else the `isolation` setting) is `worktree`."""
        choice = defn.isolation or self.host.settings.isolation
        return choice == "worktree" and bool({"write", "edit"} & set(_tool_names(defn)))

    def _runtime_for(self, defn: AgentDefinition, *, delegating: bool) -> RuntimeKind:
        """The definition's `runtime`, else the `runtime` setting; delegating agents run in-process."""
        kind: RuntimeKind = defn.runtime or self.host.settings.runtime
        return "inprocess" if delegating else kind

    def _allowed(self, caller: Caller) -> tuple[str, ...] | None:
        if caller.scope == "lead":
            return None
        if caller.allowed is None or caller.run_id is None:
            raise InvalidRequestError(
                "The agent tool is available only to the lead controller or a delegation-enabled agent controller."
            )
        return caller.allowed

    def _render(self, caller: Caller, files: Sequence[str] | None, heading: Any, text: str) -> str:
        host = self.host
        prepared = prepare_files(
            files,
            cwd=caller.cwd,
            limits=host.file_limits,
            resolve_result_ref=self.resolve_result_ref,
        )
        return prepared.render(heading, text).text

    def _model_for(
        self, defn: AgentDefinition, fallback_ref: str, fallback_thinking: ThinkingLevel, cwd: Path
    ) -> tuple[Model, ThinkingLevel]:
        ref = parse_model_ref(defn.model or fallback_ref)
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

    async def _launch(
        self,
        action: Any,
        caller: Caller,
        generation: GenerationRecord,
        task: RequestRecord,
        session: SessionManager,
        model: Model,
        thinking: ThinkingLevel,
        defn: AgentDefinition,
        timeout_ms: int | None,
    ) -> DelegateResult:
        host = self.host
        cwd = Path(generation.cwd)
        if generation.runtime_kind == "tmux":
            with host.placing_run(
                generation.run_id
            ):  # its pane is not recorded yet: no recovery may settle it
                return await self._launch_tmux(
                    action, caller, generation, task, session, model, thinking, defn, timeout_ms
                )
        try:
            spec = managed_agent_spec(defn, generation.label, model, thinking)
            agent = build_managed_agent(spec, session=session, model=model, cwd=cwd, settings=host.settings)
            session.flush()
            child = ManagedChild(
                store=host.store,
                agent=agent,
                generation=generation,
                task=task,
                hooks=host,
                delegating=generation.delegating,
                context_retirement=host.context_retirement,
            )
            child.on_work_done = host.work_done
            host.install_child_tools(child)
            if generation.delegating:
                child_caller = Caller(
                    agent,
                    scope="managed-agent",
                    allowed=defn.agents,
                    run_id=generation.run_id,
                    label=generation.label,
                )
                host.register_owner(agent)
                host.install_surfaces(agent, child_caller, ("agent",))
            handle = await host.start_child(child, cwd=cwd, session_path=session.path)
            generation = host.store.record_started(
                generation.run_id,
                session_path=None if session.path is None else str(session.path),
                pid=host.pid,
                host_id=host.host_id,
                pane_id=handle.runtime_id,
            )
        except BaseException as exc:
            await self._rollback(generation, caller)
            if isinstance(exc, OrchestrationError):
                exc.rollback_occurred = True
            raise
        budget = (timeout_ms or _DEFAULT_STARTUP_MS) / 1000
        ack = asyncio.ensure_future(child.acknowledged.wait())
        ended = asyncio.ensure_future(child.finished.wait())
        await asyncio.wait({ack, ended}, timeout=budget, return_when=asyncio.FIRST_COMPLETED)
        for waiter in (ack, ended):
            waiter.cancel()
        if not child.acknowledged.is_set():
            await self._rollback(generation, caller)
            raise PaneNotReadyError(
                f"Agent {generation.label} did not acknowledge its task within {budget:g} s.",
                rollback_occurred=True,
                ids={"label": generation.label},
            )
        host.changed()
        return _delegate_result(action, generation, task)

    async def _launch_tmux(
        self,
        action: Any,
        caller: Caller,
        generation: GenerationRecord,
        task: RequestRecord,
        session: SessionManager,
        model: Model,
        thinking: ThinkingLevel,
        defn: AgentDefinition,
        timeout_ms: int | None,
    ) -> DelegateResult:
        """Start the generation as a `corral worker` in a tmux pane and wait for its readiness record."""
        host = self.host
        cwd = Path(generation.cwd)
        spec = managed_agent_spec(defn, generation.label, model, thinking)
        handle: RuntimeHandle | None = None
        try:
            session.flush()
            session_path = session.path
            session.close()  # the worker owns the session file from here on
            if session_path is None:
                raise InternalFailureError(
                    f"Agent {generation.label} has no session file to hand to its worker."
                )
            tmux = host.tmux_runtime()
            launch = write_launch_file(
                tmux.socket.parent,
                generation.run_id,
                {
                    "spec": spec.to_json(),
                    "settings": host.settings.model_dump(mode="json"),
                    "contextRetirement": host.context_retirement,
                    "heartbeat": str(tmux.heartbeat_path(generation.run_id)),
                },
            )
            handle = await tmux.start(
                LaunchSpec(
                    generation.run_id,
                    generation.label,
                    cwd,
                    generation.session_id,
                    session_path=session_path,
                    argv=worker_argv(generation.run_id, host.store.path, launch),
                    env=worker_env(),
                )
            )
            fault_point("before_pane_recorded")
            host.track_tmux(generation.run_id, handle, pid=None)
            generation = host.store.record_started(
                generation.run_id,
                session_path=str(session_path),
                host_id=host.host_id,
                pane_id=handle.runtime_id,
            )
        except BaseException as exc:
            await self._rollback(generation, caller)
            if isinstance(exc, OrchestrationError):
                exc.rollback_occurred = True
                raise
            if isinstance(exc, RuntimeError_):
                raise PaneNotReadyError(
                    f"Agent {generation.label} could not be started in tmux: {exc}",
                    rollback_occurred=True,
                    ids={"label": generation.label},
                ) from None
            raise
        budget = (timeout_ms or _DEFAULT_STARTUP_MS) / 1000
        run_id = generation.run_id

        def ready() -> bool:
            current = host.store.get_generation(run_id)
            return current is not None and current.pid is not None and current.phase != "starting"

        try:
            await tmux.wait_ready(handle, ready, timeout=budget)
        except (PaneNotReady, RollbackFailed) as exc:
            host.untrack_tmux(run_id)
            with contextlib.suppress(OrchestrationError):
                host.store.finalize_generation(run_id, owner_session_id=caller.session_id)
            cause = exc.primary if isinstance(exc, RollbackFailed) else exc
            diagnostic = cause.diagnostic if isinstance(cause, PaneNotReady) else ""
            primary = PaneNotReadyError(
                f"Agent {generation.label} did not become ready in its tmux pane: {cause}",
                rollback_occurred=True,
                ids={"label": generation.label, "paneId": handle.runtime_id},
                details={"startupDiagnostic": diagnostic},
            )
            if isinstance(exc, RollbackFailed):
                raise RollbackFailureError.from_failures(primary, exc.cleanup, operation=action) from None
            raise primary from None
        current = host.store.get_generation(run_id)
        if current is not None:
            generation = current
            host.tmux_runtime().adopt(handle, generation.pid)
        host.changed()
        return _delegate_result(action, generation, task)

    async def _rollback(self, generation: GenerationRecord, caller: Caller) -> None:
        host = self.host
        handle = host.handles.get(generation.run_id)
        if handle is not None:
            await host.runtime.stop(handle)
        with contextlib.suppress(OrchestrationError):
            host.store.finalize_generation(generation.run_id, owner_session_id=caller.session_id)
        if generation.run_id in host.children:
            host.release(generation.run_id)
        host.untrack_tmux(generation.run_id)


def _same_file(given: Path, actual: Path, base: Path) -> bool:
    path = given.expanduser()
    if not path.is_absolute():
        path = base / path
    try:
        return os.path.realpath(path) == os.path.realpath(actual)
    except OSError:
        return False


def _delegate_result(action: Any, generation: GenerationRecord, task: RequestRecord) -> DelegateResult:
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
    )
