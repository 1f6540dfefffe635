"""The store port of a managed child that runs where the store is not (a Ray worker).

A `ManagedChild` records its progress through a `ChildStore`: the handful of
verbs a child uses (acknowledge, record activity, ask, store its result, say
it is lost, and read its own generation). In-process and tmux children use the
store's repositories directly. A child in a Ray worker uses `RemoteStore`: it
never opens SQLite; it answers the child's reads from what it knows (the launch's
generation and task, the host's last view) and turns each write into a
numbered *fact* kept in an outbox.

The host pulls the outbox (`pull`), makes each fact durable in the real store on
the lead's machine, and confirms the last number it holds (`confirm`); only then
does the worker drop those facts. The result fact is therefore held by the worker
until the host has it in the store: a host that crashes in between loses nothing,
the next host that attaches pulls it again and storing it is idempotent.

The session file travels the same way: the worker writes the agent's session to a
private local copy, and `pull` returns its bytes from the offset the host already
holds (whole lines only), which the host appends to the real session file on the
lead's machine before it applies the facts.
"""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from corral.agent import AgentEvent
from corral.orchestration.errors import ManagedAgentBusyError
from corral.orchestration.kernel.records import (
    AckCode,
    AskRecord,
    GenerationPhase,
    GenerationRecord,
    Presence,
    RequestRecord,
    ResultErrorCode,
    ResultRecord,
    ResultStatus,
)

__all__ = [
    "AckFact",
    "ActivityFact",
    "AskFact",
    "ChildStore",
    "EventFact",
    "ExtensionFact",
    "HostView",
    "LostFact",
    "Pulled",
    "RemoteFact",
    "RemoteStore",
    "ResultErrorFact",
    "ResultFact",
]

_PULL_MAX_BYTES = 4 * 1024 * 1024


class ChildStore(Protocol):
    """The store verbs a managed child uses (the kernel's `Generations` implements them)."""

    def get_generation(self, run_id: str) -> GenerationRecord | None: ...

    def generations(self, *, parent_run_id: str | None = None) -> tuple[GenerationRecord, ...]: ...

    def pending_ask(self, run_id: str) -> AskRecord | None: ...

    def get_result(self, request_id: str) -> ResultRecord | None: ...

    def record_ack(
        self,
        run_id: str,
        request_id: str,
        *,
        accepted: bool,
        code: AckCode | None = None,
        message: str | None = None,
    ) -> RequestRecord: ...

    def record_activity(self, run_id: str, *, at: int | None = None, tokens: int | None = None) -> None: ...

    def mark_presence(
        self, run_id: str, presence: Presence, *, diagnostic: str | None = None
    ) -> GenerationRecord: ...

    def create_ask(
        self, run_id: str, *, request_id: str, question: str, ask_id: str | None = None
    ) -> AskRecord: ...

    def store_result(
        self,
        run_id: str,
        request_id: str,
        *,
        status: ResultStatus,
        text: str | None = None,
        error_code: ResultErrorCode | None = None,
        error_message: str | None = None,
        context_tokens: int | None = None,
    ) -> ResultRecord: ...

    def record_result_error(self, run_id: str, request_id: str, *, message: str) -> GenerationRecord: ...


# --- facts (worker → host) ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AckFact:
    """The child acknowledged a request."""

    seq: int
    request_id: str
    accepted: bool
    code: AckCode | None
    message: str | None


@dataclass(frozen=True, slots=True)
class ActivityFact:
    """The agent made progress at `at` (ms)."""

    seq: int
    at: int


@dataclass(frozen=True, slots=True)
class AskFact:
    """The agent asked its owner (`ask_owner`)."""

    seq: int
    ask_id: str
    request_id: str
    question: str


@dataclass(frozen=True, slots=True)
class ResultFact:
    """The assignment's terminal result (held by the worker until the host confirms it)."""

    seq: int
    request_id: str
    status: ResultStatus
    text: str | None
    error_code: ResultErrorCode | None
    error_message: str | None
    context_tokens: int | None


@dataclass(frozen=True, slots=True)
class ResultErrorFact:
    """The result could not be recorded."""

    seq: int
    request_id: str
    message: str


@dataclass(frozen=True, slots=True)
class LostFact:
    """The agent's execution ended without a result."""

    seq: int
    diagnostic: str


@dataclass(frozen=True, slots=True)
class EventFact:
    """An agent event the host's extensions want (a `rate_limit_wait`), passed to their `agent_event`."""

    seq: int
    event: AgentEvent


