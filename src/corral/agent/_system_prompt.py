"""System prompt assembly, in Pi's order.

1. The base prompt: corral's own wording, the active tools and guidelines;
   replaced by `custom_prompt`, else by the project's `.corral/SYSTEM.md`
   (only when the project is trusted, `corral trust`), else by
   `<config>/SYSTEM.md`.
2. The append text: `append`, else the project's `.corral/APPEND_SYSTEM.md`
   (trusted projects only), else `<config>/APPEND_SYSTEM.md`.
3. Further sections a caller adds (`sections`: the agent's `# Skills`, `corral.skills`).
4. `# Project Context`: the global `<config>/AGENTS.md` (or `CLAUDE.md`), then
   one file per directory from the filesystem root down to `cwd`
   (`AGENTS.md` preferred over `CLAUDE.md`), each under `## <path>`.
5. `Current date: YYYY-MM-DD` and `Current working directory: <cwd>`.

Every file read here may come from a repository someone else wrote, so it is read through
`corral._confined`: only a regular file of at most `CONTEXT_FILE_MAX_BYTES`, outside `/proc`,
`/dev` and `/sys`, whose real path stays inside the project (`project_root`: the nearest directory
holding `.git` or `.corral/`, else `cwd`) — or, for a directory above the project, inside that
directory. The user's own `<config>` files may also link into the home directory. A refused file is
left out and named once per process on stderr; the directory's other name (`CLAUDE.md`) is tried.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from corral._confined import Refused, is_within, note_refused, project_root, read_confined
from corral._paths import config_home
from corral.trust import TrustStoreError, is_trusted

from ._tool import AgentTool

__all__ = ["CONTEXT_FILE_MAX_BYTES", "build_system_prompt", "find_context_files"]

_CONTEXT_FILE_NAMES = ("AGENTS.md", "CLAUDE.md")
CONTEXT_FILE_MAX_BYTES = 131072
"""The largest context or prompt file read (128 KiB); a larger one is left out and named on stderr."""


def _read_text(path: Path, roots: Sequence[Path] | None) -> str | None:
    """The text of `path` if it exists and may be read under `roots` (`corral._confined`), else `None`.

    A missing file (or a link to nothing) is silently absent; a refused one is named once on stderr.
    """
    if not os.path.exists(path):
        return None
    try:
        data = read_confined(path, roots=roots, limit=CONTEXT_FILE_MAX_BYTES)
    except Refused as refused:
        note_refused(path, refused.reason, what="context file")
        return None
    except OSError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _user_roots(config_dir: Path) -> list[Path]:
    """Where the user's own files may link: the config directory and the home directory."""
    return [Path(os.path.realpath(config_dir)), Path(os.path.realpath(Path.home()))]


def _first_existing(*candidates: tuple[Path, Sequence[Path] | None]) -> str | None:
    for candidate, roots in candidates:
        text = _read_text(candidate, roots)
        if text is not None:
            return text
    return None


def _project_prompts_apply(cwd: Path) -> bool:
    """Whether `cwd/.corral/` holds a prompt file and the project is trusted (fails closed)."""
    project_dir = cwd / ".corral"
    if not any((project_dir / name).is_file() for name in ("SYSTEM.md", "APPEND_SYSTEM.md")):
        return False
    try:
        return is_trusted(cwd)
    except TrustStoreError:
        return False


def find_context_files(cwd: Path, global_config_dir: Path) -> list[tuple[Path, str]]:
    """The context files for `cwd`: global first, then root→cwd, at most one per directory.

    A file in the project (`corral._confined.project_root`) must resolve inside the project; one in a
    directory above it, inside that directory; the global one, inside the config or home directory.
    None is read from `/proc`, `/dev` or `/sys`, none that is not a regular file or is larger than
    `CONTEXT_FILE_MAX_BYTES`; each refused file is named once per process on stderr.

    Returns:
        `(path, text)` pairs in prompt order; unreadable and refused files are skipped.
    """
    return _context_files(cwd, global_config_dir, project_root(cwd), _user_roots(global_config_dir))


def _context_files(
    cwd: Path, global_config_dir: Path, project: Path, user_roots: Sequence[Path]
) -> list[tuple[Path, str]]:
    """`find_context_files` with the project and the user's roots already found."""
    found: list[tuple[Path, str]] = []
    seen: set[Path] = set()

    def take_from(directory: Path, roots: Sequence[Path]) -> None:
        for name in _CONTEXT_FILE_NAMES:
            candidate = directory / name
            text = _read_text(candidate, roots)
            if text is None:
                continue
            resolved = Path(os.path.realpath(candidate))
            if resolved not in seen:
                seen.add(resolved)
                found.append((candidate, text))
            return

    take_from(global_config_dir, user_roots)
    cwd = Path(os.path.realpath(cwd))
    for directory in [*reversed(cwd.parents), cwd]:
        take_from(directory, [project if is_within(directory, project) else directory])
    return found


