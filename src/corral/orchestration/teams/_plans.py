"""The teams core's plans and its shared context.

A validated spawn waiting for admission (`_Prepared`), a launched agent's in-memory facts
(`_Live`), and what the teams services share (`TeamContext`: the maps, the features, a run's live
`TeamChild` by run id and the lead check of a lead's tool call). Shared by the spawn path
(`_teams.py`), control (`_control.py`) and reports (`reports/_team_reports.py`); kept apart so
none of them imports another for its types.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from corral.orchestration.errors import InvalidRequestError

if TYPE_CHECKING:
    from corral.agent import AgentSession
    from corral.agent.tools import ReadGuard
    from corral.orchestration.host._host import Host
    from corral.orchestration.kernel import Caller

    from ._capacity import Admission, CapacityController, Reservation
    from ._member import TeamChild
    from ._repositories import TeamsRepositories
    from ._tiers import Tier
    from .checkpoints._checkpoints import Checkpoints
    from .checkpoints.records import CheckpointPolicy, CheckpointRecord
    from .checks._checks import CheckSpec
    from .checks._fingerprint import SourceFingerprint
    from .groups._groups import CompletionGroups
    from .repair._verification import Verifier

__all__ = ["TeamContext", "_Live", "_Prepared"]


@dataclass(slots=True)
class _Prepared:
    """A validated spawn, ready to launch once admitted."""

    lead_session_id: str
    owner: AgentSession
    name: str
    tier: Tier
    requested_tier: str
    model_ref: str
    thinking: str
    model_source: str
    cwd: Path
    prompt: str
    session_context: Literal["none", "lazy"]
    metadata: dict[str, Any] | None
    allow_nested: bool
    depth: int = 0
    parent: TeamChild | None = None
    queued_at: float = field(default_factory=time.time)
    group_id: str | None = None
    slot_id: str | None = None
    checkpoint: CheckpointPolicy | None = None
    continue_from: str | None = None
    checks: tuple[CheckSpec, ...] = ()
    max_repair_attempts: int = 0
    read_guard: ReadGuard | None = None
    """The read sandbox's view of `cwd`, built at admission; shared by a swarm's members that
    start together (one view per directory, not per agent), rebuilt for a queued start."""


@dataclass(slots=True)
class _Live:
    """In-memory facts of a launched teams agent (beside its store rows)."""

    run: TeamChild
    """The teams side of its run (it holds the kernel's child)."""
    admission: Admission | None
    lead_session_id: str
    context_path: Path | None = None
    source_before: SourceFingerprint | None = None
    parent_checkpoint: CheckpointRecord | None = None


@dataclass(frozen=True, slots=True)
class TeamContext:
    """What the teams services share (one per host): the host, the runs and queue, the features.

    `Teams` builds it and hands it to its services (`TeamControl`, `TeamReports`); the maps are
    the same objects everywhere, so a run launched by the spawn path is live for control at once.
    """

    host: Host
    repos: TeamsRepositories
    """The teams features' repositories over the host's database."""
    capacity: Callable[[str], CapacityController]
    """The team's capacity controller, by lead session id (made on first use)."""
    live: dict[str, _Live]
    """Launched agents by run id (until their generation is released)."""
    pending: dict[tuple[str, str], tuple[Reservation, _Prepared]]
    """Queued spawns by (lead session, name)."""
    lead_sessions: dict[str, AgentSession]
    """The leads that spawned here, by session id."""
    groups: CompletionGroups
    checkpoints: Checkpoints
    verifier: Verifier
    checkpoint_saves: dict[str, asyncio.Future[None]]
    """Checkpoint saves in flight, by run."""

    def child(self, run_id: str) -> TeamChild | None:
        """The live in-process run of `run_id`, if any (a run moved to a tmux pane has none)."""
        live = self.live.get(run_id)
        return None if live is None or live.run.child.handing_off else live.run

    def lead_id(self, caller: Caller) -> str:
        """The lead session of a lead's tool call.

        Raises:
            InvalidRequestError: the caller is not a lead session of this host.
        """
        if caller.scope != "lead" or not self.host.runs.is_lead(caller.session_id):
            raise InvalidRequestError("Only the lead session can use this tool.")
        return caller.session_id
