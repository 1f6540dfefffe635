"""A teams member on a Ray worker: the same `TeamChild` and member tools, over a port to the lead's host.

The worker has no store and no `Teams`. `RemoteTeams` is the member's teams port there (both
`MemberTeams`, what its tools call, and `MemberPorts`, what its run asks): every verb becomes a
`MemberCall` fact in the run's outbox and waits for the host's `MemberAnswer`, which arrives with
the next pull (`take`). The host applies each call once through its own `Teams` — the code an
in-process member's tools run — so reports, messages, claims and checks behave as in-process.

Messages for the member wait in its inbox on the lead's host; the host pushes them with every pull
and the port injects each once (steering while the agent works, else its next prompt), as a tmux
worker's inbox poller does. A call the host confirmed but does not know any more (its host died
before answering) is sent again under the same id; the host applies a call id once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from corral.orchestration.errors import InvalidRequestError, error_class_for

from .records import MemberAnswer, MemberCall, MemberInterrupted, MemberPush, MemberTaken, MemberVerb

if TYPE_CHECKING:
    from corral.orchestration.kernel import Caller
    from corral.orchestration.kernel._remote import RemoteStore
    from corral.orchestration.teams._member import TeamChild
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

__all__ = ["RemoteTeams"]


class RemoteTeams:
    """The teams port of one member on a Ray worker (see the module docstring)."""

    def __init__(self, store: RemoteStore) -> None:
        """Args:
        store: The run's remote store (its outbox of facts and the host's pushed state).
        """
        self.store = store
        self.child: TeamChild | None = None
        self._waiting: dict[str, tuple[int, MemberCall, asyncio.Future[MemberAnswer]]] = {}
        """Calls without an answer yet: their fact number, the call, its waiter."""
        self._told: set[str] = set()
        """Answers and messages already reported taken."""
        self._injected: set[str] = set()
        self._interrupts: set[str] = set()
        """Interrupt tokens already applied (or being applied)."""

    # --- the host's side ---------------------------------------------------------------------------

    def take(self, pushed: tuple[object, ...]) -> None:
        """Take the host's answers and messages from a pull's pushed state; re-send lost calls."""
        push = next((state for state in pushed if isinstance(state, MemberPush)), None)
        if push is None:
            return
        calls: list[str] = []
        for answer in push.answers:
            entry = self._waiting.pop(answer.call_id, None)
            if entry is not None and not entry[2].done():
                entry[2].set_result(answer)
            if answer.call_id not in self._told:
                self._told.add(answer.call_id)
                calls.append(answer.call_id)
        for call_id, (seq, call, waiter) in list(self._waiting.items()):
            if seq <= self.store.view_confirmed and call_id not in push.known:
                self._waiting[call_id] = (self.store.emit_extension(call), call, waiter)
        messages: list[str] = []
        for message in push.messages:
            if message.message_id not in self._injected:
                self._injected.add(message.message_id)
                if self.child is not None:
                    self.child.inject(message.text)
            if message.message_id not in self._told:
                self._told.add(message.message_id)
                messages.append(message.message_id)
        if calls or messages:
            self.store.emit_extension(MemberTaken(tuple(calls), tuple(messages)))
        for token in push.interrupts:
            if token not in self._interrupts and self.child is not None:
                self._interrupts.add(token)
                asyncio.get_running_loop().create_task(self._interrupt(self.child, token))

    async def _interrupt(self, child: TeamChild, token: str) -> None:
        """Apply the lead's interrupt here (as in-process) and report its outcome."""
        status = await child.interrupt()
        self.store.emit_extension(MemberInterrupted(token, status))

    async def _call(self, verb: MemberVerb, *args: object) -> MemberAnswer:
        tokens, cost = (0, 0.0) if self.child is None else self.child.usage()
        call = MemberCall(str(uuid.uuid4()), verb, args, tokens, cost)
        waiter: asyncio.Future[MemberAnswer] = asyncio.get_running_loop().create_future()
        self._waiting[call.call_id] = (self.store.emit_extension(call), call, waiter)
        answer = await waiter
        if answer.error is not None:
            category, message = answer.error
            raise error_class_for(category)(message)  # type: ignore[arg-type]
        return answer

    async def _value(self, verb: MemberVerb, *args: object) -> Any:
        return (await self._call(verb, *args)).value

    # --- MemberTeams -------------------------------------------------------------------------------

    async def send_message(self, sender: TeamChild, request: SendMessageRequest) -> MessageSent:
        """`send_message`, applied by the lead's host."""
        sent: MessageSent = await self._value("send_message", request)
        return sent

    async def read_inbox(self, reader: TeamChild, request: ReadInboxRequest) -> InboxResult:
        """`read_inbox`, read on the lead's host."""
        inbox: InboxResult = await self._value("read_inbox", request)
        return inbox

    async def submit_report(
        self, child: TeamChild, submission: ReportSubmission, *, submission_id: str
    ) -> ReportReceipt:
        """`report_and_exit`: the host verifies and stores it; an accepted report ends the run here."""
        from corral.orchestration.teams.results import ReportReceipt

        if child.report_accepted:
            return ReportReceipt("duplicate")
        receipt: ReportReceipt = await self._value("submit_report", submission, submission_id)
        if receipt.accepted:
            child.report_accepted = True
            child.close_messages()
            child.end_after_report()
        return receipt

    def claim_files(self, child: TeamChild, paths: tuple[str, ...]) -> Awaitable[ClaimResult]:
        """`claim_file`, in the team's claims on the lead's host."""
        return self._value("claim_files", paths)

    def release_files(self, child: TeamChild, paths: tuple[str, ...]) -> Awaitable[ReleaseResult]:
        """`release_file`."""
        return self._value("release_files", paths)

    def list_file_claims(self, scope: TeamChild) -> Awaitable[ClaimsList]:
        """`list_file_claims`."""
        return self._value("list_file_claims")

    async def spawn(
        self, caller: Caller, request: SpawnRequest, *, parent: TeamChild | None = None
    ) -> SpawnResult:
        """Nested parents run in the lead's process: never offered on a Ray worker."""
        raise InvalidRequestError("Agents on a Ray worker cannot spawn helpers; ask the lead.")

    async def spawn_swarm(
        self, caller: Caller, request: SwarmRequest, *, parent: TeamChild | None = None
    ) -> SwarmResult:
        """Nested parents run in the lead's process: never offered on a Ray worker."""
        raise InvalidRequestError("Agents on a Ray worker cannot spawn helpers; ask the lead.")

    async def status(self, scope: TeamChild, agent_name: str | None) -> StatusSnapshot:
        """Nested parents run in the lead's process: never offered on a Ray worker."""
        raise InvalidRequestError("get_agent_status is not available to an agent on a Ray worker.")

    # --- MemberPorts -------------------------------------------------------------------------------

    def pending_helpers(self, parent: TeamChild) -> bool:
        """A member on a Ray worker has no helpers."""
        return False

    def run_lost(self, child: TeamChild, reason: str) -> None:
        """The run raised: the host settles its group slot (nobody waits for the answer)."""
        tokens, cost = child.usage()
        self.store.emit_extension(MemberCall(str(uuid.uuid4()), "run_lost", (reason,), tokens, cost))

    async def finish_without_report(self, child: TeamChild) -> bool:
        """The fallback report, verified and stored by the host; `True` when a repair turn was queued."""
        answer = await self._call("finish_without_report", child.fallback_report())
        if answer.prompt is not None:
            child.queue_prompt(answer.prompt)
            return True
        return False
