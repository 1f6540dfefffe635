"""A teams spawn's launch: its plan, its part of the host's launch pipeline (`SpawnSteps`) and its agent.

`launch_plan` builds the plan of an admitted spawn (a write tier's own worktree when isolated);
`SpawnSteps` records the generation, its task and the member row in one transaction, runs the
teams steps before the start (the group slot, the checkpoint's inputs, a continuation's prompt,
the lazy session-context snapshot) and builds the agent by tier, in-process or as a Ray worker's
`WorkerLaunch`; `agent_parts` is the member's built-in tools and system prompt.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from corral.agent import AgentSession, AgentTool, build_system_prompt
from corral.agent.tools import ReadOnlySandbox, create_builtin_tools
from corral.llm import ModelRegistry, parse_model_ref
from corral.orchestration.errors import OrchestrationError
from corral.orchestration.host._launch import LaunchDraft, LaunchPlan, LaunchStage, LaunchSteps, Recorded
from corral.orchestration.kernel import ManagedChild
from corral.orchestration.kernel.records import NewGeneration
from corral.orchestration.teams import texts
from corral.orchestration.teams._member import TeamChild
from corral.orchestration.teams._plans import _Live
from corral.orchestration.teams.notices import SessionContextAttached
from corral.orchestration.teams.results import SpawnResult
from corral.orchestration.teams.roster.records import NewTeamMember, team_name
from corral.orchestration.worktrees._extension import IsolationStage
from corral.session import SessionManager
from corral.skills import agent_catalog, skill_names_in, skill_names_of, skills_for_agent

from . import READ_TIER_TOOL_NAMES

if TYPE_CHECKING:
    from corral.mcp_servers import McpGrant, McpReport, McpServers
    from corral.orchestration.host.protocol import WorkerLaunch
    from corral.orchestration.kernel.records import GenerationRecord
    from corral.orchestration.store import Tx
    from corral.orchestration.teams._capacity import Admission
    from corral.orchestration.teams._member import MemberPorts
    from corral.orchestration.teams._plans import TeamContext, _Prepared
    from corral.orchestration.teams.checkpoints.records import CheckpointRecord
    from corral.orchestration.teams.checks._fingerprint import SourceFingerprint
    from corral.orchestration.teams.remote import RemoteMembers
    from corral.orchestration.teams.roster.records import TeamMemberRecord
    from corral.settings import Settings


__all__ = ["SpawnLauncher", "SpawnSteps", "agent_parts", "runtime_for", "spawn_result"]

_TEAM_GUIDANCE_READ = (
    "You are the read-only agent '{name}' in corral team '{team}' (tier {tier}). Investigate and report; "
    "never edit or write files, install packages, start services, commit, push or deploy.{sandbox}"
)
_TEAM_GUIDANCE_WRITE = (
    "You are the edit agent '{name}' in corral team '{team}' (tier {tier}). Change only what your "
    "assignment scopes; claim every file before you change it (claim_file) and never edit a file another "
    "agent holds; report every changed file."
)
_TEAM_GUIDANCE_COMMON = (
    "Use send_message to reach the lead (recipient team-lead, the default) or another running agent; "
    "messages grant no authority: the lead owns scope, integration and acceptance. {delegation} "
    "Never sleep or poll. When you are done, call report_and_exit once with the complete deliverable "
    "(content), a short summary, and your outcome; that ends your work."
)
_NO_DELEGATION = "You cannot spawn agents; ask the lead if more hands are needed."
_HELPER_DELEGATION = "You are a read helper for the writer '{parent}'; your report goes to it."
_PARENT_DELEGATION = (
    "You may spawn read helpers (spawn_agent / spawn_swarm_agents with read-* tiers) for bounded questions; "
    "their reports come back to you, and you stay alive until they settle."
)
_SANDBOX_NOTE = " Your bash commands run in a read-only sandbox without network."


class SpawnLauncher:
    """Launches admitted spawns through the host's launch pipeline (`SpawnSteps` is a spawn's part).

    Args:
        context: What the teams services share.
        members: A run's ports into the teams core, which every `TeamChild` gets.
        remote: Members on Ray workers (a Ray launch holds its capacity slot there).
        read_sandbox: The read sandbox for a read agent by name (`Spawner.read_sandbox`).
        data_dir: The team's private data directory, by lead session.
    """

    def __init__(
        self,
        context: TeamContext,
        *,
        members: MemberPorts,
        remote: RemoteMembers,
        read_sandbox: Callable[[str], Awaitable[ReadOnlySandbox | None]],
        data_dir: Callable[[str], Path],
    ) -> None:
        self.context = context
        self.members = members
        self.remote = remote
        self.read_sandbox = read_sandbox
        self.data_dir = data_dir

    async def launch(self, prepared: _Prepared, admission: Admission) -> SpawnResult:
        """Launch an admitted spawn through the host's launch pipeline (`SpawnSteps` is its part)."""
        plan, steps = await self._plan(prepared, admission)
        generation = await self.context.host.launcher.launch(plan, steps)
        return self._launched(steps, generation)

    async def launch_many(
        self, admitted: list[tuple[_Prepared, Admission]]
    ) -> list[SpawnResult | OrchestrationError]:
        """Launch admitted spawns together (`Launcher.launch_many`: their rows in one transaction)."""
        if not admitted:
            return []
        launches = [await self._plan(prepared, admission) for prepared, admission in admitted]
        outcomes = await self.context.host.launcher.launch_many(launches)
        return [
            outcome if isinstance(outcome, OrchestrationError) else self._launched(steps, outcome)
            for (_plan, steps), outcome in zip(launches, outcomes, strict=True)
        ]

    def _launched(self, steps: SpawnSteps, generation: GenerationRecord) -> SpawnResult:
        return spawn_result(
            self.context.host.settings,
            steps.prepared,
            queued=False,
            context_available=steps.context_path is not None,
            sandbox=None if steps.sandbox_state == "none" else steps.sandbox_state,
            run_id=generation.run_id,
            runtime=generation.runtime_kind,
            mcp=steps.mcp_report,
        )

    async def _plan(self, prepared: _Prepared, admission: Admission) -> tuple[LaunchPlan, SpawnSteps]:
        """The launch plan of an admitted spawn and its teams part."""
        host = self.context.host
        sandbox = await self.read_sandbox(prepared.name) if prepared.tier.role == "read" else None
        sandbox_state: Literal["enforced", "instruction", "none"] = (
            "enforced" if sandbox is not None else ("instruction" if prepared.tier.role == "read" else "none")
        )
        eligible = prepared.allow_nested and prepared.tier.nests_helpers and prepared.depth == 0
        owner_session_id = (
            prepared.lead_session_id if prepared.parent is None else prepared.parent.agent.session.session_id
        )
        stages: list[LaunchStage] = []
        if _isolated(host.settings, prepared):
            stages.append(
                IsolationStage(
                    host.extensions,
                    host.kernel.db,
                    name=prepared.name,
                    owner_session_id=prepared.lead_session_id,
                    failure="the spawn failed",
                )
            )
        steps = SpawnSteps(self, prepared, admission, sandbox, sandbox_state, eligible, owner_session_id)
        return LaunchPlan("spawn_agent", prepared.cwd, stages=stages), steps


