"""Tier favorites for `/agents-favorite-models`: choices, validation, and saving to the user file.

Favorites live only in the user settings file (`[favorite_models.<tier>]`
tables with `model` and `thinking`), so the picker and spawning agree.
Saving rewrites only those tables: every other line of the file is kept as
written (comments included). No TOML writer is installed, so the tables are
rendered here; before the file is replaced, the new text is parsed back and
must hold exactly the old settings apart from `favorite_models`, and exactly
the favorites meant — otherwise nothing is written and the user is told to
edit the file by hand. The file is replaced atomically and stays 0600.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from corral._paths import ensure_private_dir
from corral.errors import CorralError
from corral.llm import (
    THINKING_LEVELS,
    LlmError,
    ModelInfo,
    ThinkingLevel,
    as_thinking_level,
    available_thinking_levels,
    clamp_thinking_level,
)
from corral.orchestration.teams._errors import UnknownTierError
from corral.orchestration.teams._tiers import TIERS, TierName, resolve_tier

__all__ = [
    "FAVORITES_KEY",
    "Favorites",
    "FavoritesCommand",
    "FavoritesError",
    "default_thinking",
    "parse_favorites_command",
    "read_favorites",
    "render_favorites",
    "write_favorites",
]

FAVORITES_KEY = "favorite_models"
"""The settings table that holds the favorites."""

Favorites = dict[str, dict[str, str]]
"""`{tier: {"model": "provider/model", "thinking": level}}`, canonical tiers only."""


class FavoritesError(CorralError):
    """A favorites command is malformed, names an unknown tier, model or level, or the file cannot be updated."""


@dataclass(frozen=True, slots=True)
class FavoritesCommand:
    """A parsed text form of `/agents-favorite-models`."""

    action: Literal["picker", "set", "clear", "clear-all"]
    """Open the picker, set one tier, clear one tier or clear every tier."""
    tier: TierName | None = None
    """The canonical tier (`set`, `clear`)."""
    model: str | None = None
    """`provider/model` (`set`)."""
    thinking: ThinkingLevel | None = None
    """The level (`set`), supported by the model."""


USAGE = (
    "usage: /agents-favorite-models [set <tier> <provider/model> [thinking] | clear <tier> | clear]; "
    "tiers: " + ", ".join(TIERS)
)


def default_thinking(tier: TierName, info: ModelInfo) -> ThinkingLevel:
    """The tier's calibrated level if the model offers it, else the nearest it offers."""
    return clamp_thinking_level(info, TIERS[tier].default_thinking)


def _tier(name: str) -> TierName:
    try:
        return resolve_tier(name).name
    except UnknownTierError as exc:
        raise FavoritesError(str(exc)) from None


def parse_favorites_command(arg: str, registry: Any) -> FavoritesCommand:
    """Parse the arguments of `/agents-favorite-models`.

    Args:
        arg: Everything after the command name.
        registry: Resolves `provider/model` to a `ModelInfo` (the lead's `ModelRegistry`).

    Raises:
        FavoritesError: A malformed command, an unknown tier (aliases are accepted), an unknown
            model, or a thinking level the model does not offer.
    """
    words = arg.split()
    if not words:
        return FavoritesCommand("picker")
    verb, rest = words[0], words[1:]
    if verb == "clear" and not rest:
        return FavoritesCommand("clear-all")
    if verb == "clear" and len(rest) == 1:
        return FavoritesCommand("clear", tier=_tier(rest[0]))
    if verb != "set" or len(rest) not in (2, 3):
        raise FavoritesError(USAGE)
    tier = _tier(rest[0])
    try:
        info = registry.resolve(rest[1])
    except LlmError as exc:
        raise FavoritesError(f"{rest[1]}: {exc}") from None
    offered = available_thinking_levels(info)
    if len(rest) == 2:
        return FavoritesCommand("set", tier=tier, model=info.ref, thinking=default_thinking(tier, info))
    level = as_thinking_level("xhigh" if rest[2] == "max" else rest[2])
    if level is None:
        raise FavoritesError(f"unknown thinking level {rest[2]!r}; use one of {', '.join(THINKING_LEVELS)}")
    if level not in offered:
        raise FavoritesError(
            f"{info.ref} does not offer thinking {rest[2]!r}; it offers {', '.join(offered)}"
        )
    return FavoritesCommand("set", tier=tier, model=info.ref, thinking=level)


