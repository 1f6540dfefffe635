"""The MCP servers an editor passes in `session/new` and `session/load`, given to that session's lead.

Each ACP entry becomes the typed config `[mcp_servers.<name>]` takes (`McpServerSettings`): a stdio
server (`command`, `args`, `env` as `{name, value}` pairs) or a streamable HTTP one (`type: "http"`,
`url`, `headers` as pairs). They join the session's pool (`Launched.mcp_servers`, made here when the
settings have no server) before the lead's first run starts them, so the lead gets them as
`mcp__<name>__<tool>` and the agents it starts in this process inherit them as they inherit the
settings' servers. A name the settings use too is the editor's server in that session, never both.

Bad entries are refused whole (`-32602`, one line naming the entry) before anything is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._wire import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from corral.lead import Launched
    from corral.mcp_servers import McpReport
    from corral.settings import McpServerSettings

__all__ = ["editor_servers", "give_editor_servers"]


def editor_servers(entries: list[Any]) -> dict[str, McpServerSettings]:
    """The configs of a request's `mcpServers`, by name.

    Raises:
        RpcError: `INVALID_PARAMS`, naming the first bad entry and what to do.
    """
    if not entries:
        return {}
    from pydantic import ValidationError

    from corral.settings import McpServerSettings, is_mcp_server_name

    servers: dict[str, McpServerSettings] = {}
    for index, entry in enumerate(entries):
        where = f"mcpServers[{index}]"
        if not isinstance(entry, dict):
            raise RpcError(INVALID_PARAMS, f"{where}: each MCP server is an object with a name")
        name = entry.get("name")
        if not isinstance(name, str) or not is_mcp_server_name(name):
            raise RpcError(
                INVALID_PARAMS,
                f"{where}: name {name!r} must be letters, digits, '-' and single '_' (starting with a letter or digit)",
            )
        where = f"{where} ({name})"
        if name in servers:
            raise RpcError(INVALID_PARAMS, f"{where}: another entry has that name; give each server its own")
        kind = entry.get("type", "stdio")
        try:
            if kind == "stdio":
                fields: dict[str, Any] = {
                    "command": _text(entry, "command", where),
                    "args": _texts(entry.get("args", []), where, "args"),
                    "env": _pairs(entry.get("env", []), where, "env"),
                }
            elif kind == "http":
                fields = {
                    "url": _text(entry, "url", where),
                    "headers": _pairs(entry.get("headers", []), where, "headers"),
                }
            else:
                raise RpcError(
                    INVALID_PARAMS,
                    f"{where}: type {kind!r} is not supported; corral connects to stdio and http MCP servers",
                )
            servers[name] = McpServerSettings(**fields)
        except ValidationError as exc:
            problem = exc.errors()[0].get("msg", str(exc)).removeprefix("Value error, ")
            raise RpcError(INVALID_PARAMS, f"{where}: {problem}") from None
    return servers


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"{where}: {key!r} must be a non-empty string")
    return value


def _texts(value: object, where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RpcError(INVALID_PARAMS, f"{where}: {key!r} must be an array of strings")
    return list(value)


def _pairs(value: object, where: str, key: str) -> dict[str, str]:
    """ACP's `[{name, value}, …]` as a mapping."""
    if not isinstance(value, list):
        raise RpcError(INVALID_PARAMS, f"{where}: {key!r} must be an array of {{name, value}} objects")
    pairs: dict[str, str] = {}
    for pair in value:
        if not (
            isinstance(pair, dict)
            and isinstance(pair.get("name"), str)
            and pair["name"]
            and isinstance(pair.get("value"), str)
        ):
            raise RpcError(
                INVALID_PARAMS, f"{where}: each of {key!r} is an object with string 'name' and 'value'"
            )
        pairs[pair["name"]] = pair["value"]
    return pairs


def give_editor_servers(launched: Launched, servers: dict[str, McpServerSettings]) -> None:
    """Add the editor's `servers` to the lead's pool before its first run (see the module docstring).

    Called between `launch_session` and `attach_host`: nothing has started yet, and the host the
    lead's agents come from is made with this pool.
    """
    if not servers or not launched.has_model:
        return
    from corral.mcp_servers import McpGrant, McpServers

    pool = launched.mcp_servers
    if pool is None:
        pool = McpServers({}, cwd=launched.cwd)
        launched.mcp_servers = pool
    # A name the settings use: the lead's grant already has it; its config becomes the editor's.
    new = tuple(sorted(name for name in servers if name not in pool.configs))
    pool.configs.update(servers)
    agent = launched.agent
    pool.remember(agent.session.session_id, pool.lead_grant())
    if not new:
        return

    def got(report: McpReport) -> None:
        from corral.mcp_servers import McpReport
        from corral.mcp_servers.texts import failed_servers

        before = launched.mcp_report
        launched.mcp_report = (
            report if before is None else McpReport(before.servers + report.servers, before.read_only)
        )
        for line in failed_servers(report.to_details()):
            launched.mcp_notice(line)

    agent.add_tool_source(pool.source(agent, McpGrant(new), got))