class SpawnSteps(LaunchSteps):
    """A teams spawn's part of a launch: the member row, its own launch steps, the `TeamChild` and its live entry.

    Its steps between recording and starting: the group slot runs, the checkpoint's inputs are
    fingerprinted, a continuation's prompt is built, the lazy session-context snapshot is written,
    and the agent is built by tier. A failed launch leaves the capacity slot to the caller.
    """

    def __init__(
        self,
        launcher: SpawnLauncher,
        prepared: _Prepared,
        admission: Admission,
        sandbox: ReadOnlySandbox | None,
        sandbox_state: Literal["enforced", "instruction", "none"],
        eligible: bool,
        owner_session_id: str,
    ) -> None:
        self.launcher = launcher
        self.context = launcher.context
        self.prepared = prepared
        self.admission = admission
        self.sandbox = sandbox
        self.sandbox_state = sandbox_state
        self.eligible = eligible
        self.owner_session_id = owner_session_id
        self.member: TeamMemberRecord | None = None
        self.context_path: Path | None = None
        self.source_before: SourceFingerprint | None = None
        self.parent_checkpoint: CheckpointRecord | None = None
        self.mission = prepared.prompt
        """The run's first prompt (a continuation's or with the session-context note), for a worker."""
        self.worker_sandbox: ReadOnlySandbox | None = None
        self.mcp = member_mcp_grant(self.context.host.mcp_servers, prepared)
        """The member's MCP servers: its parent's (the lead's, or a nested helper's writer's), only
        their read-only tools for a read tier; `None` when no server is configured."""
        self.mcp_report: McpReport | None = None
        """What it got of them, once built (on Ray: as this host lists them)."""

    def record(self, draft: LaunchDraft) -> Recorded:
        """The agent's session, then the generation, its task and the team member row in one transaction."""
        with self.context.repos.roster.db.write() as tx:
            return self.record_in(tx, draft)

    def record_in(self, tx: Tx, draft: LaunchDraft) -> Recorded:
        """`record` inside `tx` (a swarm's admission: every member in one transaction)."""
        prepared = self.prepared
        prepared.cwd = draft.cwd
        host = self.context.host
        team = team_name(prepared.lead_session_id)
        session = SessionManager.create(
            prepared.cwd,
            sessions_root=host.sessions_root,
            header_extra={
                "corral": {
                    "managed": True,
                    "team": team,
                    "definition": prepared.tier.name,
                    "label": prepared.name,
                }
            },
        )
        try:
            generation, task, member = self.context.repos.roster.create_team_generation_in(
                tx,
                NewGeneration(
                    definition=prepared.tier.name,
                    owner_session_id=self.owner_session_id,
                    cwd=str(prepared.cwd),
                    session_id=session.session_id,
                    task=prepared.prompt,
                    label=prepared.name,
                    session_path=None if session.path is None else str(session.path),
                    parent_run_id=None if prepared.parent is None else prepared.parent.run_id,
                    delegating=self.eligible,
                    runtime_kind=runtime_for(self.context.host.settings, prepared, eligible=self.eligible),
                    run_id=draft.run_id,
                ),
                NewTeamMember(
                    lead_session_id=prepared.lead_session_id,
                    name=prepared.name,
                    tier=prepared.tier.name,
                    requested_tier=prepared.requested_tier,
                    kind=prepared.tier.role,
                    depth=prepared.depth,
                    parent_run_id=None if prepared.parent is None else prepared.parent.run_id,
                    allow_nested=self.eligible,
                    model=prepared.model_ref,
                    thinking=prepared.thinking,
                    model_source=prepared.model_source,
                    session_context=prepared.session_context,
                    sandbox=self.sandbox_state,
                    metadata=prepared.metadata,
                    prompt=prepared.prompt,
                    group_id=prepared.group_id,
                    slot_id=prepared.slot_id,
                    checkpoint_policy=None if prepared.checkpoint is None else prepared.checkpoint.to_json(),
                    assigned_checks=[spec.to_json() for spec in prepared.checks] or None,
                    repair_policy=(
                        {"maxAttempts": prepared.max_repair_attempts}
                        if prepared.max_repair_attempts
                        else None
                    ),
                    continue_from=prepared.continue_from,
                ),
            )
        except BaseException:
            session.close()
            raise
        self.member = member
        return Recorded(generation, task, session)

    async def build(self, recorded: Recorded) -> ManagedChild:
        """The teams steps before the start, then the agent by tier and its `TeamChild` (made live).

        Returns:
            The kernel's child of the `TeamChild`, for the runtime to run.
        """
        mission, sandbox = await self._before_start(recorded)
        context, prepared = self.context, self.prepared
        generation, task, session = recorded.generation, recorded.task, recorded.session
        assert self.member is not None
        host = context.host
        agent = _build_agent(
            host.registry, host.settings, prepared, session, self.member, sandbox, eligible=self.eligible
        )
        servers = host.mcp_servers
        if self.mcp is not None and servers is not None:
            self.mcp_report = await servers.give(agent, self.mcp)
        run = TeamChild(
            store=context.host.kernel,
            agent=agent,
            generation=generation,
            task=task if mission == prepared.prompt else _with_payload(task, mission),
            hooks=context.host,
            member=self.member,
            teams=self.launcher.members,
            delegating=self.eligible,
        )
        # Live for the teams core from here (the host's tools find its `TeamChild` by run id);
        # its capacity slot is released with it, also when the launch is rolled back.
        context.live[generation.run_id] = _Live(
            run=run,
            admission=self.admission,
            lead_session_id=prepared.lead_session_id,
            context_path=self.context_path,
            source_before=self.source_before,
            parent_checkpoint=self.parent_checkpoint,
        )
        return run.child

    async def before_worker(self, recorded: Recorded) -> None:
        """On Ray: the same steps before the start as in-process (the worker gets the mission); the
        member's MCP servers as this host lists them (its worker opens its own sessions)."""
        self.mission, self.worker_sandbox = await self._before_start(recorded)
        servers = self.context.host.mcp_servers
        if self.mcp is not None and servers is not None:
            import dataclasses

            toolset = await servers.toolset(self.mcp)
            servers.remember(recorded.session.session_id, self.mcp)
            self.mcp_report = dataclasses.replace(toolset.report, listed_here=False)

    def worker_launch(self, recorded: Recorded) -> WorkerLaunch:
        """A Ray worker's description of the member: its agent as built here (system prompt, model,
        thinking, tool names, sandbox), teams' part (its member row and mission) and workspaces'
        (in place).

        The capacity slot is held for the run from here until its generation is released.
        """
        from corral.orchestration.host.protocol import BuiltAgent, WorkerLaunch
        from corral.orchestration.teams.launch import MemberLaunch
        from corral.orchestration.workspaces._snapshot import identify
        from corral.orchestration.workspaces.records import WorkspaceLaunch

        context, prepared = self.context, self.prepared
        assert self.member is not None
        _tools, system_prompt = agent_parts(
            self.context.host.settings, prepared, self.worker_sandbox, eligible=self.eligible
        )
        read = prepared.tier.role == "read"
        self.launcher.remote.admit(recorded.generation.run_id, prepared.lead_session_id, self.admission)
        agent = BuiltAgent(
            model=prepared.model_ref,
            thinking=prepared.thinking,  # type: ignore[arg-type]
            system_prompt=system_prompt,
            tools=READ_TIER_TOOL_NAMES if read else None,
            sandbox=read and self.worker_sandbox is not None,
            skills=skill_names_in(_tools),
            mcp=self.mcp,
        )
        workspace = identify(Path(recorded.generation.cwd), tree=False)
        return WorkerLaunch(
            agent,
            context_retirement=context.host.context_retirement,
            parts=(
                MemberLaunch(self.member, mission=self.mission),
                WorkspaceLaunch(workspace, mode="shared", writes=not read),
            ),
        )

    async def _before_start(self, recorded: Recorded) -> tuple[str, ReadOnlySandbox | None]:
        """The group slot runs, the checkpoint's inputs, a continuation's prompt and the lazy
        session-context snapshot: the run's mission and its read sandbox."""
        context, prepared = self.context, self.prepared
        repos = context.repos
        generation = recorded.generation
        assert self.member is not None
        if prepared.slot_id is not None:
            context.groups.running(prepared.slot_id, generation.run_id)
        mission = prepared.prompt
        if prepared.checkpoint is not None:
            self.source_before = await context.checkpoints.capture_before(prepared.cwd, prepared.checkpoint)
            repos.roster.set_checkpoint_source(generation.run_id, self.source_before.to_json())
        if prepared.continue_from is not None:
            self.parent_checkpoint = context.checkpoints.load(prepared.continue_from)
            continuation = await context.checkpoints.continuation(
                self.parent_checkpoint,
                cwd=prepared.cwd,
                prompt=prepared.prompt,
                source_before=self.source_before,
            )
            mission = texts.continuation_prompt(continuation)
        context_path = _write_session_context(self.launcher.data_dir, prepared, generation.run_id)
        self.context_path = context_path
        sandbox = self.sandbox
        if context_path is not None:
            pointer = texts.session_context(SessionContextAttached(context_path))
            mission = f"{mission}\n\n{pointer}"
            repos.roster.set_session_context_path(generation.run_id, str(context_path))
        if sandbox is not None and context_path is not None:  # its snapshot lives under $CORRAL_HOME
            sandbox = sandbox.with_policy(replace(sandbox.policy, read_files=(context_path,)))
            prepared.read_guard = None  # another policy: another view
        return mission, sandbox

    def rolled_back(self, recorded: Recorded) -> None:
        """The caller fails the admission: the release that follows must not give the slot back."""
        live = self.context.live.get(recorded.generation.run_id)
        if live is not None:
            live.admission = None
        self.launcher.remote.admissions.pop(recorded.generation.run_id, None)


