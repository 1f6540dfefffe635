"""Per-kind capacity with an overflow FIFO queue, reservations, quarantine and a failure index.

Teams agents come in kinds (`read`, `edit`, `helper`, …), each with its own
`maxConcurrent`. A spawn first *reserves* a slot: the reservation is counted
at once, before the asynchronous launch registers anything, so a burst of
spawns can never overshoot the limit. When the kind is full the request joins
that kind's FIFO queue (and learns its position) or, with overflow disabled,
fails with `CapacityReachedError`.

Every state change happens synchronously, with no `await` between reading
and updating the counters, so the controller needs no lock: there is exactly
one drainer, namely whichever call freed the slot. Each call that can free a
slot (`release`, `fail`, `quarantine`, `clear_quarantine`, `set_limit`,
abandoning a granted reservation) drains the queues before it returns. The
invariant after every call is: for each kind, either no eligible request is
queued or the kind is full. A new request therefore never jumps the queue.

Quarantine fences a *name* (a lifecycle that did not settle). It holds the
name but not a slot: a running admission under that name gives its slot
back, a queued request under it stays queued (retained, keeping its place)
but is skipped, so unrelated requests behind it are admitted. A new request
for a fenced name is refused until `clear_quarantine`.

Failed admissions (a launch that failed after its slot was granted, or a
queued request that could not be started) drop their slot so later work
proceeds, and the last 20 are kept for status. Like the original, queue and
failure index live in memory only and do not survive a restart.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from ._errors import (
    AdmissionCancelledError,
    AdmissionConflictError,
    CapacityConfigError,
    CapacityReachedError,
)

__all__ = [
    "DEFAULT_LIMITS",
    "FAILED_ADMISSION_HISTORY",
    "Admission",
    "CapacityController",
    "CapacitySnapshot",
    "FailedAdmission",
    "KindSnapshot",
    "Reservation",
    "ReservationState",
    "RetainedNotice",
]

DEFAULT_LIMITS: Mapping[str, int] = MappingProxyType({"read": 25, "edit": 100, "helper": 10})
"""The original's defaults: `readAgents`, `writeAgents` and `readHelpers` `maxConcurrent`."""

FAILED_ADMISSION_HISTORY = 20
"""How many recent failed admissions are kept."""

_KIND_LABELS = {"read": "Read-agent", "edit": "Edit-agent", "helper": "Read-helper"}

ReservationState = Literal["queued", "admitted", "released", "quarantined", "cancelled", "failed"]
"""Where a reservation stands: waiting, holding a slot, or finished one of four ways."""

RetainedNotice = Callable[["Reservation"], None]
"""Called with a queued reservation when quarantine retains it (the caller tells the lead)."""


@dataclass(frozen=True, slots=True)
class Admission:
    """A granted slot: the right to run one agent of one kind."""

    name: str
    """The agent's name."""
    kind: str
    """The capacity kind the slot belongs to."""
    id: int
    """The reservation's id, unique within its controller (the public `queueId`)."""
    queued: bool
    """Whether the request waited in the queue before it got the slot."""
    queue_position: int | None
    """Its position (1-based) when it was queued; `None` when admitted at once."""


@dataclass(frozen=True, slots=True)
class FailedAdmission:
    """One entry of the recent-failures index."""

    name: str
    """The agent's name."""
    kind: str
    """Its capacity kind."""
    id: int
    """The reservation's id."""
    error: str
    """What went wrong (one line)."""
    failed_at: float
    """Unix time (seconds) of the failure."""


@dataclass(frozen=True, slots=True)
class KindSnapshot:
    """One kind's counters at one moment."""

    kind: str
    limit: int
    """`maxConcurrent` for the kind."""
    active: int
    """Slots held now (running agents plus in-flight admissions)."""
    overflow: bool
    """Whether requests at capacity queue (`True`) or fail."""
    active_names: tuple[str, ...]
    """Names holding a slot, in admission order."""
    queued_names: tuple[str, ...]
    """Queued names, first in line first (retained ones included)."""
    retained_names: tuple[str, ...]
    """Queued names held back by quarantine."""


@dataclass(frozen=True, slots=True)
class CapacitySnapshot:
    """The whole controller at one moment."""

    kinds: Mapping[str, KindSnapshot]
    """Per kind."""
    quarantined: tuple[str, ...]
    """Fenced names, sorted."""
    failures: tuple[FailedAdmission, ...]
    """Recent failed admissions, oldest first (at most 20)."""


