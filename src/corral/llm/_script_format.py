"""The scripted model's file format: finding, parsing and validating scripts.

See `/work/shared/spec/scripted-model.md` (repeated in the user docs) for the
contract. Everything is checked when the file is loaded, so a malformed
script fails before the first request with one line naming the file, the
place and the problem.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from corral._confined import is_within
from corral.trust import TrustStoreError, is_trusted

from ._errors import ScriptError

__all__ = [
    "BUNDLED_SCRIPTS_DIR",
    "SCRIPT_SUFFIXES",
    "Script",
    "ScriptExpect",
    "ScriptStep",
    "ScriptToolCall",
    "ScriptUsage",
    "find_script",
    "list_script_names",
    "load_script_file",
    "script_dirs",
]

BUNDLED_SCRIPTS_DIR = Path(__file__).parent / "scripts"
"""Scripts shipped with corral (the demo's, `hello`)."""

SCRIPT_SUFFIXES = (".yaml", ".yml", ".json")
"""Suffixes tried, in this order, in each directory."""

TEMPLATE_RE = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
"""`{{ root.path }}` placeholders in `text` and `args` strings."""

_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TEMPLATE_ROOTS = ("last_tool_result", "last_custom", "env", "last_tool_output")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ScriptToolCall(_Strict):
    """One tool call of a step."""

    name: str = Field(min_length=1)
    """Tool name as offered to the model."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The arguments object; strings may hold templates."""
    id: str | None = Field(default=None, min_length=1)
    """Tool-call id; generated (unique within the session) when absent."""


class ScriptUsage(_Strict):
    """Token usage reported for a step (instead of the estimate)."""

    input: int = Field(default=0, ge=0)
    output: int = Field(default=0, ge=0)
    cache_read: int = Field(default=0, ge=0)
    cache_write: int = Field(default=0, ge=0)


class ScriptExpect(_Strict):
    """Checks on the request a step answers."""

    last_user_contains: str | None = None
    """The newest user (or custom) message's text contains this."""
    context_contains: list[str] = Field(default_factory=list)
    """Each string occurs in one of the request's messages."""
    context_excludes: list[str] = Field(default_factory=list)
    """None of these occurs in any of the request's messages."""
    tools_include: list[str] = Field(default_factory=list)
    """These tool names are offered."""
    tools_exclude: list[str] = Field(default_factory=list)
    """These tool names are not offered."""
    tools_ok: bool | None = None
    """`true`: the request answers tool calls and every result succeeded; `false`: one failed."""

    @field_validator("context_contains", "context_excludes", "tools_include", "tools_exclude", mode="before")
    @classmethod
    def _one_string_is_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{where}[{index}]")


def parse_template(expression: str) -> tuple[str, list[str]]:
    """Split `root.a.b` into the root and its path; `ValueError` when it is not a known form."""
    root, *path = expression.split(".")
    if (
        root not in _TEMPLATE_ROOTS
        or any(not part for part in path)
        or (root == "last_tool_output" and bool(path))
    ):
        raise ValueError(
            f"unknown template '{{{{ {expression} }}}}': use last_tool_result.<path>, last_custom.<path>, "
            "env.<NAME> or last_tool_output"
        )
    if root == "env" and (len(path) != 1 or not _ENV_NAME_RE.match(path[0])):
        raise ValueError(f"template '{{{{ {expression} }}}}' must be env.<NAME> with one variable name")
    return root, path


class ScriptStep(_Strict):
    """One model reply (or provider error) of a script."""

    text: str | None = None
    """Assistant text; with `stop: error`, the error message."""
    thinking: str | None = None
    """Reasoning text, sent as a thinking block."""
    tool_calls: list[ScriptToolCall] | None = None
    """Tool calls; a step with calls continues the loop once they have run."""
    delay_ms: int = Field(default=0, ge=0)
    """Wait this long (cancellable) after the reply starts."""
    usage: ScriptUsage | None = None
    """Reported usage; default an estimate (characters / 4) of request and reply."""
    stop: Literal["error"] | None = None
    """`error`: answer with a provider error whose message is `text`."""
    error_retryable: bool = False
    """With `stop: error`: make the error transient (it matches the retry pattern)."""
    expect: ScriptExpect | None = None
    """Checks on the request."""
    otherwise: ScriptStep | None = None
    """Answers the request instead when `expect` fails (needs `expect`); may have its own."""

    @model_validator(mode="after")
    def _check(self) -> ScriptStep:
        if self.text is None and self.thinking is None and not self.tool_calls:
            raise ValueError("a step needs text, thinking or tool_calls")
        if self.stop == "error":
            if self.text is None:
                raise ValueError("a step with `stop: error` needs `text` (the error message)")
            if self.tool_calls:
                raise ValueError("a step with `stop: error` cannot have tool_calls")
        elif self.error_retryable:
            raise ValueError("`error_retryable` needs `stop: error`")
        if self.otherwise is not None and self.expect is None:
            raise ValueError("`otherwise` needs `expect` (it answers when an expectation fails)")
        places: list[tuple[str, str]] = []
        if self.text is not None:
            places.append(("text", self.text))
        for index, call in enumerate(self.tool_calls or ()):
            places.extend(_strings(call.args, f"tool_calls[{index}].args"))
        for where, value in places:
            for match in TEMPLATE_RE.finditer(value):
                try:
                    parse_template(match.group(1))
                except ValueError as exc:
                    raise ValueError(f"{where}: {exc}") from None
        return self


class Script(_Strict):
    """A parsed, validated script file."""

    steps: list[ScriptStep] = Field(min_length=1)
    """Replies for the lead and unmanaged sessions (and agents without their own list)."""
    on_exhausted: Literal["error", "repeat_last"] = "error"
    """What a request after the last step gets: a provider error, or the last step again."""
    agents: dict[str, list[ScriptStep]] = Field(default_factory=dict)
    """Replies for managed agents by label or name; `"*"` for any other agent."""
    _path: Path | None = PrivateAttr(default=None)

    @field_validator("agents")
    @classmethod
    def _non_empty_lists(cls, value: dict[str, list[ScriptStep]]) -> dict[str, list[ScriptStep]]:
        for name, steps in value.items():
            if not steps:
                raise ValueError(f"agents.{name} must be a non-empty list of steps")
        return value

    @property
    def path(self) -> Path | None:
        """The file the script was loaded from."""
        return self._path

    def select(self, agent_name: str | None) -> tuple[str, list[ScriptStep]]:
        """The list a session uses, with its key: `agents.<name>`, else `agents.*`, else `steps`."""
        if agent_name is not None:
            if agent_name in self.agents:
                return f"agents.{agent_name}", self.agents[agent_name]
            if "*" in self.agents:
                return "agents.*", self.agents["*"]
        return "steps", self.steps


# --- finding ---------------------------------------------------------------


def check_script_name(name: str) -> None:
    """Refuse empty names, absolute paths and `..`.

    Raises:
        ScriptError: the name is not a relative path without `..`.
    """
    pure = PurePosixPath(name)
    if not name or name.strip() != name or pure.is_absolute() or "\\" in name or ".." in pure.parts:
        raise ScriptError(f"scripted/{name}: a script name must be a relative path without '..'")


def _nearest_project_scripts(cwd: Path) -> Path | None:
    start = cwd.expanduser().resolve()
    for directory in (start, *start.parents):
        candidate = directory / ".corral" / "scripts"
        if candidate.is_dir():
            return candidate
    return None


def _project_scripts(cwd: Path | None) -> tuple[Path, Path] | None:
    """The nearest `.corral/scripts/` at or above `cwd` and its project's real path, if any."""
    scripts = _nearest_project_scripts(cwd) if cwd is not None else None
    if scripts is None:
        return None
    return scripts, Path(os.path.realpath(scripts.parent.parent))


def _links_out(path: Path, directory: Path, project: tuple[Path, Path] | None) -> bool:
    """Whether `path`, found in `directory`, is a project script that resolves outside its project
    (trust pins no link out of it, so none is loaded)."""
    return (
        project is not None
        and directory == project[0]
        and not is_within(Path(os.path.realpath(path)), project[1])
    )


def script_dirs(cwd: Path | None, *, environ: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """The directories searched, in order, each with a label for messages.

    `$CORRAL_SCRIPTS`, then the nearest `.corral/scripts/` at or above `cwd`
    when its project is trusted (`corral trust`; a project's scripts run
    commands, so an untrusted project's are never used), then the bundled
    scripts.
    """
    env = os.environ if environ is None else environ
    dirs: list[tuple[str, Path]] = []
    explicit = env.get("CORRAL_SCRIPTS")
    if explicit:
        dirs.append((f"$CORRAL_SCRIPTS ({explicit})", Path(explicit).expanduser()))
    if cwd is not None:
        project = _nearest_project_scripts(cwd)
        if project is not None and _trusted(project.parent.parent):
            dirs.append((str(project), project))
    dirs.append(("the bundled scripts", BUNDLED_SCRIPTS_DIR))
    return dirs


def _trusted(project_dir: Path) -> bool:
    try:
        return is_trusted(project_dir)
    except TrustStoreError:
        return False


def _untrusted_note(cwd: Path | None) -> str:
    project = _nearest_project_scripts(cwd) if cwd is not None else None
    if project is None or _trusted(project.parent.parent):
        return ""
    return (
        f" ({project} is not used: the project {project.parent.parent} is not trusted; "
        f"run `corral trust {project.parent.parent}` if you trust it)"
    )


def find_script(name: str, *, cwd: Path | None, environ: Mapping[str, str] | None = None) -> Path:
    """The file `scripted/<name>` loads: `<name>.yaml|.yml|.json` in the first directory that has one.

    Raises:
        ScriptError: the name is refused, or no directory holds such a file.
    """
    check_script_name(name)
    dirs = script_dirs(cwd, environ=environ)
    project = _project_scripts(cwd)
    for _label, directory in dirs:
        for suffix in SCRIPT_SUFFIXES:
            candidate = directory / f"{name}{suffix}"
            if candidate.is_file() and not _links_out(candidate, directory, project):
                return candidate
    searched = "; ".join(label for label, _ in dirs)
    raise ScriptError(
        f"scripted/{name}: no script {name}.yaml, {name}.yml or {name}.json in {searched}{_untrusted_note(cwd)}"
    )


def list_script_names(cwd: Path | None, *, environ: Mapping[str, str] | None = None) -> list[str]:
    """Names of every script that `scripted/<name>` would find, sorted."""
    names: set[str] = set()
    project = _project_scripts(cwd)
    for _label, directory in script_dirs(cwd, environ=environ):
        if not directory.is_dir():
            continue
        for path in directory.rglob("*"):
            if _links_out(path, directory, project):
                continue
            if path.suffix in SCRIPT_SUFFIXES and path.is_file():
                names.add(path.relative_to(directory).with_suffix("").as_posix())
    return sorted(names)


# --- loading ---------------------------------------------------------------


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not text:
            text = part
        else:
            text += f".{part}"
    return text


def _describe(exc: ValidationError) -> str:
    error = exc.errors()[0]
    loc = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        parent, key = _location(loc[:-1]), loc[-1]
        return f"{parent + ': ' if parent else ''}unknown key '{key}'"
    if error["type"] == "missing":
        return f"{_location(loc)}: missing (required)"
    message = error["msg"].removeprefix("Value error, ")
    where = _location(loc)
    return f"{where}: {message}" if where else message


def _parse_text(path: Path, text: str) -> Any:
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScriptError(f"{path}: not valid JSON: {exc}", path=path) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ScriptError(f"{path}: not valid YAML{where}: {problem}", path=path) from None


MAX_NESTING = 64
"""How deeply lists and mappings may nest in a script file."""
_TOO_DEEP = object()


def _too_deep(data: Any) -> bool:
    """Whether `data` nests lists/mappings more than `MAX_NESTING` levels (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth >= MAX_NESTING:
                return True
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
    return False


def load_script_file(path: Path) -> Script:
    """Read and validate one script file.

    The file is read every time (an edit takes effect at once); a text already validated is
    not parsed again (every agent of a swarm loads the same script), and each caller gets
    its own copy.

    Raises:
        ScriptError: unreadable, not YAML/JSON, or not a valid script; the
            message names the file, the place (`steps[2].tool_calls[0].args`)
            and the problem.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ScriptError(f"{path}: cannot read script: {reason}", path=path) from None
    script = _validated(path, text).model_copy(deep=True)
    script._path = path
    return script


@functools.lru_cache(maxsize=64)
def _validated(path: Path, text: str) -> Script:
    """`text` (the file `path`) parsed and validated; cached by both (errors are not cached)."""
    try:
        data = _parse_text(path, text)
    except RecursionError:
        data = _TOO_DEEP
    if data is _TOO_DEEP or _too_deep(data):
        raise ScriptError(
            f"{path}: nested more than {MAX_NESTING} levels deep: flatten the script", path=path
        )
    if data is None:
        raise ScriptError(f"{path}: the script is empty: it needs a `steps:` list", path=path)
    if not isinstance(data, dict):
        raise ScriptError(f"{path}: the top level must be a mapping with a `steps:` list", path=path)
    try:
        script = Script.model_validate(data)
    except ValidationError as exc:
        raise ScriptError(f"{path}: {_describe(exc)}", path=path) from None
    return script
