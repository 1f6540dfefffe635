"""`/agents-favorite-models`: the single-screen tier picker (tiers | models | thinking).

←/→ or Tab move between the columns, ↑/↓ change the selection. Typing while
the models column is focused filters it by substring of `provider/model`
(Backspace deletes). The thinking column offers the levels the highlighted
model supports. Enter on a model saves it for the tier (with the tier's
calibrated level, clamped to the model), Enter on a level saves both; Delete
clears the tier, Ctrl+A clears every tier, Escape closes. The screen only
posts what was chosen; the app saves it and hands back the new favorites.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from corral.llm import ModelInfo, ThinkingLevel, available_thinking_levels
from corral.orchestration.teams._tiers import TIERS, TierName
from corral.tui._favorites import default_thinking
from corral.tui._palette import DARK_DEFAULTS, ActivityPalette, tier_level

__all__ = ["TierPickerScreen"]

COLUMNS = ("tiers", "models", "thinking")

HINT = (
    "←→/Tab column · ↑↓ select · type in the model column to filter · Enter saves at once\n"
    "Delete clears the tier · Ctrl+A clears every tier · Esc closes"
)


class TierPickerScreen(ModalScreen[None]):
    """Pick each tier's favorite model and thinking level.

    Args:
        models: The models to offer, preferred first.
        favorites: `{tier: {"model", "thinking"}}` as saved.
        lead_model: The lead's model (what an unset tier inherits).
        lead_thinking: The lead's thinking level.
        available: Refs usable now (others are marked `no key`).
        palette: The `activityColors` palette.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", priority=True),
        Binding("left", "column(-1)", "Previous column", show=False),
        Binding("right", "column(1)", "Next column", show=False),
        Binding("tab", "column(1)", "Next column", show=False, priority=True),
        Binding("shift+tab", "column(-1)", "Previous column", show=False, priority=True),
        Binding("delete", "clear", "Clear tier", show=False),
        Binding("ctrl+a", "clear_all", "Clear all", show=False),
    ]

    class FavoriteChosen(Message):
        """Save `tier` → `model` at `thinking`."""

        def __init__(
            self, picker: TierPickerScreen, tier: TierName, model: str, thinking: ThinkingLevel
        ) -> None:
            super().__init__()
            self.picker = picker
            self.tier = tier
            self.model = model
            self.thinking = thinking

    class FavoriteCleared(Message):
        """Clear `tier` (`None`: every tier)."""

        def __init__(self, picker: TierPickerScreen, tier: TierName | None) -> None:
            super().__init__()
            self.picker = picker
            self.tier = tier

    def __init__(
        self,
        models: Sequence[ModelInfo],
        favorites: Mapping[str, Mapping[str, str]],
        *,
        lead_model: str | None,
        lead_thinking: str,
        available: frozenset[str] = frozenset(),
        palette: ActivityPalette = DARK_DEFAULTS,
    ) -> None:
        super().__init__()
        self.models = list(models)
        self.favorites = {tier: dict(values) for tier, values in favorites.items()}
        """The saved favorites (the app replaces them after each save)."""
        self.lead_model = lead_model
        self.lead_thinking = lead_thinking
        self.available = available
        self.palette = palette
        self.filter = ""
        """The models column's filter (substring of `provider/model`)."""
        self.tier: TierName = next(iter(TIERS))
        """The highlighted tier."""
        self.status = ""
        """The last save's outcome (or error)."""

    # --- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal", id="tier-picker"):
            lead = f"{self.lead_model or 'no model'} · {self.lead_thinking}"
            yield Label(
                f"Favorite models per tier  (unset tiers inherit the lead: {lead})", classes="modal-title"
            )
            with Horizontal(id="tier-columns"):
                with Vertical(classes="tier-column", id="tiers-column"):
                    yield Label("tier", classes="column-title")
                    yield OptionList(id="tiers")
                with Vertical(classes="tier-column", id="models-column"):
                    yield Label("model", classes="column-title", id="models-title")
                    yield OptionList(id="models")
                with Vertical(classes="tier-column", id="thinking-column"):
                    yield Label("thinking", classes="column-title")
                    yield OptionList(id="thinking")
            yield Label("", id="tier-status")
            yield Label(HINT, id="tier-hint")

    def on_mount(self) -> None:
        self._fill_tiers()
        self._fill_models()
        self.column("tiers").focus()

    def column(self, name: str) -> OptionList:
        """One of the three columns (`tiers`, `models`, `thinking`)."""
        return self.query_one(f"#{name}", OptionList)

    # --- rendering ------------------------------------------------------------------------------

    def _tier_prompt(self, tier: TierName) -> Text:
        text = Text(tier, style=f"bold {self.palette.tier_color(tier_level(tier))}")
        favorite = self.favorites.get(tier)
        text.append("\n ")
        if favorite:
            text.append(favorite.get("model", "?"), style=self.palette.model)
            text.append(" · ", style="dim")
            text.append(favorite.get("thinking", TIERS[tier].default_thinking), style=self.palette.thinking)
        else:
            text.append("inherits the lead", style="dim")
        return text

    def _fill_tiers(self) -> None:
        tiers = self.column("tiers")
        index = tiers.highlighted or 0
        tiers.set_options(Option(self._tier_prompt(tier), id=tier) for tier in TIERS)
        tiers.highlighted = index

    def visible_models(self) -> list[ModelInfo]:
        """The models the filter lets through."""
        needle = self.filter.lower()
        return [info for info in self.models if needle in info.ref.lower()]

    def _fill_models(self) -> None:
        models = self.column("models")
        visible = self.visible_models()
        options = []
        for info in visible:
            prompt = Text(info.ref, style=self.palette.model)
            if self.available and info.ref not in self.available:
                prompt.append("  no key", style="dim")
            options.append(Option(prompt, id=info.ref))
        models.set_options(options)
        title = "model" + (f"  filter: {self.filter}" if self.filter else "  (type to filter)")
        self.query_one("#models-title", Label).update(title)
        favorite = self.favorites.get(self.tier, {}).get("model") or self.lead_model
        refs = [info.ref for info in visible]
        models.highlighted = refs.index(favorite) if favorite in refs else (0 if refs else None)
        self._fill_thinking()

    def highlighted_model(self) -> ModelInfo | None:
        """The model highlighted in the models column."""
        option = self.column("models").highlighted_option
        if option is None:
            return None
        return next((info for info in self.models if info.ref == option.id), None)

    def _fill_thinking(self) -> None:
        thinking = self.column("thinking")
        info = self.highlighted_model()
        if info is None:
            thinking.clear_options()
            return
        levels = available_thinking_levels(info)
        thinking.set_options(Option(Text(level, style=self.palette.thinking), id=level) for level in levels)
        favorite = self.favorites.get(self.tier, {})
        current = favorite.get("thinking") if favorite.get("model") == info.ref else None
        wanted = current if current in levels else default_thinking(self.tier, info)
        thinking.highlighted = levels.index(wanted) if wanted in levels else 0

    def show_favorites(
        self, favorites: Mapping[str, Mapping[str, str]], status: str, *, error: bool = False
    ) -> None:
        """Take the saved favorites (after a save) and show the outcome."""
        self.favorites = {tier: dict(values) for tier, values in favorites.items()}
        self.status = status
        label = self.query_one("#tier-status", Label)
        label.update(Text(status, style=self.palette.error if error else self.palette.messages))
        self._fill_tiers()

    # --- events ---------------------------------------------------------------------------------

    @on(OptionList.OptionHighlighted, "#tiers")
    def _tier_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        tier = event.option.id
        if tier is not None and tier != self.tier and tier in TIERS:
            self.tier = tier  # type: ignore[assignment]
            self._fill_models()

    @on(OptionList.OptionHighlighted, "#models")
    def _model_highlighted(self, _event: OptionList.OptionHighlighted) -> None:
        self._fill_thinking()

    @on(OptionList.OptionSelected, "#tiers")
    def _tier_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.column("models").focus()

    @on(OptionList.OptionSelected, "#models")
    def _model_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        info = self.highlighted_model()
        if info is None:
            return
        favorite = self.favorites.get(self.tier, {})
        levels = available_thinking_levels(info)
        current = favorite.get("thinking")
        level: ThinkingLevel = current if current in levels else default_thinking(self.tier, info)  # type: ignore[assignment]
        self.post_message(self.FavoriteChosen(self, self.tier, info.ref, level))
        self.column("thinking").focus()

    @on(OptionList.OptionSelected, "#thinking")
    def _thinking_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        info = self.highlighted_model()
        if info is None or event.option.id is None:
            return
        self.post_message(self.FavoriteChosen(self, self.tier, info.ref, event.option.id))  # type: ignore[arg-type]

    def on_key(self, event: events.Key) -> None:
        """Typing in the models column filters it; Backspace deletes from the filter."""
        if self.focused is not self.column("models"):
            return
        if event.key == "backspace" and self.filter:
            self.filter = self.filter[:-1]
        elif event.is_printable and event.character and event.character not in " \t":
            self.filter += event.character
        else:
            return
        event.stop()
        event.prevent_default()
        self._fill_models()

    # --- actions --------------------------------------------------------------------------------

    def action_column(self, step: int) -> None:
        """Move the focus to the previous or next column."""
        focused = self.focused
        current = COLUMNS.index(str(focused.id)) if focused is not None and focused.id in COLUMNS else 0
        self.column(COLUMNS[(current + step) % len(COLUMNS)]).focus()

    def action_clear(self) -> None:
        """Delete: clear the highlighted tier."""
        self.post_message(self.FavoriteCleared(self, self.tier))

    def action_clear_all(self) -> None:
        """Ctrl+A: clear every tier."""
        self.post_message(self.FavoriteCleared(self, None))

    def action_close(self) -> None:
        """Escape: close the picker (everything chosen is already saved)."""
        self.dismiss(None)