class Reservation:
    """A request for a slot, granted at once or waiting in its kind's queue.

    Created by `CapacityController.reserve`. Await `admitted()` (from one task) for the
    `Admission`; cancelling that task withdraws the request, or returns the slot if it
    had just been granted.
    """

    __slots__ = (
        "_admission",
        "_controller",
        "_future",
        "_reason",
        "id",
        "initial_position",
        "kind",
        "name",
        "retained",
        "state",
    )

    def __init__(self, controller: CapacityController, name: str, kind: str, reservation_id: int) -> None:
        self._controller = controller
        self.name = name
        """The agent's name."""
        self.kind = kind
        """The capacity kind."""
        self.id = reservation_id
        """Unique within the controller; the public `queueId`."""
        self.state: ReservationState = "queued"
        """Where the reservation stands."""
        self.retained = False
        """Whether quarantine holds it back while queued."""
        self.initial_position: int | None = None
        """The 1-based position it got when it joined the queue; `None` when granted at once."""
        self._admission: Admission | None = None
        self._future: asyncio.Future[Admission] | None = None
        self._reason = ""

    def __repr__(self) -> str:
        return f"Reservation({self.name!r}, {self.kind!r}, id={self.id}, state={self.state!r})"

    @property
    def admission(self) -> Admission | None:
        """The granted slot, once there is one."""
        return self._admission

    @property
    def position(self) -> int | None:
        """The current 1-based queue position, or `None` when not queued."""
        return self._controller._position(self)

    async def admitted(self) -> Admission:
        """Wait until the slot is granted.

        Raises:
            AdmissionCancelledError: the request was cancelled, replaced or failed first.
        """
        if self._admission is not None and self.state != "cancelled":
            return self._admission
        if self.state != "queued":
            raise AdmissionCancelledError(self._reason or f"Queued agent {self.name} was cancelled.")
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        try:
            return await self._future
        except asyncio.CancelledError:
            self._controller._abandon(self)
            raise

    # -- transitions (called by the controller only) -------------------------

    def _grant(self, admission: Admission) -> None:
        self.state = "admitted"
        self.retained = False
        self._admission = admission
        if self._future is not None and not self._future.done():
            self._future.set_result(admission)

    def _end(self, state: ReservationState, reason: str) -> None:
        queued = self.state == "queued"
        self.state = state
        self._reason = reason
        if queued and self._future is not None and not self._future.done():
            self._future.set_exception(AdmissionCancelledError(reason))


