"""A teams agent's run: the kernel's managed child, with a report instead of a plain result.

`TeamChild` is the teams side of one run. It holds the kernel's plain `ManagedChild`
(`TeamChild.child`: same store generation, same task acknowledgement, same host delivery and
finalize) and adds the member's state and verbs; the kernel child meets it only through its
settle policy (`TeamSettle`). Four differences from a managed agent:

* It finishes with a *report*. An accepted `report_and_exit` stores the report
  at once (in the tool call, in the same transaction that completes the
  generation) and ends the run after the tool batch: no further model request.
* An agent that ends its work without calling `report_and_exit` gets exactly
  one report-only recovery prompt. If it still does not report, its last
  assistant text becomes the report (`reportSource: assistant-text`); with no
  text, or after a provider error, the run fails with a diagnostic — an empty
  report is never a success.
* Messages from peers and the lead arrive as steering while it works, or as
  the next prompt while it is idle (`inject`).
* An interrupt (`interrupt`) cancels the running tool or model call and leaves
  the agent waiting, with its session, task and claims, until a message
  arrives; it never tears the agent down.

An eligible nested parent (`delegating`) also stays alive while its read
helpers are pending, like a delegating managed agent.

The teams core finds a run's `TeamChild` by run id (`TeamContext.child`, over its live registry); the
kernel and the host never see one. A `TeamChild` reaches the teams core only through
`MemberPorts` (three verbs), so it needs no import of `Teams`; a tmux worker gives it a
worker-local one.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Protocol

from corral.agent import AgentSession, RateLimitWaitEvent, ToolExecutionEndEvent, ToolExecutionStartEvent
from corral.orchestration.kernel._child import ChildHooks, ManagedChild, SettleOutcome, SettlePolicy
from corral.orchestration.kernel._remote import ChildStore
from corral.orchestration.kernel.records import GenerationRecord, RequestRecord

from . import texts
from .notices import FallbackReport, ReportMissing

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from corral.orchestration.kernel import Caller
    from corral.orchestration.teams.checks._checks import CheckExecutor
    from corral.orchestration.teams.commands import (
        ReadInboxRequest,
        ReportSubmission,
        SendMessageRequest,
        SpawnRequest,
        SwarmRequest,
    )
    from corral.orchestration.teams.results import (
        ClaimResult,
        ClaimsList,
        InboxResult,
        MessageSent,
        ReleaseResult,
        ReportReceipt,
        SpawnResult,
        StatusSnapshot,
        SwarmResult,
    )
    from corral.orchestration.teams.roster.records import TeamMemberRecord

    from ._status import LivePhase

__all__ = ["MemberPorts", "MemberRun", "MemberTeams", "TeamChild", "TeamSettle"]

_INTERRUPT_SETTLE_S = 1.5


class MemberRun(Protocol):
    """A teams run as the member verbs (`send_message`, `read_inbox`, claims, `report_and_exit`, the
    fallback report) see it: a `TeamChild` in this process, or, on the lead's host, the stand-in of a
    member that runs on a Ray worker (`teams/remote/_host.py`)."""

    member: TeamMemberRecord
    report_accepted: bool
    plain_submissions: int

    @property
    def check_executor(self) -> CheckExecutor | None:
        """Where the run's assigned checks execute when not in this process (its Ray worker's node)."""
        ...

    @property
    def run_id(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def generation(self) -> GenerationRecord: ...

    @property
    def task(self) -> RequestRecord: ...

    @property
    def delegating(self) -> bool: ...

    @property
    def messages_open(self) -> bool: ...

    @property
    def started_monotonic(self) -> float: ...

    def close_messages(self) -> None:
        """Refuse further direct messages."""
        ...

    def queue_prompt(self, text: str) -> None:
        """Give the agent `text` as its next prompt."""
        ...

    def fallback_report(self) -> FallbackReport:
        """What a run that ended without an accepted report leaves (the surface words its content)."""
        ...

    def usage(self) -> tuple[int, float]:
        """`(tokens, cost in USD)` of the run's session so far."""
        ...

    def end_after_report(self) -> None:
        """The accepted report ends the run after the current tool batch."""
        ...


