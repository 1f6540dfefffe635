"""Who gets which MCP servers: an agent's `McpGrant`, narrowed from its parent's, never wider.

The lead gets every enabled server (`lead_grant`). A managed agent's definition says `mcp: inherit`
(the default: its parent's servers), `none`, or a list of server names, which keeps only those of
the parent's (`narrow`): a name the parent lacks is reported, never added. A read agent — one that
cannot change files — gets only the tools its servers annotate `readOnlyHint: true` (`read_only`),
and so does every agent below it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from corral.settings import McpServerSettings

__all__ = ["NO_MCP", "McpChoice", "McpGrant", "lead_grant", "narrow"]

McpChoice = Literal["inherit", "none"] | tuple[str, ...]
"""A definition's `mcp`: its parent's servers (`inherit`), none, or those of the parent's it names."""


@dataclass(frozen=True, slots=True)
class McpGrant:
    """The MCP servers an agent gets, and whether only their read-only tools."""

    servers: tuple[str, ...]
    """The server names, in the order their tools are offered."""
    read_only: bool = False
    """Only tools annotated `readOnlyHint: true` (a read agent, or any agent below one)."""

    def to_json(self) -> dict[str, object]:
        """The grant as a JSON object (`from_json` reads it back)."""
        return {"servers": list(self.servers), "readOnly": self.read_only}

    @classmethod
    def from_json(cls, data: object) -> McpGrant:
        """The grant `to_json` wrote.

        Raises:
            ValueError: `data` is not such an object.
        """
        if not isinstance(data, Mapping):
            raise ValueError("the MCP grant is not an object")
        servers = data.get("servers")
        read_only = data.get("readOnly", False)
        if not isinstance(servers, list) or not all(isinstance(name, str) for name in servers):
            raise ValueError("the MCP grant's `servers` is not a list of names")
        if not isinstance(read_only, bool):
            raise ValueError("the MCP grant's `readOnly` is not true or false")
        return cls(tuple(servers), read_only)


NO_MCP = McpGrant(())
"""No MCP server at all."""


def lead_grant(servers: Mapping[str, McpServerSettings]) -> McpGrant:
    """The lead's grant: every enabled server, by name."""
    return McpGrant(tuple(sorted(name for name, server in servers.items() if server.enabled)))


def narrow(parent: McpGrant, choice: McpChoice, *, read_only: bool) -> tuple[McpGrant, tuple[str, ...]]:
    """A child's grant under `parent`: `(grant, names asked for that the parent does not have)`.

    Args:
        parent: The grant of the agent that starts the child (the lead's: `lead_grant`).
        choice: The child's definition's `mcp`.
        read_only: Whether the child is a read agent; a read-only parent's children are too.
    """
    read_only = read_only or parent.read_only
    if choice == "none":
        return McpGrant((), read_only), ()
    if choice == "inherit":
        return McpGrant(parent.servers, read_only), ()
    names: Sequence[str] = choice
    kept = tuple(name for name in names if name in parent.servers)
    missing = tuple(name for name in names if name not in parent.servers)
    return McpGrant(kept, read_only), missing
