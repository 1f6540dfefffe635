"""Permission rules in Claude Code's syntax, evaluated in-process: deny first, then ask, then allow.

A rule is `Tool` (every call of the tool) or `Tool(specifier)`:

* `Bash(npm run build)` — that exact command; `Bash(git push:*)` — the command or the command
  followed by arguments (a word boundary: not `git pushx`); `Bash(git * main)` — `*` matches any text,
  and a single trailing ` *` is optional (`Bash(ls *)` matches `ls` and `ls -la`, not `lsof`). A command
  joined with `&&`, `||`, `;`, `|`, `&`, a newline or `$(…)` is checked part by part: one part that
  a deny (ask) rule matches denies (asks for) the whole command, and an allow rule allows it only when
  every part is allowed. Leading `VAR=value` assignments and wrappers (`sudo`, `env`, `timeout 10`,
  `nohup`, `nice`, `time`, `command`, `exec`, `builtin`) do not hide a command from a rule.
* `Read(path)`, `Edit(path)`, `Write(path)` — gitignore-style patterns: `//abs/path` from the file
  system's root, `~/path` from the home directory, `/path` from the project root (the directory
  holding `.corral/`, else the agent's working directory), `./path` or `path` from the agent's working
  directory; a pattern without a `/` matches at any depth (`Read(.env)`); `*` stays within a directory,
  `**` crosses them; a pattern that matches a directory matches everything in it. The path is taken
  both as written (normalised) and with its symlinks resolved: either matching denies (asks), both
  must match to allow. `Read` rules cover every tool that reads files (`read`, `grep`, `find`, `ls`:
  their `path`), `Edit` rules every tool that changes them (`edit`, `write`), as in Claude Code.
* `Task(name)` / `Agent(name)` — delegating an agent of that definition (`*` allowed).
* `mcp__server` or `mcp__server__*` — every tool of an MCP server; `mcp__server__tool` — one tool.
  `*` in a tool name matches any text.

corral's own tool names work as well (`bash(git push:*)`, `read(src/**)`, `spawn_agent`); a corral
name covers only that tool. A Claude Code tool corral does not have (`WebFetch(domain:…)`) is accepted
and matches nothing.

Nothing here starts a process or touches the file system beyond resolving symlinks of a file rule's
path; `Permissions.check` is a few dictionary lookups and regular-expression matches.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._names import RULE_TOOLS

__all__ = [
    "Decision",
    "Permissions",
    "Rule",
    "RuleError",
    "RuleVerdict",
    "parse_rule",
    "split_command",
    "stricter",
]

Decision = Literal["allow", "ask", "deny"]

_STRICTNESS: dict[Decision, int] = {"allow": 0, "ask": 1, "deny": 2}

_FILE_TOOLS = frozenset({"read", "grep", "find", "ls", "edit", "write"})
_SEARCH_TOOLS = frozenset({"grep", "find", "ls"})
"""File tools whose `path` is optional (default: the working directory)."""
_AGENT_TOOLS = frozenset({"agent", "agent_delegate"})
"""The tools a `Task(name)` rule reads: those that delegate a definition (a teams spawn names a tier)."""

_RULE = re.compile(r"^\s*([A-Za-z0-9_*.\-]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


class RuleError(ValueError):
    """A permission rule that cannot be read (its text says which and why)."""


# --- patterns ------------------------------------------------------------------------------------


def _glob_regex(pattern: str) -> str:
    """A gitignore-style glob as a regular expression over `/`-separated relative paths."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                if i + 2 < n and pattern[i + 2] == "/":
                    out.append("(?:.*/)?")
                    i += 3
                else:
                    out.append(".*")
                    i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
                continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


PathBase = Literal["root", "home", "project", "cwd"]


@dataclass(frozen=True, slots=True)
class _PathPattern:
    base: PathBase
    regex: re.Pattern[str]


