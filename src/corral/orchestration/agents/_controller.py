"""The controller: the nine `agent` actions over the store, the runtime and the host.

One async method per action, each taking the calling `Caller` and the
action's parameter model and returning a typed result (`_results`). Errors
are raised as `OrchestrationError` subclasses; surfaces turn them into
`details.error` with `error_details`.

Every control action first recomputes the lifecycle projection for the
caller (`available_actions` is rechecked before every mutation) and then
mutates through a store transaction that re-reads and checks identity.
`delegate` and `continue_` go to its delegation service (`_delegation.Delegation`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.orchestration.agents._delegation import Delegation
from corral.orchestration.agents.results import (
    CloseResult,
    DelegateResult,
    InspectResult,
    ListResult,
    ReplyResult,
    SteerResult,
    TranscriptResult,
)
from corral.orchestration.definitions._roster import leaf_projection
from corral.orchestration.errors import (
    InvalidRequestError,
    ManagedAgentBusyError,
    OrchestrationError,
    TargetAmbiguousError,
    TargetNotFoundError,
    error_context,
    error_for_ack,
)
from corral.orchestration.kernel._caller import Caller
from corral.orchestration.kernel._child import ManagedChild
from corral.orchestration.kernel._files import prepare_files
from corral.orchestration.kernel._lifecycle import AgentView, project_agents, resolve_ownership
from corral.orchestration.kernel._transcript import read_transcript
from corral.orchestration.kernel.records import GenerationRecord, RequestKind
from corral.orchestration.ratelimits import stored_waits

if TYPE_CHECKING:
    from corral.orchestration.agents.commands import (
        AskOwnerParams,
        CloseParams,
        ContinueParams,
        DelegateParams,
        InspectParams,
        InterruptParams,
        ListParams,
        ReplyParams,
        SteerParams,
        TranscriptParams,
    )
    from corral.orchestration.host._host import Host
    from corral.orchestration.kernel._files import FileLimits
    from corral.orchestration.kernel._generations import Generations

__all__ = ["AskOutcome", "Controller", "OwnerQuestions"]


@dataclass(frozen=True)
class AskOutcome:
    """What `Controller.ask_owner` returns."""

    ask_id: str
    assignment_request_id: str


_REFRESH = "Refresh with `list` and use only the listed actions."


class OwnerQuestions:
    """Records a managed agent's questions (`ask_owner`, §4.4) in the store.

    The one routine behind `ask_owner` for every runtime: the host's controller
    uses it for in-process agents and a tmux worker for its own agent; the
    owner's host then delivers the question once.
    """

    def __init__(self, kernel: Generations, limits: FileLimits) -> None:
        self.kernel = kernel
        self.limits = limits

    def resolve_result_ref(self, request_id: str) -> Path | str | None:
        """`result:<request-id>` → the durable result artifact file (created on first use)."""
        result = self.kernel.get_result(request_id)
        if result is None or result.status != "completed":
            return None
        return self.kernel.materialize_artifact(request_id).path

    async def ask_owner(self, agent_ctx: ManagedChild, params: AskOwnerParams) -> AskOutcome:
        """Prepare the question's files from the agent's cwd and record it for the active assignment."""
        with error_context("ask_owner"):
            prepared = prepare_files(
                None if params.files is None else list(params.files),
                cwd=Path(agent_ctx.generation.cwd),
                limits=self.limits,
                resolve_result_ref=self.resolve_result_ref,
            )
            ask = agent_ctx.record_ask(prepared.render("Question", params.question).text)
            return AskOutcome(ask.ask_id, ask.request_id)


class Controller:
    """The orchestration core's actions (one instance per host).

    It composes two services: `delegation` (`delegate`, `continue`: launches through the host's
    launch pipeline) and `questions` (`ask_owner`).
    """

    def __init__(self, host: Host, *, hidden_runs: Callable[[], Collection[str]]) -> None:
        """Args:
        host: The host whose generations the actions drive.
        hidden_runs: The run ids `list` leaves out (generations another feature controls: teams
            members, which the teams tools control); read once per listing.
        """
        self.host = host
        self.hidden_runs = hidden_runs
        self.questions = OwnerQuestions(host.kernel, host.file_limits)
        self.delegation = Delegation(host, resolve_result_ref=self.resolve_result_ref)

    async def delegate(self, caller: Caller, params: DelegateParams) -> DelegateResult:
        """Start a new agent generation for one assignment (§2.2)."""
        return await self.delegation.delegate(caller, params)

    async def continue_(self, caller: Caller, params: ContinueParams) -> DelegateResult:
        """A new generation on a saved managed session owned by the caller's tree (§2.3)."""
        return await self.delegation.continue_(caller, params)

    # --- helpers ---------------------------------------------------------------------------------

    def resolve_result_ref(self, request_id: str) -> Path | str | None:
        """`result:<request-id>` → the durable result artifact file (created on first use)."""
        return self.questions.resolve_result_ref(request_id)

    def views(self, caller: Caller) -> tuple[AgentView, ...]:
        """The lifecycle projection of everything `caller` may see, from one store snapshot."""
        snapshot = self.host.kernel.snapshot()
        # Teams agents share the core but are controlled with the teams tools, not `agent`.
        hidden = self.hidden_runs()
        if hidden:
            snapshot = replace(
                snapshot, generations=tuple(g for g in snapshot.generations if g.run_id not in hidden)
            )
        observations = {g.run_id: self.host.observe(g) for g in snapshot.generations}
        return project_agents(snapshot, observations, caller.controller_scope, now_ms=int(time.time() * 1000))

    def _target(self, caller: Caller, label: str) -> AgentView:
        generation = self.host.kernel.generation_by_label(label, session_id=caller.session_id)
        if generation is None:
            raise TargetNotFoundError(f"No live agent {label}; refresh with `list`.", ids={"label": label})
        view = next((v for v in self.views(caller) if v.generation.run_id == generation.run_id), None)
        if view is None or not view.direct:
            raise TargetNotFoundError(
                f"Agent {label} belongs to another owner session; only its direct owner may control it.",
                ids={"label": label},
            )
        return view

    @staticmethod
    def _ids(generation: GenerationRecord) -> dict[str, str]:
        ids = {"label": generation.label}
        if generation.pane_id:
            ids["paneId"] = generation.pane_id
        return ids

    # --- list ------------------------------------------------------------------------------------

    async def list(self, caller: Caller, params: ListParams | None = None) -> ListResult:
        """Visible agent records and the definition roster (§2.4)."""
        with error_context("list"):
            roster = self.host.roster_loader(caller.cwd)
            invalid: list[dict[str, str]] = []
            if caller.scope == "lead":
                definitions = [defn.metadata() for defn in roster.definitions]
                invalid = [{"path": str(issue.path), "problem": issue.problem} for issue in roster.issues]
            else:
                allowed = set(caller.allowed or ())
                definitions = [
                    leaf_projection(defn).metadata()
                    for defn in roster.definitions
                    if defn.name in allowed and defn.enabled
                ]
            views = self.views(caller)
            waits = self.rate_limit_waits([view.generation for view in views])
            records = [
                record(view) | self.host.extensions.status_fields(view.generation.run_id) for view in views
            ]
            for out, view in zip(records, views, strict=True):
                if view.generation.run_id in waits:
                    out["rate_limit"] = waits[view.generation.run_id]
            return ListResult(records, definitions, invalid)

    def rate_limit_waits(self, generations: Sequence[GenerationRecord]) -> dict[str, str]:
        """`waiting (rate limit, Ns)` by run id, for the active runs whose model request waits for the
        endpoint's shared limiter: from memory for this host's runs, from the store for the others'."""
        now_ms = int(time.time() * 1000)
        out: dict[str, str] = {}
        elsewhere: list[str] = []
        for generation in generations:
            if generation.phase != "active":
                continue
            child = self.host.runs.child(generation.run_id)
            if child is None:
                elsewhere.append(generation.run_id)
            elif (wait := child.agent.rate_limit_wait) is not None:
                out[generation.run_id] = wait.describe(now_ms)
        for run_id, stored in stored_waits(self.host.kernel.db, elsewhere).items():
            out[run_id] = stored.describe(now_ms)
        return out

    # --- steer / interrupt / reply -----------------------------------------------------------------

    async def steer(self, caller: Caller, params: SteerParams) -> SteerResult:
        """Change the current assignment without cancelling the current operation (§2.7)."""
        with error_context("steer"):
            return await self._control(caller, "steer", params.agent, params.message, params.files)

    async def interrupt(self, caller: Caller, params: InterruptParams) -> SteerResult:
        """Abort the current operation and continue the assignment with a replacement prompt (§2.8)."""
        with error_context("interrupt"):
            return await self._control(caller, "interrupt", params.agent, params.message, params.files)

    async def _control(
        self, caller: Caller, kind: RequestKind, label: str, message: str, files: Sequence[str] | None
    ) -> SteerResult:
        view = self._target(caller, label)
        generation = view.generation
        if kind not in view.available_actions:
            if kind == "steer":
                raise ManagedAgentBusyError(
                    f"Agent {label} is not currently accepting steering.",
                    ids=self._ids(generation),
                    next_action=_REFRESH,
                )
            raise ManagedAgentBusyError(
                f"Agent {label} has no interruptible active operation.",
                ids=self._ids(generation),
                next_action="Use interrupt only when it is listed; use steer for non-preemptive changes.",
            )
        text = self.delegation.render(caller, files, "Steer" if kind == "steer" else "Interrupt", message)
        request = self.host.kernel.submit_request(
            generation.run_id, owner_session_id=caller.session_id, kind=kind, text=text
        )
        await self._hand_over(generation, request.request_id, kind)
        return SteerResult(
            "steer" if kind == "steer" else "interrupt",
            label,
            generation.definition,
            request.request_id,
            generation.session_id,
            generation.active_request_id or "",
        )

    async def _hand_over(self, generation: GenerationRecord, request_id: str, kind: str) -> None:
        """Give the recorded request to the child and raise the error of a rejected ack.

        A tmux worker takes the request from the store; this waits for its acknowledgement.
        """
        child = self.host.runs.child(generation.run_id)
        request = self.host.kernel.get_request(request_id)
        if child is None and request is not None and self.host.runs.on_worker(generation.run_id):
            acked_tmux = await self.host.workers.await_ack(generation.run_id, request_id)
            if acked_tmux is None or not acked_tmux.acknowledged:
                raise ManagedAgentBusyError(
                    f"Agent {generation.label} has not acknowledged its {kind} yet; it stays queued.",
                    ids=self._ids(generation),
                    next_action="Do not submit the same intent again; wait and refresh with `list`.",
                )
            self.host.changed()
            if acked_tmux.accepted is False:
                raise error_for_ack(
                    acked_tmux.ack_code or "delivery",
                    acked_tmux.ack_message or f"Agent {generation.label} rejected the {kind}.",
                    operation=kind,
                    ids=self._ids(generation),
                    next_action=_REFRESH,
                )
            return
        if child is None or request is None:
            raise TargetNotFoundError(
                f"Agent {generation.label} is not running in this host; its {kind} stays unacknowledged.",
                ids=self._ids(generation),
            )
        acked = child.accept(request)
        self.host.changed()
        if acked.accepted is False:
            raise error_for_ack(
                acked.ack_code or "delivery",
                acked.ack_message or f"Agent {generation.label} rejected the {kind}.",
                operation=kind,
                ids=self._ids(generation),
                next_action=_REFRESH,
            )

    async def reply(self, caller: Caller, params: ReplyParams) -> ReplyResult:
        """Answer the agent's pending `ask_owner` question (§2.9)."""
        with error_context("reply"):
            view = self._target(caller, params.agent)
            generation = view.generation
            ask = view.pending_ask
            if view.presence == "lost":
                raise ManagedAgentBusyError(
                    f"Agent {params.agent} was lost (the process it ran in ended), so a reply cannot reach "
                    "it; its transcript and its question are kept.",
                    ids=self._ids(generation),
                    next_action=(
                        f"`close` {params.agent}, then `continue` with session={generation.session_id} and "
                        "your answer as the task: it starts again from its transcript."
                    ),
                )
            if "reply" not in view.available_actions or ask is None:
                raise ManagedAgentBusyError(
                    f"Agent {params.agent} is not waiting for an owner reply.",
                    ids=self._ids(generation),
                    next_action=_REFRESH,
                )
            text = self.delegation.render(caller, params.files, "Reply", params.message)
            request = self.host.kernel.answer_ask(
                generation.run_id, owner_session_id=caller.session_id, ask_id=ask.ask_id, text=text
            )
            await self._hand_over(generation, request.request_id, "reply")
            return ReplyResult(
                params.agent,
                generation.definition,
                request.request_id,
                ask.ask_id,
                ask.request_id,
                generation.session_id,
            )

    # --- close ---------------------------------------------------------------------------------------

    async def close(self, caller: Caller, params: CloseParams) -> CloseResult:
        """Stop an agent and its agents (children before parents) and remove their records (§2.10)."""
        with error_context("close"):
            host = self.host
            view = self._target(caller, params.agent)
            target = view.generation
            snapshot = host.kernel.snapshot()
            ownership = resolve_ownership(list(snapshot.generations))
            if caller.scope == "lead" and ownership.unattributed:
                raise TargetAmbiguousError(
                    "A managed agent record has unresolved ancestry; close is disabled until it is resolved.",
                    ids=self._ids(target),
                )
            plan_ids = [*reversed(ownership.descendants(target.run_id)), target.run_id]
            by_id = {g.run_id: g for g in snapshot.generations}
            undelivered = {r.run_id for r in snapshot.undelivered}
            plan = [by_id[run_id] for run_id in plan_ids if run_id in by_id]
            for node in plan:
                presence = host.observe(node).presence if node.presence != "lost" else "lost"
                if node.presence == "unknown" or presence == "unknown":
                    raise TargetAmbiguousError(
                        f"Agent {node.label} has unknown presence; it cannot be closed safely.",
                        ids=self._ids(node),
                    )
                if node.run_id in undelivered:
                    raise TargetAmbiguousError(
                        f"Agent {node.label} has a durable result; close result delivery first.",
                        ids=self._ids(node),
                        next_action="Wait for the result to be delivered, then close if still needed.",
                    )
            closed: list[str] = []
            cleanup: dict[str, str] = {}
            for node in plan:
                handle = host.runs.runtime_handle(node.run_id)
                if handle is not None:
                    await host.runtime.stop(handle)
                    if host.runtime.presence(handle) == "live":
                        cleanup[node.label] = f"agent {node.label} is still running after stop"
                        raise TargetAmbiguousError(
                            f"Agent {node.label} did not stop; nothing was removed.", ids=self._ids(node)
                        )
                current = host.kernel.get_generation(node.run_id)
                if current is not None and current.phase != "finalized":
                    host.kernel.finalize_generation(node.run_id, owner_session_id=node.owner_session_id)
                host.release(node.run_id)
                closed.append(node.label)
            host.changed()
            return CloseResult(params.agent, target.definition, closed=tuple(closed), cleanup_errors=cleanup)

    # --- inspect / transcript ---------------------------------------------------------------------------

    async def inspect(self, caller: Caller, params: InspectParams) -> InspectResult:
        """Live runtime evidence: recent activity lines and running processes (§2.5)."""
        with error_context("inspect"):
            host = self.host
            view = self._target(caller, params.agent)
            generation = view.generation
            handle = host.runs.runtime_handle(generation.run_id)
            if "inspect" not in view.available_actions or handle is None:
                raise TargetNotFoundError(
                    f"Agent {params.agent} is not a live agent of this host; inspect needs a live agent.",
                    ids=self._ids(generation),
                )
            await host.runtime.prepare_evidence(handle)
            output = host.runtime.recent_output(handle, lines=80, max_bytes=16384)
            processes = host.runtime.process_evidence(handle)
            captured_at = int(time.time() * 1000)
            again = host.kernel.generation_by_label(params.agent, session_id=caller.session_id)
            if (
                again is None
                or again.run_id != generation.run_id
                or again.pane_id != handle.runtime_id
                or host.runtime.presence(handle) != "live"
            ):
                raise TargetAmbiguousError(
                    "Inspection target changed during capture.", ids=self._ids(generation)
                )
            wait = self.rate_limit_waits([generation]).get(generation.run_id)
            return InspectResult(
                params.agent,
                generation.definition,
                generation.session_id,
                handle.runtime_id,
                captured_at,
                output.truncated,
                recent_output=output.text,
                process=[{"pid": p.pid, "argv0": p.argv0, "cmdline": p.cmdline} for p in processes],
                rate_limit=wait,
            )

    async def transcript(self, caller: Caller, params: TranscriptParams) -> TranscriptResult:
        """The persisted conversation, compaction-aware and bounded (§2.6)."""
        with error_context("transcript"):
            view = self._target(caller, params.agent)
            generation = view.generation
            if "transcript" not in view.available_actions or not generation.session_path:
                if view.presence == "unknown":
                    raise TargetAmbiguousError(
                        f"Agent {params.agent} has unknown presence.", ids=self._ids(generation)
                    )
                raise ManagedAgentBusyError(
                    f"The session file of agent {params.agent} is not written yet.",
                    ids=self._ids(generation),
                    next_action="This is normal right after delegation; try again shortly.",
                )
            projected = await asyncio.to_thread(
                read_transcript, Path(generation.session_path), generation.session_id
            )
            again = self.host.kernel.generation_by_label(params.agent, session_id=caller.session_id)
            if again is None or again.run_id != generation.run_id:
                raise TargetAmbiguousError(
                    "Transcript target changed while reading.", ids=self._ids(generation)
                )
            return TranscriptResult(
                params.agent,
                generation.definition,
                generation.session_id,
                projected.text,
                projected.truncated,
            )

    # --- ask_owner ----------------------------------------------------------------------------------------

    async def ask_owner(self, agent_ctx: ManagedChild, params: AskOwnerParams) -> AskOutcome:
        """Record a managed agent's question (`ask_owner`, §4.4); the host delivers it to the owner once."""
        return await self.questions.ask_owner(agent_ctx, params)

    # --- dispatch -------------------------------------------------------------------------------------------

    async def call(self, caller: Caller, action: str, params: Any) -> Any:
        """Run `action` (`list`, `delegate`, `continue`, …) with its parameter model."""
        method: Any = {
            "list": self.list,
            "delegate": self.delegate,
            "continue": self.continue_,
            "steer": self.steer,
            "interrupt": self.interrupt,
            "reply": self.reply,
            "close": self.close,
            "inspect": self.inspect,
            "transcript": self.transcript,
        }.get(action)
        if method is None:
            raise InvalidRequestError(f"Unknown action {action!r}.", operation=action)
        return await method(caller, params)


