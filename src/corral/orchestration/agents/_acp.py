"""Managed agents of an ACP harness (`harness: acp` or a preset): their agent and their owner's questions.

`delegate` builds an `AcpAgentSession` in place of corral's own agent (`acp_agent`); the managed child
runs it like any agent, so its result is stored and delivered exactly once by the kernel. The agent's
permission requests become the child's questions to its owner (`OwnerPermissions`): the kernel
records and delivers the ask, the owner's `reply` comes back through the child's `on_reply` port and
selects an option (or is refused with the options listed; the ask stays open). The child's
`on_ended` port ends the agent's process tree when the run ends, whichever way.

This slice runs ACP agents in-process only (`check_acp_launch`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from corral.harness.acp import (
    AcpAgentSession,
    McpServerSpec,
    PermissionOption,
    PermissionRequest,
    SessionConfig,
    choose_option,
    permission_question,
    preset_command,
    refusal,
)
from corral.orchestration.errors import InvalidRequestError, OrchestrationError
from corral.orchestration.kernel import fault_point

if TYPE_CHECKING:
    from corral.mcp_servers import McpGrant
    from corral.orchestration.kernel.records import AskRecord
    from corral.session import SessionManager
    from corral.settings import Settings

__all__ = ["READ_AGENT_WITHHELD", "OwnerPermissions", "acp_agent", "acp_mcp_servers", "check_acp_launch"]

READ_AGENT_WITHHELD = (
    "a read agent: corral cannot keep another program's agent to a server's read-only tools, so it "
    "gets no MCP server"
)
"""Why a read agent of an ACP harness gets none of its granted servers (recorded with its session)."""


class OwnerPermissions:
    """An ACP agent's permission requests as its managed child's questions to the owner.

    Args:
        abandon_ask: `abandon_ask(run_id, ask_id)`: the kernel's, for a question the turn no longer waits on.
    """

    def __init__(self, *, abandon_ask: Callable[[str, str], object]) -> None:
        self._abandon_ask = abandon_ask
        self.record_ask: Callable[[str], AskRecord] | None = None
        """Records the question mid-turn (the child's `record_ask(q, mid_turn=True)`, set once the
        child exists); `None`: nobody to ask, so rejected."""
        self.ask_ended: Callable[[], None] = lambda: None
        """The child's `end_mid_turn_ask`, for a question the turn no longer waits on."""
        self.label = ""
        """The managed agent's label (named in the question)."""
        self._open: dict[str, tuple[PermissionRequest, asyncio.Future[PermissionOption]]] = {}

    async def ask(self, request: PermissionRequest) -> PermissionOption | None:
        """Ask the owner; the option the reply selects, or `None` (rejected) when nobody can be asked."""
        if self.record_ask is None:
            return None
        try:
            ask = self.record_ask(permission_question(self.label, request))
        except OrchestrationError:
            return None  # no active assignment, or a question already open: nobody answers this one
        future: asyncio.Future[PermissionOption] = asyncio.get_running_loop().create_future()
        self._open[ask.ask_id] = (request, future)
        try:
            return await future
        except asyncio.CancelledError:
            with contextlib.suppress(OrchestrationError):
                self._abandon_ask(ask.run_id, ask.ask_id)
            self.ask_ended()
            raise
        finally:
            self._open.pop(ask.ask_id, None)

    def reply(self, ask: AskRecord, text: str) -> str | None:
        """The child's `on_reply`: select the option `text` names (`None`), or say why it names none."""
        found = self._open.get(ask.ask_id)
        if found is None:
            return "The agent no longer waits for this answer."
        request, future = found
        option = choose_option(request.options, text)
        if option is None:
            return refusal(text, request.options)
        if not future.done():
            future.set_result(option)
        return None


def check_acp_launch(name: str, harness: str, *, runtime: str, fork: bool) -> None:
    """Refuse what this slice cannot run for definition `name` of an ACP `harness`.

    Raises:
        InvalidRequestError: the runtime is not in-process, or a fork was asked for.
    """
    if runtime != "inprocess":
        raise InvalidRequestError(
            f"Agent definition {name} uses the {harness} harness, which runs in-process only; "
            f"its runtime would be {runtime}.",
            next_action=f"Set `runtime: inprocess` in the definition of {name}, then delegate again.",
        )
    if fork:
        raise InvalidRequestError(
            f"Agent definition {name} uses the {harness} harness, whose agents cannot start from a "
            "forked session.",
            next_action="Delegate without fork; put what the agent needs to know in the task.",
        )


def acp_agent(
    harness: str,
    command: tuple[str, ...],
    *,
    label: str,
    session: SessionManager,
    cwd: Path,
    settings: Settings,
    permissions: OwnerPermissions,
    config: SessionConfig,
    writable: bool,
    mcp: McpGrant | None = None,
) -> AcpAgentSession:
    """The managed agent of an ACP definition's `harness` and `command` (its stderr goes next to its
    session file; its `model` and `thinking` in `config`; `writable`: its file writes are answered;
    `mcp`: the MCP servers its grant gives it, passed in `session/new`)."""
    permissions.label = label
    servers, withheld = acp_mcp_servers(settings, mcp)
    stderr = None if session.path is None else session.path.with_suffix(".acp-stderr.log")
    launch = preset_command(harness, command, settings.harnesses.get(harness))
    return AcpAgentSession(
        command=launch,
        session=session,
        cwd=cwd,
        settings=settings,
        agent_name=label,
        permissions=permissions,
        env=launch.environment(),
        stderr_path=stderr,
        on_session=_session_ready,
        config=config,
        writable=writable,
        mcp_servers=servers,
        mcp_withheld=withheld,
    )


def acp_mcp_servers(
    settings: Settings, grant: McpGrant | None
) -> tuple[tuple[McpServerSpec, ...], dict[str, str]]:
    """The MCP servers an ACP agent of `grant` is given (the enabled ones of `[mcp_servers]` it
    names), and those withheld, with why: all of them for a read agent (`grant.read_only`), since
    corral cannot filter another program's tools and no setting marks a whole server read-only."""
    if grant is None:
        return (), {}
    if grant.read_only:
        return (), dict.fromkeys(grant.servers, READ_AGENT_WITHHELD)
    specs = []
    for name in grant.servers:
        config = settings.mcp_servers.get(name)
        if config is not None and config.enabled:
            specs.append(McpServerSpec.of(name, config))
    return tuple(specs), {}


def _session_ready(how: str) -> None:
    """The agent's session is ready (`new`, `loaded` or `seeded`), its prompt not sent yet: a crash
    window (`acp_session_<how>`)."""
    fault_point(f"acp_session_{how}")
