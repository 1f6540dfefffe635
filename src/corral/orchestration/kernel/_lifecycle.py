"""The lifecycle projection: public states and `available_actions`, as pure functions.

Inputs are one `StoreSnapshot` (durable facts, read in one transaction) plus
one `Observation` per generation (runtime evidence: presence, the runtime's
lifecycle, whether the session file is materialized). Nothing here does I/O,
so the same inputs always give the same projection (`spec/agent-api-detail.md`
§3):

* **Control state** of a live generation (§3.1): pending completion, handoff
  or result error → `settling`; an active request maps the runtime lifecycle
  (`working` → `working`, a pending ask → `blocked` unless the lifecycle is
  unknown, `blocked` → `blocked`, `idle`/`done` → `settling`, else
  `unknown`); without one, `idle`/`done` → `settling`, else `unknown`. A
  `settling` delegating agent with an active request whose direct children
  are unresolved is shown `blocked` (the children gate).
* **Final state**: completion pending or result error → `settling`; else
  presence `lost` → `lost`; `unknown` → `unknown`; else the control state.
* **Ownership**: the parent of a generation is the unique live generation
  whose session is the child's owner session. Ambiguous, cyclic or unrooted
  ancestry is never attributed to anyone. The lead sees its tree
  transitively; a delegating agent sees its direct children only.
* **Actions** (§3.3): only for the direct owner; never `delegate` or
  `continue`; `unknown` presence → none; `lost` → `transcript`/`close` at most.
* **Stale advisory** (§3.4): a live `working` generation with an active
  request and no qualifying activity for `STALE_AFTER_MS` gets `stale` and
  `inactive_ms`; it never changes the state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Literal

from corral.orchestration.kernel.records import (
    AskRecord,
    GenerationRecord,
    Presence,
    StoreSnapshot,
)

__all__ = [
    "ACTION_ORDER",
    "STALE_AFTER_MS",
    "AgentAction",
    "AgentView",
    "ControllerKind",
    "ControllerScope",
    "DisplayState",
    "Observation",
    "Ownership",
    "PublicState",
    "RuntimeLifecycle",
    "control_state",
    "display_state",
    "effective_presence",
    "project_agents",
    "resolve_ownership",
]

PublicState = Literal["working", "blocked", "settling", "unknown", "lost"]
"""The states `list` reports."""

DisplayState = Literal["starting", "working", "blocked", "settling", "unknown", "lost"]
"""`PublicState` plus `starting`, which only the UI shows (task not yet acknowledged)."""

RuntimeLifecycle = Literal["idle", "working", "blocked", "done", "unknown"]
"""What the runtime says the agent session is doing."""

AgentAction = Literal["inspect", "transcript", "steer", "interrupt", "reply", "close"]
"""Actions `available_actions` may list (never `delegate`, `continue` or `list`)."""

ControllerKind = Literal["lead", "managed-agent"]
"""Who is asking: the lead, or a delegating managed agent."""

ACTION_ORDER: tuple[AgentAction, ...] = ("inspect", "transcript", "steer", "interrupt", "reply", "close")
"""The order actions are listed in."""

STALE_AFTER_MS = 10 * 60 * 1000
"""Inactivity after which a working agent is marked `stale` (advisory only)."""


@dataclass(frozen=True, slots=True)
class ControllerScope:
    """The controller a projection is computed for."""

    session_id: str
    """The controller's own session id (owners are matched against it)."""
    _: KW_ONLY
    kind: ControllerKind = "lead"
    """`lead` sees its tree transitively; `managed-agent` sees direct children only."""


@dataclass(frozen=True, slots=True)
class Observation:
    """Runtime evidence about one generation at projection time."""

    presence: Presence = "unknown"
    """Presence from the runtime (`unknown` when the runtime could not tell)."""
    lifecycle: RuntimeLifecycle = "unknown"
    """The runtime's view of the agent session's activity."""
    transcript_ready: bool = False
    """The session file exists as a regular, non-empty file."""


@dataclass(frozen=True, slots=True)
class Ownership:
    """Resolved ancestry of the live generations in one snapshot."""

    parents: Mapping[str, str | None]
    """Run id → parent run id, or `None` for a generation owned by an unmanaged session (a root)."""
    unattributed: frozenset[str]
    """Run ids whose ancestry is ambiguous, cyclic or unrooted (attributed to nobody)."""

    def children(self, run_id: str) -> tuple[str, ...]:
        """Attributed direct children of `run_id`."""
        return tuple(child for child, parent in self.parents.items() if parent == run_id)

    def descendants(self, run_id: str) -> tuple[str, ...]:
        """Attributed descendants of `run_id`, children before grandchildren."""
        found: list[str] = []
        frontier = [run_id]
        while frontier:
            current = frontier.pop(0)
            for child in self.children(current):
                if child not in found:
                    found.append(child)
                    frontier.append(child)
        return tuple(found)


