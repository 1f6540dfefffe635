"""`corral.tui` re-exports exactly its public names (ruff keeps `__all__` sorted)."""

from __future__ import annotations

import corral.tui
import corral.tui.screens
import corral.tui.widgets


def test_all_lists_the_public_names_sorted() -> None:
    for module in (corral.tui, corral.tui.widgets, corral.tui.screens):
        public = {
            name
            for name in vars(module)
            if not name.startswith("_") and name not in ("app", "widgets", "screens")
        }
        public = {name for name in public if not isinstance(getattr(module, name), type(corral))}
        assert set(module.__all__) == public
