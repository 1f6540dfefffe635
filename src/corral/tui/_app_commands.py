"""The app's agent commands: `/agents`, `/agents-checkpoints`, `/agents-extensions`, `/onboard`.

They read through the lead's agents port (the controller's records, `teams.status`,
`teams.checkpoints`, `teams.sandbox`) and change nothing but what the user
asked for: `/agents-checkpoints delete <id>` retires one checkpoint, and
`/onboard` sends the lead one prompt (the recommendation it asks for changes
nothing until the user runs the commands).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from corral.errors import CorralError
from corral.orchestration.teams._tiers import TIERS
from corral.orchestration.teams.checkpoints._checkpoints import NO_CHECKPOINTS_MESSAGE
from corral.settings import find_project_settings, user_settings_path
from corral.tui._favorites import read_favorites
from corral.tui._onboard import (
    SandboxState,
    extensions_text,
    onboard_inventory,
    onboard_prompt,
)
from corral.tui.screens import AgentsScreen

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine

    from textual.screen import Screen
    from textual.worker import Worker

    from corral._cli._launch import Launched, LaunchOptions
    from corral.lead._agents import LeadAgents
    from corral.orchestration import ListResult
    from corral.orchestration.teams.results import AgentSnapshot
    from corral.tui._app_favorites import FavoriteModels

__all__ = ["AgentCommands", "AgentCommandsApp", "CommandsApp"]


class AgentCommandsApp(Protocol):
    """What `AgentCommands` needs from the app (`CorralApp`)."""

    @property
    def launched(self) -> Launched | None:
        """The lead session, once open."""
        ...

    @property
    def agents(self) -> LeadAgents | None:
        """The lead's agents port, once the host is attached."""
        ...

    def notice(self, text: str, *, kind: str = "info") -> None:
        """Show one notice in the chat."""
        ...

    def prompt_lead(self, text: str) -> object:
        """Send the lead one prompt (as the app's own prompt worker)."""
        ...

    async def list_result(self) -> ListResult | None:
        """The lead's `list`; `None` without a host."""
        ...

    def push_screen(self, screen: Screen[Any]) -> Awaitable[Any]:
        """Open a screen over the app."""
        ...

    def run_worker(self, work: Coroutine[Any, Any, None], *, group: str) -> Worker[None]:
        """Run `work` as one of the app's workers."""
        ...


class CommandsApp(AgentCommandsApp, Protocol):
    """What the slash commands (`corral.tui._commands`) need from the app (`CorralApp`)."""

    @property
    def options(self) -> LaunchOptions:
        """The session and model choices the lead was opened with."""
        ...

    @property
    def settings_broken(self) -> bool:
        """A settings file does not load, so the lead could not start."""
        ...

    @property
    def setup_error(self) -> str | None:
        """Why the lead could not start, if it could not."""
        ...

    @property
    def agent_commands(self) -> AgentCommands:
        """`/agents`, `/agents-checkpoints`, `/agents-extensions` and `/onboard`."""
        ...

    @property
    def favorite_models(self) -> FavoriteModels:
        """`/agents-favorite-models` and its picker."""
        ...

    def push_screen(
        self, screen: Screen[Any], callback: Callable[[Any], Any] | None = None
    ) -> Awaitable[Any]:
        """Open a screen over the app; `callback` gets its result."""
        ...

    def render_footer(self) -> None:
        """Redraw the footer (model, thinking level, context, cost)."""
        ...

    async def switch_to_demo(self) -> None:
        """Start the lead on the offline tour model."""

    async def reopen_with_model(self, ref: str) -> None:
        """Start the lead, which had no model, on model `ref`."""

    async def new_session(self) -> None:
        """Open a fresh session in this directory with the same model, thinking level, tools and surfaces."""

    async def resume_session(self, path: str) -> None:
        """Open the saved session at `path`."""

    def trust_project(self) -> None:
        """Trust this project, like `corral trust`, and say what that unlocks."""

    async def action_quit(self) -> None:
        """Leave the app."""


