"""The app's side of `/agents-favorite-models`: the text forms, the picker, saving.

Saved favorites go to the user settings file at once and into the running
lead's settings and host, so the next spawn uses them (favorites are never
read from a project file).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from corral.llm import LlmError, ModelInfo
from corral.settings import user_settings_path
from corral.tui._favorites import (
    Favorites,
    FavoritesError,
    parse_favorites_command,
    read_favorites,
    write_favorites,
)
from corral.tui.screens import TierPickerScreen

if TYPE_CHECKING:
    from textual.screen import Screen

    from corral._cli._launch import Launched
    from corral.lead._host import ComposedHost as Host
    from corral.tui._palette import ActivityPalette

__all__ = ["FavoriteModels", "FavoritesApp"]

COMMAND = "/agents-favorite-models"


class FavoritesApp(Protocol):
    """What `FavoriteModels` needs from the app (`CorralApp`)."""

    @property
    def launched(self) -> Launched | None:
        """The lead session, once open."""
        ...

    @property
    def palette(self) -> ActivityPalette:
        """The activity colours (the picker uses them)."""
        ...

    @property
    def host(self) -> Host | None:
        """The orchestration host, once attached."""
        ...

    def notice(self, text: str, *, kind: str = "info") -> None:
        """Show one notice in the chat."""
        ...

    def push_screen(self, screen: Screen[Any]) -> Awaitable[Any]:
        """Open a screen over the app."""
        ...


class FavoriteModels:
    """`/agents-favorite-models` and its picker, composed into `CorralApp` (which routes to it)."""

    def __init__(self, app: FavoritesApp) -> None:
        """Serve `app`'s favorites command and picker messages."""
        self.app = app

    def command(self, arg: str) -> None:
        """`/agents-favorite-models [set <tier> <model> [thinking] | clear <tier> | clear]`."""
        launched = self.app.launched
        if launched is None:
            return
        try:
            command = parse_favorites_command(arg, launched.registry)
            if command.action == "picker":
                self._open_tier_picker()
                return
            favorites = read_favorites(user_settings_path())
            if command.action == "set":
                assert command.tier is not None and command.model is not None
                favorites[command.tier] = {"model": command.model, "thinking": str(command.thinking)}
                done = f"{command.tier}: {command.model} (thinking {command.thinking})"
            elif command.action == "clear":
                assert command.tier is not None
                favorites.pop(command.tier, None)
                done = f"{command.tier}: cleared (inherits the lead's model)"
            else:
                favorites = {}
                done = "every tier cleared (all inherit the lead's model)"
            self.save(favorites)
        except FavoritesError as exc:
            self.app.notice(f"{COMMAND}: {exc}", kind="error")
            return
        self.app.notice(f"{COMMAND}: {done}; saved to {user_settings_path()}")

    def save(self, favorites: Favorites) -> None:
        """Write the favorites to the user file and use them in this session from now on.

        Raises:
            FavoritesError: The file could not be updated (nothing changed).
        """
        write_favorites(user_settings_path(), favorites)
        launched, host = self.app.launched, self.app.host
        update = {"favorite_models": {tier: dict(values) for tier, values in favorites.items()}}
        if launched is not None:
            launched.settings = launched.settings.model_copy(update=update)
        if host is not None:
            host.settings = host.settings.model_copy(update=update)

    def _open_tier_picker(self) -> None:
        launched = self.app.launched
        assert launched is not None
        registry = launched.registry
        favorites = read_favorites(user_settings_path())
        lead = launched.model_info.ref
        available = frozenset(info.ref for info in registry.available_models())
        models: dict[str, ModelInfo] = {info.ref: info for info in registry.all_models()}
        models.setdefault(lead, launched.model_info)
        for favorite in favorites.values():
            ref = favorite.get("model")
            if ref and ref not in models:
                try:
                    models[ref] = registry.resolve(ref)
                except LlmError:  # an unknown saved model is simply not offered
                    continue
        preferred = {lead, *(f.get("model") for f in favorites.values())}
        ordered = sorted(
            models.values(), key=lambda i: (i.ref not in preferred, i.ref not in available, i.ref)
        )
        self.app.push_screen(
            TierPickerScreen(
                ordered,
                favorites,
                lead_model=lead,
                lead_thinking=launched.agent.thinking_level,
                available=available,
                palette=self.app.palette,
            )
        )

    def chosen(self, message: TierPickerScreen.FavoriteChosen) -> None:
        """The picker chose a tier's favorite: save it."""

        def change(favorites: Favorites) -> None:
            favorites[message.tier] = {"model": message.model, "thinking": message.thinking}

        done = f"{message.tier}: {message.model} (thinking {message.thinking}) saved"
        self._picker_save(message.picker, change, done)

    def cleared(self, message: TierPickerScreen.FavoriteCleared) -> None:
        """The picker cleared one tier's favorite (or all): save that."""

        tier = message.tier

        def change(favorites: Favorites) -> None:
            if tier is None:
                favorites.clear()
            else:
                favorites.pop(tier, None)

        done = "every tier cleared" if tier is None else f"{tier}: cleared (inherits the lead)"
        self._picker_save(message.picker, change, done)

    def _picker_save(self, picker: TierPickerScreen, change: Callable[[Favorites], None], done: str) -> None:
        try:
            favorites = read_favorites(user_settings_path())
            change(favorites)
            self.save(favorites)
        except FavoritesError as exc:
            picker.show_favorites(picker.favorites, str(exc), error=True)
            return
        picker.show_favorites(favorites, done)
