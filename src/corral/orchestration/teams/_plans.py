"""The teams core's plans: a validated spawn waiting for admission, and a launched agent's in-memory facts.

Shared by the spawn path (`_teams.py`) and control (`_control.py`); kept apart so neither imports the other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from corral.agent import AgentSession
    from corral.agent.tools import ReadGuard

    from ._capacity import Admission
    from ._member import TeamChild
    from ._tiers import Tier
    from .checkpoints.records import CheckpointPolicy, CheckpointRecord
    from .checks._checks import CheckSpec
    from .checks._fingerprint import SourceFingerprint

__all__ = ["_Live", "_Prepared"]


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

    child: TeamChild
    admission: Admission | None
    lead_session_id: str
    context_path: Path | None = None
    source_before: SourceFingerprint | None = None
    parent_checkpoint: CheckpointRecord | None = None
