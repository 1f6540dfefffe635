"""MCP servers configured outside corral's settings: Claude Code's and Codex's files, as corral tables.

`corral.settings` resolves every MCP server of a working directory in one place (`load_settings`,
`Settings.mcp_catalog`); this module only reads the foreign files and turns each server into a
`[mcp_servers.<name>]` table (a plain dict, validated by the settings) or a one-line problem:

* a project's `.mcp.json` (Claude Code: `{"mcpServers": {"<name>": {"command", "args", "env"} |
  {"type": "http", "url", "headers"}}}`, with `${VAR}` and `${VAR:-default}` expanded in the command,
  its arguments, the environment, the URL and the headers, as Claude Code expands them);
* a project's `.codex/config.toml` and the user's `~/.codex/config.toml` (`$CODEX_HOME`) —
  `[mcp_servers.<name>]` with `command`, `args`, `env`, `env_vars`, `cwd`, `url`,
  `bearer_token_env_var`, `http_headers`, `env_http_headers`, `enabled`, `startup_timeout_sec` (or
  `startup_timeout_ms`) and `tool_timeout_sec`;
* the user's `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`): `mcpServers` at its top level and
  under `projects["<the project's path>"]` (the latter first, as Claude Code's local scope wins).

A project file is read as `corral._confined` reads a planted file (inside the project, regular,
capped); nothing here decides trust or precedence.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from corral._confined import Refused, read_confined

__all__ = [
    "FileServers",
    "ForeignServer",
    "McpServerCatalog",
    "McpServerEntry",
    "McpSource",
    "McpState",
    "claude_json_path",
    "codex_config_path",
    "read_claude_json",
    "read_codex_config",
    "read_mcp_json",
]

McpSource = Literal[
    "user settings",
    "project settings",
    ".mcp.json",
    ".codex/config.toml",
    "imported claude",
    "imported codex",
]
"""Where a server was configured."""

McpState = Literal["used", "shadowed", "ignored", "disabled"]
"""`used` (agents get it), `shadowed` (a source that ranks higher has a server of that name),
`ignored` (its entry cannot be used: `reason` says why), `disabled` (`enabled = false`)."""

PROJECT_FILE_MAX_BYTES = 1 << 20
"""The largest project `.mcp.json` or `.codex/config.toml` read (1 MiB)."""

USER_FILE_MAX_BYTES = 64 << 20
"""The largest `~/.claude.json` read (64 MiB: Claude Code keeps its history there too)."""


@dataclass(frozen=True, slots=True)
class McpServerEntry:
    """One configured MCP server, where it came from and whether agents get it."""

    name: str
    source: McpSource
    file: str
    """The file it is configured in."""
    state: McpState
    transport: str | None = None
    """`stdio` or `http` (or the unsupported transport an ignored entry names)."""
    target: str | None = None
    """Its command line or URL."""
    reason: str | None = None
    """Why it is shadowed or ignored."""


@dataclass(frozen=True, slots=True)
class McpServerCatalog:
    """Every MCP server of a working directory, as `load_settings` resolved them."""

    entries: tuple[McpServerEntry, ...] = ()
    """By precedence: user settings, then the imports in `mcp_import`'s order, then the project's
    settings, `.mcp.json` and `.codex/config.toml`."""
    problems: tuple[str, ...] = ()
    """Files that could not be used at all, one line each."""
    untrusted: str | None = None
    """One line when the project's servers were not read because it is not trusted."""


@dataclass(frozen=True, slots=True)
class ForeignServer:
    """One server of a foreign file: its corral table, or why it cannot be used."""

    name: str
    table: dict[str, Any] | None
    problem: str | None = None
    transport: str | None = None


@dataclass(frozen=True, slots=True)
class FileServers:
    """The servers of one foreign file, or why the file cannot be used."""

    servers: tuple[ForeignServer, ...] = ()
    problem: str | None = None


def claude_json_path(home: Path | None = None) -> Path:
    """Claude Code's user file: `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser() / ".claude.json"
    return (home if home is not None else Path.home()) / ".claude.json"


def codex_config_path(home: Path | None = None) -> Path:
    """Codex's user file: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`."""
    configured = os.environ.get("CODEX_HOME")
    if configured:
        return Path(configured).expanduser() / "config.toml"
    return (home if home is not None else Path.home()) / ".codex" / "config.toml"


