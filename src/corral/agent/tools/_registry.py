"""Building the set of built-in tools for one working directory."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from corral.agent._tool import AgentTool

from ._bash import BashTool
from ._common import ToolsConfigError
from ._edit import EditTool
from ._find import FindTool
from ._grep import GrepTool
from ._ls import LsTool
from ._read import ReadTool
from ._write import WriteTool

if TYPE_CHECKING:
    from ._sandbox import CommandSandbox, ReadGuard

__all__ = ["ALL_TOOL_NAMES", "DEFAULT_TOOL_NAMES", "READ_ONLY_TOOL_NAMES", "create_builtin_tools"]

ALL_TOOL_NAMES: tuple[str, ...] = ("read", "bash", "edit", "write", "grep", "find", "ls")
"""Every built-in tool, in the order they are offered."""
DEFAULT_TOOL_NAMES: tuple[str, ...] = ("read", "bash", "edit", "write")
"""The tools active when none are chosen (as in Pi)."""
READ_ONLY_TOOL_NAMES: tuple[str, ...] = ("read", "grep", "find", "ls")
"""Tools that never change files or run commands."""


def create_builtin_tools(
    cwd: Path,
    *,
    shell_path: str | None = None,
    names: Iterable[str] | None = None,
    sandbox: CommandSandbox | None = None,
    guard: ReadGuard | None = None,
) -> list[AgentTool]:
    """New instances of the built-in tools, working in `cwd`.

    Args:
        cwd: Directory that relative paths resolve against and commands run in.
        shell_path: Shell for the bash tool (default: `/bin/bash`, else `bash` on PATH, else `sh`).
        names: Which tools, in the order given (default: all seven, in `ALL_TOOL_NAMES` order).
            Duplicates are dropped.
        sandbox: Confinement for the bash tool's commands (a read agent's `ReadOnlySandbox`); the
            `read`, `grep`, `find` and `ls` tools then open only what its view shows (`read_guard`).
        guard: `sandbox.read_guard(cwd)` already built (agents started together share one view);
            built here when omitted.

    Returns:
        One tool per name.

    Raises:
        ToolsConfigError: A name is not a built-in tool.
        ValueError: `sandbox` cannot show `cwd` (`/`, or a directory holding `/tmp` or the homes).
    """
    root = Path(cwd)
    if sandbox is None:
        guard = None
    elif guard is None:
        guard = sandbox.read_guard(root)
    factories: dict[str, Callable[[], AgentTool]] = {
        "read": lambda: ReadTool(root, guard=guard),
        "bash": lambda: BashTool(root, shell_path=shell_path, sandbox=sandbox),
        "edit": lambda: EditTool(root),
        "write": lambda: WriteTool(root),
        "grep": lambda: GrepTool(root, guard=guard),
        "find": lambda: FindTool(root, guard=guard),
        "ls": lambda: LsTool(root, guard=guard),
    }
    chosen = ALL_TOOL_NAMES if names is None else tuple(dict.fromkeys(names))
    unknown = [name for name in chosen if name not in factories]
    if unknown:
        raise ToolsConfigError(
            f"Unknown tool {', '.join(map(repr, unknown))}; choose from {', '.join(ALL_TOOL_NAMES)}."
        )
    return [factories[name]() for name in chosen]