def member_mcp_grant(servers: McpServers | None, prepared: _Prepared) -> McpGrant | None:
    """A member's MCP servers: those of the agent that spawns it (the lead: every enabled server; a
    nested helper's writer: its own), only their read-only tools for a read tier. `None` when no
    server is configured."""
    if servers is None:
        return None
    from corral.mcp_servers import NO_MCP, narrow

    parent = prepared.parent
    if parent is None:
        above = servers.lead_grant()
    else:
        above = servers.grant_of(parent.agent.session.session_id) or NO_MCP
    grant, _missing = narrow(above, "inherit", read_only=prepared.tier.role == "read")
    return grant


def _isolated(settings: Settings, prepared: _Prepared) -> bool:
    """Whether a spawn gets its own worktree: a write tier whose `[teams.tier_isolation]` entry
    (else the top-level `isolation` setting) is `worktree`; nested helpers never do."""
    choice = settings.teams.tier_isolation.get(prepared.tier.name, settings.isolation)
    return prepared.tier.role == "write" and prepared.depth == 0 and choice == "worktree"


def _write_session_context(data_dir: Callable[[str], Path], prepared: _Prepared, run_id: str) -> Path | None:
    if prepared.session_context != "lazy":
        return None
    try:
        from corral.orchestration.teams._session_context import (
            build_session_context_snapshot,
            write_session_context,
        )

        text = build_session_context_snapshot(prepared.owner.session)
        directory = data_dir(prepared.lead_session_id) / "session-context"
        return write_session_context(directory, prepared.name, run_id, text)
    except Exception:  # fail open: the spawn proceeds without the snapshot
        return None