class AgentCommands:
    """`/agents`, `/agents-checkpoints`, `/agents-extensions` and `/onboard`, composed into `CorralApp`.

    The command table (`corral.tui._commands.COMMANDS`) routes each command here; the slow ones run
    as workers of the `agents` group.
    """

    def __init__(self, app: AgentCommandsApp) -> None:
        """Serve `app`'s agent commands."""
        self.app = app

    def _lead_agents(self, command: str) -> LeadAgents | None:
        """The lead's agents; a notice (and `None`) when there is no orchestration host."""
        agents = self.app.agents
        if agents is None:
            self.app.notice(
                f"{command} needs the lead's orchestration host: start with --surfaces teams "
                "(or agent,teams), or wait until it is attached",
                kind="error",
            )
            return None
        return agents

    # --- /agents -------------------------------------------------------------------------------

    def show_agents(self) -> None:
        """`/agents`: managed agents and teams agents (live, queued and recent completions)."""
        self.app.run_worker(self._show_agents(), group="agents")

    async def _show_agents(self) -> None:
        listed = await self.app.list_result()
        records = [] if listed is None else list(listed.agents)
        invalid = [] if listed is None else list(listed.invalid_definitions)
        teams: tuple[AgentSnapshot, ...] = ()
        agents, launched = self.app.agents, self.app.launched
        if agents is not None and launched is not None and "teams" in launched.surfaces:
            try:
                teams = (await agents.teams.control.status(agents.caller, None)).agents
            except CorralError as exc:
                self.app.notice(f"/agents: teams status unavailable: {exc}", kind="error")
        await self.app.push_screen(AgentsScreen(records, teams, invalid))

    # --- /agents-checkpoints --------------------------------------------------------------------

    def list_checkpoints(self) -> None:
        """`/agents-checkpoints [list]`: the lead's specialist checkpoints, one line each."""
        agents = self._lead_agents("/agents-checkpoints")
        if agents is None:
            return
        try:
            lines, warnings = agents.teams.checkpoints.list_entries()
        except CorralError as exc:
            self.app.notice(f"/agents-checkpoints: {exc}", kind="error")
            return
        self.app.notice("\n".join(lines or [NO_CHECKPOINTS_MESSAGE]))
        for warning in warnings:
            self.app.notice(warning, kind="error")

    def delete_checkpoint(self, checkpoint_id: str) -> None:
        """`/agents-checkpoints delete <checkpoint id>`: retire one checkpoint (a corrupt one too)."""
        agents = self._lead_agents("/agents-checkpoints")
        if agents is None:
            return
        try:
            self.app.notice(agents.teams.checkpoints.delete(checkpoint_id))
        except CorralError as exc:
            self.app.notice(f"/agents-checkpoints: {exc}", kind="error")

    # --- /agents-extensions ---------------------------------------------------------------------

    def extensions(self, arg: str) -> None:
        """`/agents-extensions [list]`: corral has no extensions; show each kind's fixed tool set."""
        self.app.run_worker(self._extensions(arg), group="agents")

    async def _extensions(self, arg: str) -> None:
        if arg not in ("", "list"):
            self.app.notice(
                f"/agents-extensions {arg}: corral has no extension system, so there is nothing to "
                "select; /agents-extensions lists the tools spawned agents get",
                kind="error",
            )
            return
        writers = [name for name, tier in TIERS.items() if tier.nests_helpers]
        self.app.notice(extensions_text(await self._sandbox_state(), writer_tiers=writers))

    async def _sandbox_state(self) -> SandboxState:
        """The read sandbox: the host's own probe when attached, else the probe `corral doctor` runs."""
        launched, agents = self.app.launched, self.app.agents
        setting = launched.settings.teams.read_sandbox if launched is not None else "auto"
        if setting == "off":
            return setting, None, "teams.read_sandbox = off"
        status = await agents.teams.spawning.sandbox_status() if agents is not None else None
        if status is None:  # no host (or it has not decided): probe as `corral doctor` does
            from corral.agent.tools import ReadOnlySandbox

            status = await ReadOnlySandbox().probe()
        return setting, status.ok, status.reason

    # --- /onboard -------------------------------------------------------------------------------

    def onboard(self) -> None:
        """`/onboard`: gather the set-up and ask the lead for a read-only recommendation."""
        self.app.run_worker(self._onboard(), group="agents")

    async def _onboard(self) -> None:
        launched = self.app.launched
        if launched is None:
            return
        if not launched.agent.is_idle:
            self.app.notice(
                "/onboard: the lead is working; wait for the current turn to finish, then run it again"
            )
            return
        try:
            favorites = read_favorites(user_settings_path())
            inventory = onboard_inventory(
                lead_model=launched.model_info,
                lead_thinking=launched.agent.thinking_level,
                models=launched.registry.available_models(),
                favorites=favorites,
                surfaces=launched.surfaces,
                sandbox=await self._sandbox_state(),
                user_settings=user_settings_path(),
                project_settings=find_project_settings(launched.agent.cwd),
            )
            prompt = onboard_prompt(inventory)
        except (CorralError, OSError) as exc:
            self.app.notice(
                f"/onboard: could not gather the inventory ({exc}); nothing was sent", kind="error"
            )
            return
        if not launched.agent.is_idle:  # the lead woke while the probe ran
            self.app.notice(
                "/onboard: the lead is working; wait for the current turn to finish, then run it again"
            )
            return
        self.app.notice(
            "/onboard: asking the lead for a recommendation (read-only; nothing changes until you run its commands)"
        )
        self.app.prompt_lead(prompt)