class MemberTeams(Protocol):
    """What a teams agent's own tools (`team_member_tools`) call: `LocalMembers` (`Teams.members`) in the lead's process and
    in a tmux worker; on a Ray worker, a port that turns each call into a fact the lead's host
    applies through its teams services (`teams/remote/_worker.py`). A claim verb may answer later
    (an awaitable) where the answer crosses the network."""

    async def send_message(self, sender: TeamChild, request: SendMessageRequest) -> MessageSent: ...

    async def read_inbox(self, reader: TeamChild, request: ReadInboxRequest) -> InboxResult: ...

    async def submit_report(
        self, child: TeamChild, submission: ReportSubmission, *, submission_id: str
    ) -> ReportReceipt: ...

    def claim_files(
        self, child: TeamChild, paths: tuple[str, ...]
    ) -> ClaimResult | Awaitable[ClaimResult]: ...

    def release_files(
        self, child: TeamChild, paths: tuple[str, ...]
    ) -> ReleaseResult | Awaitable[ReleaseResult]: ...

    def list_file_claims(self, scope: TeamChild) -> ClaimsList | Awaitable[ClaimsList]: ...

    async def spawn(
        self, caller: Caller, request: SpawnRequest, *, parent: TeamChild | None = None
    ) -> SpawnResult:
        """A nested parent's read helper (only eligible writers in the lead's process get this tool)."""
        ...

    async def spawn_swarm(
        self, caller: Caller, request: SwarmRequest, *, parent: TeamChild | None = None
    ) -> SwarmResult: ...

    async def status(self, scope: TeamChild, agent_name: str | None) -> StatusSnapshot: ...


class MemberPorts(Protocol):
    """What a teams agent's run asks of the teams core (implemented by `LocalMembers`, `Teams.members`)."""

    def pending_helpers(self, parent: TeamChild) -> bool:
        """Whether queued read helpers of `parent` still wait for a slot (they keep it alive)."""
        ...

    def run_lost(self, child: TeamChild, reason: str) -> None:
        """The run ended without a report (it raised)."""
        ...

    async def finish_without_report(self, child: TeamChild) -> bool:
        """Store the fallback report of a run that ended without one; `True` when a repair turn was queued."""
        ...


class TeamSettle(SettlePolicy):
    """A teams run's settle policy (the kernel child's port): a report ends the run.

    An accepted report closes it; an interrupt, or read helpers still queued, hold it; when it
    may finish without a report it gets the one report-only recovery prompt, then its fallback
    report is stored (`MemberPorts.finish_without_report`). A run that raised settles its group
    slot; a run that begins to move stops taking direct messages.
    """

    def __init__(self, run: TeamChild) -> None:
        self.run = run
        """The teams side of the run it governs."""

    def resumed(self, child: ManagedChild) -> None:
        """A queued message is sent: the run is no longer interrupted."""
        self.run.interrupted = False

    def closed(self, child: ManagedChild) -> bool:
        """An accepted `report_and_exit` ended the run."""
        return self.run.report_accepted

    def holds(self, child: ManagedChild) -> bool:
        """An interrupted run waits for a message; a nested parent waits for its queued helpers."""
        run = self.run
        return run.interrupted or run.teams.pending_helpers(run)

    async def finish(self, child: ManagedChild) -> SettleOutcome:
        """The recovery prompt once, then the fallback report (a repair turn keeps the run going)."""
        run = self.run
        if not run.recovery_sent and not run.ended_by_provider_error():
            run.recovery_sent = True
            prompt = texts.recovery_prompt(ReportMissing(run.label))
            await child.agent.prompt(prompt, streaming_behavior="steer")
            return "again"
        if await run.teams.finish_without_report(run):
            return "again"
        return "closed"

    def run_failed(self, child: ManagedChild, reason: str) -> None:
        """A run that died without a report settles its group slot."""
        self.run.teams.run_lost(self.run, reason)

    def handoff_begun(self, child: ManagedChild) -> None:
        """New messages go to its store inbox (the worker's) from now on."""
        self.run.close_messages()