# --- the file ----------------------------------------------------------------------------------


def read_favorites(path: Path) -> Favorites:
    """The favorites in the user file (canonical tiers; aliases projected); `{}` without a file.

    Raises:
        FavoritesError: The file is not valid TOML.
    """
    data = _load(path)
    raw = data.get(FAVORITES_KEY)
    out: Favorites = {}
    if isinstance(raw, Mapping):
        for key, value in raw.items():
            with contextlib.suppress(UnknownTierError):
                tier = resolve_tier(key).name
                if isinstance(value, Mapping):
                    out[tier] = {k: str(v) for k, v in value.items()}
    return out


def _read(path: Path) -> str:
    """The file's text (`""` when it does not exist)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise FavoritesError(f"{path}: cannot read it ({exc.strerror})") from None


def _parse(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FavoritesError(f"{path}: not valid TOML ({exc}); fix it before saving favorites") from None


def _load(path: Path) -> dict[str, Any]:
    return _parse(path, _read(path))


def render_favorites(favorites: Mapping[str, Mapping[str, str]]) -> str:
    """`[favorite_models.<tier>]` tables in tier order (`""` without favorites)."""
    blocks = []
    for tier in [t for t in TIERS if t in favorites] + sorted(set(favorites) - set(TIERS)):
        lines = [f"[{FAVORITES_KEY}.{tier}]"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in favorites[tier].items()]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


_HEADER = re.compile(r"^\[\[?(?P<key>[^\]]*)\]\]?\s*(#.*)?$")
_TOP_LEVEL = re.compile(r"""^["']?favorite_models["']?\s*[.=]""")


def _without_favorites(lines: Sequence[str]) -> list[str]:
    out: list[str] = []
    in_favorites = seen_header = False
    for line in lines:
        stripped = line.strip()
        header = _HEADER.match(stripped)
        if header is not None:
            seen_header = True
            key = re.sub(r"""[\s"']""", "", header.group("key"))
            in_favorites = key == FAVORITES_KEY or key.startswith(FAVORITES_KEY + ".")
            if in_favorites:
                continue
        elif in_favorites or (not seen_header and _TOP_LEVEL.match(stripped)):
            continue
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return out


def write_favorites(path: Path, favorites: Mapping[str, Mapping[str, str]]) -> None:
    """Replace the file's `favorite_models` with `favorites`, keeping every other line.

    Raises:
        FavoritesError: The file is not valid TOML, or the result would not hold exactly
            the same other settings (nothing is written then).
    """
    text = _read(path)
    before = _parse(path, text)
    kept = _without_favorites(text.splitlines(keepends=True))
    body = "".join(kept)
    if body and not body.endswith("\n"):
        body += "\n"
    tables = render_favorites(favorites)
    new_text = body + ("\n" if body and tables else "") + tables
    try:
        after = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        after = None
    others_before = {k: v for k, v in before.items() if k != FAVORITES_KEY}
    expected = {tier: dict(values) for tier, values in favorites.items()}
    if (
        after is None
        or {k: v for k, v in after.items() if k != FAVORITES_KEY} != others_before
        or after.get(FAVORITES_KEY, {}) != expected
    ):
        raise FavoritesError(
            f"{path}: could not rewrite [{FAVORITES_KEY}] without touching other settings; "
            "edit the file by hand"
        )
    ensure_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".settings-", suffix=".toml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(new_text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