def _tool_line(tool: AgentTool) -> str | None:
    snippet = tool.prompt_snippet
    if not snippet:
        lines = tool.description.strip().splitlines()
        snippet = lines[0] if lines else ""
    return f"- {tool.name}: {snippet}" if snippet else None


def _guidelines(tools: Sequence[AgentTool]) -> list[str]:
    names = {tool.name for tool in tools}
    has_search = bool(names & {"grep", "find", "ls"})
    lines: list[str] = []
    if "bash" in names and not has_search:
        lines.append("Use bash for file operations such as ls, rg and find")
    if "bash" in names and has_search:
        lines.append(
            "Prefer the grep, find and ls tools to bash for exploring files (faster, and they respect .gitignore)"
        )
    if "read" in names and "edit" in names:
        lines.append(
            "Read a file with the read tool before editing it; do not use cat or sed to look at files"
        )
    if "edit" in names:
        lines.append("Use edit for precise changes; the old text must match the file exactly")
    if "write" in names:
        lines.append("Use write only to create new files or to rewrite a file completely")
    if "edit" in names or "write" in names:
        lines.append(
            "When you report what you changed, write it as plain text; do not print files with cat or bash"
        )
    for tool in tools:
        for guideline in tool.prompt_guidelines:
            if guideline not in lines:
                lines.append(guideline)
    lines.append("Keep your answers concise")
    lines.append("Show file paths clearly whenever you work with files")
    return lines


def _base_prompt(tools: Sequence[AgentTool]) -> str:
    tool_lines = [line for line in (_tool_line(t) for t in tools) if line]
    tools_text = "\n".join(tool_lines) if tool_lines else "(none)"
    guidelines = "\n".join(f"- {g}" for g in _guidelines(tools))
    return (
        "You are an expert coding assistant operating inside corral, a system that runs teams of coding "
        "agents. You help by reading files, running commands, editing code and writing new files, using the "
        "tools below.\n\n"
        f"Available tools:\n{tools_text}\n\n"
        "Other tools may appear in the tool list as well; use them as their descriptions say.\n\n"
        f"Guidelines:\n{guidelines}"
    )


def build_system_prompt(
    *,
    cwd: Path,
    tools: Sequence[AgentTool],
    global_config_dir: Path | None = None,
    now: datetime | None = None,
    custom_prompt: str | None = None,
    append: str | None = None,
    sections: Sequence[str] = (),
) -> str:
    """Assemble the system prompt for a session in `cwd` with `tools` active.

    Args:
        cwd: The session's working directory (project files are looked up there).
        tools: The active tools, in the order they are offered.
        global_config_dir: The user configuration directory (default `corral._paths.config_home()`).
        now: The date to state (default: today, local time).
        custom_prompt: Replaces the base prompt (and any `SYSTEM.md`).
        append: Appended after the base prompt (replaces any `APPEND_SYSTEM.md`).
        sections: Further sections, after the append text and before the project context (the
            agent's `# Skills`, `corral.skills`).

    Returns:
        The prompt text.
    """
    config_dir = global_config_dir if global_config_dir is not None else config_home()
    project_dir = cwd / ".corral"
    user_roots = _user_roots(config_dir)
    project = project_root(cwd)
    project_roots: Sequence[Path] = [project]
    if not _project_prompts_apply(cwd):
        project_dir, project_roots = config_dir, user_roots
    base = custom_prompt
    if base is None:
        base = _first_existing(
            (project_dir / "SYSTEM.md", project_roots), (config_dir / "SYSTEM.md", user_roots)
        )
    if base is None:
        base = _base_prompt(tools)
    parts = [base.rstrip("\n")]

    append_text = append
    if append_text is None:
        append_text = _first_existing(
            (project_dir / "APPEND_SYSTEM.md", project_roots), (config_dir / "APPEND_SYSTEM.md", user_roots)
        )
    if append_text and append_text.strip():
        parts.append(append_text.strip("\n"))
    parts += [section.strip("\n") for section in sections if section.strip()]

    context_files = _context_files(cwd, config_dir, project, user_roots)
    if context_files:
        sections = ["# Project Context", "Project-specific instructions and guidelines:"]
        for path, text in context_files:
            sections.append(f"## {path}\n\n{text.strip()}")
        parts.append("\n\n".join(sections))

    date = (now or datetime.now()).strftime("%Y-%m-%d")
    parts.append(f"Current date: {date}\nCurrent working directory: {cwd}")
    return "\n\n".join(parts) + "\n"
