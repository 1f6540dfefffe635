"""`corral mcp-servers list|check`: the MCP servers, where each came from and its state (from the
resolution the runtime uses, `Settings.mcp_catalog`), and (`check`) whether it starts and which
tools it offers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from corral.errors import UsageError

if TYPE_CHECKING:
    from corral._mcp_config import McpServerCatalog, McpServerEntry
    from corral.settings import McpServerSettings, Settings

__all__ = ["check_servers", "list_servers", "server_catalog"]


def server_catalog(cwd: Path) -> tuple[Settings, McpServerCatalog]:
    """The settings for `cwd` and the catalog of its MCP servers, as the runtime resolves them
    (`load_settings`): each server with its source and state; what was ignored is named on stderr.

    Raises:
        SettingsError: A settings file does not load.
    """
    from corral.settings import load_settings

    settings = load_settings(cwd, on_warning=lambda line: print(f"corral: warning: {line}", file=sys.stderr))
    return settings, settings.mcp_catalog


def _entry_row(entry: McpServerEntry) -> dict[str, Any]:
    return {
        "name": entry.name,
        "transport": entry.transport,
        "target": entry.target,
        "source": entry.source,
        "file": entry.file,
        "state": entry.state,
        "reason": entry.reason,
    }


def _row(name: str, server: McpServerSettings, entry: McpServerEntry | None) -> dict[str, Any]:
    return {
        "name": name,
        "transport": server.transport,
        "target": server.target,
        "enabled": server.enabled,
        "source": None if entry is None else entry.source,
        "file": None if entry is None else entry.file,
        "startupTimeoutS": server.startup_timeout_s,
        "toolTimeoutS": server.tool_timeout_s,
    }


def _in_effect(catalog: McpServerCatalog) -> dict[str, McpServerEntry]:
    return {entry.name: entry for entry in catalog.entries if entry.state in ("used", "disabled")}


def list_servers(cwd: Path, *, as_json: bool, out: IO[str]) -> int:
    """`corral mcp-servers list`: every server found, its source and its state, without starting any."""
    settings, catalog = server_catalog(cwd)
    rows = []
    for entry in catalog.entries:
        row = _entry_row(entry)
        server = settings.mcp_servers.get(entry.name) if entry.state in ("used", "disabled") else None
        if server is not None:
            row.update(
                enabled=server.enabled,
                startupTimeoutS=server.startup_timeout_s,
                toolTimeoutS=server.tool_timeout_s,
            )
        rows.append(row)
    if as_json:
        document: dict[str, Any] = {"servers": rows, "problems": list(catalog.problems)}
        document["untrusted"] = catalog.untrusted
        out.write(json.dumps(document, indent=2) + "\n")
        return 0
    if not rows and not catalog.problems and not catalog.untrusted:
        out.write(
            "No MCP servers configured: add [mcp_servers.<name>] to settings.toml (docs/mcp-servers.md).\n"
        )
    for row in rows:
        state = row["state"]
        if row["reason"]:
            state += f": {row['reason']}"
        out.write(f"{row['name']}  {row['transport'] or '?'}  {state}  {row['target'] or ''}".rstrip() + "\n")
        out.write(f"    from {row['source']} ({row['file']})\n")
    for problem in catalog.problems:
        out.write(f"not used: {problem}\n")
    if catalog.untrusted:
        out.write(f"{catalog.untrusted}\n")
    return 0


async def check_servers(cwd: Path, names: list[str], *, as_json: bool, out: IO[str]) -> int:
    """`corral mcp-servers check [NAME…]`: start each (enabled) server, list its tools, stop it.

    Returns:
        0 when every server checked is ready, 1 when one is not.

    Raises:
        UsageError: A name is not a configured server.
    """
    from corral.mcp_servers import McpGrant, McpServers, is_read_only, mcp_tool_name

    settings, catalog = server_catalog(cwd)
    sources = _in_effect(catalog)
    unknown = [name for name in names if name not in settings.mcp_servers]
    if unknown:
        known = ", ".join(sorted(settings.mcp_servers)) or "none is configured"
        raise UsageError(f"no MCP server named {unknown[0]!r} ({known})")
    chosen = names or sorted(name for name, server in settings.mcp_servers.items() if server.enabled)
    servers = McpServers(settings.mcp_servers, cwd=cwd)
    rows: list[dict[str, Any]] = []
    try:
        await servers.toolset(McpGrant(tuple(chosen)))
        for name in chosen:
            config = settings.mcp_servers[name]
            row = _row(name, config, sources.get(name))
            connection = servers.started.get(name)
            if connection is None:  # disabled, asked for by name
                row.update(state="disabled", tools=[])
                rows.append(row)
                continue
            row.update(
                state=connection.state,
                problem=connection.problem,
                server=connection.server_version,
                protocol=connection.protocol_version,
                log=None if connection.log_path is None else str(connection.log_path),
                tools=[
                    {
                        "name": mcp_tool_name(name, tool.name),
                        "readOnly": is_read_only(tool),
                        "description": (tool.description or "").strip().split("\n")[0],
                    }
                    for tool in connection.tools
                ],
            )
            rows.append(row)
    finally:
        await servers.aclose()
    ok = all(row["state"] in ("ready", "disabled") for row in rows)
    if as_json:
        out.write(json.dumps({"servers": rows, "ok": ok}, indent=2) + "\n")
        return 0 if ok else 1
    if not rows and not catalog.problems and not catalog.untrusted:
        out.write("No enabled MCP servers to check.\n")
    for row in rows:
        if row["state"] == "ready":
            tools = row["tools"]
            read_only = sum(tool["readOnly"] for tool in tools)
            about = ", ".join(part for part in (row.get("server"), f"protocol {row.get('protocol')}") if part)
            out.write(f"{row['name']}  ready  ({about}; {len(tools)} tools, {read_only} read-only)\n")
            for tool in tools:
                marker = "read-only" if tool["readOnly"] else "         "
                out.write(f"    {tool['name']}  {marker}  {tool['description'][:100]}\n")
        elif row["state"] == "disabled":
            out.write(f"{row['name']}  disabled (enabled = false)\n")
        else:
            out.write(f"{row['name']}  {row['state']}: {row.get('problem')}\n")
            log = row.get("log")
            if log and Path(log).is_file() and Path(log).stat().st_size:
                out.write(f"    its stderr: {log}\n")
        out.write(f"    from {row['source'] or 'settings'} ({row['file']})\n")
    return 0 if ok else 1
