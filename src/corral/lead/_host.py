"""The host as the composition root builds it: the kernel host, its controller, teams and tools.

`ComposedHost` is what front ends (the CLI, the app, the Python API, `corral mcp`) and tests
get. The kernel's `Host` knows neither the controller, nor teams, nor the tool surfaces; this
class wires them: the `Controller` over the host, `SurfaceTools` as the host's `ToolProvider`,
and the teams core as a `HostExtension` — added only once something uses teams (the teams
surface, a lead with teams state in the store, or `teams` asked for by a front end), so a lead
without teams never imports the teams core.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from corral._compose import LeadProcess, compose
from corral.orchestration._repositories import Repositories
from corral.orchestration.agents._controller import Controller
from corral.orchestration.host._handoff import HandoffResult, handoff, handoff_runtime
from corral.orchestration.host._host import Host
from corral.orchestration.surfaces import SurfaceTools

if TYPE_CHECKING:
    from corral.agent import AgentSession
    from corral.orchestration.budgets import BudgetsExtension
    from corral.orchestration.host._launch import WorkerStart
    from corral.orchestration.kernel._caller import Caller
    from corral.orchestration.teams._extension import TeamsExtension
    from corral.orchestration.teams._teams import Teams
    from corral.runtime import WorkerRuntime

__all__ = ["ComposedHost"]


def _ray_worker_class() -> type:
    """The Ray worker actor's class, imported with the first Ray launch (start-up never loads it)."""
    from corral._ray_worker import RayWorker

    return RayWorker


def _register_ray(host: Host) -> None:
    """Register the Ray runtime and its start step with `host`, both made on first use (a host that
    never runs an agent on Ray imports neither Ray nor corral's Ray modules)."""
    settings, data_root = host.settings.ray, host.kernel.db.path.parent

    def runtime() -> WorkerRuntime:
        from corral.runtime._ray import RayRuntime, ray_config

        return RayRuntime(ray_config(settings), data_root=data_root)

    def workers() -> WorkerStart:
        from corral.orchestration.host._ray_launch import RayWorkers

        return RayWorkers(host, _ray_worker_class)

    host.runtime.register_lazy("ray", runtime)
    host.workers.register("ray", workers)


class ComposedHost(Host):
    """A `Host` with its controller, its tools and (once used) teams; takes `Host`'s other arguments."""

    def __init__(
        self,
        *,
        repositories: Repositories,
        **options: Any,
    ) -> None:
        """Args:
        repositories: The data root's database and repositories (`Repositories.open`); the host
            gets their `kernel` and closes the database in `aclose`.
        **options: `Host`'s other arguments.
        """
        super().__init__(
            kernel=repositories.kernel,
            tools=SurfaceTools(self),
            **options,
        )
        self.repositories = repositories
        """Every repository over the host's database (front ends read teams and worktrees rows here)."""
        self.controller: Controller = Controller(self, hidden_runs=repositories.teams.roster.team_run_ids)
        """The nine `agent` actions over this host."""
        self._teams: TeamsExtension | None = None
        composed = compose(LeadProcess(self, repositories))
        self.budgets: BudgetsExtension = composed.budgets
        """Budgets of the lead's agent tree and of each agent (docs/fleet.md)."""
        for extension in composed.extensions:
            self.extensions.add(extension)
        _register_ray(self)

    @property
    def teams(self) -> Teams:
        """The teams core, made (and added as the host's teams extension) on first use."""
        if self._teams is None:
            from corral.orchestration.teams._extension import TeamsExtension

            self._teams = TeamsExtension(self)
            self.extensions.add(self._teams)
        return self._teams.teams

    @property
    def has_teams(self) -> bool:
        """Whether the teams core was made here."""
        return self._teams is not None

    async def attach_lead(
        self, agent: AgentSession, *, surfaces: Iterable[str] = ("agent",), no_model: str | None = None
    ) -> Caller:
        """`Host.attach_lead`, with teams added first when the lead uses them or has teams state."""
        surfaces = tuple(surfaces)
        if "teams" in surfaces or self.repositories.teams.roster.has_team_state(agent.session.session_id):
            _ = self.teams  # made now, so the lead's teams state is recovered
        return await super().attach_lead(agent, surfaces=surfaces, no_model=no_model)

    def handoff_target(self, runtime: str | None = None) -> str:
        """The runtime a handoff targets: `runtime`, else the `runtime` setting when it names a worker
        runtime (`tmux`, `ray`), else `tmux`."""
        return handoff_runtime(self.settings, runtime)

    async def handoff(self, run_id: str, *, runtime: str | None = None) -> HandoffResult:
        """Move the live in-process agent `run_id` onto a worker runtime at a safe point (see
        `host._handoff`): `runtime` (`tmux`, `ray`), else `handoff_target()`."""
        return await handoff(self, run_id, runtime=self.handoff_target(runtime))