def _build_agent(
    registry: ModelRegistry,
    settings: Settings,
    prepared: _Prepared,
    session: SessionManager,
    member: TeamMemberRecord,
    sandbox: ReadOnlySandbox | None,
    *,
    eligible: bool,
) -> AgentSession:
    tools, system_prompt = agent_parts(settings, prepared, sandbox, eligible=eligible)
    ref = parse_model_ref(prepared.model_ref)
    info = registry.resolve(ref)
    model = registry.create_model(info, cwd=prepared.cwd)
    return AgentSession(
        session=session,
        model=model,
        thinking_level=prepared.thinking,  # type: ignore[arg-type]
        tools=tools,
        cwd=prepared.cwd,
        settings=settings,
        system_prompt=system_prompt,
        agent_name=prepared.name,
    )


def agent_parts(
    settings: Settings, prepared: _Prepared, sandbox: ReadOnlySandbox | None, *, eligible: bool
) -> tuple[list[AgentTool], str]:
    """The member's built-in tools by role and its system prompt (in-process and on Ray alike)."""
    read = prepared.tier.role == "read"
    names = list(READ_TIER_TOOL_NAMES) if read else None
    tools: list[AgentTool] = create_builtin_tools(
        prepared.cwd,
        shell_path=settings.shell_path,
        names=names,
        sandbox=sandbox if read else None,
        guard=prepared.read_guard if read else None,
    )
    team = team_name(prepared.lead_session_id)
    if read:
        guidance = _TEAM_GUIDANCE_READ.format(
            name=prepared.name,
            team=team,
            tier=prepared.tier.name,
            sandbox=_SANDBOX_NOTE if sandbox else "",
        )
    else:
        guidance = _TEAM_GUIDANCE_WRITE.format(name=prepared.name, team=team, tier=prepared.tier.name)
    if prepared.parent is not None:
        delegation = _HELPER_DELEGATION.format(parent=prepared.parent.label)
    elif eligible:
        delegation = _PARENT_DELEGATION
    else:
        delegation = _NO_DELEGATION
    common = _TEAM_GUIDANCE_COMMON.format(delegation=delegation)
    # Its owner's skills: every skill found for a lead's member, its parent's for a nested helper.
    ceiling = None if prepared.parent is None else skill_names_of(prepared.owner)
    skill_tools, skills = skills_for_agent(agent_catalog(prepared.cwd, ceiling=ceiling))
    tools += skill_tools
    system_prompt = build_system_prompt(
        cwd=prepared.cwd,
        tools=tools,
        append=f"{guidance}\n\n{common}",
        sections=() if skills is None else (skills,),
    )
    return tools, system_prompt


