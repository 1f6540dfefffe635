"""Thinking levels: which a model offers, and clamping a request to them.

A model without reasoning offers only `off`. A reasoning model offers `off`
through `high`, plus `xhigh` when it supports it (Pi's `supportsXhigh`: the id
names `gpt-5.2`, `gpt-5.3`, `gpt-5.4` or Opus 4.6, or the registry entry says
so). A level the model does not offer is clamped to the next higher offered
level, else the next lower one.
"""

from __future__ import annotations

from ._model import THINKING_LEVELS, ModelInfo, ThinkingLevel

__all__ = ["available_thinking_levels", "clamp_thinking_level", "supports_xhigh"]

_XHIGH_ID_MARKERS = ("gpt-5.2", "gpt-5.3", "gpt-5.4", "opus-4-6", "opus-4.6")


def supports_xhigh(info: ModelInfo) -> bool:
    """Whether the model offers `xhigh`: flagged in its entry, or by Pi's id rule."""
    if not info.reasoning:
        return False
    return info.supports_xhigh or any(marker in info.id for marker in _XHIGH_ID_MARKERS)


def available_thinking_levels(info: ModelInfo) -> tuple[ThinkingLevel, ...]:
    """The levels the model offers, lowest first."""
    if not info.reasoning:
        return ("off",)
    if supports_xhigh(info):
        return THINKING_LEVELS
    return tuple(level for level in THINKING_LEVELS if level != "xhigh")


def clamp_thinking_level(info: ModelInfo, level: ThinkingLevel) -> ThinkingLevel:
    """`level` if the model offers it, else the next higher offered level, else the next lower.

    Raises:
        ValueError: `level` is not a thinking level.
    """
    if level not in THINKING_LEVELS:
        raise ValueError(f"unknown thinking level {level!r}: use one of {', '.join(THINKING_LEVELS)}")
    available = available_thinking_levels(info)
    if level in available:
        return level
    wanted = THINKING_LEVELS.index(level)
    higher = [lvl for lvl in available if THINKING_LEVELS.index(lvl) > wanted]
    if higher:
        return higher[0]
    lower = [lvl for lvl in available if THINKING_LEVELS.index(lvl) < wanted]
    return lower[-1]