class CapacityController:
    """Admission control for one session's teams agents.

    Args:
        limits: `maxConcurrent` per kind (finite numbers ≥ 1; fractions are floored).
        overflow: Per kind, whether requests at capacity queue (default `True` for every kind).
        on_retained: Told when quarantine retains a queued request.
        clock: Unix-time source for failure timestamps (default `time.time`).

    Raises:
        CapacityConfigError: a limit is not a finite number ≥ 1, or `overflow` names an unknown kind.
    """

    def __init__(
        self,
        limits: Mapping[str, float],
        *,
        overflow: Mapping[str, bool] | None = None,
        on_retained: RetainedNotice | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._limits: dict[str, int] = {kind: _check_limit(kind, value) for kind, value in limits.items()}
        unknown = sorted(set(overflow or {}) - set(self._limits))
        if unknown:
            raise CapacityConfigError(f"queueOverflow is set for unknown capacity kind {unknown[0]!r}.")
        self._overflow = {kind: (overflow or {}).get(kind, True) for kind in self._limits}
        self._on_retained = on_retained
        self._clock = clock
        self._next_id = 0
        self._active: dict[str, dict[int, Reservation]] = {kind: {} for kind in self._limits}
        self._queues: dict[str, dict[int, Reservation]] = {kind: {} for kind in self._limits}
        self._by_name: dict[str, Reservation] = {}
        self._quarantined: set[str] = set()
        self._failures: deque[FailedAdmission] = deque(maxlen=FAILED_ADMISSION_HISTORY)

    # -- requests ------------------------------------------------------------

    def reserve(self, name: str, kind: str) -> Reservation:
        """Take a slot now or join the queue; never waits.

        A queued request with the same name is cancelled in favor of this one (which
        joins the end of the queue).

        Raises:
            CapacityConfigError: `kind` has no limit.
            AdmissionConflictError: the name holds a slot, or is quarantined.
            CapacityReachedError: the kind is full and its overflow is disabled.
        """
        limit = self._limit(kind)
        if name in self._quarantined:
            raise AdmissionConflictError(
                f"Agent {name} cannot be admitted yet: its lifecycle is quarantined. "
                "Retry after lifecycle cleanup settles."
            )
        existing = self._by_name.get(name)
        if existing is not None and existing.state == "admitted":
            raise AdmissionConflictError(
                f"Agent {name} already holds a {existing.kind} slot; stop it and let its lifecycle "
                "settle before admitting it again."
            )
        active = len(self._active[kind])
        if active >= limit and not self._overflow[kind]:
            raise CapacityReachedError(
                f"{_label(kind)} capacity reached ({active}/{limit}) and queueOverflow is disabled."
            )
        if existing is not None:
            self._withdraw(existing, "cancelled", f"Queued agent {name} was replaced by a newer request.")
        self._next_id += 1
        reservation = Reservation(self, name, kind, self._next_id)
        self._by_name[name] = reservation
        if active < limit:
            self._grant(reservation, queued=False, position=None)
        else:
            self._queues[kind][reservation.id] = reservation
            reservation.initial_position = self._position(reservation)
        return reservation

    async def admit(self, name: str, kind: str) -> Admission:
        """Reserve a slot and wait for it (see `reserve` and `Reservation.admitted`)."""
        return await self.reserve(name, kind).admitted()

    def release(self, admission: Admission) -> bool:
        """Give the slot back (the run's lifecycle finalized) and admit whoever is next.

        Idempotent, and bound to this exact admission: releasing an old run never
        touches a newer run of the same name.

        Returns:
            Whether a slot was freed (`False` when it was already released, failed or
            given back by quarantine).
        """
        reservation = self._active.get(admission.kind, {}).get(admission.id)
        if reservation is None:
            return False
        self._free(reservation, "released", "")
        self._drain()
        return True

    def fail(self, target: Admission | Reservation, error: str | BaseException) -> FailedAdmission:
        """Record a failed admission: drop its slot or its queue place so later work proceeds.

        A waiter on a queued reservation gets `AdmissionCancelledError` with the error.

        Returns:
            The entry added to the recent-failures index.
        """
        text = (str(error) or type(error).__name__) if isinstance(error, BaseException) else error
        text = " ".join(text.split()) or "admission failed"
        entry = FailedAdmission(target.name, target.kind, target.id, text, self._clock())
        self._failures.append(entry)
        reservation = self._find(target)
        if reservation is not None:
            if reservation.state == "admitted":
                self._free(reservation, "failed", text)
            elif reservation.state == "queued":
                self._withdraw(reservation, "failed", f"Admission of {reservation.name} failed: {text}")
        self._drain()
        return entry

    def cancel_queued(self, name: str, *, reason: str | None = None) -> bool:
        """Cancel queued work for `name` before it launches (`stop_teammate` on a queued agent).

        Returns:
            Whether a queued request was cancelled (`False` when none is queued).
        """
        reservation = self._by_name.get(name)
        if reservation is None or reservation.state != "queued":
            return False
        self._withdraw(
            reservation, "cancelled", reason or f"Queued agent {name} was cancelled before launch."
        )
        self._drain()
        return True

    # -- quarantine ----------------------------------------------------------

    def quarantine(self, name: str) -> None:
        """Fence `name`: it keeps the name but no slot.

        A running admission under the name gives its slot back (a later `release` of it
        is a no-op); a queued request stays in place, retained and skipped, and the
        `on_retained` hook is told. Unrelated queued work is admitted as slots allow.
        """
        self._quarantined.add(name)
        reservation = self._by_name.get(name)
        if reservation is not None and reservation.state == "admitted":
            self._free(reservation, "quarantined", f"Agent {name} was quarantined.")
        elif reservation is not None and reservation.state == "queued" and not reservation.retained:
            reservation.retained = True
            if self._on_retained is not None:
                self._on_retained(reservation)
        self._drain()

    def clear_quarantine(self, name: str) -> bool:
        """Lift the fence (the lifecycle tombstone was cleared) and admit what it held back.

        Returns:
            Whether `name` was quarantined.
        """
        if name not in self._quarantined:
            return False
        self._quarantined.discard(name)
        reservation = self._by_name.get(name)
        if reservation is not None and reservation.state == "queued":
            reservation.retained = False
        self._drain()
        return True

    def is_quarantined(self, name: str) -> bool:
        """Whether `name` is fenced."""
        return name in self._quarantined

    # -- limits and views ----------------------------------------------------

    def set_limit(self, kind: str, limit: float) -> None:
        """Change a kind's `maxConcurrent`; raising it admits queued work at once.

        Lowering it never stops running agents: new work waits until enough slots free.

        Raises:
            CapacityConfigError: `kind` is unknown or `limit` is not a finite number ≥ 1.
        """
        self._limit(kind)
        self._limits[kind] = _check_limit(kind, limit)
        self._drain()

    def queue_position(self, name: str) -> int | None:
        """The 1-based queue position of `name`'s request, or `None` when it is not queued.

        Retained (quarantined) requests ahead do not count: they do not block it.
        """
        reservation = self._by_name.get(name)
        return None if reservation is None else self._position(reservation)

    def reservation(self, name: str) -> Reservation | None:
        """The live (queued or admitted) reservation for `name`, if any."""
        return self._by_name.get(name)

    def active(self, kind: str) -> int:
        """Slots of `kind` held now (running plus in-flight admissions)."""
        self._limit(kind)
        return len(self._active[kind])

    def limit(self, kind: str) -> int:
        """`maxConcurrent` for `kind`."""
        return self._limit(kind)

    def failures(self) -> tuple[FailedAdmission, ...]:
        """Recent failed admissions, oldest first (at most 20)."""
        return tuple(self._failures)

    def snapshot(self) -> CapacitySnapshot:
        """All counters, queues, fences and recent failures at this moment."""
        kinds = {
            kind: KindSnapshot(
                kind=kind,
                limit=self._limits[kind],
                active=len(self._active[kind]),
                overflow=self._overflow[kind],
                active_names=tuple(r.name for r in self._active[kind].values()),
                queued_names=tuple(r.name for r in self._queues[kind].values()),
                retained_names=tuple(r.name for r in self._queues[kind].values() if r.retained),
            )
            for kind in self._limits
        }
        return CapacitySnapshot(
            kinds=MappingProxyType(kinds),
            quarantined=tuple(sorted(self._quarantined)),
            failures=tuple(self._failures),
        )

    # -- internals -------------------------------------------------------------

    def _limit(self, kind: str) -> int:
        try:
            return self._limits[kind]
        except KeyError:
            known = ", ".join(sorted(self._limits)) or "none"
            raise CapacityConfigError(f"Unknown capacity kind {kind!r}; configured kinds: {known}.") from None

    def _position(self, reservation: Reservation) -> int | None:
        if reservation.state != "queued":
            return None
        ahead = 0
        for other in self._queues[reservation.kind].values():
            if other is reservation:
                return ahead + 1
            if not other.retained:
                ahead += 1
        return None

    def _find(self, target: Admission | Reservation) -> Reservation | None:
        if isinstance(target, Reservation):
            return target if target._controller is self else None
        return self._active.get(target.kind, {}).get(target.id) or self._queues.get(target.kind, {}).get(
            target.id
        )

    def _grant(self, reservation: Reservation, *, queued: bool, position: int | None) -> None:
        self._active[reservation.kind][reservation.id] = reservation
        reservation._grant(Admission(reservation.name, reservation.kind, reservation.id, queued, position))

    def _free(self, reservation: Reservation, state: ReservationState, reason: str) -> None:
        self._active[reservation.kind].pop(reservation.id, None)
        if self._by_name.get(reservation.name) is reservation:
            del self._by_name[reservation.name]
        reservation._end(state, reason)

    def _withdraw(self, reservation: Reservation, state: ReservationState, reason: str) -> None:
        self._queues[reservation.kind].pop(reservation.id, None)
        if self._by_name.get(reservation.name) is reservation:
            del self._by_name[reservation.name]
        reservation._end(state, reason)

    def _abandon(self, reservation: Reservation) -> None:
        """The task waiting on `reservation` was cancelled: withdraw it, or return a fresh grant."""
        if reservation.state == "queued":
            self._withdraw(reservation, "cancelled", f"Queued agent {reservation.name} was abandoned.")
        elif reservation.state == "admitted" and reservation._admission is not None:
            self.release(reservation._admission)
            return
        self._drain()

    def _drain(self) -> None:
        for kind, queue in self._queues.items():
            free = self._limits[kind] - len(self._active[kind])
            if free <= 0 or not queue:
                continue
            ready = [
                reservation
                for reservation in queue.values()
                if not reservation.retained and reservation.name not in self._quarantined
            ][:free]
            for reservation in ready:
                del queue[reservation.id]
                self._grant(reservation, queued=True, position=reservation.initial_position)


def _label(kind: str) -> str:
    return _KIND_LABELS.get(kind, f"{kind.capitalize()}-agent")


def _check_limit(kind: str, value: float) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 1:
        raise CapacityConfigError(f"maxConcurrent for {kind!r} must be a finite number ≥ 1; got {value!r}.")
    return math.floor(value)
