"""The `activityColors` palette: the colours of agent names, models, thinking levels and tiers.

`[activity_colors]` in the settings sets any of them; an unset key follows
the app's theme: a dark theme gets light shades, a light theme darker ones,
and warnings and errors use the theme's own colours. A colour Rich cannot
parse falls back to the default, so a bad name never breaks rendering.
Nothing here imports Textual: the app passes in what it knows of its theme.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.color import Color, ColorParseError

from corral.settings import ActivityColorsSettings

__all__ = ["DARK_DEFAULTS", "LIGHT_DEFAULTS", "ActivityPalette", "resolve_palette", "tier_level"]


@dataclass(frozen=True, slots=True)
class ActivityPalette:
    """Resolved Rich colours (each usable as a style string; `""` is the theme's text colour)."""

    names: str
    """Agent names."""
    model: str
    """Model references."""
    thinking: str
    """Thinking levels."""
    tier: tuple[str, str, str, str]
    """Tier shades by level 1 → 4."""
    text: str
    """Progress and row text."""
    messages: str
    """Message cards and secondary details."""
    warning: str
    """Warnings (context ≥ 75%, stale or stalled agents)."""
    error: str
    """Errors (context ≥ 90%, quarantined agents)."""

    def tier_color(self, level: int) -> str:
        """The shade of a tier level (1 → 4; 0, an unknown tier, gets the text colour)."""
        if level <= 0:
            return self.text
        return self.tier[min(level, 4) - 1]


DARK_DEFAULTS = ActivityPalette(
    names="#61afef",
    model="#e5c07b",
    thinking="#fff3b0",
    tier=("#ffd6e8", "#ffadd2", "#ff85c0", "#f759ab"),
    text="",
    messages="#8c8c8c",
    warning="#ffd75f",
    error="#ff5f5f",
)
"""Blue names, gold models, light-yellow thinking, pink tiers (darker = higher), grey messages."""

LIGHT_DEFAULTS = ActivityPalette(
    names="#1f5fbf",
    model="#9a6b00",
    thinking="#8c7a00",
    tier=("#d86fa1", "#c4477f", "#a8235f", "#861244"),
    text="",
    messages="#6e6e6e",
    warning="#b58900",
    error="#c0392b",
)
"""The same hues, dark enough to read on a light background."""

_TIER_LEVELS = {"collect": 1, "patch": 1, "review": 2, "feature": 2, "analyze": 3, "system": 3, "critical": 4}


def tier_level(tier: str) -> int:
    """1 (`read-collect`, `write-patch`) … 4 (`read-critical`, `write-critical`); 0 for anything else."""
    _, _, suffix = tier.partition("-")
    return _TIER_LEVELS.get(suffix, 0) if tier.startswith(("read-", "write-")) else 0


def _color(value: str | None, default: str) -> str:
    if value is None:
        return default
    if len(value) == 4 and value.startswith("#"):  # `#rgb`, which Rich does not parse: `#rrggbb`
        value = "#" + "".join(ch * 2 for ch in value[1:])
    try:
        Color.parse(value)
    except ColorParseError:
        return default
    return value


def resolve_palette(
    settings: ActivityColorsSettings,
    *,
    dark: bool = True,
    warning: str | None = None,
    error: str | None = None,
) -> ActivityPalette:
    """The palette for a theme.

    Args:
        settings: The `[activity_colors]` table.
        dark: Whether the theme is dark.
        warning: The theme's warning colour (used when `warning` is unset).
        error: The theme's error colour (used when `error` is unset).
    """
    base = DARK_DEFAULTS if dark else LIGHT_DEFAULTS
    shades = list(settings.tier or base.tier)
    shades += [shades[-1]] * (4 - len(shades))
    tier = tuple(_color(shade, default) for shade, default in zip(shades, base.tier, strict=True))
    return ActivityPalette(
        names=_color(settings.names, base.names),
        model=_color(settings.model, base.model),
        thinking=_color(settings.thinking, base.thinking),
        tier=(tier[0], tier[1], tier[2], tier[3]),
        text=_color(settings.text, base.text),
        messages=_color(settings.messages, base.messages),
        warning=_color(settings.warning, _color(warning, base.warning)),
        error=_color(settings.error, _color(error, base.error)),
    )
