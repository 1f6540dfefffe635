"""`corral trust [--show]` and `corral untrust`: what a project's `.corral/` unlocks, and trusting it.

`corral trust` shows what trusting the project lets take effect — its default
model, runtime, shell, providers with the endpoint each sends requests to and
the environment variable whose API key goes there, agent definitions,
scripted-model scripts, prompt files and other settings — and records a digest
of the pinned files (`corral.trust.PINNED_ENTRIES`); `--show` prints the same
and changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

from corral.settings import UNTRUSTED_PROJECT_KEYS, Settings, load_settings, read_settings_file
from corral.trust import (
    TrustState,
    find_project_dir,
    pinned_files,
    trust_project,
    trust_state,
    untrust_project,
)

__all__ = ["project_for", "trust", "trust_summary", "untrust"]

_BUILTIN_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_BUILTIN_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
_SHOWN = ("default_model", "runtime", "shell_path")
"""Settings shown with their values (the rest of a project file's keys are listed by name)."""


def project_for(path: Path | None) -> Path:
    """The project a command means: `path` as given, else the nearest directory at or above the
    current one holding `.corral/` (else the current directory)."""
    if path is not None:
        return path.expanduser()
    cwd = Path.cwd()
    return find_project_dir(cwd) or cwd


def _settings_lines(project: Path) -> list[str]:
    path = project / ".corral" / "settings.toml"
    if not path.is_file():
        return []
    own = read_settings_file(path)
    given = own.model_fields_set
    merged = load_settings(project, trusted=True)
    lines: list[str] = []
    for key in _SHOWN:
        if key in given:
            lines.append(f"  {key} = {getattr(own, key)}")
    for name in sorted(own.providers):
        lines.append(f"  provider {name}: {_provider_line(name, merged)}")
    listed = {*_SHOWN, "providers", "favorite_models", *UNTRUSTED_PROJECT_KEYS}  # favorites: user file only
    other = [_key_name(key, own) for key in sorted(given) if key not in listed]
    if other:
        lines.append(f"  other settings: {', '.join(other)}")
    return lines


def _key_name(key: str, own: Settings) -> str:
    value = getattr(own, key)
    fields = getattr(value, "model_fields_set", None)
    if fields:
        return ", ".join(f"{key}.{sub}" for sub in sorted(fields))
    return key


def _provider_line(name: str, merged: Settings) -> str:
    provider = merged.providers[name]
    if name == "scripted":
        return "scripted model entries (names, windows, prices)"
    url = provider.base_url or f"${_BUILTIN_URL_ENV[name]} or the built-in endpoint"
    key_env = provider.api_key_env or _BUILTIN_KEY_ENV.get(name)
    key = f"receives the API key in ${key_env}" if key_env else "receives no API key"
    headers = f", extra headers {', '.join(sorted(provider.headers))}" if provider.headers else ""
    models = f", models {', '.join(m.id for m in provider.models)}" if provider.models else ""
    return f"requests go to {url}; {key}{headers}{models}"


def _definition_lines(project: Path) -> list[str]:
    from corral.orchestration import load_roster

    roster = load_roster(project, trust=True)
    lines: list[str] = []
    for defn in roster.definitions:
        if "project" not in defn.sources:
            continue
        details = [
            f"model {defn.model}" if defn.model else "",
            f"runtime {defn.runtime}" if defn.runtime else "",
        ]
        if defn.tool_policy.tools is not None:
            details.append(f"tools {', '.join(defn.tool_policy.tools) or '(none)'}")
        note = "; overrides the built-in definition" if "bundled" in defn.sources else ""
        if "user" in defn.sources:
            note += "; your own definition of that name overlays it"
        shown = ", ".join(d for d in details if d)
        lines.append(f"  definition {defn.name}{f' ({shown})' if shown else ''}{note}")
    for issue in roster.issues:
        if str(issue.path).startswith(str(project / ".corral")):
            lines.append(f"  definition file {issue}")
    return lines


def _skill_lines(project: Path) -> list[str]:
    """The project's skills (`.corral/skills`, `.claude/skills`, `.agents/skills`) by name."""
    from corral.skills import discover_skills

    catalog = discover_skills(project, trusted=True)
    names = [skill.name for skill in (*catalog.skills, *catalog.shadowed) if skill.layer == "project"]
    lines = []
    if names:
        lines.append(
            f"  skills (every agent may load their instructions and run their scripts): {', '.join(names)}"
        )
    lines += [f"  skill {issue}" for issue in catalog.issues if str(issue.path).startswith(str(project))]
    return lines


def _mcp_lines(project: Path) -> list[str]:
    """The project's MCP servers (its settings, `.mcp.json`, `.codex/config.toml`) and what each runs."""
    catalog = load_settings(project, trusted=True).mcp_catalog
    lines = []
    for entry in catalog.entries:
        if entry.source not in ("project settings", ".mcp.json", ".codex/config.toml"):
            continue
        what = {
            "used": f"starts {entry.target} with your rights when an agent gets it"
            if entry.transport == "stdio"
            else f"connects to {entry.target}",
            "disabled": "disabled",
            "shadowed": f"shadowed {entry.reason}",
            "ignored": f"ignored: {entry.reason}",
        }[entry.state]
        lines.append(f"  MCP server {entry.name} ({entry.source}): {what}")
    lines += [f"  MCP file {problem}" for problem in catalog.problems if problem.startswith(str(project))]
    return lines


def trust_summary(project: Path, state: TrustState) -> str:
    """What trusting `project` lets take effect, one item a line, and whether it is trusted now."""
    real = state.project
    lines = [f"Project {real}"]
    if not state.files:
        lines.append("  nothing: it has no .corral/ settings, scripts, definitions or prompt files")
    lines += _settings_lines(real)
    lines += _definition_lines(real)
    scripts = [
        name.removeprefix(".corral/scripts/") for name in state.files if name.startswith(".corral/scripts/")
    ]
    if scripts:
        lines.append(f"  scripted-model scripts (their steps run tools such as bash): {', '.join(scripts)}")
    lines += _skill_lines(real)
    lines += _mcp_lines(real)
    for name, effect in (("SYSTEM.md", "replaces the system prompt"), ("APPEND_SYSTEM.md", "is added to it")):
        if f".corral/{name}" in state.files:
            lines.append(f"  .corral/{name} {effect}")
    if state.files:
        lines.append(
            f"Pinned files (editing, adding or removing one untrusts the project): {', '.join(state.files)}"
        )
    return "\n".join(lines) + "\n"


def trust(path: Path | None, *, show: bool, out: IO[str]) -> int:
    """`corral trust [PATH]`: show what trusting unlocks and trust it; with `show`, only show it."""
    project = project_for(path)
    if not project.is_dir():
        from corral.errors import UsageError

        raise UsageError(f"Cannot trust {project}: no such directory; give a project directory")
    before = pinned_files(project)
    state = trust_state(project)
    summary = trust_summary(project, state)
    if show:
        if state.trusted:
            status = "Trusted; all of the above is in effect."
        elif state.changed:
            status = (
                f"No longer trusted: {state.changed}; run `corral trust {state.project}` to trust it again."
            )
        else:
            status = f"Not trusted; run `corral trust {state.project}` to let the above take effect."
        out.write(summary + status + "\n")
        return 0
    real = trust_project(project, expected=before)
    out.write(summary.replace("Project ", "Trusting ", 1) + f"Trusted {real}\n")
    return 0


def untrust(path: Path | None, *, out: IO[str]) -> int:
    """`corral untrust [PATH]`: stop trusting a project directory."""
    project = project_for(path)
    if untrust_project(project):
        out.write(f"No longer trusted: {project.resolve()}\n")
    else:
        out.write(f"Was not trusted: {project.resolve()}\n")
    return 0
