"""`corral mcp-servers list|check`: the configured MCP servers, where each came from, and (`check`)
whether it starts and which tools it offers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from corral.errors import UsageError

if TYPE_CHECKING:
    from corral.settings import McpServerSettings, Settings

__all__ = ["check_servers", "list_servers", "server_sources"]


def server_sources(cwd: Path) -> tuple[Settings, dict[str, str]]:
    """The settings for `cwd` and, per MCP server, the settings file that defines it (the project's
    wins; an untrusted project's servers are not loaded at all, and a line on stderr says so).

    Raises:
        SettingsError: A settings file does not load.
    """
    from corral.settings import (
        SettingsError,
        find_project_settings,
        load_settings,
        read_settings_file,
        user_settings_path,
    )

    settings = load_settings(cwd, on_warning=lambda line: print(f"corral: warning: {line}", file=sys.stderr))
    sources: dict[str, str] = {}
    user = user_settings_path()
    files = [user] if user.is_file() else []
    project = find_project_settings(cwd)
    if project is not None and project.resolve() != user.resolve():
        files.append(project)
    for path in files:
        try:
            names = read_settings_file(path).mcp_servers
        except SettingsError:  # an untrusted project's broken file: not loaded either
            continue
        for name in names:
            if name in settings.mcp_servers:
                sources[name] = str(path)
    return settings, sources


def _where(server: McpServerSettings) -> str:
    if server.url is not None:
        return server.url
    return " ".join([server.command or "", *server.args])


def _row(name: str, server: McpServerSettings, source: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "transport": server.transport,
        "target": _where(server),
        "enabled": server.enabled,
        "source": source,
        "startupTimeoutS": server.startup_timeout_s,
        "toolTimeoutS": server.tool_timeout_s,
    }


def list_servers(cwd: Path, *, as_json: bool, out: IO[str]) -> int:
    """`corral mcp-servers list`: every configured server, without starting any."""
    settings, sources = server_sources(cwd)
    rows = [_row(name, server, sources.get(name)) for name, server in sorted(settings.mcp_servers.items())]
    if as_json:
        out.write(json.dumps({"servers": rows}, indent=2) + "\n")
        return 0
    if not rows:
        out.write(
            "No MCP servers configured: add [mcp_servers.<name>] to settings.toml (docs/mcp-servers.md).\n"
        )
        return 0
    for row in rows:
        state = "enabled" if row["enabled"] else "disabled"
        out.write(f"{row['name']}  {row['transport']}  {state}  {row['target']}\n")
        out.write(f"    from {row['source'] or 'settings'}\n")
    return 0


async def check_servers(cwd: Path, names: list[str], *, as_json: bool, out: IO[str]) -> int:
    """`corral mcp-servers check [NAME…]`: start each (enabled) server, list its tools, stop it.

    Returns:
        0 when every server checked is ready, 1 when one is not.

    Raises:
        UsageError: A name is not a configured server.
    """
    from corral.mcp_servers import McpGrant, McpServers, is_read_only, mcp_tool_name

    settings, sources = server_sources(cwd)
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
    if not rows:
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
        out.write(f"    from {row['source'] or 'settings'}\n")
    return 0 if ok else 1
