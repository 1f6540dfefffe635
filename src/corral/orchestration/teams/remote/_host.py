"""The lead's side of teams members on Ray workers: their calls applied through `Teams`, once each.

A member on a Ray worker sends each teams verb as a `MemberCall` fact (`_worker.py`). `RemoteMembers`
(one per `Teams`) takes it from the pump (`fact`, through `TeamsExtension.remote_fact`), applies it in
the background through the same `Teams` verbs an in-process member's tools call — with a stand-in
for the run (`RemoteRun`, a `MemberRun`) — and pushes the answer with every pull (`state`, through
`TeamsExtension.remote_state`) until the worker says it took it. Messages in the member's inbox are
pushed the same way and marked read once the worker injected them.

Exactly once: a call id is applied once per host; after a host restart a report already stored
for the run answers as accepted again (never a second report), and a fallback report is not
stored twice. The run's capacity slot is held here while it runs (`admit`) and given back when the
host releases the generation.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from typing import TYPE_CHECKING, Any

from corral.orchestration.errors import InternalFailureError, OrchestrationError
from corral.orchestration.teams import texts
from corral.orchestration.teams.checks._checks import CheckExecution
from corral.orchestration.teams.notices import FallbackReport, MessageArrived

from .records import MemberAnswer, MemberCall, MemberInterrupted, MemberMessage, MemberPush, MemberTaken

if TYPE_CHECKING:
    from corral.orchestration.host._host import Host
    from corral.orchestration.kernel.records import GenerationRecord, RequestRecord
    from corral.orchestration.teams._capacity import Admission
    from corral.orchestration.teams._control import TeamControl
    from corral.orchestration.teams._plans import TeamContext
    from corral.orchestration.teams.reports._team_reports import TeamReports
    from corral.orchestration.teams.roster.records import TeamMemberRecord

__all__ = ["NodeCheckExecutor", "RemoteMembers", "RemoteRun"]

_INTERRUPT_WAIT_S = 5.0
"""How long the lead's `interrupt_teammate` waits for a Ray member's worker to answer."""
_CHECK_CALL_SLACK_S = 60.0
"""How much longer than a check's own timeout the host waits for its worker's answer."""


class NodeCheckExecutor:
    """Runs a Ray member's check commands on its worker's node, in the agent's workspace there
    (a `CheckExecutor`): the worker runs the command with the same local shell handling and returns
    how it ended with its output, which goes to the check's log on the lead's machine. Cancelling
    the check (its report's cancel event, or the task) kills the command on the node.
    """

    def __init__(self, host: Host, run_id: str) -> None:
        self.host = host
        self.run_id = run_id

    def available(self) -> bool:
        """The node's shell is checked when the command runs (a failure is the check's error)."""
        return True

    async def execute(
        self,
        command: str,
        *,
        cwd: str,
        log_fd: int,
        timeout_seconds: float,
        cancel: asyncio.Event | None = None,
    ) -> CheckExecution:
        """Run `command` on the run's node; `OSError` when its worker cannot run it."""
        from corral.runtime import RuntimeError_

        handle = self.host.runs.runtime_handle(self.run_id)
        if handle is None or handle.kind != "ray":
            raise OSError(f"the agent's Ray worker is not attached to this host (run {self.run_id})")
        from corral.runtime._ray import ray_runtime

        runtime = ray_runtime(self.host.runtime)
        token = str(uuid.uuid4())
        call = asyncio.ensure_future(
            runtime.call(
                handle,
                "run_check",
                self.run_id,
                token,
                command,
                timeout_seconds,
                timeout=timeout_seconds + _CHECK_CALL_SLACK_S,
            )
        )
        stop = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        try:
            await asyncio.wait({call} if stop is None else {call, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not call.done():
                await self._cancel(token)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(call, _CHECK_CALL_SLACK_S)
                return CheckExecution(None, cancelled=True)
            found = call.result()
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel(token))
            raise
        except RuntimeError_ as exc:
            raise OSError(f"the agent's Ray worker could not run it: {exc}") from None
        finally:
            if stop is not None:
                stop.cancel()
            if not call.done():
                call.cancel()
        if found is None:
            raise OSError("the agent's Ray worker no longer holds it")
        execution, output = found
        view = memoryview(output)
        while view:
            view = view[os.write(log_fd, view) :]
        return execution  # type: ignore[no-any-return]

    async def _cancel(self, token: str) -> None:
        from corral.runtime import RuntimeError_
        from corral.runtime._ray import ray_runtime

        handle = self.host.runs.runtime_handle(self.run_id)
        if handle is not None:
            with contextlib.suppress(RuntimeError_):
                await ray_runtime(self.host.runtime).call(handle, "cancel_check", self.run_id, token)


class RemoteRun:
    """A Ray member's run as the teams verbs see it on the lead's host (a `MemberRun`).

    What only the worker knows (its fallback report, its usage) comes with each call; what the
    verbs decide for the run (a repair turn, the end after a report) goes back in the answer.
    """

    def __init__(
        self,
        member: TeamMemberRecord,
        generation: GenerationRecord,
        task: RequestRecord,
        *,
        reported: bool,
        check_executor: NodeCheckExecutor,
    ) -> None:
        self.member = member
        self.check_executor = check_executor
        self.generation = generation
        self.task = task
        self.report_accepted = reported
        self.plain_submissions = 0
        self.delegating = False
        age_s = max(0.0, time.time() - generation.created_at / 1000)
        self.started_monotonic = asyncio.get_running_loop().time() - age_s
        self._messages_open = True
        self._usage = (0, 0.0)
        self._fallback = FallbackReport(generation.label, "empty", "", None, generation.session_path)
        self._prompt: str | None = None

    @property
    def run_id(self) -> str:
        return self.generation.run_id

    @property
    def label(self) -> str:
        return self.generation.label

    @property
    def messages_open(self) -> bool:
        return self._messages_open

    def close_messages(self) -> None:
        self._messages_open = False

    def queue_prompt(self, text: str) -> None:
        self._prompt = text

    def fallback_report(self) -> FallbackReport:
        return self._fallback

    def usage(self) -> tuple[int, float]:
        return self._usage

    def end_after_report(self) -> None:
        """The worker ends the run itself when its answer says accepted."""

    def called(self, call: MemberCall) -> None:
        """Take what the worker sent with `call`."""
        self._usage = (call.tokens, call.cost)
        self._prompt = None
        if call.verb == "finish_without_report" and isinstance(call.args[0], FallbackReport):
            self._fallback = call.args[0]  # worded here, by `teams/texts.py`

    def take_prompt(self) -> str | None:
        prompt, self._prompt = self._prompt, None
        return prompt


class RemoteMembers:
    """The calls, answers and inbox pushes of this host's Ray members (see the module docstring)."""

    def __init__(self, context: TeamContext, control: TeamControl, reports: TeamReports) -> None:
        self.host = context.host
        self.repos = context.repos
        self.capacity = context.capacity
        self.control = control
        self.reports = reports
        self.runs: dict[str, RemoteRun] = {}
        self.calls: dict[str, dict[str, MemberAnswer | None]] = {}
        """Per run: every call id taken, with its answer (`None` while it is applied)."""
        self.admissions: dict[str, tuple[str, Admission]] = {}
        """The capacity slot of each Ray member launched by this host, by run (lead, admission)."""
        self._members: dict[str, TeamMemberRecord | None] = {}
        self.interrupts: dict[str, dict[str, asyncio.Future[str]]] = {}
        """Per run: the lead's interrupts not answered yet, by token."""

    async def interrupt(self, run_id: str) -> str:
        """`interrupt_teammate` for a member on Ray: pushed to its worker, which interrupts it as
        in-process; its outcome (`interrupted`, `pending`, `no_command`), or `pending` when the
        worker does not answer within `_INTERRUPT_WAIT_S`."""
        token = str(uuid.uuid4())
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        pending = self.interrupts.setdefault(run_id, {})
        pending[token] = waiter
        self.host.changed()
        try:
            return await asyncio.wait_for(asyncio.shield(waiter), _INTERRUPT_WAIT_S)
        except TimeoutError:
            return "pending"
        finally:
            pending.pop(token, None)

    def admit(self, run_id: str, lead_session_id: str, admission: Admission) -> None:
        """Hold the capacity slot of a member placed on Ray until its generation is released."""
        self.admissions[run_id] = (lead_session_id, admission)

    def released(self, run_id: str) -> None:
        """The host released the run: its slot goes back; its calls and stand-in are dropped."""
        held = self.admissions.pop(run_id, None)
        if held is not None:
            self.capacity(held[0]).release(held[1])
        self.runs.pop(run_id, None)
        self.calls.pop(run_id, None)
        self._members.pop(run_id, None)
        for waiter in self.interrupts.pop(run_id, {}).values():
            if not waiter.done():
                waiter.set_result("no_command")

    def lost(self, run_id: str, reason: str) -> None:
        """A member's Ray worker or node is gone (the run is `lost`): its group slot is interrupted,
        as for an in-process member whose run raised."""
        if self._member(run_id) is None:
            return
        with contextlib.suppress(OrchestrationError):
            self.control.run_lost(self._run(run_id), reason)

    def _member(self, run_id: str) -> TeamMemberRecord | None:
        if run_id not in self._members:
            self._members[run_id] = self.repos.roster.team_member(run_id)
        return self._members[run_id]

    # --- the pump's two hooks -----------------------------------------------------------------------

    def state(self, run_id: str) -> MemberPush | None:
        """What this host pushes to the member's worker: answers, known calls, unread messages."""
        member = self._member(run_id)
        if member is None:
            return None
        calls = self.calls.get(run_id, {})
        inbox = self.repos.roster.read_team_inbox(
            member.lead_session_id, member.name, unread_only=True, mark_as_read=False
        )
        messages = tuple(
            MemberMessage(m.message_id, texts.member_message(MessageArrived(m.sender, m.summary, m.content)))
            for m in inbox
            if m.recipient_run_id in (None, run_id)
        )
        answers = tuple(answer for answer in calls.values() if answer is not None)
        interrupts = tuple(self.interrupts.get(run_id, {}))
        return MemberPush(answers, frozenset(calls), messages, interrupts)

    def fact(self, run_id: str, payload: object) -> None:
        """A member's call (applied in the background, once per call id) or what its worker took."""
        if isinstance(payload, MemberInterrupted):
            waiter = self.interrupts.get(run_id, {}).get(payload.token)
            if waiter is not None and not waiter.done():
                waiter.set_result(payload.status)
            return
        if isinstance(payload, MemberTaken):
            calls = self.calls.get(run_id, {})
            for call_id in payload.call_ids:
                calls.pop(call_id, None)
            if payload.message_ids:
                self.repos.roster.mark_messages_read(payload.message_ids)
            return
        if not isinstance(payload, MemberCall):
            return
        calls = self.calls.setdefault(run_id, {})
        if payload.call_id in calls:
            return
        calls[payload.call_id] = None
        self.host.spawn_background(self._apply(run_id, payload))

    async def _apply(self, run_id: str, call: MemberCall) -> None:
        try:
            run = self._run(run_id)
            run.called(call)
            value = await self._dispatch(run, call)
            answer = MemberAnswer(call.call_id, value, prompt=run.take_prompt())
        except OrchestrationError as exc:
            answer = MemberAnswer(call.call_id, error=(exc.category, exc.message))
        except Exception as exc:
            answer = MemberAnswer(call.call_id, error=("internal_failure", f"{type(exc).__name__}: {exc}"))
        calls = self.calls.get(run_id)
        if calls is not None and call.call_id in calls:
            calls[call.call_id] = answer
        self.host.changed()

    def _run(self, run_id: str) -> RemoteRun:
        run = self.runs.get(run_id)
        if run is not None:
            return run
        repos = self.repos
        member = self._member(run_id)
        generation = repos.kernel.get_generation(run_id)
        task = next((r for r in repos.kernel.requests(run_id) if r.kind == "task"), None)
        if member is None or generation is None or task is None:
            raise InternalFailureError(f"run {run_id} is not a teams agent of this store")
        reported = repos.reports.team_report_for_run(run_id) is not None
        run = self.runs[run_id] = RemoteRun(
            member, generation, task, reported=reported, check_executor=NodeCheckExecutor(self.host, run_id)
        )
        return run

    async def _dispatch(self, run: RemoteRun, call: MemberCall) -> Any:
        control, reports, args = self.control, self.reports, call.args
        if call.verb == "send_message":
            return await control.send_message(run, args[0], message_id=call.call_id)  # type: ignore[arg-type]
        if call.verb == "read_inbox":
            return await control.read_inbox(run, args[0])  # type: ignore[arg-type]
        if call.verb == "submit_report":
            from corral.orchestration.teams.results import ReportReceipt

            stored = self.repos.reports.team_report_for_run(run.run_id)
            if stored is not None:  # applied before a host restart: the same answer, no second report
                return ReportReceipt("accepted", report=stored)
            return await reports.submit_report(run, args[0], submission_id=str(args[1]))  # type: ignore[arg-type]
        if call.verb == "finish_without_report":
            if self.repos.reports.team_report_for_run(run.run_id) is not None:
                return False
            return await reports.finish_without_report(run)
        if call.verb == "claim_files":
            return control.claim_files(run, args[0])  # type: ignore[arg-type]
        if call.verb == "release_files":
            return control.release_files(run, args[0])  # type: ignore[arg-type]
        if call.verb == "list_file_claims":
            return control.list_file_claims(run)
        if call.verb == "run_lost":
            control.run_lost(run, str(args[0]))
            return None
        raise InternalFailureError(f"unknown teams call {call.verb!r}")
