"""A Markdown file's YAML frontmatter, split off and parsed strictly (no duplicate keys).

Agent definitions (`orchestration/definitions/`) and skills (`skills/`) are Markdown files that
open with a `---` block of YAML. This module is imported only where such a file is read, so YAML
(~25 ms of imports) loads with the first one, not with every process (a plain `corral run` in a
directory with no skills reads none).
"""

from __future__ import annotations

import functools
from typing import Any

import yaml

__all__ = ["FrontmatterError", "load_frontmatter", "split_frontmatter"]


class FrontmatterError(Exception):
    """The frontmatter is missing, not closed or not valid YAML; `problem` says where and what."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def split_frontmatter(text: str) -> tuple[str, str]:
    """`(frontmatter, body)` of a Markdown file's text: the lines between the opening `---` (the first
    line; a BOM before it is dropped) and the next `---` line, and everything after that line.

    Raises:
        FrontmatterError: the text does not start with a `---` line, or no `---` line closes it.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != "---":
        raise FrontmatterError("must start with a `---` line that opens the YAML frontmatter")
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r\n") == "---"), None)
    if close is None:
        raise FrontmatterError("the frontmatter is not closed; add a `---` line after it")
    return "".join(lines[1:close]), "".join(lines[close + 1 :])


def load_frontmatter(text: str) -> Any:
    """The YAML of a frontmatter, parsed once per distinct text. The value is the cache's own, shared
    by every caller of the same text: a caller that changes it copies it first (`copy.deepcopy`).

    The roster is loaded again for every delegate (so an edited file takes effect at once), and so
    are an agent's skills; keyed by the text itself, the cache can never serve a stale parse, and a
    swarm of delegates parses each unchanged file once instead of once per agent.

    Raises:
        FrontmatterError: not valid YAML (a duplicate key included).
    """
    try:
        return _parse(text)
    except yaml.YAMLError as exc:
        raise FrontmatterError(_yaml_problem(exc)) from None


@functools.lru_cache(maxsize=512)
def _parse(text: str) -> Any:
    return yaml.load(text, Loader=_StrictLoader)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        where = f" at frontmatter line {exc.problem_mark.line + 1}" if exc.problem_mark else ""
        return f"{exc.problem or exc.context or 'syntax error'}{where}"
    return str(exc).splitlines()[0]


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that rejects duplicate keys."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)  # type: ignore[no-untyped-call]
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
