"""Spawning teams agents (`Spawner`, a service `Teams` composes): `spawn_agent`, `spawn_swarm_agents`.

* **Spawn** (`spawn`, `spawn_swarm`, the nested variants): tier → model
  (`resolve_tier_model`), name rules and same-name replacement, then a
  capacity reservation. Admitted at once → launched before the call returns;
  at capacity → queued, and a background task launches it when a slot frees.
  The call never waits for the work.
* **Placement**: a spawn runs in this process, or on a Ray cluster with `runtime = "ray"`
  (`runtime_for`); a spawn placed on Ray waits, holding its slot, until the cluster has room,
  and a queued spawn starts only once its model's endpoint is open.
* **Launch**: one store transaction creates the generation, its task and the
  team member row (`_launch.py`); the child gets its tools by role (read tiers: no
  write/edit, `bash` in the read-only sandbox when it works; write tiers: the
  claim tools; eligible writers: the restricted spawn tools) and runs as a
  `TeamChild` on the in-process runtime or on a Ray worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from corral.agent.tools import ReadGuard, ReadOnlySandbox, SandboxStatus, read_sandbox_policy
from corral.errors import CorralError
from corral.llm import current_rate_limiter
from corral.orchestration.errors import InvalidRequestError, OrchestrationError, error_context
from corral.orchestration.teams import texts
from corral.orchestration.teams._errors import AdmissionCancelledError, TierModelError
from corral.orchestration.teams._plans import _Prepared
from corral.orchestration.teams._tiers import TierFavorites, resolve_tier, resolve_tier_model
from corral.orchestration.teams.checkpoints.records import (
    CheckpointPolicy,
    check_checkpoint_prompt,
    parse_checkpoint_ref,
)
from corral.orchestration.teams.notices import QueuedStartFailed
from corral.orchestration.teams.results import SpawnResult, SwarmFailure, SwarmResult
from corral.orchestration.teams.roster.records import team_name

from ._launch import SpawnLauncher, runtime_for, spawn_result

if TYPE_CHECKING:
    from corral.orchestration.kernel import Caller
    from corral.orchestration.teams._capacity import Admission, Reservation
    from corral.orchestration.teams._control import TeamControl
    from corral.orchestration.teams._member import MemberPorts, TeamChild
    from corral.orchestration.teams._plans import TeamContext
    from corral.orchestration.teams.commands import SpawnRequest, SwarmRequest
    from corral.orchestration.teams.messages.messaging import TeamMessages
    from corral.orchestration.teams.remote import RemoteMembers
    from corral.orchestration.teams.reports import SwarmWakes

__all__ = ["Spawner"]

_CAPACITY_KIND = {"read": "read", "write": "edit"}
_CLUSTER_POLL_S = 0.25
"""How often a spawn waiting for room on the Ray cluster asks it again (seconds)."""


class Spawner:
    """Spawns, admits, queues and places the teams agents of one `Teams`; `launcher` launches them.

    Args:
        context: What the teams services share.
        members: A run's ports into the teams core (`Teams`), which every `TeamChild` gets.
        control: Control (same-name replacement tears the previous run down).
        messages: Messaging (a queued spawn that could not start is told to its requester).
        remote: Members on Ray workers (a Ray launch holds its capacity slot there).
        swarm_wakes: Which swarm reports wake their owner.
        deliver_group_wakes: Delivers a lead's owed completion-group wakes (`TeamReports`).
        left_without_report: Tells the teams core a member left with no report (`Teams`).
        data_dir: The team's private data directory, by lead session (`Teams.data_dir`).
    """

    def __init__(
        self,
        context: TeamContext,
        *,
        members: MemberPorts,
        control: TeamControl,
        messages: TeamMessages,
        remote: RemoteMembers,
        swarm_wakes: SwarmWakes,
        deliver_group_wakes: Callable[[str], Coroutine[Any, Any, None]],
        left_without_report: Callable[[str, str], None],
        data_dir: Callable[[str], Path],
    ) -> None:
        self.context = context
        self.host = context.host
        self.repos = context.repos
        self.pending = context.pending
        self.live = context.live
        self.groups = context.groups
        self.checkpoints = context.checkpoints
        self.capacity = context.capacity
        self.lead_sessions = context.lead_sessions
        self.control = control
        self.messages = messages
        self.swarm_wakes = swarm_wakes
        self.deliver_group_wakes = deliver_group_wakes
        self.left_without_report = left_without_report
        self._placing = 0
        """Ray launches of this host under way (`_placed_launch`)."""
        self.cluster_queue: list[tuple[str, str]] = []
        """Admitted spawns waiting for room on the Ray cluster, by (lead session, name), oldest first."""
        self._sandbox: ReadOnlySandbox | None = None
        self._sandbox_status: SandboxStatus | None = None
        self._sandbox_lock = asyncio.Lock()
        self._warned_unconfined = False
        self.launcher = SpawnLauncher(
            context, members=members, remote=remote, read_sandbox=self.read_sandbox, data_dir=data_dir
        )
        """An admitted spawn's launch (`_launch.py`)."""

    # --- configuration -------------------------------------------------------------------------

    def favorites(self) -> TierFavorites | None:
        """The user's tier favorites (`favorite_models`), if any.

        Raises:
            TierModelError: the favorites do not validate (one line naming the first problem).
        """
        raw = self.host.settings.favorite_models
        if not raw:
            return None
        try:
            return TierFavorites.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise TierModelError(
                f"favorite_models.{where}: {first['msg']}; fix it in your user settings file."
            ) from None

    async def sandbox(self) -> ReadOnlySandbox | None:
        """The read-only sandbox when it works here (probed once), else `None`."""
        status = await self.sandbox_status()
        return self._sandbox if status is not None and status.ok else None

    async def sandbox_status(self) -> SandboxStatus | None:
        """The read-only sandbox's probe result (probed once); `None` when `teams.read_sandbox` is off."""
        if self.host.settings.teams.read_sandbox == "off":
            return None
        if self._sandbox_status is None:
            async with self._sandbox_lock:  # one probe, however many launches ask at once
                if self._sandbox_status is None:
                    sandbox = ReadOnlySandbox(policy=read_sandbox_policy(self.host.settings))
                    status = await sandbox.probe()
                    self._sandbox = sandbox if status.ok else None
                    self._sandbox_status = status
        return self._sandbox_status

    async def read_sandbox(self, name: str) -> ReadOnlySandbox | None:
        """The sandbox for read agent `name`'s bash, or `None` (unconfined: warned about once).

        Raises:
            InvalidRequestError: `teams.read_sandbox = "required"` and the sandbox does not work here.
        """
        mode = self.host.settings.teams.read_sandbox
        sandbox = await self.sandbox()
        if sandbox is not None or mode == "off":
            return sandbox
        reason = self._sandbox_status.reason if self._sandbox_status is not None else "not probed"
        if mode == "required":
            raise InvalidRequestError(
                f"Read agent {name} was not started: the read-only sandbox is required "
                f'(teams.read_sandbox = "required") but does not work here: {reason}. '
                "Fix it (see `corral doctor`) or set teams.read_sandbox to auto."
            )
        if not self._warned_unconfined:
            self._warned_unconfined = True
            self.host.warn(
                f"read agent {name} runs UNCONFINED (its bash can write files, use the network and "
                f"read your secrets): the read-only sandbox does not work here: {reason}. "
                'Set teams.read_sandbox = "required" to refuse instead; see `corral doctor`.'
            )
        return None

    # --- spawn ---------------------------------------------------------------------------------

    def _lead(self, caller: Caller) -> str:
        if caller.scope != "lead" or not self.host.runs.is_lead(caller.session_id):
            raise InvalidRequestError("Only the lead session can spawn agents.")
        self.lead_sessions[caller.session_id] = caller.agent
        return caller.session_id

    def _prepare(
        self, caller: Caller, request: SpawnRequest, *, parent: TeamChild | None = None
    ) -> _Prepared:
        lead_session_id = self._lead(caller) if parent is None else parent.member.lead_session_id
        self.host.extensions.admitting(caller.session_id)
        checks = request.checks.get() if parent is None and request.checks is not None else ()
        max_repair_attempts = 0
        if parent is None and request.repair is not None:
            max_repair_attempts = request.repair.get().max_attempts
        tier = resolve_tier(request.model_slot)
        resolved = resolve_tier_model(
            tier,
            self.favorites(),
            lead_model_ref=caller.inherited_model_ref,
            lead_thinking=caller.thinking_level,
            registry=self.host.registry,
        )
        base = Path(os.path.realpath(caller.cwd))
        cwd = base
        if request.cwd is not None and parent is None:
            candidate = Path(request.cwd).expanduser()
            cwd = Path(os.path.realpath(candidate if candidate.is_absolute() else base / candidate))
            if not cwd.is_dir():
                raise InvalidRequestError(
                    f"cwd {request.cwd!r} is not a directory; pass an existing directory."
                )
        name = request.name or _generated_name()
        checkpoint: CheckpointPolicy | None = None
        continue_from: str | None = None
        if parent is None and request.checkpoint is not None:
            checkpoint = request.checkpoint.get()
            check_checkpoint_prompt(request.prompt)
        if parent is None and request.continue_from is not None:
            continue_from = parse_checkpoint_ref(request.continue_from)
            record = self.checkpoints.load(continue_from)
            checkpoint = self.checkpoints.inherited_policy(record, checkpoint)
            check_checkpoint_prompt(request.prompt)
            # The name is a prefix: a continuation is always a fresh recipient and run.
            name = f"{request.name or 'continuation'}-{uuid.uuid4()}"
        return _Prepared(
            lead_session_id=lead_session_id,
            owner=caller.agent,
            name=name,
            tier=tier,
            requested_tier=request.requested_model_slot,
            model_ref=resolved.model,
            thinking=resolved.thinking,
            model_source=resolved.source,
            cwd=cwd,
            prompt=request.prompt,
            session_context=request.session_context if parent is None else "none",
            metadata=request.metadata,
            allow_nested=bool(request.allow_nested_read_agents) and parent is None,
            depth=0 if parent is None else 1,
            parent=parent,
            checkpoint=checkpoint,
            continue_from=continue_from,
            checks=checks,
            max_repair_attempts=max_repair_attempts,
        )

    async def spawn(
        self,
        caller: Caller,
        request: SpawnRequest,
        *,
        parent: TeamChild | None = None,
        name: str | None = None,
        slot: tuple[str, str] | None = None,
        guards: dict[Path, ReadGuard] | None = None,
    ) -> SpawnResult:
        """`spawn_agent`: validate, reserve capacity, launch now or queue; never waits for the work.

        `name` replaces a generated name (swarms choose members' names up front); `slot` is the
        member's `(group id, slot id)` in a completion group; `guards` holds the read sandbox's
        views already built by this call, by directory (a swarm builds one per directory).
        The agent definitions are read once for the call (`Host.one_roster`), a queued agent's
        later launch included.
        """
        with error_context("spawn_agent"), self.host.one_roster():
            prepared = self._prepare(caller, request, parent=parent)
            if request.name is None and name is not None and prepared.continue_from is None:
                prepared.name = name
            if slot is not None:
                prepared.group_id, prepared.slot_id = slot
            return await self._admit(prepared, {} if guards is None else guards)

    async def spawn_swarm(
        self,
        caller: Caller,
        request: SwarmRequest,
        *,
        parent: TeamChild | None = None,
        submission_id: str | None = None,
    ) -> SwarmResult:
        """`spawn_swarm_agents`: every tier validated first; members admitted in order; failures isolated.

        The agent definitions are read once for the whole swarm (`Host.one_roster`), the launches of
        members that wait in the queue included."""
        with error_context("spawn_swarm_agents"), self.host.one_roster():
            if parent is None:
                self._lead(caller)
            policy = None
            if request.completion_group is not None:
                if parent is not None:
                    raise InvalidRequestError("Nested read helpers cannot form a completion group.")
                policy = request.completion_group.get()
            for member in request.members:
                resolve_tier(member.model_slot)
            lead = parent.member.lead_session_id if parent is not None else caller.session_id
            team = team_name(lead)
            names = [m.name or _generated_name(str(i + 1)) for i, m in enumerate(request.members)]
            slots: list[tuple[str, str] | None] = [None] * len(names)
            group_id: str | None = None
            if policy is not None:
                handle = self.groups.create(
                    lead_session_id=lead,
                    team=team,
                    submission_id=submission_id or uuid.uuid4().hex,
                    policy=policy,
                    members=names,
                )
                group_id = handle.group_id
                slots = [(handle.group_id, slot_id) for slot_id in handle.slot_ids]
            if group_id is None:
                self.swarm_wakes.open(lead, names, nested=parent is not None)
            results = await self._admit_swarm(caller, request, names, slots, parent=parent)
            group: tuple[str, str] | None = None
            if group_id is not None and policy is not None:
                self.groups.seal(group_id)
                self.host.spawn_background(self.deliver_group_wakes(lead))
                group = (group_id, policy.delivery)
            return SwarmResult(tuple(results), team, completion_group=group)

    async def _admit_swarm(
        self,
        caller: Caller,
        request: SwarmRequest,
        names: list[str],
        slots: list[tuple[str, str] | None],
        *,
        parent: TeamChild | None,
    ) -> list[SpawnResult | SwarmFailure]:
        """Admit a swarm's members in order; those granted a slot now launch together.

        Each member is prepared and reserved in order (a bad one fails alone; a full team queues
        it). The members granted a slot are then launched with `Launcher.launch_many`: their rows
        (generation, task, member) are written in one transaction, so a crash admits all of them
        or none, and then each starts. A member placed on Ray launches at once (the next member's
        room on the cluster counts it).
        """
        lead = parent.member.lead_session_id if parent is not None else caller.session_id
        results: list[SpawnResult | SwarmFailure | None] = [None] * len(names)
        granted: list[tuple[int, _Prepared, Admission]] = []
        guards: dict[Path, ReadGuard] = {}

        def failed(index: int, exc: OrchestrationError) -> None:
            results[index] = SwarmFailure(names[index], str(exc), exc.category)
            slot = slots[index]
            if slot is not None:
                self.groups.settled(slot[1], "rejected", str(exc))

        try:
            for index, member in enumerate(request.members):
                try:
                    with error_context("spawn_agent"):
                        prepared = self._prepare(caller, member, parent=parent)
                        if member.name is None and prepared.continue_from is None:
                            prepared.name = names[index]
                        slot = slots[index]
                        if slot is not None:
                            prepared.group_id, prepared.slot_id = slot
                        reserved = await self._reserve(prepared, guards)
                        if not isinstance(reserved, SpawnResult) and self._on_ray(prepared):
                            reserved = await self._launch_admitted(prepared, reserved)
                except OrchestrationError as exc:
                    failed(index, exc)
                    self.swarm_wakes.admitted(lead, names[index])
                    continue
                if isinstance(reserved, SpawnResult):
                    results[index] = reserved
                    self.swarm_wakes.admitted(lead, names[index])
                else:
                    granted.append((index, prepared, reserved))
            launched = await self.launcher.launch_many(
                [(prepared, admission) for _i, prepared, admission in granted]
            )
            for (index, prepared, admission), outcome in zip(granted, launched, strict=True):
                if isinstance(outcome, OrchestrationError):
                    self.capacity(prepared.lead_session_id).fail(admission, outcome)
                    failed(index, outcome)
                else:
                    results[index] = outcome
                self.swarm_wakes.admitted(lead, names[index])
            granted = []
        except BaseException as exc:  # cancelled: the members not running give their slots back
            running = {id(live.admission) for live in self.live.values() if live.admission is not None}
            for index, prepared, admission in granted:
                if id(admission) not in running:
                    self.capacity(prepared.lead_session_id).fail(
                        admission, exc if isinstance(exc, Exception) else str(exc)
                    )
                self.swarm_wakes.admitted(lead, names[index])
            raise
        answer: list[SpawnResult | SwarmFailure] = []
        for result in results:
            assert result is not None
            answer.append(result)
        return answer

    async def _launch_admitted(self, prepared: _Prepared, admission: Admission) -> SpawnResult:
        """`_placed_launch`; a failure gives the capacity slot back (failing the admission)."""
        try:
            return await self._placed_launch(prepared, admission)
        except BaseException as exc:
            self.capacity(prepared.lead_session_id).fail(
                admission, exc if isinstance(exc, Exception) else str(exc)
            )
            raise

    async def _admit(self, prepared: _Prepared, guards: dict[Path, ReadGuard]) -> SpawnResult:
        reserved = await self._reserve(prepared, guards)
        if isinstance(reserved, SpawnResult):
            return reserved
        return await self._launch_admitted(prepared, reserved)

    async def _reserve(self, prepared: _Prepared, guards: dict[Path, ReadGuard]) -> Admission | SpawnResult:
        """Admission up to the launch: the read guard, the same-name or parent checks, a capacity
        reservation. Granted (and room on the cluster): the `Admission`, to launch now. Else the
        spawn waits in the queue (`_launch_when_admitted`): its queued `SpawnResult`."""
        if prepared.tier.role == "read":  # refuse before anything changes
            sandbox = await self.read_sandbox(prepared.name)
            if sandbox is not None:
                try:
                    guard = guards.get(prepared.cwd) or sandbox.read_guard(prepared.cwd)
                except ValueError as exc:
                    raise InvalidRequestError(f"Read agent {prepared.name} was not started: {exc}.") from None
                guards[prepared.cwd] = prepared.read_guard = guard
        repos = self.repos
        lead = prepared.lead_session_id
        capacity = self.capacity(lead)
        if prepared.parent is not None:
            self._check_parent(prepared.parent)
            if (
                repos.roster.live_team_member(lead, prepared.name) is not None
                or (lead, prepared.name) in self.pending
            ):
                raise InvalidRequestError(
                    f"Agent {prepared.name} is already active or queued; nested delegation cannot replace an "
                    "existing run. Choose another name."
                )
        else:
            await self._replace_same_name(lead, prepared.name)
        kind = "helper" if prepared.depth == 1 else _CAPACITY_KIND[prepared.tier.role]
        reservation = capacity.reserve(prepared.name, kind)
        cluster_full = reservation.admission is not None and not await self._cluster_room(prepared)
        if reservation.admission is not None and not cluster_full:
            return reservation.admission
        prepared.read_guard = None  # it starts later: it gets a view of the directory as it is then
        self.pending[(lead, prepared.name)] = (reservation, prepared)
        if prepared.slot_id is not None:
            self.groups.queued(prepared.slot_id, str(reservation.id))
        self.host.spawn_background(self._launch_when_admitted(reservation, prepared))
        position = reservation.position or reservation.initial_position
        if cluster_full:  # it holds its slot and waits for room on the cluster
            self.cluster_queue.append((lead, prepared.name))
            position = len(self.cluster_queue)
        snapshot = capacity.snapshot()
        kind_state = snapshot.kinds.get(kind) if hasattr(snapshot, "kinds") else None
        usage = None if kind_state is None else (kind_state.active, kind_state.limit)
        self.host.changed()
        return spawn_result(
            self.host.settings,
            prepared,
            queued=True,
            queue_id=str(reservation.id),
            position=position,
            capacity=usage,
        )

    async def _launch_when_admitted(self, reservation: Reservation, prepared: _Prepared) -> None:
        key = (prepared.lead_session_id, prepared.name)
        capacity = self.capacity(prepared.lead_session_id)
        try:
            admission = await reservation.admitted()
        except AdmissionCancelledError as exc:
            if self.pending.get(key, (None,))[0] is reservation:
                self.pending.pop(key, None)
            if prepared.slot_id is not None:
                with contextlib.suppress(OrchestrationError):
                    self.groups.settled(prepared.slot_id, "cancelled", str(exc), queue_id=str(reservation.id))
                    self.host.spawn_background(self.deliver_group_wakes(prepared.lead_session_id))
            self.left_without_report(prepared.lead_session_id, prepared.name)
            return
        try:
            await self._endpoint_open(prepared)
            if self.pending.get(key, (None,))[0] is reservation:
                await self._cluster_open(prepared)
            if self.pending.get(key, (None,))[0] is not reservation:  # stopped while it waited
                capacity.release(admission)
                self.left_without_report(prepared.lead_session_id, prepared.name)
                return
            if prepared.parent is not None:
                self._check_parent(prepared.parent)
            await self._placed_launch(prepared, admission)
        except Exception as exc:
            capacity.fail(admission, exc)
            if prepared.slot_id is not None:
                with contextlib.suppress(OrchestrationError):
                    self.groups.settled(prepared.slot_id, "rejected", str(exc), queue_id=str(reservation.id))
                    self.host.spawn_background(self.deliver_group_wakes(prepared.lead_session_id))
            self.messages.notify_requester(
                prepared, texts.queued_start_failed(QueuedStartFailed(prepared.name, str(exc)))
            )
        finally:
            if key in self.cluster_queue:
                self.cluster_queue.remove(key)
            if self.pending.get(key, (None,))[0] is reservation:
                self.pending.pop(key, None)
            self.host.changed()

    def _on_ray(self, prepared: _Prepared) -> bool:
        eligible = prepared.allow_nested and prepared.tier.nests_helpers and prepared.depth == 0
        return runtime_for(self.host.settings, prepared, eligible=eligible) == "ray"

    async def _cluster_room(self, prepared: _Prepared) -> bool:
        """Whether the Ray cluster can take this spawn now (always, for a spawn that is not placed
        on Ray, or when the cluster cannot be asked: the launch then fails with its clear error).

        Room is `RayRuntime.room` less the Ray launches of this host under way.
        """
        if not self._on_ray(prepared):
            return True
        from corral.runtime import RuntimeError_
        from corral.runtime._ray import ray_runtime

        try:
            room = await ray_runtime(self.host.runtime).room()
        except RuntimeError_:
            return True
        return room > self._placing

    async def _cluster_open(self, prepared: _Prepared) -> None:
        """Wait until the Ray cluster has room for this spawn (docs/runtimes.md, "Capacity on Ray").

        It asks again at each host change (a run of this host ended and freed its slot), and at
        least every `_CLUSTER_POLL_S`: the cluster's free resources also change outside this host
        (other hosts, nodes joining or leaving).
        """
        while not await self._cluster_room(prepared):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.host.wait_for_change(), _CLUSTER_POLL_S)

    async def _placed_launch(self, prepared: _Prepared, admission: Admission) -> SpawnResult:
        """`_launch`, counting a Ray launch under way (its worker is not in the cluster's free
        resources yet) so that concurrent spawns do not all take the same room."""
        if not self._on_ray(prepared):
            return await self.launcher.launch(prepared, admission)
        self._placing += 1
        try:
            return await self.launcher.launch(prepared, admission)
        finally:
            self._placing -= 1

    async def _endpoint_open(self, prepared: _Prepared) -> None:
        """A queued spawn starts only once its model's endpoint is open (docs/fleet.md, "Admission").

        Asks the process's rate limiter (`corral.llm.RateLimiter.wait_until_open`): while the endpoint
        is in a provider's `Retry-After` window, at its concurrency limit or has requests queued, the
        spawn keeps its granted slot and waits, so a queue of agents does not start into a saturated
        endpoint. A model without an endpoint (scripted) or that cannot be resolved does not wait.
        """
        registry = self.host.registry
        try:
            key = registry.endpoint_key(registry.resolve(prepared.model_ref))
        except CorralError:
            return
        if key is not None:
            await current_rate_limiter().wait_until_open(key)

    def _check_parent(self, parent: TeamChild) -> None:
        generation = self.host.kernel.get_generation(parent.run_id)
        if (
            generation is None
            or generation.phase != "active"
            or parent.report_accepted
            or not parent.messages_open
            or parent.ended
            or parent.member.fence != "none"
        ):
            raise InvalidRequestError(
                f"Nested read spawning is no longer authorized for {parent.label}: its run is closing or closed."
            )

    async def _replace_same_name(self, lead: str, name: str) -> None:
        existing = self.repos.roster.live_team_member(lead, name)
        if existing is None:
            return
        if existing.depth != 0:
            raise InvalidRequestError(
                f"Agent {name} is a running read helper of another agent; choose another name."
            )
        generation = self.host.kernel.get_generation(existing.run_id)
        reason: str | None = None
        if existing.fence != "none":
            reason = f"its previous run is {existing.fence} ({existing.fence_reason or 'lifecycle did not settle'})"
        elif generation is not None and generation.phase in ("completed", "result_error"):
            reason = "its previous report is still being delivered"
        else:
            outcome = await self.control.teardown(existing, reason="replaced by a new spawn")
            if outcome.stopped:
                return
            reason = outcome.error or "its previous run did not settle"
        raise InvalidRequestError(
            f"Agent {name} cannot be restarted yet: {reason}. Retry after lifecycle cleanup settles."
        )


def _generated_name(suffix: str = "") -> str:
    stamp = _base36(int(time.time() * 1000))
    middle = f"-{suffix}" if suffix else ""
    return f"agent-{stamp}{middle}-{uuid.uuid4().hex[:8]}"


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rem = divmod(value, 36)
        out = digits[rem] + out
        if value == 0:
            return out
