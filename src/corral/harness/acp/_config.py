"""A definition's `model` and `thinking` as the agent's session config options.

An ACP agent may offer config options with its session (`configOptions` in its `session/new` or
`session/load` answer): selects, each with a category (`model`, `thought_level`, …) and values. The
definition's model is matched against the option whose category (else id) is `model`, its thinking
level against `thought_level`, by value or name (case ignored; a model ref `provider/id` matches a
value that is the whole ref or just the id). A match that differs from the current value is set with
`session/set_config_option`; what the agent does not offer stays the agent's default, and is noted.
(ACP 0.12.1 has no `session/set_model`; config options replaced it.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from corral.llm import ModelRefError, parse_model_ref

__all__ = ["ConfigChoice", "SessionConfig", "config_choices"]


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """What the definition asks of the agent's session."""

    model: str | None = None
    """The definition's model ref (`provider/id[:thinking]`), or `None` for the agent's default."""
    thinking: str | None = None
    """The definition's thinking level, or `None` (a model ref's `:thinking` suffix counts too)."""

    def wanted(self) -> Iterator[tuple[str, str, tuple[str, ...]]]:
        """`(what, category, candidate values)` for each thing asked: `model`, `thinking`."""
        thinking = self.thinking
        if self.model is not None:
            candidates: tuple[str, ...] = (self.model,)
            try:
                ref = parse_model_ref(self.model)
            except ModelRefError:
                ref = None
            if ref is not None:
                candidates = (f"{ref.provider}/{ref.model_id}", ref.model_id)
                thinking = thinking or ref.thinking
            yield "model", "model", candidates
        if thinking is not None:
            yield "thinking", "thought_level", (thinking, "max") if thinking == "xhigh" else (thinking,)


@dataclass(frozen=True, slots=True)
class ConfigChoice:
    """One config option to set."""

    config_id: str
    value: str


def _values(option: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """`(value, name)` of a select's options, flattening groups."""
    for item in option.get("options") or ():
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("options"), list):
            yield from _values(item)
        elif isinstance(item.get("value"), str):
            yield item["value"], str(item.get("name") or item["value"])


def _option(options: Sequence[object], category: str) -> Mapping[str, Any] | None:
    selects = [o for o in options if isinstance(o, dict) and o.get("type", "select") == "select"]
    for key in ("category", "id"):
        for option in selects:
            if option.get(key) == category:
                return option
    return None


def config_choices(options: object, config: SessionConfig) -> tuple[list[ConfigChoice], dict[str, str]]:
    """The options to set for `config` from the agent's `configOptions`, and, for what it does not
    offer, why (`{"model": "the agent offers no model option", …}`)."""
    offered = options if isinstance(options, list) else []
    choices: list[ConfigChoice] = []
    unmatched: dict[str, str] = {}
    for what, category, candidates in config.wanted():
        option = _option(offered, category)
        if option is None:
            unmatched[what] = f"the agent offers no {category} option"
            continue
        wanted = [c.casefold() for c in candidates]
        found = next(
            (
                value
                for value, name in _values(option)
                if value.casefold() in wanted or name.casefold() in wanted
            ),
            None,
        )
        if found is None:
            listed = ", ".join(value for value, _ in _values(option))
            unmatched[what] = f"{candidates[0]} is not one of the agent's {category} values ({listed})"
        elif found != option.get("currentValue"):
            choices.append(ConfigChoice(str(option.get("id")), found))
    return choices, unmatched
