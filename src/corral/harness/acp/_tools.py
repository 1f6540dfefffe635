"""An ACP agent's tool calls and file requests as the calls corral's policy judges.

ACP describes a tool call by its `kind` (`read`, `edit`, `delete`, `move`, `search`, `execute`,
`fetch`, `think`, `switch_mode`, `other`), a `title`, the agent's `rawInput` and the `locations` it
touches. The user's `[permissions]` rules and PreToolUse hooks judge corral's tool names and
arguments, and see Claude Code's (`bash` is `Bash` with `command`, `edit` is `Edit` with
`file_path`: `corral.permissions.CLAUDE_NAMES` and `corral.hooks.tool_input`). `KIND_TOOLS` is the one
table from an ACP kind to corral's tool; `tool_calls` gives the call (or calls: one per location of
a call that touches several files, a move's source and destination) the gate is asked about.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from typing import Any

__all__ = ["KIND_TOOLS", "PolicyCall", "file_call", "tool_calls"]

KIND_TOOLS: dict[str, str] = {
    "read": "read",
    "edit": "edit",
    "delete": "edit",
    "move": "edit",
    "search": "grep",
    "execute": "bash",
    "fetch": "WebFetch",
}
"""ACP's tool kind → the tool corral's rules and hooks judge it as (corral's name; a rule or a hook
matcher may use Claude Code's: `Bash`, `Read`, `Edit`, `Grep`). Deleting and moving files change
them, so `Edit` rules cover them as they do in Claude Code. A kind not listed (`think`,
`switch_mode`, `other`) is judged by its title when that is a tool name (Claude Code's adapter
titles an MCP call `mcp__server__tool`); else, when it names files (`locations`, a path in
`rawInput`), as both a `read` and an `edit` of each (the stricter answer wins); else, when its
`rawInput` has a `command` (goose reports its shell as `other`), as `bash`; else as a tool named
`other`."""

PolicyCall = tuple[str, dict[str, Any]]
"""A tool name and its arguments, as the gate's `ToolCheck` takes them."""

_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_PATH_KEYS = ("file_path", "path", "filePath", "filepath", "abs_path", "notebook_path")
_URL_KEYS = ("url", "uri")


_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})


def _command(raw: Mapping[str, Any], title: str) -> str:
    """The command an execute call runs: `rawInput.command` — a string; an argv that runs a shell on
    a script (Codex: `["/bin/bash", "-lc", "rm -rf x"]`) is the script; another argv is joined as a
    shell would read it — else the title (without Markdown backticks)."""
    command = raw.get("command") or raw.get("cmd")
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        if (
            len(command) == 3
            and os.path.basename(command[0]) in _SHELLS
            and command[1].startswith("-")
            and command[1].endswith("c")
        ):
            return str(command[2])
        return shlex.join(command)
    if isinstance(command, str) and command.strip():
        return command
    return title.strip().strip("`").strip()


def _paths(raw: Mapping[str, Any], locations: object) -> list[str]:
    found: list[str] = []
    for item in locations if isinstance(locations, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("path"), str) and item["path"]:
            found.append(item["path"])
    if not found:
        for key in _PATH_KEYS:
            value = raw.get(key)
            if isinstance(value, str) and value:
                found.append(value)
                break
    return list(dict.fromkeys(found))


def tool_calls(kind: str, title: str, raw_input: Mapping[str, Any], locations: object) -> list[PolicyCall]:
    """The calls the gate judges for one ACP tool call (at least one)."""
    tool = KIND_TOOLS.get(kind)
    raw = dict(raw_input)
    if tool is None:
        name = title.strip()
        if _TOOL_NAME.fullmatch(name):
            return [(name, raw)]
        paths = _paths(raw, locations)
        if paths:  # an unclassified call on files: judged as reading and as changing each
            return [(each, {**raw, "path": path}) for path in paths for each in ("read", "edit")]
        if isinstance(raw.get("command") or raw.get("cmd"), str | list):  # goose's shell: kind `other`
            return [("bash", {**raw, "command": _command(raw, title)})]
        return [("other", raw)]
    if tool == "bash":
        return [("bash", {**raw, "command": _command(raw, title)})]
    if tool == "WebFetch":
        url = next((raw[key] for key in _URL_KEYS if isinstance(raw.get(key), str)), None)
        return [("WebFetch", raw if url is None else {**raw, "url": url})]
    paths = _paths(raw, locations)
    if not paths:  # a file tool that names no file: judged without a path (a search: the cwd)
        return [(tool, raw)]
    return [(tool, {**raw, "path": path}) for path in paths]


def file_call(method: str, params: Mapping[str, Any]) -> PolicyCall | None:
    """`fs/read_text_file` as `read`, `fs/write_text_file` as `write`, with the file's `path`; `None`
    for a request that names no path (it is refused as malformed anyway)."""
    path = params.get("path")
    if not isinstance(path, str) or not path:
        return None
    if method == "fs/read_text_file":
        return ("read", {"path": path})
    content = params.get("content")
    return ("write", {"path": path, "content": content if isinstance(content, str) else ""})