@dataclass(frozen=True, slots=True)
class ExtensionFact:
    """A feature's own record (e.g. a budget's spend), passed to the host extensions' `remote_fact`."""

    seq: int
    payload: object


RemoteFact = (
    AckFact | ActivityFact | AskFact | ResultFact | ResultErrorFact | LostFact | EventFact | ExtensionFact
)


@dataclass(frozen=True, slots=True)
class Pulled:
    """One pull: session bytes from the host's offset, then the facts not yet confirmed."""

    session: bytes
    """Whole lines of the session file starting at the offset the host asked for."""
    session_end: int
    """The offset after them."""
    facts: tuple[RemoteFact, ...]
    finished: bool
    """The child's run ended (with or without a result)."""


@dataclass(frozen=True, slots=True)
class HostView:
    """What the host's store says about the generation (pushed with every request and pull)."""

    phase: GenerationPhase
    pending_ask_id: str | None
    pushed: tuple[object, ...] = ()
    """The host extensions' state for this run (their `remote_state`, e.g. its budget), newest."""


class RemoteStore:
    """A `ChildStore` for one child in a remote worker: reads from what it knows, writes as facts.

    Args:
        generation: The generation as the host launched it.
        task: Its task request.
        session_path: The worker's local copy of the session file (its bytes are streamed).
    """

    def __init__(self, generation: GenerationRecord, task: RequestRecord, session_path: Path) -> None:
        self.generation = generation
        self.session_path = session_path
        self._task_id = task.request_id
        self._requests: dict[str, RequestRecord] = {task.request_id: task}
        self._ask: AskRecord | None = None
        self._outbox: list[RemoteFact] = []
        self._seq = 0
        self._phase: GenerationPhase = generation.phase
        self._presence: Presence = generation.presence
        self._host: HostView | None = None
        self.result_held = False
        """A result fact is in the outbox (not yet confirmed by the host)."""
        self.confirmed = 0
        """The last fact number the host confirmed."""
        self.view_confirmed = 0
        """`confirmed` when the host's last view arrived: the view's pushed state holds every fact up
        to it (the host reads the view after it applied and confirmed them)."""

    # --- host side of the port -------------------------------------------------------------------

    def view(self, host: HostView) -> None:
        """Take the host's view of the generation (its phase; a pending ask it abandoned)."""
        self._host = host
        self.view_confirmed = self.confirmed
        if self._ask is not None and host.pending_ask_id is None and host.phase == "finalized":
            self._ask = None

    def known(self, request: RequestRecord) -> RequestRecord | None:
        """The stored acknowledgement of `request` when it was already applied here (a resend)."""
        found = self._requests.get(request.request_id)
        if found is not None and found.acknowledged:
            return found
        self._requests[request.request_id] = request
        return None

    def pull(self, offset: int) -> Pulled:
        """Session bytes from `offset` (whole lines, bounded) and every unconfirmed fact."""
        data = b""
        try:
            with open(self.session_path, "rb") as handle:
                handle.seek(offset)
                data = handle.read(_PULL_MAX_BYTES)
        except OSError:
            data = b""
        cut = data.rfind(b"\n") + 1
        data = data[:cut]
        return Pulled(session=data, session_end=offset + len(data), facts=tuple(self._outbox), finished=False)

    def confirm(self, seq: int) -> None:
        """The host holds every fact up to `seq` durably: drop them (a result is released here)."""
        self._outbox = [fact for fact in self._outbox if fact.seq > seq]
        self.confirmed = max(self.confirmed, seq)
        self.result_held = any(isinstance(fact, ResultFact) for fact in self._outbox)

    @property
    def pushed(self) -> tuple[object, ...]:
        """The host extensions' state from the host's last view (empty before the first)."""
        return () if self._host is None else self._host.pushed

    def emit_event(self, event: AgentEvent) -> None:
        """Record an agent event for the host's extensions."""
        self._emit(EventFact(self._next(), event))

    def emit_extension(self, payload: object) -> int:
        """Record a feature's own fact for the host's extensions; its number."""
        seq = self._next()
        self._emit(ExtensionFact(seq, payload))
        return seq

    def _emit(self, fact: RemoteFact) -> None:
        self._outbox.append(fact)

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def _record(self) -> GenerationRecord:
        phase = self._phase
        if self._host is not None and self._host.phase in ("finalized", "result_error"):
            phase = self._host.phase
        active = self._task_id if phase in ("active", "completed") else self.generation.active_request_id
        completed = self._task_id if phase == "completed" else self.generation.completed_request_id
        return dataclasses.replace(
            self.generation,
            phase=phase,
            presence=self._presence,
            active_request_id=active,
            completed_request_id=completed,
        )

    # --- ChildStore --------------------------------------------------------------------------------

    def get_generation(self, run_id: str) -> GenerationRecord | None:
        """The generation as this worker knows it."""
        return self._record() if run_id == self.generation.run_id else None

    def generations(self, *, parent_run_id: str | None = None) -> tuple[GenerationRecord, ...]:
        """Remote children never delegate: no child generations."""
        return ()

    def pending_ask(self, run_id: str) -> AskRecord | None:
        """The question this agent asked and that is not answered yet."""
        return self._ask if run_id == self.generation.run_id else None

    def get_result(self, request_id: str) -> ResultRecord | None:
        """Results of other generations are not known here."""
        return None

    def record_ack(
        self,
        run_id: str,
        request_id: str,
        *,
        accepted: bool,
        code: AckCode | None = None,
        message: str | None = None,
    ) -> RequestRecord:
        """Acknowledge a request (an accepted task makes the run active; an accepted reply answers the ask)."""
        now = _now()
        request = self._requests[request_id]
        if request.acknowledged:
            return request
        acked = dataclasses.replace(
            request, acknowledged_at=now, accepted=accepted, ack_code=code, ack_message=message
        )
        self._requests[request_id] = acked
        if accepted and request.kind == "task":
            self._phase = "active"
        if accepted and request.kind == "reply":
            self._ask = None
        self._emit(AckFact(self._next(), request_id, accepted, code, message))
        return acked

    def record_activity(self, run_id: str, *, at: int | None = None, tokens: int | None = None) -> None:
        """Progress (coalesced: only the latest unconfirmed one is kept)."""
        self._outbox = [fact for fact in self._outbox if not isinstance(fact, ActivityFact)]
        self._emit(ActivityFact(self._next(), at if at is not None else _now()))

    def mark_presence(
        self, run_id: str, presence: Presence, *, diagnostic: str | None = None
    ) -> GenerationRecord:
        """The run ended without a result (`lost`)."""
        if presence == "lost" and self._presence != "lost":
            self._presence = "lost"
            self._emit(LostFact(self._next(), diagnostic or "the agent's run ended"))
        return self._record()

    def create_ask(
        self, run_id: str, *, request_id: str, question: str, ask_id: str | None = None
    ) -> AskRecord:
        """Record a question (the host stores it with the same id).

        Raises:
            ManagedAgentBusyError: A question is already pending or the assignment is not active.
        """
        if self._phase != "active":
            raise ManagedAgentBusyError("no active assignment.", operation="ask_owner")
        if self._ask is not None:
            raise ManagedAgentBusyError(
                f"Agent {self.generation.label} is already waiting for an owner reply.", operation="ask_owner"
            )
        ask = AskRecord(
            ask_id=ask_id or str(uuid.uuid4()),
            run_id=run_id,
            request_id=request_id,
            question=question,
            state="pending",
            reply=None,
            created_at=_now(),
            resolved_at=None,
            delivered_entry_id=None,
        )
        self._ask = ask
        self._emit(AskFact(self._next(), ask.ask_id, request_id, question))
        return ask

    def store_result(
        self,
        run_id: str,
        request_id: str,
        *,
        status: ResultStatus,
        text: str | None = None,
        error_code: ResultErrorCode | None = None,
        error_message: str | None = None,
        context_tokens: int | None = None,
    ) -> ResultRecord:
        """Hold the result for the host (the run counts as completed here from now on)."""
        self._session_synced()
        self._phase = "completed"
        self.result_held = True
        self._emit(
            ResultFact(self._next(), request_id, status, text, error_code, error_message, context_tokens)
        )
        return ResultRecord(
            request_id=request_id,
            run_id=run_id,
            owner_session_id=self.generation.owner_session_id,
            status=status,
            text=text,
            artifact_path=None,
            error_code=error_code,
            error_message=error_message,
            context_tokens=context_tokens,
            created_at=_now(),
            delivery="pending",
            delivered_entry_id=None,
            delivered_at=None,
        )

    def record_result_error(self, run_id: str, request_id: str, *, message: str) -> GenerationRecord:
        """The result could not be recorded."""
        self._phase = "result_error"
        self._emit(ResultErrorFact(self._next(), request_id, message))
        return self._record()

    def _session_synced(self) -> None:
        """Make the local session copy durable before the result that follows it."""
        try:
            fd = os.open(self.session_path, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)


def _now() -> int:
    return int(time.time() * 1000)