@dataclass(frozen=True, slots=True)
class AgentView:
    """The projection of one generation for one controller (the core of a `list` record)."""

    generation: GenerationRecord
    """The durable row."""
    state: PublicState
    """Public state."""
    available_actions: tuple[AgentAction, ...]
    """What the controller may do now (advisory; every action rechecks)."""
    _: KW_ONLY
    presence: Presence
    """Effective presence (recorded verdict combined with the observation)."""
    direct: bool
    """Whether the controller is the direct owner."""
    parent_run_id: str | None = None
    """Attributed parent generation, if any."""
    parent_label: str | None = None
    """Its label (set for visible descendants)."""
    children_gated: bool = False
    """`blocked` only because direct children are unresolved."""
    pending_ask: AskRecord | None = None
    """The pending `ask_owner` question, if any."""
    stale: bool = False
    """Working without qualifying activity for `STALE_AFTER_MS` (advisory)."""
    inactive_ms: int | None = None
    """Milliseconds since the last activity, when `stale`."""
    children: tuple[str, ...] = field(default=())
    """Run ids of attributed direct children."""


def effective_presence(recorded: Presence, observed: Presence) -> Presence:
    """Combine the store's verdict with the runtime's observation, failing closed.

    A recorded `lost` is final; any `unknown` wins over `live`; an observed
    `lost` proves absence only when nothing is unknown.
    """
    if recorded == "lost":
        return "lost"
    if recorded == "unknown" or observed == "unknown":
        return "unknown"
    return observed


def control_state(
    *,
    active: bool,
    lifecycle: RuntimeLifecycle,
    waiting_for_owner: bool,
    completion_pending: bool,
    handoff_pending: bool,
    recovery_pending: bool,
) -> PublicState:
    """The control state of a live generation (§3.1), before the children gate."""
    if completion_pending or handoff_pending or recovery_pending:
        return "settling"
    if active:
        if lifecycle == "working":
            return "working"
        if waiting_for_owner:
            return "unknown" if lifecycle == "unknown" else "blocked"
        if lifecycle == "blocked":
            return "blocked"
        if lifecycle in ("idle", "done"):
            return "settling"
        return "unknown"
    return "settling" if lifecycle in ("idle", "done") else "unknown"


def resolve_ownership(generations: Sequence[GenerationRecord]) -> Ownership:
    """Attribute every live generation to its unique parent, or to nobody.

    The parent is the unique other live generation whose `session_id` equals
    the child's `owner_session_id`; none makes it a root (owned by an unmanaged
    session). Several candidates, a recorded `parent_run_id` that disagrees,
    a cycle, or an unattributed ancestor make it unattributed.
    """
    live = [g for g in generations if g.live]
    by_session: dict[str, list[GenerationRecord]] = {}
    for generation in live:
        by_session.setdefault(generation.session_id, []).append(generation)
    direct_parent: dict[str, str | None] = {}
    bad: set[str] = set()
    for generation in live:
        candidates = [
            g for g in by_session.get(generation.owner_session_id, []) if g.run_id != generation.run_id
        ]
        if len(candidates) > 1:
            bad.add(generation.run_id)
        elif candidates:
            parent = candidates[0]
            if generation.parent_run_id not in (None, parent.run_id):
                bad.add(generation.run_id)
            else:
                direct_parent[generation.run_id] = parent.run_id
        elif generation.parent_run_id is not None:
            bad.add(generation.run_id)  # its recorded owner generation is gone: unrooted
        else:
            direct_parent[generation.run_id] = None
    parents: dict[str, str | None] = {}
    unattributed: set[str] = set(bad)
    for generation in live:
        chain: list[str] = []
        current: str | None = generation.run_id
        ok = True
        while current is not None:
            if current in bad or current in chain or current not in direct_parent:
                ok = False
                break
            chain.append(current)
            current = direct_parent[current]
        if ok:
            parents[generation.run_id] = direct_parent[generation.run_id]
        else:
            unattributed.add(generation.run_id)
    return Ownership(parents=parents, unattributed=frozenset(unattributed))


def _visible(
    controller: ControllerScope, by_id: Mapping[str, GenerationRecord], ownership: Ownership
) -> dict[str, bool]:
    """Run id → direct, for every generation the controller may see."""
    visible: dict[str, bool] = {}
    for run_id, generation in by_id.items():
        if run_id in ownership.unattributed or generation.owner_session_id != controller.session_id:
            continue
        visible[run_id] = True
    if controller.kind == "lead":
        frontier = list(visible)
        while frontier:
            for child in ownership.children(frontier.pop(0)):
                if child not in visible:
                    visible[child] = False
                    frontier.append(child)
    return visible


