"""LiveRuns: the host's one registry of live runs, owners and leads (unit; the host's own use of it
is in `test_host.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from corral.orchestration.host._live import LiveRuns
from corral.runtime import RuntimeHandle


class _Child:
    """What the registry reads of a `ManagedChild`: its run id and its waiting state."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.on_waiting: Callable[[Any], None] | None = None
        self._waiting = False

    @property
    def waiting(self) -> bool:
        return self._waiting

    @waiting.setter
    def waiting(self, value: bool) -> None:
        if value != self._waiting:
            self._waiting = value
            if self.on_waiting is not None:
                self.on_waiting(self)


@dataclass
class _Session:
    session_id: str


@dataclass
class _Agent:
    session: _Session
    followed: list[str] = field(default_factory=list)


@dataclass
class _Caller:
    session_id: str


def _handle(run_id: str, kind: str = "inprocess") -> RuntimeHandle:
    return RuntimeHandle(runtime_id=f"{kind}-{run_id}", kind=kind, run_id=run_id)


def test_an_in_process_run_is_found_by_run_id_until_it_is_dropped() -> None:
    runs: LiveRuns[_Child, _Caller] = LiveRuns()
    first, second = _Child("r1"), _Child("r2")
    runs.add_child(first)
    runs.add_child(second)
    runs.started("r1", _handle("r1"))

    assert runs.child("r1") is first and runs.runtime_handle("r1") == _handle("r1")
    assert runs.child("r2") is second and runs.runtime_handle("r2") is None  # not started yet
    run = runs.get("r1")
    assert run is not None and run.child is first and not run.on_worker
    assert runs.children() == [first, second] and runs.child_count() == 2

    dropped = runs.drop("r1")
    assert dropped is not None and dropped.child is first and dropped.runtime_handle == _handle("r1")
    assert runs.get("r1") is None and runs.child("r1") is None and runs.runtime_handle("r1") is None
    assert runs.children() == [second] and runs.child_count() == 1
    assert first.on_waiting is None  # the registry no longer follows it
    assert runs.drop("r1") is None  # dropping twice changes nothing
    assert runs.get("unknown") is None and runs.child("unknown") is None


def test_only_the_children_that_wait_are_listed_as_waiting() -> None:
    runs: LiveRuns[_Child, _Caller] = LiveRuns()
    idle, busy = _Child("idle"), _Child("busy")
    idle.waiting = True  # already waiting when it is registered
    runs.add_child(idle)
    runs.add_child(busy)
    assert runs.waiting() == (idle,)

    busy.waiting = True
    idle.waiting = False
    assert runs.waiting() == (busy,)

    runs.drop("busy")
    assert runs.waiting() == ()
    busy.waiting = False
    busy.waiting = True  # a dropped child's changes no longer reach the registry
    assert runs.waiting() == ()


def test_a_worker_run_is_watched_until_unwatched_and_survives_a_drop() -> None:
    runs: LiveRuns[_Child, _Caller] = LiveRuns()
    runs.watch("w1", _handle("w1", "tmux"))
    runs.watch("w2", _handle("w2", "ray"))

    assert runs.on_worker("w1") and runs.has_worker_runs()
    assert runs.worker_runs() == ["w1", "w2"]
    assert runs.runtime_handle("w1") == _handle("w1", "tmux")
    assert runs.children() == [] and runs.child_count() == 0

    # Releasing a worker run's in-memory parts drops its handle; it stays watched (as the host's
    # watch sees it: no handle, presence unknown) until the watch lets it go.
    runs.drop("w1")
    assert runs.on_worker("w1") and runs.runtime_handle("w1") is None

    unwatched = runs.unwatch("w1")
    assert unwatched is not None and unwatched.on_worker and unwatched.runtime_handle is None
    assert runs.get("w1") is None and not runs.on_worker("w1")
    assert runs.unwatch("w1") is None  # not watched: nothing changes
    unwatched = runs.unwatch("w2")
    assert unwatched is not None and unwatched.runtime_handle == _handle("w2", "ray")
    assert runs.worker_runs() == [] and not runs.has_worker_runs() and runs.get("w2") is None


def test_a_handed_off_run_moves_from_in_process_to_a_worker() -> None:
    runs: LiveRuns[_Child, _Caller] = LiveRuns()
    child = _Child("r")
    runs.add_child(child)
    runs.started("r", _handle("r"))

    runs.drop("r")  # `Host.detach_child`: the in-process run ends here
    runs.watch("r", _handle("r", "tmux"))  # `WorkerWatch.track`: it goes on in a pane
    run = runs.get("r")
    assert run is not None and run.child is None and run.on_worker
    assert run.runtime_handle == _handle("r", "tmux") and runs.child_count() == 0


def test_an_owner_is_followed_once_and_unfollowed_when_removed() -> None:
    runs: LiveRuns[_Child, _Caller] = LiveRuns()
    lead: Any = _Agent(_Session("lead"))  # what the registry reads of an `AgentSession`
    stopped: list[str] = []

    def follow(agent: Any) -> Callable[[], None]:
        agent.followed.append("on")
        return lambda: stopped.append(agent.session.session_id)

    runs.add_owner(lead, follow)
    runs.add_owner(lead, follow)  # already live: followed once
    assert lead.followed == ["on"]
    assert runs.owner("lead") is lead and runs.is_owner("lead")

    runs.remove_owner("lead")
    assert runs.owner("lead") is None and not runs.is_owner("lead") and stopped == ["lead"]
    runs.remove_owner("lead")  # not an owner: nothing happens
    assert stopped == ["lead"]


def test_leads_are_found_by_session_id_and_forgotten() -> None:
    runs: LiveRuns[_Child, _Caller] = LiveRuns()
    first, again, other = _Caller("lead"), _Caller("lead"), _Caller("other")
    runs.add_lead(first)
    runs.add_lead(other)
    runs.add_lead(again)  # a reattached lead replaces its caller

    assert runs.lead("lead") is again and runs.is_lead("other")
    assert runs.leads() == ("lead", "other")
    runs.remove_lead("lead")
    assert runs.lead("lead") is None and not runs.is_lead("lead") and runs.leads() == ("other",)
    runs.remove_lead("lead")
    assert runs.leads() == ("other",)
