"""The user's MCP servers for an ACP agent: `session/new`'s and `session/load`'s `mcpServers`.

corral does not run an ACP agent's MCP servers: it tells the agent which to start, in ACP's shape
(`McpServerStdio`: `{name, command, args, env: [{name, value}]}`; `McpServerHttp`:
`{type: "http", name, url, headers: [{name, value}]}`), and the agent connects to them itself. An
HTTP server is passed only to an agent whose `initialize` answer says it takes them
(`agentCapabilities.mcpCapabilities.http`); otherwise it is withheld, saying why. A stdio server
with a `cwd` of its own is started through `/bin/sh` changing to it first (ACP has no `cwd` field).
Which servers an agent gets is decided above (the same grant as corral's own agents get: the
definition's `mcp`, narrowed from the lead's; none for a read agent) and arrives here as
`McpServerSpec`s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.settings import McpServerSettings

__all__ = ["McpServerSpec", "session_servers"]

_CD_AND_RUN = 'cd "$1" && shift && exec "$@"'


@dataclass(frozen=True, slots=True)
class McpServerSpec:
    """One MCP server an ACP agent is given (from `[mcp_servers.<name>]`)."""

    name: str
    command: str | None = None
    """A stdio server's program (else `url`)."""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    """A stdio server's working directory (absolute), or `None`: where the agent starts it."""
    url: str | None = None
    """An HTTP server's endpoint."""
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, settings: McpServerSettings, *, base: str | None = None) -> McpServerSpec:
        """The spec of `McpServerSettings` `settings`; a relative `cwd` is taken from `base` (default:
        this process's working directory, as corral's own sessions take it)."""
        cwd = None if settings.cwd is None else os.path.expanduser(settings.cwd)
        if cwd is not None and not os.path.isabs(cwd):
            cwd = os.path.join(base or os.getcwd(), cwd)
        return cls(
            name,
            command=settings.command,
            args=tuple(settings.args),
            env=dict(settings.env),
            cwd=cwd,
            url=settings.url,
            headers=dict(settings.headers),
        )

    def to_acp(self) -> dict[str, object]:
        """ACP's `McpServer` for this server."""

        def pairs(values: Mapping[str, str]) -> list[dict[str, str]]:
            return [{"name": key, "value": value} for key, value in values.items()]

        if self.url is not None:
            return {"type": "http", "name": self.name, "url": self.url, "headers": pairs(self.headers)}
        assert self.command is not None
        command, args = self.command, list(self.args)
        if self.cwd is not None:
            command, args = "/bin/sh", ["-c", _CD_AND_RUN, "sh", self.cwd, self.command, *self.args]
        return {"name": self.name, "command": command, "args": args, "env": pairs(self.env)}


def session_servers(
    specs: Sequence[McpServerSpec], agent_caps: object
) -> tuple[list[dict[str, object]], dict[str, str]]:
    """`(mcpServers for the agent, {name: why withheld})` given its `agentCapabilities`."""
    mcp = agent_caps.get("mcpCapabilities") if isinstance(agent_caps, dict) else None
    http = isinstance(mcp, dict) and mcp.get("http") is True
    given: list[dict[str, object]] = []
    withheld: dict[str, str] = {}
    for spec in specs:
        if spec.url is not None and not http:
            withheld[spec.name] = "an HTTP server, and the agent does not take them (no mcpCapabilities.http)"
            continue
        given.append(spec.to_acp())
    return given, withheld
