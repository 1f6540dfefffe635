"""Handoff: move a live in-process agent onto a worker runtime at a safe point (`ComposedHost.handoff`).

The target is a tmux pane (`corral worker`) or a Ray worker actor (`runtime="ray"`). The same
generation, session file, assignment and (for a teams agent) name, claims and slot go on in the worker;
nothing is re-acknowledged or re-sent.

1. **Refuse** (nothing changes) unless the target runtime is there and can start a worker here
   (`WorkerStart.unavailable`: tmux installed, Ray installed) and the generation is an active,
   live in-process agent of this host that does not delegate, has no pending question or
   unacknowledged request, and that no host extension keeps (`HostExtension.may_hand_off`: teams
   keeps nested helpers, agents with a running check or an accepted report, and agents being
   stopped). A checkpointed teams agent moves too:
   its owner's host saves the checkpoint before it delivers the report the worker stored.
2. **Safe point**: the child is marked `handing_off` (`ManagedChild.begin_handoff`:
   requests are answered `busy`; a teams agent's messages go to its store inbox), its model or
   tool call is aborted like an interrupt, and its run ends at the settle — storing nothing,
   reporting no loss, keeping claims. Prompts it had not sent yet are carried over. The session
   is flushed and closed (its writer lock released).
3. **Transfer**: `Generations.transfer_runtime` flips the generation to the target kind in one
   checked transaction, then that runtime's start step (`host.workers.of(kind)`: `WorkerStart.place`,
   `WorkerStart.ready`, as the launch pipeline uses it) starts a worker in resume mode: the
   description (`host/protocol.py`: a `WorkerLaunch` of a `BuiltAgent`) holds the agent's exact
   system prompt, model, thinking level and built-in tools, its one prompt there (`resume_prompt`,
   worded by `host/texts.py` from a `HandedOff` fact (`host/notices.py`): the target runtime
   and the carried prompts), and the parts extensions add (`HostExtension.handoff_launch`: a teams
   member's row, the workspace a remote node must share). A tmux worker reads
   it from its launch file and records its readiness; a Ray worker gets it with the session
   file's bytes, and the host keeps the real session file and appends what the worker streams.
4. **Failure** after the safe point cannot go back in-process (that run is gone): a worker that
   did not become ready is removed once its identity is proven, the generation is marked `lost`
   with a diagnostic, and the result is `failed`.

From then on the host watches it as a worker run; results, reports and questions arrive through
the store (Ray: pulled into it first) as for any worker.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from corral.agent.tools import ALL_TOOL_NAMES, BashTool
from corral.orchestration.errors import OrchestrationError
from corral.orchestration.host import texts
from corral.orchestration.host.notices import HandedOff
from corral.orchestration.kernel._faults import fault_point
from corral.runtime import PaneNotReady, RollbackFailed, RuntimeError_

if TYPE_CHECKING:
    from corral.orchestration.host._host import Host
    from corral.orchestration.host.protocol import BuiltAgent
    from corral.orchestration.kernel._child import ManagedChild
    from corral.orchestration.kernel.records import GenerationRecord
    from corral.settings import Settings

__all__ = ["HandoffResult", "HandoffStatus", "handoff"]

HandoffStatus = Literal["moved", "refused", "failed"]
"""`moved`: runs on the worker now; `refused`: nothing changed; `failed`: the agent is lost."""

_SETTLE_S = 10.0
_DEFAULT_READY_S = 60.0


@dataclass(frozen=True, slots=True)
class HandoffResult:
    """What `ComposedHost.handoff` did."""

    status: HandoffStatus
    reason: str
    """A short code: `moved`, or why it was refused (`runtime_unavailable`, `tmux_unavailable`,
    `ray_unavailable`, `not_inprocess`, `not_active`, `delegating`, `nested_helper`, `ask_pending`,
    `request_pending`, `check_running`, `report_accepted`, `stopping`, `finished`) or failed (`not_settled`, `start_failed`, `pane_not_ready`, `rollback_failure`)."""
    message: str
    """One line for the person."""
    run_id: str
    pane_id: str | None = None
    """Where it runs now (`moved`): the tmux pane (`%7`) or the Ray worker (`ray:<actor>@<node ip>`)."""
    runtime: str = "tmux"
    """The runtime the handoff targeted (`tmux`, `ray`)."""


def handoff_runtime(settings: Settings, runtime: str | None = None) -> str:
    """The runtime a handoff targets: `runtime` when given, else the `runtime` setting when it names a
    worker runtime (`tmux`, `ray`), else `tmux`."""
    if runtime is not None:
        return runtime
    return settings.runtime if settings.runtime != "inprocess" else "tmux"


async def handoff(
    host: Host,
    run_id: str,
    *,
    runtime: str = "tmux",
    ready_timeout: float = _DEFAULT_READY_S,
) -> HandoffResult:
    """Move generation `run_id` from this host's in-process runtime onto the worker runtime `runtime`.

    The prompt the agent continues with on the worker is `host/texts.py`'s `handed_off`. The work runs as a
    host background task, so cancelling the caller never leaves a half-moved
    agent, and the owner is not reported quiet while the move is in flight.
    """
    return await asyncio.shield(host.spawn_background(_handoff(host, run_id, runtime, ready_timeout)))


def _refusal(host: Host, run_id: str, runtime: str) -> tuple[str, str] | None:
    """Why `run_id` cannot be moved to `runtime` now (`(reason, message)`), else `None`. Reads only."""
    kernel = host.kernel
    generation = kernel.get_generation(run_id)
    if runtime == "inprocess" or not host.runtime.offers(runtime):
        return (
            "runtime_unavailable",
            f"There is no {runtime} worker runtime here; the agent stays in-process.",
        )
    unavailable = host.workers.of(runtime).unavailable()
    if unavailable is not None:
        return f"{runtime}_unavailable", f"{unavailable}; the agent stays in-process."
    run = host.runs.get(run_id)
    child = None if run is None else run.child
    handle = None if run is None else run.runtime_handle
    if generation is None or not generation.live:
        return "not_found", f"No live agent generation {run_id}."
    label = generation.label
    if (
        generation.runtime_kind != "inprocess"
        or child is None
        or handle is None
        or handle.kind != "inprocess"
        or generation.host_id != host.host_id
    ):
        return "not_inprocess", f"Agent {label} is not an in-process agent of this host."
    if (
        generation.phase != "active"
        or generation.presence != "live"
        or not child.acknowledged.is_set()
        or child.finished.is_set()
        or child.handing_off
    ):
        return "not_active", f"Agent {label} has no active assignment running here ({generation.phase})."
    if generation.delegating or child.delegating:
        return "delegating", f"Agent {label} may delegate; delegating agents run in-process."
    if kernel.pending_ask(run_id) is not None:
        return "ask_pending", f"Agent {label} waits for its owner's reply; reply first."
    if any(r.kind != "task" and not r.acknowledged for r in kernel.requests(run_id)):
        return "request_pending", f"Agent {label} has an unacknowledged request; retry in a moment."
    for extension in host.extensions:
        refusal = extension.may_hand_off(run_id, runtime)
        if refusal is not None:
            return refusal
    return None


def _built_agent(host: Host, child: ManagedChild) -> BuiltAgent:
    """The agent exactly as it runs here, for its worker to rebuild (`agent_from_description`)."""
    from corral.orchestration.host.protocol import BuiltAgent
    from corral.skills import skill_names_of

    agent = child.agent
    info = agent.model.info
    servers = host.mcp_servers
    return BuiltAgent(
        model=f"{info.provider}/{info.id}",
        thinking=agent.thinking_level,
        system_prompt=agent.system_prompt,
        tools=tuple(tool.name for tool in agent.tools if tool.name in ALL_TOOL_NAMES),
        sandbox=any(isinstance(tool, BashTool) and tool.sandbox is not None for tool in agent.tools),
        ask_owner=any(tool.name == "ask_owner" for tool in agent.tools),
        skills=skill_names_of(agent),
        mcp=None if servers is None else servers.grant_of(agent.session.session_id),
    )


async def _handoff(host: Host, run_id: str, runtime: str, ready_timeout: float) -> HandoffResult:
    refusal = _refusal(host, run_id, runtime)
    if refusal is not None:
        return HandoffResult("refused", refusal[0], refusal[1], run_id, runtime=runtime)
    kernel = host.kernel
    run = host.runs.get(run_id)
    assert run is not None and run.child is not None and run.runtime_handle is not None  # `_refusal` checked
    child, handle = run.child, run.runtime_handle
    generation = kernel.get_generation(run_id)
    assert generation is not None
    label = generation.label

    # --- the safe point: from here on the in-process run ends without a result ---
    child.begin_handoff()
    try:
        await asyncio.wait_for(asyncio.shield(_settle(child)), _SETTLE_S)
    except TimeoutError:
        await asyncio.wait({asyncio.ensure_future(host.runtime.stop(handle))}, timeout=_SETTLE_S)
    if not child.finished.is_set():
        return _lost(host, generation, runtime, "not_settled", "its in-process run did not stop", None)
    steering, follow_up = child.agent.clear_queue()
    carried = [*child.take_pending(), *steering, *follow_up]
    session = child.agent.session
    session_path = session.path
    with contextlib.suppress(Exception):
        session.flush()
    session.close()  # the worker takes the writer lock
    host.detach_child(run_id)
    current = kernel.get_generation(run_id)
    if current is not None and current.phase != "active":
        # It finished in the same instant (a report stored by its last tool call): delivered as usual.
        host.changed()
        return HandoffResult(
            "refused",
            "finished",
            f"Agent {label} finished before it could be moved.",
            run_id,
            runtime=runtime,
        )
    # --- transfer and start the worker (the runtime's start step, as the launch pipeline uses it) ---
    workers = host.workers.of(runtime)
    task = kernel.get_request(child.task.request_id) or child.task
    from corral.orchestration.host.protocol import WorkerLaunch

    launch = WorkerLaunch(
        _built_agent(host, child),
        resume_prompt=texts.handed_off(HandedOff(runtime=runtime, carried=tuple(carried))),
        context_retirement=child.context_retirement,
    )
    for extension in host.extensions:
        part = extension.handoff_launch(generation, runtime)
        if part is not None:
            launch = launch.with_part(part)
    with host.placing_run(run_id):  # until the worker is recorded, recovery must not settle this generation
        try:
            if session_path is None:
                raise RuntimeError_(f"agent {label} has no session file to hand to its worker")
            moved = kernel.transfer_runtime(
                run_id, owner_session_id=generation.owner_session_id, host_id=host.host_id, runtime=runtime
            )
            fault_point("after_runtime_transfer")
            started = await workers.place(moved, task, session_path=session_path, launch=launch)
        except (OrchestrationError, RuntimeError_, OSError) as exc:
            return _lost(
                host, generation, runtime, "start_failed", f"the worker could not start: {exc}", None
            )

    try:
        await workers.ready(moved, started, timeout=ready_timeout)
    except PaneNotReady as exc:
        detail = f"the worker in pane {started.runtime_id} was not ready: {exc}\n{exc.diagnostic}"
        return _lost(host, generation, runtime, "pane_not_ready", detail, None)
    except RollbackFailed as exc:
        detail = f"the worker was not ready ({exc.primary}) and its pane could not be removed ({exc.cleanup})"
        return _lost(host, generation, runtime, "rollback_failure", detail, started.runtime_id)
    host.changed()
    where = (
        f"in tmux pane {started.runtime_id}"
        if runtime == "tmux"
        else f"on {runtime} worker {started.runtime_id}"
    )
    return HandoffResult(
        "moved",
        "moved",
        f"Agent {label} now runs {where}; same session and assignment.",
        run_id,
        pane_id=started.runtime_id,
        runtime=runtime,
    )


async def _settle(child: ManagedChild) -> None:
    """Abort the current model or tool call (like an interrupt) and wait until the run ended."""
    await child.agent.abort()
    child.wake()
    await child.finished.wait()


def _lost(
    host: Host,
    generation: GenerationRecord,
    runtime: str,
    reason: str,
    detail: str,
    pane_id: str | None,
) -> HandoffResult:
    """The in-process run is gone and no worker took over: mark the generation lost (never two runners)."""
    run_id = generation.run_id
    if pane_id is None:
        host.workers.untrack(run_id)  # the pane is gone; a kept pane stays tracked so `close` can remove it
    diagnostic = f"handoff to {runtime} failed: {detail}"
    with contextlib.suppress(OrchestrationError):
        host.kernel.mark_presence(run_id, "lost", diagnostic=diagnostic)
    for extension in host.extensions:
        extension.lost(run_id, diagnostic)
    host.changed()
    return HandoffResult(
        "failed",
        reason,
        f"Agent {generation.label} could not be moved and is lost: {detail}",
        run_id,
        pane_id=pane_id,
        runtime=runtime,
    )