def _read(path: Path, roots: list[Path] | None, limit: int) -> tuple[str | None, str | None]:
    """The text of `path`, or `(None, problem)`."""
    try:
        data = read_confined(path, roots=roots, limit=limit)
    except Refused as refused:
        return None, f"{path}: not read: {refused.reason}"
    except OSError as exc:
        return None, f"{path}: cannot be read: {exc.strerror or exc}"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, f"{path}: not UTF-8 text; save it as UTF-8"


_VARIABLE = re.compile(r"\$\{([^}]+)\}")


class _Unset(Exception):
    pass


def _expand(value: str, environ: Mapping[str, str]) -> str:
    """`${VAR}` and `${VAR:-default}` in `value`, as Claude Code expands them (a set but empty variable
    stays empty). Raises `_Unset` naming a variable that is unset and has no default."""

    def one(match: re.Match[str]) -> str:
        name, sep, default = match.group(1).partition(":-")
        if name in environ:
            return environ[name]
        if sep:
            return default
        raise _Unset(name)

    return _VARIABLE.sub(one, value)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _string_map(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _claude_server(name: str, spec: object, environ: Mapping[str, str], base: Path | None) -> ForeignServer:
    if not isinstance(spec, dict):
        return ForeignServer(name, None, "not an object with `command` or `url`")
    kind = spec.get("type", "http" if "url" in spec and "command" not in spec else "stdio")
    if kind in ("sse", "ws") or not isinstance(kind, str):
        return ForeignServer(
            name,
            None,
            f'transport {kind!r} is not supported (corral speaks stdio and streamable HTTP, "type": "http")',
            transport=str(kind),
        )
    try:
        if kind == "stdio":
            command, args, env = spec.get("command"), spec.get("args", []), spec.get("env", {})
            if not isinstance(command, str) or not command:
                return ForeignServer(name, None, "`command` must be a non-empty string", "stdio")
            if not _strings(args):
                return ForeignServer(name, None, "`args` must be a list of strings", "stdio")
            if not _string_map(env):
                return ForeignServer(name, None, "`env` must map names to strings", "stdio")
            table: dict[str, Any] = {
                "command": _expand(command, environ),
                "args": [_expand(arg, environ) for arg in args],
                "env": {key: _expand(val, environ) for key, val in env.items()},
            }
            if isinstance(spec.get("cwd"), str):
                table["cwd"] = _resolved_cwd(_expand(spec["cwd"], environ), base)
            return ForeignServer(name, table, transport="stdio")
        if kind != "http":
            return ForeignServer(
                name, None, f'"type" {kind!r} is not one of "stdio", "http" (or the unsupported "sse")'
            )
        url, headers = spec.get("url"), spec.get("headers", {})
        if not isinstance(url, str):
            return ForeignServer(name, None, "`url` must be a string", "http")
        if not _string_map(headers):
            return ForeignServer(name, None, "`headers` must map names to strings", "http")
        table = {
            "url": _expand(url, environ),
            "headers": {key: _expand(val, environ) for key, val in headers.items()},
        }
        return ForeignServer(name, table, transport="http")
    except _Unset as unset:
        return ForeignServer(
            name,
            None,
            f"${{{unset}}} is not set and has no default: set it, or write ${{{unset}:-default}}",
            transport=str(kind),
        )


def _resolved_cwd(cwd: str, base: Path | None) -> str:
    path = Path(cwd).expanduser()
    return str(path if path.is_absolute() or base is None else base / path)


def _claude_servers(
    servers: object, where: str, environ: Mapping[str, str], base: Path | None
) -> tuple[list[ForeignServer], str | None]:
    if servers is None:
        return [], None
    if not isinstance(servers, dict):
        return [], f"{where}: `mcpServers` is not an object of servers by name"
    return [_claude_server(str(name), spec, environ, base) for name, spec in servers.items()], None


def _json_object(path: Path, roots: list[Path] | None, cap: int) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON object in `path` (read as `_read` reads), or `None` and the one-line problem."""
    text, problem = _read(path, roots, cap)
    if text is None:
        return None, problem
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}); fix it"
    if not isinstance(data, dict):
        return None, f'{path}: not a JSON object (Claude Code\'s form is {{"mcpServers": {{…}}}})'
    return data, None


def read_mcp_json(path: Path, project: Path, environ: Mapping[str, str] | None = None) -> FileServers:
    """A project's `.mcp.json` (Claude Code's format), read confined to `project`."""
    data, problem = _json_object(path, [project], PROJECT_FILE_MAX_BYTES)
    if data is None:
        return FileServers(problem=problem)
    servers, problem = _claude_servers(
        data.get("mcpServers"), str(path), environ if environ is not None else os.environ, project
    )
    return FileServers(tuple(servers), problem)


def read_claude_json(path: Path, project: Path, environ: Mapping[str, str] | None = None) -> FileServers:
    """The user's `~/.claude.json`: the servers of `projects["<project>"]` (Claude Code's local scope),
    then its top-level `mcpServers` (user scope)."""
    if not path.is_file():
        return FileServers(
            problem=f'{path}: not found (mcp_import = ["claude"] reads Claude Code\'s servers there)'
        )
    data, problem = _json_object(path, None, USER_FILE_MAX_BYTES)
    if data is None:
        return FileServers(problem=problem)
    env = environ if environ is not None else os.environ
    projects = data.get("projects")
    local: object = None
    if isinstance(projects, dict):
        entry = projects.get(str(project))
        local = entry.get("mcpServers") if isinstance(entry, dict) else None
    found, problem = _claude_servers(local, f"{path} (projects[{str(project)!r}])", env, None)
    top, top_problem = _claude_servers(data.get("mcpServers"), str(path), env, None)
    return FileServers(tuple(found + top), problem or top_problem)


def _codex_server(name: str, spec: object, environ: Mapping[str, str], base: Path | None) -> ForeignServer:
    if not isinstance(spec, dict):
        return ForeignServer(name, None, "not a table with `command` or `url`")
    table: dict[str, Any] = {}
    transport = "http" if "url" in spec else "stdio"
    for key in ("command", "args", "env", "url", "enabled"):
        if key in spec:
            table[key] = spec[key]
    if isinstance(spec.get("cwd"), str):
        table["cwd"] = _resolved_cwd(spec["cwd"], base)
    names = spec.get("env_vars", [])
    if not _strings(names):
        return ForeignServer(name, None, "`env_vars` must be a list of variable names", transport)
    if names:
        table["env"] = {**{n: environ[n] for n in names if n in environ}, **dict(table.get("env") or {})}
    headers = spec.get("http_headers", {})
    from_env = spec.get("env_http_headers", {})
    if not _string_map(headers) or not _string_map(from_env):
        return ForeignServer(
            name, None, "`http_headers` and `env_http_headers` must map names to strings", transport
        )
    headers = dict(headers)
    for header, variable in from_env.items():
        if variable in environ:
            headers[header] = environ[variable]
    token = spec.get("bearer_token_env_var")
    if token is not None:
        if not isinstance(token, str) or token not in environ:
            return ForeignServer(
                name, None, f"bearer_token_env_var {token!r} is not set in the environment; set it", transport
            )
        headers["Authorization"] = f"Bearer {environ[token]}"
    if headers:
        table["headers"] = headers
    if "startup_timeout_sec" in spec:
        table["startup_timeout_s"] = spec["startup_timeout_sec"]
    elif isinstance(spec.get("startup_timeout_ms"), int):
        table["startup_timeout_s"] = spec["startup_timeout_ms"] / 1000
    if "tool_timeout_sec" in spec:
        table["tool_timeout_s"] = spec["tool_timeout_sec"]
    return ForeignServer(name, table, transport=transport)


def read_codex_config(
    path: Path, project: Path | None, environ: Mapping[str, str] | None = None
) -> FileServers:
    """`[mcp_servers]` of a Codex `config.toml`: a project's (`project` given: read confined to it, a
    relative `cwd` taken from it) or the user's."""
    if project is None and not path.is_file():
        return FileServers(problem=f'{path}: not found (mcp_import = ["codex"] reads Codex\'s servers there)')
    roots = [project] if project is not None else None
    text, problem = _read(path, roots, PROJECT_FILE_MAX_BYTES if project is not None else USER_FILE_MAX_BYTES)
    if text is None:
        return FileServers(problem=problem)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return FileServers(problem=f"{path}: not valid TOML: {exc}")
    servers = data.get("mcp_servers")
    if servers is None:
        return FileServers()
    if not isinstance(servers, dict):
        return FileServers(problem=f"{path}: `mcp_servers` is not a table of servers by name")
    env = environ if environ is not None else os.environ
    return FileServers(tuple(_codex_server(str(name), spec, env, project) for name, spec in servers.items()))