def _path_pattern(spec: str, rule: str) -> _PathPattern:
    spec = spec.strip()
    if not spec:
        raise RuleError(f"{rule}: the path pattern is empty (write the tool alone to cover every path)")
    base: PathBase
    anchored = True
    if spec.startswith("//"):
        base, body = "root", spec[2:]
    elif spec == "~" or spec.startswith("~/"):
        base, body = "home", spec[2:]
    elif spec.startswith("/"):
        base, body = "project", spec[1:]
    elif spec.startswith("./"):
        base, body = "cwd", spec[2:]
    else:
        base, body = "cwd", spec
        anchored = "/" in body.rstrip("/")
    body = body.rstrip("/")
    if not body or body == ".":
        regex = ".*"
    else:
        regex = _glob_regex(body)
        if not anchored:
            regex = "(?:.*/)?" + regex
        regex += "(?:/.*)?"
    return _PathPattern(base, re.compile(regex, re.DOTALL))


def _command_pattern(spec: str) -> re.Pattern[str]:
    spec = " ".join(spec.split())
    if spec.endswith(":*"):
        regex = re.escape(spec[:-2].rstrip()) + r"(?:\s.*)?"
    elif spec.endswith(" *") and spec.count("*") == 1:
        regex = re.escape(spec[:-2]) + r"(?:\s.*)?"
    else:
        regex = ".*".join(re.escape(part) for part in spec.split("*"))
    return re.compile(regex, re.DOTALL)


def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in name.split("*")))


# --- rules ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Rule:
    """One parsed rule (`parse_rule`)."""

    text: str
    """The rule as written."""
    tools: frozenset[str] | None
    """The tools it covers by exact name, or `None` when `name` is a pattern."""
    name: re.Pattern[str] | None = None
    """A tool-name pattern (`mcp__github__*`), when `tools` is `None`."""
    command: re.Pattern[str] | None = None
    """`Bash(…)`: the command pattern."""
    path: _PathPattern | None = None
    """`Read(…)` / `Edit(…)` / `Write(…)`: the path pattern."""
    agent: re.Pattern[str] | None = None
    """`Task(…)` / `Agent(…)`: the definition-name pattern."""

    def covers(self, tool: str) -> bool:
        """Whether the rule can apply to calls of `tool` (its specifier decides which calls)."""
        if self.tools is not None:
            return tool in self.tools
        return self.name is not None and self.name.fullmatch(tool) is not None

    @property
    def bare(self) -> bool:
        """Whether the rule has no specifier (every call of its tools)."""
        return self.command is None and self.path is None and self.agent is None


def parse_rule(text: str) -> Rule:
    """Read one rule.

    Raises:
        RuleError: not a rule (`Tool` or `Tool(specifier)`), or a specifier for a tool that takes none.
    """
    if not isinstance(text, str):
        raise RuleError(f'{text!r} is not a rule (write a tool name, e.g. "Bash(git push:*)")')
    match = _RULE.match(text)
    if match is None:
        raise RuleError(
            f"{text!r} is not a permission rule: write `Tool` or `Tool(specifier)`, "
            'e.g. "Bash(git push:*)", "Edit(src/**)", "mcp__github__*"'
        )
    name, spec = match.group(1), match.group(2)
    if spec is not None and spec.strip() in ("", "*"):
        spec = None  # `Bash(*)`, `Bash()`: every call, like `Bash`
    tools: frozenset[str] | None
    pattern: re.Pattern[str] | None = None
    if "*" in name:
        tools = None
        pattern = _name_pattern(name)
    elif name in RULE_TOOLS:
        tools = frozenset(RULE_TOOLS[name])
    elif name.startswith("mcp__") and name.count("__") == 1:
        tools, pattern = None, _name_pattern(name + "__*")
    else:
        tools = frozenset({name})
    if spec is None:
        return Rule(text, tools, pattern)
    if tools is None:
        raise RuleError(f"{text!r}: a tool-name pattern takes no specifier; write {name!r} alone")
    if name[:1].isupper() and name not in RULE_TOOLS:
        return Rule(text, frozenset())  # a Claude Code tool corral does not have: it matches nothing
    if tools == {"bash"}:
        return Rule(text, tools, command=_command_pattern(spec))
    if tools <= _FILE_TOOLS:
        return Rule(text, tools, path=_path_pattern(spec, repr(text)))
    if name in ("Task", "Agent") or tools <= _AGENT_TOOLS:
        return Rule(text, tools & _AGENT_TOOLS, agent=_name_pattern(spec.strip()))
    raise RuleError(
        f"{text!r}: corral reads a specifier only for Bash, Read, Edit, Write and Task/Agent rules; "
        f"write {name!r} alone to cover every call"
    )


