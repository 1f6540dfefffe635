"""Helpers shared by the built-in tools: path resolution, parameters, schemas.

Paths follow Pi's rules: a leading `@` (how people cite files in prompts) is
dropped, Unicode spaces become plain spaces, `~` and `~/…` expand to the home
directory, and a relative path is resolved against the tool's working
directory (not the process's).
"""

from __future__ import annotations

import math
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

from corral.agent._tool import ToolError
from corral.errors import CorralError

__all__ = [
    "ToolsConfigError",
    "expand_path",
    "format_number",
    "object_schema",
    "optional_bool",
    "optional_int",
    "optional_number",
    "optional_str",
    "require_str",
    "resolve_read_path",
    "resolve_to_cwd",
]

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_NARROW_NBSP = "\u202f"


class ToolsConfigError(CorralError, ValueError):
    """The built-in tools were asked for something that does not exist (an unknown tool name)."""


def expand_path(path: str) -> str:
    """Strip a leading `@`, normalise Unicode spaces and expand `~`."""
    if path.startswith("@"):
        path = path[1:]
    path = _UNICODE_SPACES.sub(" ", path)
    if path == "~":
        return str(Path.home())
    if path.startswith("~/"):
        return str(Path.home()) + path[1:]
    return path


def resolve_to_cwd(path: str, cwd: Path) -> Path:
    """The absolute, normalised form of a tool's `path` argument."""
    expanded = expand_path(path)
    joined = expanded if os.path.isabs(expanded) else os.path.join(cwd, expanded)
    return Path(os.path.normpath(joined))


def resolve_read_path(path: str, cwd: Path) -> Path:
    """Like `resolve_to_cwd`, also trying the variants a file name often arrives in.

    When the plain path does not exist, tries macOS screenshot names (a narrow
    no-break space before `AM`/`PM`), the NFD form of the name and curly
    apostrophes, and returns the first that exists.
    """
    resolved = resolve_to_cwd(path, cwd)
    if resolved.exists():
        return resolved
    text = str(resolved)
    variants = [
        re.sub(r" (AM|PM)\.", _NARROW_NBSP + r"\1.", text),
        unicodedata.normalize("NFD", text),
        text.replace("'", "\u2019"),
    ]
    for variant in variants:
        if variant != text and os.path.exists(variant):
            return Path(variant)
    return resolved


def object_schema(properties: dict[str, dict[str, Any]], required: list[str]) -> dict[str, Any]:
    """A JSON Schema for a tool's arguments object (no extra properties allowed)."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def require_str(params: dict[str, Any], name: str) -> str:
    """A required string argument."""
    value = params.get(name)
    if not isinstance(value, str):
        raise ToolError(f"Invalid arguments: `{name}` must be a string.")
    return value


def optional_str(params: dict[str, Any], name: str) -> str | None:
    """An optional string argument (`None` when absent or null)."""
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolError(f"Invalid arguments: `{name}` must be a string.")
    return value


def optional_bool(params: dict[str, Any], name: str) -> bool:
    """An optional boolean argument (false when absent)."""
    value = params.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ToolError(f"Invalid arguments: `{name}` must be true or false.")
    return value


def optional_number(params: dict[str, Any], name: str) -> float | None:
    """An optional finite number argument (`None` when absent or null)."""
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ToolError(f"Invalid arguments: `{name}` must be a number.")
    return float(value)


def optional_int(params: dict[str, Any], name: str) -> int | None:
    """An optional whole-number argument; fractions are cut toward zero."""
    value = optional_number(params, name)
    return None if value is None else int(value)


def format_number(value: float) -> str:
    """A number as JavaScript prints it: `1` for 1.0, `1.5` for 1.5."""
    if value == int(value):
        return str(int(value))
    return repr(value)