class TeamChild:
    """One teams agent's run: its member state and verbs beside the kernel's child (`child`).

    It makes the plain `ManagedChild` the runtime runs, with a `TeamSettle` policy over this
    object, and adds the teams verbs (`inject`, `interrupt`, `queue_prompt`, `phase`) and state.
    The kernel child neither knows nor references it beyond that policy.
    """

    def __init__(
        self,
        *,
        store: ChildStore,
        agent: AgentSession,
        generation: GenerationRecord,
        task: RequestRecord,
        hooks: ChildHooks,
        member: TeamMemberRecord,
        teams: MemberPorts,
        delegating: bool = False,
    ) -> None:
        self.child = ManagedChild(
            store=store,
            agent=agent,
            generation=generation,
            task=task,
            hooks=hooks,
            delegating=delegating,
            settle=TeamSettle(self),
        )
        """The kernel's child the runtime runs (a plain `ManagedChild`)."""
        self.member = member
        self.teams = teams
        self.check_executor: CheckExecutor | None = None
        """Its checks run in this process (the verifier's own executor)."""
        self.report_accepted = False
        """An accepted `report_and_exit` closed this run."""
        self.messages_open = True
        """Direct message admission (closed by an accepted report and at teardown)."""
        self.recovery_sent = False
        self.interrupted = False
        self.plain_submissions = 0
        """Plain-text final answers verified so far (each is a repair submission)."""
        self.active_tool: str | None = None
        self.started_monotonic = asyncio.get_running_loop().time()
        self._tool_unsubscribe = agent.subscribe(self._on_tool_event)

    @property
    def run_id(self) -> str:
        """The run id of its generation."""
        return self.child.run_id

    @property
    def label(self) -> str:
        """The agent's name (its generation's label)."""
        return self.child.label

    @property
    def agent(self) -> AgentSession:
        """The agent session the kernel child drives."""
        return self.child.agent

    @property
    def generation(self) -> GenerationRecord:
        """Its generation row (as launched)."""
        return self.child.generation

    @property
    def task(self) -> RequestRecord:
        """Its single `task` request."""
        return self.child.task

    @property
    def delegating(self) -> bool:
        """Whether it may spawn read helpers (an eligible writer)."""
        return self.child.delegating

    @property
    def ready(self) -> bool:
        """Whether its run acknowledged the task (its agent loop is running)."""
        return self.child.acknowledged.is_set()

    @property
    def ended(self) -> bool:
        """Whether its run has ended."""
        return self.child.finished.is_set()

    # --- the run --------------------------------------------------------------------------------

    def ended_by_provider_error(self) -> bool:
        """Whether its last model request ended with a provider error."""
        last = self.child.last_assistant()
        return last is not None and last.stop_reason == "error"

    def fallback_report(self) -> FallbackReport:
        """What a run that ended without an accepted report leaves (the surface words its content)."""
        last = self.child.last_assistant()
        text = (self.agent.last_assistant_text() or "").strip()
        path = self.generation.session_path
        if last is not None and last.stop_reason == "error":
            return FallbackReport(self.label, "provider-error", text, last.error_message, path)
        return FallbackReport(self.label, "assistant-text" if text else "empty", text, None, path)

    def usage(self) -> tuple[int, float]:
        """`(tokens, cost in USD)` of the run's session so far."""
        stats = self.agent.stats()
        return stats.tokens.total, stats.cost

    def end_after_report(self) -> None:
        """The accepted report ends the run after the current tool batch (no further model request)."""
        self.agent.end_after_tools()

    # --- messages, interrupt ----------------------------------------------------------------------------

    def inject(self, text: str) -> bool:
        """Deliver a message now: steering while a run is active, else the next prompt.

        Returns:
            `False` when direct delivery is closed (the agent reported or is being stopped).
        """
        if not self.messages_open or self.ended:
            return False
        if not self.agent.is_idle:
            self.agent.steer(text)
        else:
            self.child.queue_prompt(text)
        return True

    async def interrupt(self) -> str:
        """Cancel the running tool or model call; keep session, task and claims.

        Returns:
            `interrupted` (settled), `pending` (not settled within 1.5 s) or `no_command`.
        """
        if self.agent.is_idle or self.report_accepted or not self.messages_open:
            return "no_command"
        self.interrupted = True
        abort = asyncio.ensure_future(self.agent.abort())
        done, _ = await asyncio.wait({abort}, timeout=_INTERRUPT_SETTLE_S)
        if not done:
            abort.add_done_callback(lambda t: None if t.cancelled() else t.exception())
            return "pending"
        abort.result()
        # Messages that arrived during the cancelled operation continue the agent.
        steering, follow_up = self.agent.clear_queue()
        for text in (*steering, *follow_up):
            self.child.queue_prompt(text)
        self.child.wake()
        self.child.hooks.changed()
        return "interrupted"

    def queue_prompt(self, text: str) -> None:
        """Give the agent `text` as its next prompt (a repair turn after plain-text reporting)."""
        self.child.queue_prompt(text)

    def close_messages(self) -> None:
        """Refuse further direct messages (the report was accepted, or teardown began)."""
        self.messages_open = False

    # --- observation ------------------------------------------------------------------------------------

    def _on_tool_event(self, event: object) -> None:
        if isinstance(event, ToolExecutionStartEvent):
            self.active_tool = event.tool_name
            self.child.hooks.changed()  # its live phase (status) changed: `working`
        elif isinstance(event, ToolExecutionEndEvent):
            self.active_tool = None
            self.child.hooks.changed()

    @property
    def rate_limit_wait(self) -> RateLimitWaitEvent | None:
        """Its model request's wait for the endpoint's shared rate limiter, while it waits."""
        return self.agent.rate_limit_wait

    def phase(self) -> LivePhase:
        """`starting`, `thinking`, `working`, `waiting` or `finishing` (the in-memory part of status)."""
        if self.report_accepted or self.ended:
            return "finishing"
        if not self.ready:
            return "starting"
        if self.agent.is_idle:
            return "waiting" if self.child.waiting else "thinking"
        return "working" if self.active_tool is not None else "thinking"

    def dispose(self) -> None:
        """Drop event subscriptions (after the run ended)."""
        with contextlib.suppress(Exception):
            self._tool_unsubscribe()