# --- shell commands ------------------------------------------------------------------------------

_SEPARATORS = ("&&", "||", "$(", ";", "|", "&", "\n", "`", "(", ")")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset({"sudo", "env", "command", "builtin", "exec", "nohup", "time", "nice", "timeout"})


_TOKEN = re.compile(r"""'[^']*'?|"(?:\\.|[^"\\])*"?|\\.?|(&&|\|\||\$\(|[;|&\n`()])|[^'"\\;|&\n`()$]+|\$""")
"""A quoted string, an escape, a separator (group 1), or plain text: `split_command`'s one pass."""
_PLAIN_SEPARATORS = re.compile(r"&&|\|\||\$\(|[;|&\n`()]")


def split_command(command: str) -> list[str]:
    """The simple commands of a shell command line: split at `&&`, `||`, `;`, `|`, `&`, newlines and
    command substitutions, outside quotes; whitespace collapsed."""
    if "'" in command or '"' in command or "\\" in command:
        parts: list[str] = []
        current: list[str] = []
        for token in _TOKEN.finditer(command):
            if token.group(1) is not None:
                parts.append("".join(current))
                current = []
            else:
                current.append(token.group(0))
        parts.append("".join(current))
    else:
        parts = _PLAIN_SEPARATORS.split(command)
    found = [" ".join(part.split()) for part in parts]
    return [part for part in found if part] or [""]


_SHELL_C = re.compile(r"(?:ba|z|da|k)?sh -[a-z]*c[a-z]* (.+)", re.DOTALL)
"""`sh -c '…'`, `bash -lc "…"`: a shell running a command string, whose commands a rule sees too."""


def _program_named(command: str) -> str:
    """`command` with its program named without its directory: `/bin/rm -f x` is `rm -f x`."""
    first, space, rest = command.partition(" ")
    name = first.rpartition("/")[2]
    return f"{name}{space}{rest}" if name and name != first else command


def _simple_commands(command: str, *, depth: int) -> list[tuple[str, str]]:
    """Each simple command as written and without its wrappers, with those of `sh -c` strings after it
    (`/bin/bash -lc '…'` too)."""
    found: list[tuple[str, str]] = []
    for part in split_command(command):
        bare = _unwrapped(part)
        found.append((part, bare))
        inner = _SHELL_C.fullmatch(_program_named(bare))
        if inner is not None and depth > 0:
            text = inner.group(1)
            if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
                text = text[1:-1]
            found.extend(_simple_commands(text, depth=depth - 1))
    return found


def _unwrapped(command: str) -> str:
    """`command` without leading assignments and wrapper programs (`sudo`, `timeout 10`, …)."""
    words = command.split(" ")
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word):
            i += 1
        elif word.rpartition("/")[2] in _WRAPPERS:  # `sudo`, `/usr/bin/env` alike
            i += 1
            while i < len(words) and (words[i].startswith("-") or _ASSIGNMENT.match(words[i])):
                i += 1  # the wrapper's options (`nice -n 5`: the number is skipped below)
            if word in ("timeout", "nice") and i < len(words) and re.fullmatch(r"[\d.]+[smhd]?", words[i]):
                i += 1
        else:
            break
    return " ".join(words[i:])


# --- evaluation ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RuleVerdict:
    """What the rules say about one call, and which rule said it."""

    decision: Decision
    rule: str | None = None
    """The deciding rule as written; `None` when no rule matched (the default decided)."""
    default: bool = False
    """Whether `permissions.default` decided (no rule matched)."""
    source: str | None = None
    """Where the deciding rules come from when not `[permissions]`: a narrowing layer's source
    (``definition `reviewer` ``, ``tier `read-review` ``)."""

    def reason(self, tool: str) -> str:
        """One line saying why, for the model and for `corral permissions check`."""
        of = "" if self.source is None else f" of {self.source}"
        if self.rule is not None:
            if self.decision == "deny":
                return f"the permission rule `{self.rule}`{of} denies it"
            if self.decision == "ask":
                return f"the permission rule `{self.rule}`{of} asks for approval"
            return f"the permission rule `{self.rule}`{of} allows it"
        default = "permissions.default" if self.source is None else f"the permissions default{of}"
        if self.decision == "allow":
            return "no permission rule matches, and calls are allowed by default"
        if self.decision == "ask":
            return f"no permission rule allows this {tool} call, and {default} asks for approval"
        return f"no permission rule allows this {tool} call, and {default} denies it"


