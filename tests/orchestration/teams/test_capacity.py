"""The capacity controller: bursts never overshoot, FIFO queue, cancellation, quarantine, failure index."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from corral.orchestration import error_details
from corral.orchestration.teams._capacity import (
    DEFAULT_LIMITS,
    FAILED_ADMISSION_HISTORY,
    Admission,
    CapacityController,
    Reservation,
)
from corral.orchestration.teams._errors import (
    AdmissionCancelledError,
    AdmissionConflictError,
    CapacityConfigError,
    CapacityReachedError,
)

WAIT = 10.0


async def _settle() -> None:
    """Let every ready task run until none is left runnable (bounded)."""
    for _ in range(50):
        await asyncio.sleep(0)


async def test_burst_of_200_against_8_never_overshoots_and_drains_fifo() -> None:
    controller = CapacityController({"read": 8})
    names = [f"agent-{i:03d}" for i in range(200)]
    running = 0
    peak = 0
    admitted_order: list[str] = []
    admitted_ids: list[int] = []

    async def agent(name: str) -> None:
        nonlocal running, peak
        admission = await controller.admit(name, "read")
        # Critical section: the slot is held from here until release.
        running += 1
        peak = max(peak, running)
        assert running <= 8
        assert controller.active("read") <= 8
        admitted_order.append(name)
        admitted_ids.append(admission.id)
        for _ in range(3):
            await asyncio.sleep(0)
            assert running <= 8
        running -= 1
        assert controller.release(admission)

    await asyncio.wait_for(asyncio.gather(*(agent(name) for name in names)), WAIT)
    assert admitted_order == names
    assert len(set(admitted_ids)) == 200
    assert peak == 8
    snapshot = controller.snapshot()
    assert snapshot.kinds["read"].active == 0
    assert snapshot.kinds["read"].queued_names == ()
    assert controller.failures() == ()


async def test_burst_reservations_report_queue_positions_and_are_admitted_once() -> None:
    controller = CapacityController({"read": 8})
    reservations = [controller.reserve(f"a{i}", "read") for i in range(200)]
    assert [r.state for r in reservations[:8]] == ["admitted"] * 8
    assert all(r.admission is not None and not r.admission.queued for r in reservations[:8])
    assert [r.position for r in reservations[8:]] == list(range(1, 193))
    assert [r.initial_position for r in reservations[8:]] == list(range(1, 193))
    assert controller.queue_position("a8") == 1
    assert controller.queue_position("a0") is None
    grants: dict[str, int] = {}
    done = asyncio.Event()

    async def worker(reservation: Reservation) -> None:
        admission = await reservation.admitted()
        grants[admission.name] = grants.get(admission.name, 0) + 1
        assert controller.active("read") <= 8
        await asyncio.sleep(0)
        controller.release(admission)
        if len(grants) == 200:
            done.set()

    tasks = [asyncio.create_task(worker(r)) for r in reservations]
    await asyncio.wait_for(done.wait(), WAIT)
    await asyncio.gather(*tasks)
    assert grants == {f"a{i}": 1 for i in range(200)}
    later = reservations[50].admission
    assert later is not None
    assert later.queued
    assert later.queue_position == 43
    assert controller.snapshot().kinds["read"].queued_names == ()


async def test_release_admits_the_next_in_fifo_order_and_is_bound_to_its_admission() -> None:
    controller = CapacityController({"read": 1})
    first = await controller.admit("one", "read")
    second = controller.reserve("two", "read")
    third = controller.reserve("three", "read")
    assert (second.position, third.position) == (1, 2)
    assert controller.release(first)
    assert second.state == "admitted"
    assert third.position == 1
    assert not controller.release(first)  # idempotent: never frees someone else's slot
    assert controller.active("read") == 1
    assert third.state == "queued"


async def test_kinds_have_separate_limits_and_queues() -> None:
    controller = CapacityController({"read": 1, "edit": 2})
    await controller.admit("r1", "read")
    await controller.admit("e1", "edit")
    await controller.admit("e2", "edit")
    queued_read = controller.reserve("r2", "read")
    queued_edit = controller.reserve("e3", "edit")
    assert (queued_read.position, queued_edit.position) == (1, 1)
    snapshot = controller.snapshot()
    assert (snapshot.kinds["read"].active, snapshot.kinds["read"].limit) == (1, 1)
    assert snapshot.kinds["edit"].active_names == ("e1", "e2")
    assert snapshot.kinds["edit"].queued_names == ("e3",)


async def test_overflow_disabled_fails_with_the_capacity_message() -> None:
    controller = CapacityController({"read": 2}, overflow={"read": False})
    await controller.admit("a", "read")
    await controller.admit("b", "read")
    with pytest.raises(CapacityReachedError) as info:
        controller.reserve("c", "read")
    assert str(info.value) == "Read-agent capacity reached (2/2) and queueOverflow is disabled."
    assert error_details(info.value)["category"] == "agent_busy"
    assert controller.reservation("c") is None


async def test_cancel_queued_withdraws_the_request_and_wakes_its_waiter() -> None:
    controller = CapacityController({"read": 1})
    holder = await controller.admit("holder", "read")
    victim = controller.reserve("victim", "read")
    after = controller.reserve("after", "read")
    waiter = asyncio.create_task(victim.admitted())
    await _settle()
    assert controller.cancel_queued("victim", reason="Stopped before launch.")
    with pytest.raises(AdmissionCancelledError, match="Stopped before launch"):
        await asyncio.wait_for(waiter, WAIT)
    assert victim.state == "cancelled"
    assert controller.queue_position("victim") is None
    assert after.position == 1
    assert not controller.cancel_queued("victim")
    assert not controller.cancel_queued("holder")  # running work is not queued work
    controller.release(holder)
    assert after.state == "admitted"
    assert victim.state == "cancelled"


async def test_cancelled_reservation_without_waiter_raises_when_awaited_later() -> None:
    controller = CapacityController({"read": 1})
    await controller.admit("holder", "read")
    queued = controller.reserve("q", "read")
    controller.cancel_queued("q")
    with pytest.raises(AdmissionCancelledError):
        await queued.admitted()


async def test_cancelling_the_waiting_task_withdraws_the_request() -> None:
    controller = CapacityController({"read": 1})
    holder = await controller.admit("holder", "read")
    queued = controller.reserve("q", "read")
    task = asyncio.create_task(queued.admitted())
    await _settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert queued.state == "cancelled"
    controller.release(holder)
    assert controller.active("read") == 0


async def test_a_newer_queued_request_replaces_an_older_one_of_the_same_name() -> None:
    controller = CapacityController({"read": 1})
    await controller.admit("holder", "read")
    old = controller.reserve("dup", "read")
    other = controller.reserve("other", "read")
    new = controller.reserve("dup", "read")
    assert old.state == "cancelled"
    assert new.position == 2
    assert other.position == 1
    with pytest.raises(AdmissionCancelledError, match="replaced"):
        await old.admitted()


async def test_a_name_holding_a_slot_cannot_be_admitted_twice() -> None:
    controller = CapacityController({"read": 3})
    admission = await controller.admit("solo", "read")
    with pytest.raises(AdmissionConflictError, match="already holds a read slot"):
        controller.reserve("solo", "read")
    assert controller.active("read") == 1
    controller.release(admission)
    again = await controller.admit("solo", "read")
    assert again.id != admission.id


async def test_quarantine_holds_the_name_but_not_a_slot() -> None:
    controller = CapacityController({"read": 1})
    stuck = await controller.admit("stuck", "read")
    waiting = controller.reserve("next", "read")
    controller.quarantine("stuck")
    assert controller.is_quarantined("stuck")
    assert waiting.state == "admitted"  # the fenced run's slot went to unrelated work
    assert controller.active("read") == 1
    with pytest.raises(AdmissionConflictError, match="quarantined"):
        controller.reserve("stuck", "read")
    assert not controller.release(stuck)  # the deferred release of the fenced run frees nothing
    assert controller.active("read") == 1
    assert controller.snapshot().quarantined == ("stuck",)
    assert controller.clear_quarantine("stuck")
    assert not controller.clear_quarantine("stuck")
    assert controller.reserve("stuck", "read").state == "queued"


async def test_quarantine_retains_a_queued_request_without_blocking_work_behind_it() -> None:
    retained: list[str] = []
    controller = CapacityController({"read": 1}, on_retained=lambda r: retained.append(r.name))
    holder = await controller.admit("holder", "read")
    fenced = controller.reserve("fenced", "read")
    behind = controller.reserve("behind", "read")
    controller.quarantine("fenced")
    controller.quarantine("fenced")  # told once
    assert retained == ["fenced"]
    assert behind.position == 1  # a retained request ahead does not count
    controller.release(holder)
    assert behind.state == "admitted"
    assert fenced.state == "queued"
    assert fenced.retained
    snapshot = controller.snapshot().kinds["read"]
    assert (snapshot.queued_names, snapshot.retained_names) == (("fenced",), ("fenced",))
    controller.release(behind.admission)  # type: ignore[arg-type]
    assert fenced.state == "queued"  # still fenced: a free slot does not admit it
    controller.clear_quarantine("fenced")
    assert fenced.state == "admitted"
    assert not fenced.retained
    admission = await asyncio.wait_for(fenced.admitted(), WAIT)
    assert admission.queued


async def test_failed_admission_frees_the_slot_and_is_indexed() -> None:
    clock = itertools.count(1000)
    controller = CapacityController({"read": 1}, clock=lambda: float(next(clock)))
    admission = await controller.admit("broken", "read")
    queued = controller.reserve("next", "read")
    entry = controller.fail(admission, RuntimeError("model runtime\nexploded"))
    assert (entry.name, entry.kind, entry.id, entry.error, entry.failed_at) == (
        "broken",
        "read",
        admission.id,
        "model runtime exploded",
        1000.0,
    )
    assert queued.state == "admitted"
    assert controller.failures() == (entry,)
    assert not controller.release(admission)


async def test_failing_a_queued_request_drops_it_and_wakes_its_waiter() -> None:
    controller = CapacityController({"read": 1})
    await controller.admit("holder", "read")
    queued = controller.reserve("q", "read")
    waiter = asyncio.create_task(queued.admitted())
    await _settle()
    controller.fail(queued, "checkpoint reload failed")
    with pytest.raises(AdmissionCancelledError, match="checkpoint reload failed"):
        await asyncio.wait_for(waiter, WAIT)
    assert queued.state == "failed"
    assert controller.snapshot().kinds["read"].queued_names == ()


async def test_failure_index_keeps_the_last_20() -> None:
    controller = CapacityController({"read": 50})
    admissions: list[Admission] = [await controller.admit(f"f{i}", "read") for i in range(25)]
    for admission in admissions:
        controller.fail(admission, f"boom {admission.name}")
    failures = controller.failures()
    assert FAILED_ADMISSION_HISTORY == 20
    assert [f.name for f in failures] == [f"f{i}" for i in range(5, 25)]
    assert controller.snapshot().failures == failures
    assert controller.active("read") == 0


async def test_raising_a_limit_admits_queued_work() -> None:
    controller = CapacityController({"read": 1})
    await controller.admit("a", "read")
    b = controller.reserve("b", "read")
    c = controller.reserve("c", "read")
    controller.set_limit("read", 3)
    assert (b.state, c.state) == ("admitted", "admitted")
    controller.set_limit("read", 1)  # lowering never stops running work
    assert controller.active("read") == 3
    assert controller.reserve("d", "read").state == "queued"


@pytest.mark.parametrize("bad", [0, -1, 0.5, float("inf"), float("nan"), True, "3"])
def test_bad_limits_are_rejected(bad: object) -> None:
    with pytest.raises(CapacityConfigError, match="must be a finite number"):
        CapacityController({"read": bad})  # type: ignore[dict-item]


def test_fractional_limits_are_floored_and_unknown_kinds_rejected() -> None:
    controller = CapacityController({"read": 2.9})
    assert controller.limit("read") == 2
    with pytest.raises(CapacityConfigError, match="Unknown capacity kind 'edit'"):
        controller.reserve("x", "edit")
    with pytest.raises(CapacityConfigError, match="unknown capacity kind 'edit'"):
        CapacityController({"read": 1}, overflow={"edit": False})
    assert dict(DEFAULT_LIMITS) == {"read": 25, "edit": 100, "helper": 10}
