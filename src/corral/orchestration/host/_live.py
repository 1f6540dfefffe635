"""The host's live runs: one registry of what runs, owns and leads in this process right now.

`LiveRuns` is the only place that holds the host's in-memory state about agents (the store holds
the durable part). It keeps

* a `RunHandle` per live run, by run id: the in-process `ManagedChild` (from `Host.start_child`
  until it is released or handed off), its `RuntimeHandle` once started, and whether the host
  watches it on a worker runtime (a tmux pane, a Ray actor: `WorkerWatch.track`);
* the live *owners*, by session id: the lead and the delegating children, the sessions a result
  or a question can be delivered into;
* the attached leads' `Caller`s, by session id;
* the children that wait for a change elsewhere (`ManagedChild.waiting`), so a change wakes only
  them.

Every lookup is one map read and every iteration walks only the runs it names (the in-process
children, the watched workers, the waiting children), so the host stays linear in the number of
agents. Other packages read it through `Host.runs`; only the host changes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from corral.agent import AgentSession
    from corral.runtime import RuntimeHandle

__all__ = ["LiveChild", "LiveLead", "LiveRuns", "RunHandle"]


class LiveChild(Protocol):
    """What the registry reads of an in-process run (the host's is a `ManagedChild`)."""

    on_waiting: Callable[[Any], None] | None
    """Called with the child when `waiting` changes (the registry sets it while it holds the child)."""

    @property
    def run_id(self) -> str: ...

    @property
    def waiting(self) -> bool: ...


class LiveLead(Protocol):
    """What the registry reads of an attached lead (the host's is a `Caller`)."""

    @property
    def session_id(self) -> str: ...


ChildT = TypeVar("ChildT", bound=LiveChild)
LeadT = TypeVar("LeadT", bound=LiveLead)


@dataclass(eq=False, slots=True)
class RunHandle(Generic[ChildT]):
    """One live run of this host."""

    run_id: str
    """The generation's run id."""
    child: ChildT | None = None
    """The in-process run, from its start until it is released or handed off; `None` on a worker."""
    runtime_handle: RuntimeHandle | None = None
    """Where it runs (its runtime's handle), once started or adopted."""
    on_worker: bool = False
    """Whether the host watches it on a worker runtime (its results and asks come through the store)."""


class LiveRuns(Generic[ChildT, LeadT]):
    """The runs, owners and leads live in this host (see the module docstring); generic over what
    a child and a lead are, so that it needs nothing of the kernel (`Host.runs` is a
    `LiveRuns[ManagedChild, Caller]`)."""

    def __init__(self) -> None:
        self._runs: dict[str, RunHandle[ChildT]] = {}
        self._in_process: dict[str, ChildT] = {}
        """The in-process children by run id, in start order."""
        self._on_workers: set[str] = set()
        self._waiting: dict[str, ChildT] = {}
        self._owners: dict[str, tuple[AgentSession, Callable[[], None]]] = {}
        self._leads: dict[str, LeadT] = {}

    # --- runs ------------------------------------------------------------------------------------

    def get(self, run_id: str) -> RunHandle[ChildT] | None:
        """The live run `run_id`, if this host runs or watches it."""
        return self._runs.get(run_id)

    def child(self, run_id: str) -> ChildT | None:
        """The in-process run of `run_id`, if it runs here."""
        return self._in_process.get(run_id)

    def runtime_handle(self, run_id: str) -> RuntimeHandle | None:
        """Where `run_id` runs (its runtime's handle), if it was started or adopted here."""
        run = self._runs.get(run_id)
        return None if run is None else run.runtime_handle

    def children(self) -> list[ChildT]:
        """The in-process children, in start order (a copy: the runs may change meanwhile)."""
        return list(self._in_process.values())

    def child_count(self) -> int:
        """How many children run in-process."""
        return len(self._in_process)

    def add_child(self, child: ChildT) -> RunHandle[ChildT]:
        """Register an in-process run before it starts (its first hooks find it); its waiting state
        is followed from now on (`waiting`)."""
        run = self._runs.get(child.run_id)
        if run is None:
            run = self._runs[child.run_id] = RunHandle[ChildT](child.run_id)
        run.child = child
        self._in_process[child.run_id] = child
        child.on_waiting = self._note_waiting
        self._note_waiting(child)
        return run

    def started(self, run_id: str, runtime_handle: RuntimeHandle) -> None:
        """Record where the in-process run `run_id` runs, now that it started."""
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = RunHandle[ChildT](run_id)
        run.runtime_handle = runtime_handle

    def drop(self, run_id: str) -> RunHandle[ChildT] | None:
        """Forget the in-process part of `run_id` (its child and runtime handle: it finished, or it
        goes on elsewhere); returns what was dropped. A watched worker run stays watched (without a
        runtime handle) until `unwatch`."""
        run = self._runs.get(run_id)
        if run is None:
            return None
        dropped = RunHandle[ChildT](run_id, run.child, run.runtime_handle, run.on_worker)
        child = self._in_process.pop(run_id, None)
        self._waiting.pop(run_id, None)
        if child is not None and child.on_waiting == self._note_waiting:
            child.on_waiting = None
        run.child = None
        run.runtime_handle = None
        if not run.on_worker:
            del self._runs[run_id]
        return dropped

    # --- worker runs -----------------------------------------------------------------------------

    def watch(self, run_id: str, runtime_handle: RuntimeHandle) -> None:
        """Watch `run_id` on the worker runtime of `runtime_handle`."""
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = RunHandle[ChildT](run_id)
        run.runtime_handle = runtime_handle
        run.on_worker = True
        self._on_workers.add(run_id)

    def unwatch(self, run_id: str) -> RunHandle[ChildT] | None:
        """Stop watching the worker run `run_id` and forget its runtime handle; returns the run as
        it was, or `None` when it was not watched (nothing changes then)."""
        if run_id not in self._on_workers:
            return None
        self._on_workers.discard(run_id)
        run = self._runs[run_id]
        was = RunHandle[ChildT](run_id, run.child, run.runtime_handle, run.on_worker)
        run.on_worker = False
        run.runtime_handle = None
        if run.child is None:
            del self._runs[run_id]
        return was

    def on_worker(self, run_id: str) -> bool:
        """Whether the host watches `run_id` on a worker runtime."""
        return run_id in self._on_workers

    def worker_runs(self) -> list[str]:
        """The run ids watched on worker runtimes, sorted."""
        return sorted(self._on_workers)

    def has_worker_runs(self) -> bool:
        """Whether any run is watched on a worker runtime."""
        return bool(self._on_workers)

    # --- waiting children ------------------------------------------------------------------------

    def _note_waiting(self, child: ChildT) -> None:
        """`ManagedChild.on_waiting`: keep the waiting children (a change wakes only them)."""
        if child.waiting and self._in_process.get(child.run_id) is child:
            self._waiting[child.run_id] = child
        else:
            self._waiting.pop(child.run_id, None)

    def waiting(self) -> tuple[ChildT, ...]:
        """The live children waiting for a change elsewhere (`ManagedChild.waiting`)."""
        return tuple(self._waiting.values())

    # --- owners ----------------------------------------------------------------------------------

    def owner(self, session_id: str) -> AgentSession | None:
        """The live owner session `session_id` (a result or question for it can be delivered now)."""
        found = self._owners.get(session_id)
        return None if found is None else found[0]

    def is_owner(self, session_id: str) -> bool:
        """Whether `session_id` is a live owner here."""
        return session_id in self._owners

    def add_owner(self, agent: AgentSession, follow: Callable[[AgentSession], Callable[[], None]]) -> None:
        """Make `agent` a live owner (one already live stays as it is). `follow(agent)` starts what
        the host follows of it and returns how to stop that, which `remove_owner` calls."""
        session_id = agent.session.session_id
        if session_id not in self._owners:
            self._owners[session_id] = (agent, follow(agent))

    def remove_owner(self, session_id: str) -> None:
        """Forget a live owner (nothing happens for one that is not)."""
        found = self._owners.pop(session_id, None)
        if found is not None:
            found[1]()

    # --- leads -----------------------------------------------------------------------------------

    def lead(self, session_id: str) -> LeadT | None:
        """The `Caller` of the lead attached as `session_id`, if any."""
        return self._leads.get(session_id)

    def is_lead(self, session_id: str) -> bool:
        """Whether `session_id` is an attached lead."""
        return session_id in self._leads

    def leads(self) -> tuple[str, ...]:
        """The attached leads' session ids."""
        return tuple(self._leads)

    def add_lead(self, caller: LeadT) -> None:
        """Record an attached lead (replacing an earlier `Caller` of the same session)."""
        self._leads[caller.session_id] = caller

    def remove_lead(self, session_id: str) -> None:
        """Forget an attached lead (nothing happens for one that is not)."""
        self._leads.pop(session_id, None)