class _Where:
    """Where an agent works: what relative path rules start from."""

    __slots__ = ("_home", "cwd", "project")

    def __init__(self, cwd: str, project: str) -> None:
        self.cwd = cwd
        self.project = project
        self._home: str | None = None

    @property
    def home(self) -> str:
        if self._home is None:
            self._home = os.path.expanduser("~")
        return self._home

    def base(self, kind: PathBase) -> str:
        if kind == "cwd":
            return self.cwd
        if kind == "project":
            return self.project
        return "/" if kind == "root" else self.home


def _normal(path: str, cwd: str) -> str:
    if path.startswith("@"):
        path = path[1:]
    if path == "~" or path.startswith("~/"):
        path = os.path.expanduser(path)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))


_PROC_FD = "/proc/self/fd/"
_O_PATH = getattr(os, "O_PATH", None)


def _resolved(path: str) -> str:
    """`os.path.realpath(path)`, three system calls instead of one per component where the system
    allows (Linux's `O_PATH` and `/proc/self/fd`): the path's own, or for a file not there yet its
    directory's."""
    if _O_PATH is not None:
        for target, tail in ((path, ""), (os.path.dirname(path), os.path.basename(path))):
            try:
                fd = os.open(target, _O_PATH)
            except OSError:
                continue
            try:
                real = os.readlink(_PROC_FD + str(fd))
            except OSError:
                break
            finally:
                os.close(fd)
            if real.startswith("/"):
                return os.path.join(real, tail) if tail else real
            break
    return os.path.realpath(path)


def _relative(path: str, base: str) -> str | None:
    if base == "/":
        return path[1:]
    if path == base:
        return ""
    if path.startswith(base) and path[len(base)] == "/":
        return path[len(base) + 1 :]
    return None


def _path_matches(
    pattern: _PathPattern, paths: Sequence[str], where: _Where, *, every: bool, directory: bool
) -> bool:
    """Whether `pattern` matches one of `paths` (`every`: each of them); a `directory` a search tool
    reads also matches a pattern for what is in it (`Read(secrets/**)` covers `grep` in `secrets`)."""
    root = where.base(pattern.base)
    for path in paths:
        rel = _relative(path, root)
        hit = rel is not None and (
            pattern.regex.fullmatch(rel) is not None
            or (directory and rel != "" and pattern.regex.fullmatch(rel + "/") is not None)
        )
        if hit != every:
            return hit
    return every


class _Call:
    """One call's facts, computed once and only when a rule needs them."""

    __slots__ = ("_commands", "_paths", "_strict", "arguments", "tool", "where")

    def __init__(self, tool: str, arguments: Mapping[str, Any], where: _Where) -> None:
        self.tool = tool
        self.arguments = arguments
        self.where = where
        self._commands: list[tuple[str, str]] | None = None
        self._strict: list[tuple[str, str]] | None = None
        self._paths: tuple[str, ...] | None = None

    def commands(self) -> list[tuple[str, str]]:
        """Each simple command of a `bash` call, as written and without its wrappers."""
        if self._commands is None:
            command = self.arguments.get("command")
            self._commands = _simple_commands(command if isinstance(command, str) else "", depth=3)
        return self._commands

    def denied_commands(self) -> list[tuple[str, str]]:
        """`commands`, and each one whose program is a path also by the program's name (`/bin/rm x`
        as `rm x`): what a deny or ask rule is matched against. An allow rule is not — `Bash(rm:*)`
        does not allow `./rm`."""
        if self._strict is None:
            commands = self.commands()
            named = [(n, n) for _, bare in commands if (n := _program_named(bare)) != bare]
            self._strict = commands + named
        return self._strict

    def paths(self) -> tuple[str, ...]:
        """A file tool's path, normalised, and with its symlinks resolved when that differs."""
        if self._paths is None:
            raw = self.arguments.get("path")
            if not isinstance(raw, str) or not raw:
                raw = "." if self.tool in _SEARCH_TOOLS else ""
            if not raw:
                self._paths = ()
            else:
                written = _normal(raw, self.where.cwd)
                real = _resolved(written)
                self._paths = (written,) if real == written else (written, real)
        return self._paths


