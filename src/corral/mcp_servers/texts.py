"""The words of what an agent got of its MCP servers, from a result's `mcp` details
(`McpReport.to_details`): the line a delegate or spawn result ends with, and the warning lines of a
lead whose servers did not all start; and the words of the `mcp_tool_search` tool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "failed_servers",
    "report_brief",
    "report_text",
    "search_bad_limit",
    "search_bad_query",
    "search_description",
    "search_found_nothing",
    "search_loaded",
    "search_query_description",
]

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
    if (details or {}).get("toolSearch"):
        text += " (loaded on demand through mcp_tool_search, to save context)"
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


# --- tool search (`_search.py`): what the model reads ------------------------------------------------

_SEARCH_DESCRIPTION_CUT = 160
"""Characters of a tool's description a search result shows."""


def search_description(servers: Sequence[str], count: int, names: Sequence[str] | None) -> str:
    """The `mcp_tool_search` tool's description: what it does and what it can load."""
    text = (
        f"Load tools of your MCP servers ({', '.join(servers)}): {count} tools are available but not "
        "loaded, to save context. Search with keywords for what you need (e.g. `open pull request`), "
        "or load tools by name with `select:<name>,<name>`. The tools found are loaded and you can call "
        "them from your next step on; search again for others."
    )
    if names:
        text += " Available: " + ", ".join(names) + "."
    return text


def search_query_description() -> str:
    """The `query` parameter's description."""
    return "Keywords describing the tools you need, or `select:` followed by comma-separated tool names."


def search_bad_query() -> str:
    """A call without a query."""
    return "query must be a non-empty string: keywords, or select:<tool name>,<tool name>"


def search_bad_limit() -> str:
    """A `max_results` out of range."""
    return "max_results must be a whole number from 1 to 20"


def _unknown(unknown: Sequence[str]) -> str:
    return f" No tool is named {', '.join(unknown)}." if unknown else ""


def search_found_nothing(query: str, unknown: Sequence[str]) -> str:
    """No tool matched."""
    return f"No MCP tool matches {query!r}.{_unknown(unknown)} Try other keywords."


def search_loaded(found: Sequence[tuple[str, str]], unknown: Sequence[str]) -> str:
    """The tools a search loaded, one line each."""
    lines = []
    for name, description in found:
        first = description.strip().splitlines()[0] if description.strip() else ""
        cut = first if len(first) <= _SEARCH_DESCRIPTION_CUT else first[: _SEARCH_DESCRIPTION_CUT - 1] + "…"
        lines.append(f"- {name}: {cut}" if cut else f"- {name}")
    head = f"Loaded {len(found)} tool{'s' if len(found) != 1 else ''}; call {'them' if len(found) != 1 else 'it'} directly:"
    return "\n".join([head, *lines]) + ("\n" + _unknown(unknown).strip() if unknown else "")