def record(view: AgentView) -> dict[str, Any]:
    """The public `list` record of one projected generation."""
    g = view.generation
    out: dict[str, Any] = {
        "agent": g.label,
        "state": view.state,
        "available_actions": list(view.available_actions),
        "kind": "pi",
        "runtime_kind": g.runtime_kind,
        "workspace_id": g.host_id,
        "pane_id": g.pane_id,
        "cwd": g.cwd,
        "pi_session_id": g.session_id,
        "pi_session_path": g.session_path,
        "managed": True,
        "owner_session_id": g.owner_session_id,
        "agent_definition": g.definition,
        "active_request_id": g.active_request_id,
        "last_activity_at": g.last_activity_at,
    }
    if view.stale:
        out["stale"] = True
        out["inactive_ms"] = view.inactive_ms
    if view.parent_label is not None and not view.direct:
        out["parent_label"] = view.parent_label
    if view.presence == "unknown":
        out["recovery_only"] = True
    if g.diagnostic:
        out["diagnostic"] = g.diagnostic
    if g.result_error:
        out["result_error"] = {"code": "write_failure", "message": g.result_error}
    if g.cleanup_error:
        out["cleanup_error"] = g.cleanup_error
    if g.tokens is not None:
        out["tokens"] = g.tokens
    return {
        key: value
        for key, value in out.items()
        if value is not None or key in ("pane_id", "active_request_id")
    }


_ = OrchestrationError