def display_state(view: AgentView) -> DisplayState:
    """What the UI shows: `starting` while the task is unacknowledged, else the public state."""
    if view.generation.phase == "starting" and view.state == "settling":
        return "starting"
    return view.state


def project_agents(
    snapshot: StoreSnapshot,
    observations: Mapping[str, Observation],
    controller: ControllerScope,
    *,
    now_ms: int,
) -> tuple[AgentView, ...]:
    """Project every generation visible to `controller`, oldest first.

    Args:
        snapshot: One consistent read of the store.
        observations: Runtime evidence by run id; a missing entry means nothing is
            known (presence `unknown`).
        controller: Who is asking.
        now_ms: The current time in Unix milliseconds (for the stale advisory).

    Returns:
        One `AgentView` per visible generation (lead: its whole tree; delegating
        agent: its direct children).
    """
    by_id = {g.run_id: g for g in snapshot.generations if g.live}
    ownership = resolve_ownership(list(by_id.values()))
    asks = {ask.run_id: ask for ask in snapshot.pending_asks}
    handoff = {request.run_id for request in snapshot.unacknowledged}
    undelivered = {result.run_id for result in snapshot.undelivered}

    def presence_of(run_id: str) -> Presence:
        observation = observations.get(run_id, Observation())
        return effective_presence(by_id[run_id].presence, observation.presence)

    def unresolved(run_id: str) -> bool:
        generation = by_id[run_id]
        return generation.phase in ("starting", "active", "result_error") or run_id in undelivered

    def closable_node(run_id: str) -> bool:
        return presence_of(run_id) in ("live", "lost") and run_id not in undelivered

    visible = _visible(controller, by_id, ownership)
    views: list[AgentView] = []
    for run_id, generation in by_id.items():
        if run_id not in visible:
            continue
        direct = visible[run_id]
        observation = observations.get(run_id, Observation())
        presence = presence_of(run_id)
        ask = asks.get(run_id)
        completion_pending = run_id in undelivered
        recovery_pending = generation.result_error is not None
        active = generation.active_request_id is not None and generation.phase == "active"
        children = ownership.children(run_id)
        state = control_state(
            active=active,
            lifecycle=observation.lifecycle,
            waiting_for_owner=ask is not None,
            completion_pending=completion_pending,
            handoff_pending=run_id in handoff,
            recovery_pending=recovery_pending,
        )
        gated = (
            state == "settling"
            and active
            and not completion_pending
            and run_id not in handoff
            and not recovery_pending
            and any(unresolved(child) for child in children)
        )
        if gated:
            state = "blocked"
        # A stored result settles without the agent's host; a result that could not be written waits
        # for one (its host, or the owner's next attach settles it failed): without it, presence shows.
        if completion_pending or (recovery_pending and presence == "live"):
            state = "settling"
            gated = False
        elif presence != "live":
            state = presence
            gated = False

        actions: list[AgentAction] = []
        if direct and presence == "live":
            actions.append("inspect")
        if direct and presence in ("live", "lost") and observation.transcript_ready:
            actions.append("transcript")
        if direct and presence == "live" and active and ask is None:
            if state == "working" or gated:
                actions.append("steer")
            if state == "working":
                actions.append("interrupt")
        if (
            direct
            and presence == "live"
            and active
            and ask is not None
            and ask.request_id == generation.active_request_id
        ):
            actions.append("reply")
        if direct and closable_node(run_id):
            scope_ok = True
            if controller.kind == "lead":
                scope_ok = not ownership.unattributed and all(
                    closable_node(descendant) for descendant in ownership.descendants(run_id)
                )
            if scope_ok:
                actions.append("close")

        stale = False
        inactive_ms: int | None = None
        if presence == "live" and state == "working" and active and generation.last_activity_at is not None:
            idle_for = now_ms - generation.last_activity_at
            if idle_for >= STALE_AFTER_MS:
                stale, inactive_ms = True, idle_for
        parent_id = ownership.parents.get(run_id)
        views.append(
            AgentView(
                generation=generation,
                state=state,
                available_actions=tuple(a for a in ACTION_ORDER if a in actions),
                presence=presence,
                direct=direct,
                parent_run_id=parent_id,
                parent_label=None if parent_id is None else by_id[parent_id].label,
                children_gated=gated,
                pending_ask=ask,
                stale=stale,
                inactive_ms=inactive_ms,
                children=children,
            )
        )
    return tuple(views)
