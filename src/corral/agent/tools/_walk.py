"""Walking a directory tree the way ripgrep and fd do for corral's `grep` and `find`.

Hidden files are included (`--hidden`), `.git` is always skipped, symbolic
links are listed but never followed, and `.gitignore` files are honoured:
every `.gitignore` below the search root, plus those in the directories
between the search root and the enclosing git work tree's root (the nearest
ancestor holding `.git`), and that repository's `.git/info/exclude`. Unlike
ripgrep, `.gitignore` files apply also outside a git repository (as Pi gets
from fd by passing them as ignore files). A deeper `.gitignore` overrides a
shallower one; an ignored directory is not entered, so nothing under it can
be re-included (git's rule). Entries are visited in name order, so results
are deterministic.

Globs (`glob_matcher`) use gitignore-style syntax: `*` and `?` stay within one
path segment, `**` crosses segments, `[…]` is a character class and `{a,b}`
alternatives. A glob without `/` is matched against the file name, one with
`/` against the path relative to the search root.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

__all__ = ["WalkEntry", "glob_matcher", "walk"]


class WalkCancelled(Exception):
    """The walk was stopped through its cancel event."""


@dataclass(frozen=True, slots=True)
class WalkEntry:
    """One file system entry found by `walk`."""

    path: str
    """Absolute path."""
    rel: str
    """Path relative to the search root, with `/` separators."""
    is_dir: bool
    """A real directory (not a link to one)."""
    is_file: bool
    """A regular file (not a link to one)."""


@dataclass(frozen=True, slots=True)
class _Rules:
    base: str
    """Directory the rules are relative to (absolute)."""
    spec: pathspec.GitIgnoreSpec


def _load_rules(directory: str, name: str = ".gitignore") -> _Rules | None:
    try:
        with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    if not lines:
        return None
    import pathspec  # ~8 ms of imports: loaded by the first walk, not with the tools

    return _Rules(directory, pathspec.GitIgnoreSpec.from_lines(lines))


def _ancestor_rules(root: str) -> list[_Rules]:
    """Rules from the directories above `root` up to its git work tree's root (outermost first)."""
    chain: list[str] = []
    current = os.path.dirname(root)
    if os.path.exists(os.path.join(root, ".git")):
        repo: str | None = root
    else:
        repo = None
        while True:
            chain.append(current)
            if os.path.exists(os.path.join(current, ".git")):
                repo = current
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    rules: list[_Rules] = []
    if repo is None:
        return rules
    exclude = _load_rules(os.path.join(repo, ".git", "info"), "exclude")
    if exclude is not None:
        rules.append(_Rules(repo, exclude.spec))
    for directory in reversed(chain):
        loaded = _load_rules(directory)
        if loaded is not None:
            rules.append(loaded)
    return rules


def _ignored(rules: list[_Rules], path: str, is_dir: bool) -> bool:
    verdict = False
    for rule in rules:
        rel = os.path.relpath(path, rule.base).replace(os.sep, "/")
        if is_dir:
            rel += "/"
        include = rule.spec.check_file(rel).include
        if include is not None:
            verdict = include
    return verdict


def walk(
    root: Path, *, cancel: threading.Event | None = None, skip: Callable[[str], bool] | None = None
) -> Iterator[WalkEntry]:
    """Entries under `root` (not `root` itself), honouring `.gitignore`, skipping `.git`.

    Args:
        root: Where to start.
        cancel: Set to stop the walk (it raises `WalkCancelled`).
        skip: Paths (as `os.path.join(root, rel)`) to leave out, with everything under them.

    Raises:
        WalkCancelled: `cancel` was set.
    """
    top = str(root)
    base_rules = _ancestor_rules(top)
    yield from _walk_dir(top, "", base_rules, cancel, skip)


def _walk_dir(
    directory: str,
    rel: str,
    rules: list[_Rules],
    cancel: threading.Event | None,
    skip: Callable[[str], bool] | None,
) -> Iterator[WalkEntry]:
    if cancel is not None and cancel.is_set():
        raise WalkCancelled
    own = _load_rules(directory)
    if own is not None:
        rules = [*rules, own]
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        if entry.name == ".git":
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file(follow_symlinks=False)
        except OSError:
            continue
        if _ignored(rules, entry.path, is_dir) or (skip is not None and skip(entry.path)):
            continue
        child_rel = f"{rel}{entry.name}"
        yield WalkEntry(entry.path, child_rel, is_dir, is_file)
        if is_dir:
            yield from _walk_dir(entry.path, child_rel + "/", rules, cancel, skip)


def _expand_braces(pattern: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    expanded: list[str] = []
    for option in match.group(1).split(","):
        expanded.extend(_expand_braces(head + option + tail))
    return expanded


def _glob_regex(pattern: str) -> str:
    out: list[str] = []
    index = 0
    length = len(pattern)
    while index < length:
        char = pattern[index]
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("/**", index) and index + 3 == length:
            out.append("/.*")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif char == "*":
            out.append("[^/]*")
            index += 1
        elif char == "?":
            out.append("[^/]")
            index += 1
        elif char == "[":
            end = pattern.find("]", index + 2)
            if end < 0:
                out.append(re.escape(char))
                index += 1
                continue
            body = pattern[index + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            index = end + 1
        elif char == "\\" and index + 1 < length:
            out.append(re.escape(pattern[index + 1]))
            index += 2
        else:
            out.append(re.escape(char))
            index += 1
    return "".join(out)


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A predicate on root-relative paths (`/`-separated) for a gitignore-style glob.

    A leading `!` negates the glob (ripgrep's `--glob '!…'`).
    """
    negate = pattern.startswith("!")
    if negate:
        pattern = pattern[1:]
    pattern = pattern.removeprefix("./")
    full_path = "/" in pattern.rstrip("/")
    pattern = pattern.strip("/") if full_path else pattern.rstrip("/")
    regex = re.compile(
        "|".join(f"(?:{_glob_regex(option)})" for option in _expand_braces(pattern)), re.DOTALL
    )

    def matches(rel: str) -> bool:
        subject = rel if full_path else rel.rsplit("/", 1)[-1]
        return (regex.fullmatch(subject) is not None) != negate

    return matches
