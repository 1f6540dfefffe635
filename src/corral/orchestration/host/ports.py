"""The host's two ports: how features ride on kernel generations, and how tools reach a session.

The host (the kernel's runtime side) knows neither teams, nor worktrees, nor tool surfaces. It
meets them here:

* `HostExtension` — a feature that rides on generations: teams
  (`corral.orchestration.teams._extension.TeamsExtension`) and the worktrees of isolated writers
  (`corral.orchestration.worktrees._extension.WorktreesExtension`). Every hook has a no-op
  default, so a feature overrides only what it needs (pydantic-ai's `AbstractCapability`,
  huey's signals). The host calls every extension it holds, in order; the first that
  `deliver`s a result owns it, through one `Extensions` (`Host.extensions`), which fans each hook
  out. The composition root hands them to `Host(extensions=...)`, or a feature registers itself
  the first time it is used (`host.extensions.add`).
* `ToolProvider` — where a controller's tools (the `agent` and `teams` surfaces) and a managed
  child's own tools (`ask_owner`, the teams member tools) come from (pydantic-ai's
  `AbstractToolset`); implemented by `corral.orchestration.surfaces.SurfaceTools`.

The composition root (`corral.lead`) builds the host with both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from corral.orchestration.errors import OrchestrationError

if TYPE_CHECKING:
    from corral.agent import AgentEvent, AgentSession, AgentTool
    from corral.orchestration.host.protocol import LaunchPart
    from corral.orchestration.kernel._caller import Caller
    from corral.orchestration.kernel._child import ManagedChild
    from corral.orchestration.kernel.records import GenerationRecord, ResultRecord

__all__ = ["Extensions", "HandoffRefusal", "HostExtension", "ToolProvider"]

HandoffRefusal = tuple[str, str]
"""Why a run may not move to a worker runtime now: `(reason code, one line for the person)`."""


class HostExtension:
    """A feature that rides on kernel generations. Every hook is a no-op by default."""

    async def lead_attached(self, lead_session_id: str) -> Sequence[str]:
        """A lead attached (start or resume): settle what a crash left; warnings for the front end."""
        return ()

    def claims(self, run_id: str) -> bool:
        """Whether generation `run_id` belongs to this feature (its worker gets the feature's tools)."""
        return False

    def admitting(self, owner_session_id: str) -> None:
        """A new agent is about to be delegated or spawned for `owner_session_id`: raise an
        `OrchestrationError` to refuse it (before anything is recorded)."""

    def run_starting(self, generation: GenerationRecord, child: ManagedChild | None) -> None:
        """Generation `generation` is about to start: in-process with `child`, or (`None`) in a worker."""

    def status_fields(self, run_id: str) -> Mapping[str, object] | None:
        """Fields the feature adds to the run's `list` record and teams status (reads only), or `None`."""
        return None

    def result_note(self, run_id: str) -> str | None:
        """A line the run's result text or report ends with (read-only), or `None`."""
        return None

    async def work_done(self, run_id: str, summary: str) -> str | None:
        """The run's assignment may finish with `summary`; its result is stored next.

        Returns:
            A line appended to the result text, or `None`.
        """
        return None

    async def result_details(self, run_id: str) -> Mapping[str, object] | None:
        """Fields the run's delivered result adds to its details, or `None`."""
        return None

    async def deliver(
        self, generation: GenerationRecord, result: ResultRecord, owner: AgentSession, *, finalize: bool
    ) -> bool:
        """Deliver the pending `result` of `generation` to `owner` exactly once, when it is this feature's.

        `finalize`: the run has ended, so the mark that the result is delivered also finalizes the
        generation in the same transaction (`Generations.mark_delivered(finalize=True)`).

        Returns:
            `True` when the result was delivered (and marked delivered) here; `False` leaves it to
            the kernel's own delivery.
        """
        return False

    def released(self, run_id: str) -> None:
        """The host dropped the in-memory parts of a finished generation."""

    def busy(self, owner_session_id: str) -> bool:
        """Whether work of this feature owed to `owner_session_id` is still due (the owner is not quiet)."""
        return False

    def lost(self, run_id: str, reason: str) -> None:
        """The run of `run_id` is gone without a result: a failed handoff of an in-process run, or a
        remote run whose Ray worker or node is gone (marked `lost`)."""

    def may_hand_off(self, run_id: str, runtime: str) -> HandoffRefusal | None:
        """Why `run_id` may not move to the worker runtime `runtime` (`tmux`, `ray`, …) now, else
        `None` (reads only)."""
        return None

    def handoff_launch(self, generation: GenerationRecord, runtime: str) -> LaunchPart | None:
        """The feature's own part of the worker launch of `generation` moving to `runtime`
        (`host.protocol.WorkerLaunch.parts`, e.g. the workspace a remote worker checks), or `None`.
        Reads only."""
        return None

    def polled(self) -> None:
        """One tick of the host's tmux watcher (work that tmux runs leave in the store)."""

    async def remote_result(self, run_id: str, session_path: Path | None) -> str | None:
        """A remote run's result arrived (its session file on this machine is complete up to it) and
        is stored next: a feature's last step on the lead's machine, e.g. landing a write agent's
        changes. Idempotent: a host that crashed before storing the result runs it again.

        Returns:
            A line appended to the result text, or `None`.
        """
        return None

    def agent_event(self, run_id: str, event: AgentEvent) -> None:
        """An event of run `run_id`'s agent session, as it happens (keep it cheap: every delta comes here)."""

    def remote_state(self, run_id: str) -> object | None:
        """What the feature pushes to the Ray worker of `run_id` with every pull (its own typed
        record, e.g. the run's budget), or `None`. Reads only; called every pull interval."""
        return None

    def remote_fact(self, run_id: str, payload: object) -> None:
        """A fact a Ray worker recorded for run `run_id` (a feature's own record; ignore other
        features' payloads). Make it durable: the worker drops it once the host confirms."""


class Extensions:
    """The features riding on a host's generations, in the order they were added: the one object
    through which the host (and a feature's callers) fan a hook out to every extension.

    Args:
        extensions: The features the host starts with.
        warn: Where a feature's failure to answer a read goes (`Host.warn`): the read then goes on
            without that feature's part.
    """

    def __init__(self, extensions: Sequence[HostExtension] = (), *, warn: Callable[[str], None]) -> None:
        self._all: list[HostExtension] = list(extensions)
        self._warn = warn

    def __iter__(self) -> Iterator[HostExtension]:
        return iter(self._all)

    def add(self, extension: HostExtension) -> None:
        """Let a feature ride on the host's generations from now on (the root adds teams when first used)."""
        self._all.append(extension)

    def admitting(self, owner_session_id: str) -> None:
        """Let every extension refuse a new agent of `owner_session_id` (raises `OrchestrationError`)."""
        for extension in self._all:
            extension.admitting(owner_session_id)

    def result_notes(self, run_id: str) -> list[str]:
        """The lines the extensions end the run's result text or report with (e.g. `budget_exhausted`)."""
        return [note for e in self._all if (note := e.result_note(run_id))]

    def status_fields(self, run_id: str) -> dict[str, object]:
        """What the extensions add to the run's `list` record and teams status (e.g. its `budget`)."""
        merged: dict[str, object] = {}
        for extension in self._all:
            try:
                merged.update(extension.status_fields(run_id) or {})
            except OrchestrationError as exc:
                self._warn(f"status of run {run_id} could not be read ({exc})")
        return merged

    async def result_details(self, run_id: str) -> dict[str, object] | None:
        """What the extensions add to a delivered result's details, or `None`."""
        merged: dict[str, object] = {}
        for extension in self._all:
            try:
                extra = await extension.result_details(run_id)
            except OrchestrationError as exc:
                self._warn(f"details of run {run_id} could not be read ({exc})")
                continue
            merged.update(extra or {})
        return merged or None

    async def remote_result(self, run_id: str, session_path: Path | None) -> str | None:
        """`HostExtension.remote_result` of every extension: the lines a remote run's result gets."""
        notes = [note for e in self._all if (note := await e.remote_result(run_id, session_path))]
        return "\n".join(notes) or None

    def remote_state(self, run_id: str) -> tuple[object, ...]:
        """What the extensions push to the Ray worker of `run_id` with every pull."""
        return tuple(state for e in self._all if (state := e.remote_state(run_id)) is not None)

    def remote_fact(self, run_id: str, payload: object) -> None:
        """A feature's fact from the Ray worker of `run_id`: every extension sees it."""
        for extension in self._all:
            extension.remote_fact(run_id, payload)

    def lost(self, run_id: str, diagnostic: str) -> None:
        """A run was marked `lost` (its Ray worker or node is gone, a handoff failed): every extension's `lost`."""
        for extension in self._all:
            extension.lost(run_id, diagnostic)


class ToolProvider(Protocol):
    """Where the tools of controllers and of managed children come from."""

    def lead_tools(self, caller: Caller, surfaces: Sequence[str]) -> list[AgentTool]:
        """The tools of `surfaces` (`agent`, `teams`) for a controller: the lead or a delegating agent."""
        ...

    def child_tools(self, child: ManagedChild) -> list[AgentTool]:
        """A managed child's own tools (`ask_owner`; a teams agent's member tools)."""
        ...
