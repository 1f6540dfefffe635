"""What crosses the network between a teams member on a Ray worker and the lead's host.

Each call of a member tool (`send_message`, `report_and_exit`, a claim, …) on the worker becomes a
`MemberCall` in the run's outbox (an extension fact of `kernel/_remote.py`); the host applies it
through its teams services and pushes the `MemberAnswer` back with every pull, inside the run's
`MemberPush`, together with the messages waiting in the member's inbox. The worker tells the host
what it took (`MemberTaken`), so answers and messages stop being pushed. All plain data (Ray pickles
it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "MemberAnswer",
    "MemberCall",
    "MemberInterrupted",
    "MemberMessage",
    "MemberPush",
    "MemberTaken",
    "MemberVerb",
]

MemberVerb = Literal[
    "send_message",
    "read_inbox",
    "submit_report",
    "finish_without_report",
    "claim_files",
    "release_files",
    "list_file_claims",
    "run_lost",
]


@dataclass(frozen=True, slots=True)
class MemberCall:
    """One member verb to apply on the lead's host (exactly once per `call_id`)."""

    call_id: str
    """Chosen by the worker; a call re-sent after a host restart keeps it."""
    verb: MemberVerb
    args: tuple[object, ...]
    """The verb's typed arguments (requests of `teams/commands.py`, paths, a fallback report)."""
    tokens: int
    """The run's tokens so far (its report records them)."""
    cost: float
    """The run's cost so far (USD)."""


@dataclass(frozen=True, slots=True)
class MemberAnswer:
    """The host's answer to one call: its typed result, or the error it raised."""

    call_id: str
    value: object = None
    error: tuple[str, str] | None = None
    """`(category, message)` of the `OrchestrationError` the verb raised, re-raised on the worker."""
    prompt: str | None = None
    """A repair turn the run is to take next (a failed assigned check that may still be repaired)."""


@dataclass(frozen=True, slots=True)
class MemberMessage:
    """A message for the member, stored in its inbox on the lead's host, to inject into its session."""

    message_id: str
    text: str


@dataclass(frozen=True, slots=True)
class MemberPush:
    """The host's teams state for one Ray member, pushed with every pull."""

    answers: tuple[MemberAnswer, ...]
    known: frozenset[str]
    """Every call id the host holds (answered or in flight): a worker re-sends a confirmed call the
    host does not know (the host that took it died before answering)."""
    messages: tuple[MemberMessage, ...]
    interrupts: tuple[str, ...] = ()
    """The lead's `interrupt_teammate` requests not answered yet (by token): each is applied once."""


@dataclass(frozen=True, slots=True)
class MemberInterrupted:
    """How the member's worker applied one interrupt (`TeamChild.interrupt`'s outcome)."""

    token: str
    status: str
    """`interrupted`, `pending` or `no_command`."""


@dataclass(frozen=True, slots=True)
class MemberTaken:
    """The worker took these answers and injected these messages (the host stops pushing them)."""

    call_ids: tuple[str, ...]
    message_ids: tuple[str, ...]