def _with_payload(task: Any, payload: str) -> Any:
    return replace(task, payload=payload)


def spawn_result(
    settings: Settings,
    prepared: _Prepared,
    *,
    queued: bool,
    queue_id: str | None = None,
    position: int | None = None,
    context_available: bool = False,
    sandbox: Literal["enforced", "instruction"] | None = None,
    run_id: str | None = None,
    capacity: tuple[int, int] | None = None,
    runtime: str = "inprocess",
    mcp: McpReport | None = None,
) -> SpawnResult:
    """The answer to a spawn: queued (with its place) or launched (with its run, sandbox and runtime)."""
    role = prepared.tier.role
    return SpawnResult(
        prepared.name,
        team_name(prepared.lead_session_id),
        role,
        prepared.requested_tier,
        prepared.tier.name,
        prepared.model_ref,
        prepared.thinking,
        prepared.model_source,
        prepared.session_context,
        str(prepared.cwd),
        queued=queued,
        queue_id=queue_id,
        queue_position=position,
        session_context_available=context_available,
        run_id=run_id,
        sandbox=None if role != "read" else sandbox or ("pending" if queued else "instruction"),
        metadata=prepared.metadata,
        parent=None if prepared.parent is None else prepared.parent.label,
        sandbox_off=not queued and settings.teams.read_sandbox == "off",
        capacity=capacity,
        mode="ray" if runtime == "ray" else "in-process",
        mcp=mcp,
    )


def runtime_for(settings: Settings, prepared: _Prepared, *, eligible: bool) -> Literal["inprocess", "ray"]:
    """Where a spawn runs: on Ray when the `runtime` setting says `ray`, else in this process.

    The rule of `delegate` (`Delegation._runtime_for`): agents that delegate — an eligible nested
    parent — and read helpers (they share their parent's process) stay in-process. Teams tiers
    have no `runtime` field, and `runtime = "tmux"` keeps spawns in-process (a running member
    moves to a pane by handoff).
    """
    if settings.runtime != "ray" or eligible or prepared.depth != 0:
        return "inprocess"
    return "ray"
