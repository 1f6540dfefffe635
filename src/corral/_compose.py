"""One composition for every process that runs corral's agents: which features ride on it, and how.

Three kinds of process run agents, and each carries the same features — rate limits, budgets, teams,
`ask_owner`, worktrees, workspaces and the user's policy (permission rules and hooks):

* the lead's process (`LeadProcess`: `corral run`, the app, the Python API, `corral mcp`; the host is
  `corral.lead._host.ComposedHost`): the features ride on its host as `HostExtension`s, and each of
  its in-process agents gets them through the host's hooks;
* a tmux worker (`corral/_tmux/worker.py`): one agent in a pane of the lead's machine, on the shared
  store;
* a Ray worker (`corral/_ray_worker.py`): agents on a Ray node, recording through a `RemoteStore`
  whose facts the lead's host pulls.

`compose(process)` is the one function that says what each kind gets. A worker's agent is built by
the same code on both runtimes (`WorkerComposition.child`); what differs between them is a
`WorkerPlace`, whose fields are the declared differences (where rate-limit waits and questions go,
a teams member's port, how the work comes back — `WorktreeBranch`, `WorkspacePatch` — and how the
budget is read). The one difference in
*which* features a kind gets is `ABSENT`: a tmux worker runs on the lead's machine, so it needs no
workspace; a Ray worker brings its work back as a workspace patch, not on a worktree branch.
Tracing is each worker's entry (the pane's `TRACEPARENT`, the launch's trace carrier). The
"harness host" of an external agent program (issue 31) is one more `WorkerKind` with its place.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, overload

from corral.orchestration.agents._delegation import build_launched_agent
from corral.orchestration.budgets import BudgetsExtension
from corral.orchestration.errors import OrchestrationError
from corral.orchestration.host.permission_layers import host_layers
from corral.orchestration.host.ports import HostExtension
from corral.orchestration.kernel._child import ManagedChild
from corral.orchestration.ratelimits import RateLimitsExtension
from corral.orchestration.surfaces import AskOwnerTool
from corral.orchestration.teams.launch import MemberLaunch
from corral.orchestration.workspaces._extension import WorkspacesExtension
from corral.orchestration.worktrees._extension import WorktreesExtension

if TYPE_CHECKING:
    from corral.agent import AgentEvent, ToolCheck, ToolVerdict
    from corral.hooks import AgentIdentity
    from corral.llm import ModelRegistry
    from corral.mcp_servers import McpReport, McpServers
    from corral.orchestration import Host, Repositories
    from corral.orchestration.host.protocol import WorkerLaunch
    from corral.orchestration.kernel._remote import ChildStore
    from corral.orchestration.kernel.records import AskRecord, GenerationRecord, RequestRecord
    from corral.orchestration.surfaces import OwnerQuestionRecorder
    from corral.orchestration.teams._member import MemberPorts, MemberTeams, TeamChild
    from corral.orchestration.teams.roster.records import FileClaimRecord, TeamMemberRecord
    from corral.session import SessionManager
    from corral.settings import Settings

    class MemberPort(MemberPorts, MemberTeams, Protocol):
        """A teams member's port to its lead's `Teams`: what `TeamChild` and the member tools call."""


__all__ = [
    "ABSENT",
    "FEATURES",
    "Feature",
    "LeadComposition",
    "LeadProcess",
    "PolicyExtension",
    "ProcessKind",
    "WorkerChild",
    "WorkerComposition",
    "WorkerHooks",
    "WorkerKind",
    "WorkerPlace",
    "WorkspacePatch",
    "WorktreeBranch",
    "agent_identity",
    "compose",
]

Feature = Literal["rate-limits", "budgets", "teams", "ask-owner", "worktrees", "workspaces", "policy"]
"""A feature that rides on the agents of a process (`policy`: the user's permission rules and hooks)."""

FEATURES: frozenset[Feature] = frozenset(
    {"rate-limits", "budgets", "teams", "ask-owner", "worktrees", "workspaces", "policy"}
)
"""Every feature; a kind of process gets all of them but its `ABSENT` ones."""

WorkerKind = Literal["tmux", "ray"]
"""The worker processes: a tmux pane's `corral worker`, a Ray actor."""

ProcessKind = Literal["lead", "tmux", "ray"]
"""Every kind of process that runs agents: the lead's and the workers'."""

ABSENT: dict[ProcessKind, frozenset[Feature]] = {
    "lead": frozenset(),
    "tmux": frozenset({"workspaces"}),
    "ray": frozenset({"worktrees"}),
}
"""The declared differences: the features a kind of process does not get, and why.

A tmux worker runs on the lead's machine in the lead's workspace, so it has no workspace of its own;
a Ray worker's writes come back as a workspace patch the lead's host lands, never on a worktree
branch (an isolated writer runs in the lead's process or a tmux pane)."""

WorkDone = Callable[[str, str], Awaitable[str | None]]
"""A child's `on_work_done`: run once its work is done, before the result is stored; its text is a note."""


# --- the user's policy, on every agent -------------------------------------------------------------


def agent_identity(
    generation: GenerationRecord, lookup: Callable[[str], GenerationRecord | None]
) -> AgentIdentity:
    """Who the agent of `generation` is in its tree, for its hooks' events: its run, label and
    definition (a teams member's tier), its owner (the delegating agent's run, else the lead's session),
    and the lead at the top (`None` when `lookup` cannot walk that far: a Ray worker knows only its
    own generation)."""
    from corral.hooks import AgentIdentity

    lead: str | None = generation.owner_session_id
    current, seen = generation, {generation.run_id}
    while current.parent_run_id is not None:
        parent = lookup(current.parent_run_id)
        if parent is None or parent.run_id in seen:
            lead = None
            break
        seen.add(parent.run_id)
        current, lead = parent, parent.owner_session_id
    return AgentIdentity(
        generation.run_id,
        generation.label,
        generation.definition,
        generation.parent_run_id or generation.owner_session_id,
        lead,
    )


ASK_TIMEOUT_S = 600.0
"""How long a managed agent's call waits for its owner's answer to an `ask` before it is denied."""


class OwnerApprover:
    """A managed agent's `ToolApprover`: an `ask` verdict becomes the agent's question to its owner,
    through the kernel's mid-turn ask (`ManagedChild.record_ask(mid_turn=True)`, answered through
    `on_reply`), delivered to the owner like an `ask_owner` question and answered with `reply`. A clear
    yes (`hooks.texts.is_approval`) runs the call; any other answer denies it with the owner's words;
    no answer within `timeout_s`, or an owner that cannot be asked, denies it — it never hangs."""

    def __init__(
        self,
        child: ManagedChild,
        *,
        abandon_ask: Callable[[str, str], object] | None,
        timeout_s: float = ASK_TIMEOUT_S,
    ) -> None:
        self.child = child
        self.abandon_ask = abandon_ask
        """The kernel's, for a question no longer waited on (`None`: a Ray worker's store, which
        cannot; the question then stays open, and a late reply is refused)."""
        self.timeout_s = timeout_s
        self._open: tuple[str, asyncio.Future[str]] | None = None

    async def __call__(self, check: ToolCheck, verdict: ToolVerdict) -> ToolVerdict:
        """Ask the owner about `check`; its answer as a verdict."""
        from corral.agent import ToolVerdict
        from corral.hooks import texts

        child = self.child
        reason = verdict.reason or "the tool policy asks for approval"
        question = texts.approval_question(child.label, check.tool_name, check.arguments, reason)
        try:
            ask = child.record_ask(question, mid_turn=True)
        except OrchestrationError as exc:
            return ToolVerdict("deny", texts.unanswered(reason, f"its owner could not be asked ({exc})"))
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._open = (ask.ask_id, future)
        child.on_reply = self._reply
        answered = False
        try:
            answer = await asyncio.wait_for(future, self.timeout_s)
            answered = True
        except TimeoutError:
            return ToolVerdict(
                "deny", texts.unanswered(reason, f"its owner did not answer within {self.timeout_s:g} s")
            )
        finally:
            self._open = None
            if child.on_reply == self._reply:
                child.on_reply = None
            if not answered and self.abandon_ask is not None:
                with contextlib.suppress(OrchestrationError):
                    self.abandon_ask(ask.run_id, ask.ask_id)
            if not answered:
                child.end_mid_turn_ask()
        if texts.is_approval(answer):
            return ToolVerdict("allow")
        return ToolVerdict("deny", texts.not_approved(answer))

    def _reply(self, ask: AskRecord, text: str) -> str | None:
        """The child's `on_reply` while a question is open: the owner's answer."""
        if self._open is None or self._open[0] != ask.ask_id:
            return "The agent no longer waits for this answer."
        future = self._open[1]
        if not future.done():
            future.set_result(text)
        return None


class PolicyExtension(HostExtension):
    """The user's `[permissions]` and `[hooks]` on every in-process agent of a lead's host: managed
    agents, nested helpers and teams members get their gate as their run starts (the lead gets its own
    where it is built, `corral.lead._compose`; a worker's agents in `WorkerComposition.child`), narrowed
    by their own and their ancestors' definition or tier rules (`host.permission_layers`)."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def run_starting(self, generation: GenerationRecord, child: ManagedChild | None) -> None:
        """An in-process agent gets its gate (a worker's gets it where the worker builds it)."""
        if child is None:
            return
        host = self.host
        layers = host_layers(host, generation)
        if host.settings.tool_policy or layers:
            from corral.hooks import install_tool_policy

            install_tool_policy(
                child.agent,
                host.settings,
                agent_identity(generation, host.kernel.get_generation),
                layers=layers,
            )
            child.agent.set_tool_approver(
                OwnerApprover(child, abandon_ask=host.kernel.abandon_ask, timeout_s=ASK_TIMEOUT_S)
            )


# --- the lead ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeadProcess:
    """The lead's process: its host (made by the front end) and the data root's repositories."""

    host: Host
    repositories: Repositories


@dataclass(frozen=True)
class LeadComposition:
    """The host extensions of a lead's process (the teams extension joins once something uses teams,
    so a lead that never does imports no teams core: `ComposedHost.teams`)."""

    worktrees: WorktreesExtension
    rate_limits: RateLimitsExtension
    budgets: BudgetsExtension
    workspaces: WorkspacesExtension
    policy: PolicyExtension

    @property
    def extensions(self) -> tuple[HostExtension, ...]:
        """The extensions, in the order the host consults them."""
        return (self.worktrees, self.rate_limits, self.budgets, self.workspaces, self.policy)

    def features(self) -> frozenset[Feature]:
        """The features these extensions carry, with teams and `ask_owner`, which the host's tools give."""
        kinds: dict[type, Feature] = {
            WorktreesExtension: "worktrees",
            RateLimitsExtension: "rate-limits",
            BudgetsExtension: "budgets",
            WorkspacesExtension: "workspaces",
            PolicyExtension: "policy",
        }
        # Teams join on first use (`ComposedHost.teams`); `ask_owner` is a tool of the host's `SurfaceTools`.
        return frozenset({kinds[type(e)] for e in self.extensions} | {"teams", "ask-owner"})


def _lead(process: LeadProcess) -> LeadComposition:
    host, repositories = process.host, process.repositories

    def team_claims(run_id: str) -> tuple[FileClaimRecord, ...]:
        """The file claims of the team `run_id` works in: its root lead's (an agent owned by a
        delegating agent belongs to the lead at the top of its tree)."""
        kernel = repositories.kernel
        generation = kernel.get_generation(run_id)
        seen: set[str] = set()
        while generation is not None and generation.parent_run_id and generation.run_id not in seen:
            seen.add(generation.run_id)
            parent = kernel.get_generation(generation.parent_run_id)
            if parent is None:
                break
            generation = parent
        if generation is None:
            return ()
        return repositories.teams.roster.file_claims(generation.owner_session_id)

    return LeadComposition(
        worktrees=WorktreesExtension(repositories.worktrees),
        rate_limits=RateLimitsExtension(repositories.db, on_change=host.changed),
        budgets=BudgetsExtension(host),
        workspaces=WorkspacesExtension(claims_of=team_claims),
        policy=PolicyExtension(host),
    )


# --- the workers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorktreeBranch:
    """A tmux worker's way back: an isolated writer commits its work on its worktree branch (the lead
    merges it), as in the lead's process."""

    feature: ClassVar[Feature] = "worktrees"
    work_done: WorkDone | None
    """`Worktrees.work_done` (`None`: the store holds no worktree, so no agent is isolated)."""


@dataclass(frozen=True)
class WorkspacePatch:
    """A Ray worker's way back: an agent on a snapshot sends its patch ahead of its result (the lead's
    host lands it); on a node that shares the workspace it works in place."""

    feature: ClassVar[Feature] = "workspaces"
    work_done: WorkDone | None
    """The patch-back (`None`: the node shares the workspace, or the agent has none)."""


@dataclass(frozen=True)
class WorkerPlace:
    """What differs between the worker processes: each field is one declared difference."""

    kind: WorkerKind
    store: ChildStore
    """Where the child records: the shared store's kernel (tmux), the run's `RemoteStore` (Ray)."""
    rate_limit_waits: Callable[[str, AgentEvent], None]
    """Where the agent's rate-limit waits go: the shared store (tmux), a fact the host stores (Ray)."""
    member_port: Callable[[MemberLaunch, WorkerHooks], tuple[MemberPort, TeamMemberRecord]]
    """A teams member's port and member row: a worker-local `Teams` on the shared store with the row
    read again (tmux), the `RemoteTeams` port with the launch's row (Ray)."""
    questions: OwnerQuestionRecorder
    """Where `ask_owner` records a question (and which cwd its files come from)."""
    brings_back: WorktreeBranch | WorkspacePatch
    """How the agent's work comes back before its result: on its worktree branch (tmux), as its
    snapshot's patch (Ray)."""
    budget_guard: Callable[[ManagedChild], object]
    """Gives the agent its budget guard from the budget the host opened (the store's row on tmux,
    the pushed budget on Ray); set after the work's way back, so its note follows the work's."""
    result_failed: Callable[[str, str], None] = lambda run_id, message: None
    """What a run that ends without a stored result does besides what the host sees (the pane says why)."""

    def features(self) -> frozenset[Feature]:
        """The features a worker child of this place gets."""
        return frozenset({"rate-limits", "budgets", "teams", "ask-owner", "policy", self.brings_back.feature})


class WorkerHooks:
    """A worker's child hooks: the host learns results and asks from the store or the facts it pulls,
    so what is left is the place's rate-limit waits, the pane's word on a failed result and the
    child's wake-up."""

    def __init__(self, place: WorkerPlace) -> None:
        self.place = place
        self.child: ManagedChild | None = None

    def agent_event(self, run_id: str, event: AgentEvent) -> None:
        """Every event goes to the place's rate-limit waits, which keep only the waits."""
        self.place.rate_limit_waits(run_id, event)

    def result_stored(self, run_id: str, request_id: str) -> None:
        """Nothing: the host finds the result (in the store, or as a fact it pulls)."""

    def ask_created(self, run_id: str, ask: AskRecord) -> None:
        """Nothing: the host finds the ask (in the store, or as a fact it pulls)."""

    def changed(self) -> None:
        """Let the child re-check whether it can finish."""
        if self.child is not None:
            self.child.wake()

    def result_failed(self, run_id: str, message: str) -> None:
        """The run ends without a stored result: what the place does about it."""
        self.place.result_failed(run_id, message)


@dataclass(frozen=True)
class WorkerChild:
    """A worker's composed child: what it runs, and a teams member's run and port."""

    child: ManagedChild
    hooks: WorkerHooks
    member: TeamChild | None = None
    port: MemberPort | None = None
    mcp: McpReport | None = None
    """What the agent got of its MCP servers from the worker's own sessions, when it has any."""


@dataclass(frozen=True)
class WorkerComposition:
    """How a worker process builds each agent it runs (`child`), at one place."""

    place: WorkerPlace

    def features(self) -> frozenset[Feature]:
        """The features its children get."""
        return self.place.features()

    async def child(
        self,
        launch: WorkerLaunch,
        *,
        generation: GenerationRecord,
        task: RequestRecord,
        session: SessionManager,
        registry: ModelRegistry,
        settings: Settings,
        cwd: Path,
        mcp_servers: McpServers | None = None,
    ) -> WorkerChild:
        """The agent as its host described it (built from its definition's spec, or rebuilt from its
        exact parts) and its child: a teams member's (`MemberLaunch`: the member tools over the place's
        port) or a managed agent's (`ask_owner` when its definition allows it); with the work brought
        back and the budget guard as the place does them; its MCP servers' tools from the worker's
        own sessions (`mcp_servers`, one per worker process).

        Raises:
            ValueError: The agent cannot be built as described (a read agent without its sandbox).
        """
        place = self.place
        hooks = WorkerHooks(place)
        agent, mcp = await build_launched_agent(
            launch.agent,
            session=session,
            registry=registry,
            settings=settings,
            cwd=cwd,
            label=generation.label,
            mcp_servers=mcp_servers,
        )
        approver = settings.tool_policy or bool(launch.permissions)
        if approver:  # the user's rules and hooks, as the launch carries them
            from corral.hooks import install_tool_policy

            install_tool_policy(
                agent,
                settings,
                agent_identity(generation, place.store.get_generation),
                layers=launch.permissions,
            )
        part = launch.part(MemberLaunch)
        member: TeamChild | None = None
        port: MemberPort | None = None
        if part is not None:
            from corral.orchestration.surfaces.teams import team_member_tools
            from corral.orchestration.teams._member import TeamChild

            port, record = place.member_port(part, hooks)
            member = TeamChild(
                store=place.store,
                agent=agent,
                generation=generation,
                task=task if part.mission is None else dataclasses.replace(task, payload=part.mission),
                hooks=hooks,
                member=record,
                teams=port,
            )
            for tool in team_member_tools(port, member):
                agent.register_tool(tool)
            child = member.child
        else:
            child = ManagedChild(
                store=place.store,
                agent=agent,
                generation=generation,
                task=task,
                hooks=hooks,
                delegating=False,
            )
            if launch.agent.ask_owner:
                agent.register_tool(AskOwnerTool(place.questions, child, agent))
        if approver:  # an `ask` goes to the agent's owner, as its questions do
            agent.set_tool_approver(
                OwnerApprover(
                    child, abandon_ask=getattr(place.store, "abandon_ask", None), timeout_s=ASK_TIMEOUT_S
                )
            )
        child.context_retirement = launch.context_retirement
        child.resume_prompt = launch.resume_prompt  # a live agent moved here by a handoff
        hooks.child = child
        if place.brings_back.work_done is not None:
            child.on_work_done = place.brings_back.work_done
        place.budget_guard(child)
        return WorkerChild(child, hooks, member, port, mcp)


# --- the one function ----------------------------------------------------------------------------


@overload
def compose(process: LeadProcess) -> LeadComposition: ...


@overload
def compose(process: WorkerPlace) -> WorkerComposition: ...


def compose(process: LeadProcess | WorkerPlace) -> LeadComposition | WorkerComposition:
    """The features of a process of this kind: a lead's host extensions, or how a worker at this place
    builds its children."""
    if isinstance(process, LeadProcess):
        return _lead(process)
    return WorkerComposition(process)
