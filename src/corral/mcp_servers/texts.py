"""The words of what an agent got of its MCP servers, from a result's `mcp` details
(`McpReport.to_details`): the line a delegate or spawn result ends with, and the warning lines of a
lead whose servers did not all start."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["failed_servers", "report_brief", "report_text"]

_SHOWN_TOOLS = 8
"""Tool names a report line lists per server before `+N more`."""


def _outcome(name: str, outcome: Mapping[str, Any], read_only: bool) -> str:
    state = outcome.get("state")
    if state == "failed":
        return f"{name}: not available ({outcome.get('problem')})"
    if state == "missing":
        return f"{name}: not given ({outcome.get('problem')})"
    tools = [str(tool) for tool in outcome.get("tools") or ()]
    count = len(tools)
    kind = "read-only tool" if read_only else "tool"
    more = f", +{count - _SHOWN_TOOLS} more" if count > _SHOWN_TOOLS else ""
    listed = f" ({', '.join(tools[:_SHOWN_TOOLS])}{more})" if count else ""
    text = f"{name}: {count} {kind}{'s' if count != 1 else ''}{listed}"
    withheld = outcome.get("withheld") or ()
    if withheld:
        text += f"; {len(withheld)} withheld as not read-only"
    return text


def report_text(details: Mapping[str, Any] | None) -> str | None:
    """`MCP servers: git: 12 tools (…); broken: not available (…).`, or `None` without servers."""
    servers = (details or {}).get("servers") or {}
    if not servers:
        return None
    read_only = bool((details or {}).get("readOnly"))
    parts = [_outcome(str(name), outcome, read_only) for name, outcome in servers.items()]
    text = "MCP servers: " + "; ".join(parts)
    if (details or {}).get("openedBy") == "worker":
        text += " (as this host lists them; the agent's worker opens its own sessions)"
    return text + "."


def failed_servers(details: Mapping[str, Any]) -> list[str]:
    """One line per server the agent did not get, saying why."""
    servers = details.get("servers") or {}
    return [
        f"MCP server {name}: {outcome.get('problem')}"
        for name, outcome in servers.items()
        if outcome.get("state") != "ready"
    ]


def report_brief(details: Mapping[str, Any] | None) -> str | None:
    """`MCP: 12 tools (git, fs); not available: broken` — a swarm member's short form — or `None`."""
    servers = (details or {}).get("servers") or {}
    if not servers:
        return None
    ready = [name for name, outcome in servers.items() if outcome.get("state") == "ready"]
    count = sum(len(outcome.get("tools") or ()) for outcome in servers.values())
    text = f"MCP: {count} tool{'s' if count != 1 else ''}" + (f" ({', '.join(ready)})" if ready else "")
    missing = [name for name in servers if name not in ready]
    return text + (f"; not available: {', '.join(missing)}" if missing else "")