def _command_hit(regex: re.Pattern[str], command: tuple[str, str]) -> bool:
    return regex.fullmatch(command[0]) is not None or (
        command[1] != command[0] and regex.fullmatch(command[1]) is not None
    )


def _matches(rule: Rule, call: _Call, *, every: bool) -> bool:
    """Whether `rule` matches `call`; `every`: for an allow rule (every path must match)."""
    if rule.bare:
        return True
    if rule.command is not None:
        regex = rule.command
        commands = call.commands() if every else call.denied_commands()
        return any(_command_hit(regex, command) for command in commands)
    if rule.path is not None:
        paths = call.paths()
        directory = call.tool in _SEARCH_TOOLS
        return bool(paths) and _path_matches(rule.path, paths, call.where, every=every, directory=directory)
    if rule.agent is not None:
        definition = call.arguments.get("definition")
        action = call.arguments.get("action", "delegate")
        return (
            action == "delegate"
            and isinstance(definition, str)
            and rule.agent.fullmatch(definition) is not None
        )
    return False


def _allowed_command(rules: Sequence[Rule], call: _Call) -> str | None:
    """The allow rule that allows a `bash` call, when every simple command of it is allowed."""
    chosen: str | None = None
    for command in call.commands():
        matched = next((r for r in rules if r.bare or (r.command and _command_hit(r.command, command))), None)
        if matched is None:
            return None
        chosen = chosen or matched.text
    return chosen


@dataclass(frozen=True, slots=True)
class _ForTool:
    deny: tuple[Rule, ...]
    ask: tuple[Rule, ...]
    allow: tuple[Rule, ...]


@dataclass
class Permissions:
    """The `[permissions]` rules of a process: `check` says what a call may do."""

    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    default: Decision = "allow"
    """What a call no rule matches gets."""
    _by_tool: dict[str, _ForTool] = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def parse(
        cls,
        *,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
        default: Decision = "allow",
    ) -> Permissions:
        """Rules from their texts.

        Raises:
            RuleError: a rule cannot be read.
        """
        return cls(
            tuple(parse_rule(r) for r in allow),
            tuple(parse_rule(r) for r in ask),
            tuple(parse_rule(r) for r in deny),
            default,
        )

    @property
    def empty(self) -> bool:
        """Whether every call is allowed without a look (no rule, default `allow`)."""
        return not (self.allow or self.ask or self.deny) and self.default == "allow"

    def _rules_for(self, tool: str) -> _ForTool:
        found = self._by_tool.get(tool)
        if found is None:
            found = self._by_tool[tool] = _ForTool(
                tuple(r for r in self.deny if r.covers(tool)),
                tuple(r for r in self.ask if r.covers(tool)),
                tuple(r for r in self.allow if r.covers(tool)),
            )
        return found

    def check(
        self, tool: str, arguments: Mapping[str, Any], *, cwd: str, project: str | None = None
    ) -> RuleVerdict:
        """The decision for a call of `tool` with `arguments` by an agent working in `cwd` (absolute);
        `project` is what `/path` rules start from (default: `cwd`)."""
        rules = self._rules_for(tool)
        if not (rules.deny or rules.ask or rules.allow):
            return RuleVerdict(self.default, default=True)
        call = _Call(tool, arguments, _Where(cwd, project or cwd))
        for rule in rules.deny:
            if _matches(rule, call, every=False):
                return RuleVerdict("deny", rule.text)
        for rule in rules.ask:
            if _matches(rule, call, every=False):
                return RuleVerdict("ask", rule.text)
        if rules.allow:
            if tool == "bash":
                allowed = _allowed_command(rules.allow, call)
                if allowed is not None:
                    return RuleVerdict("allow", allowed)
            else:
                for rule in rules.allow:
                    if _matches(rule, call, every=True):
                        return RuleVerdict("allow", rule.text)
        return RuleVerdict(self.default, default=True)


def stricter(a: RuleVerdict, b: RuleVerdict) -> RuleVerdict:
    """The stricter of two verdicts (deny over ask over allow); on a tie, the one a rule made (`b` when
    `a` is a default's), else `a`."""
    a_rank, b_rank = _STRICTNESS[a.decision], _STRICTNESS[b.decision]
    return b if b_rank > a_rank or (b_rank == a_rank and a.default) else a
