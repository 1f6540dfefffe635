"""The TUI's screens."""

from ._follow import FollowScreen
from ._modal import AgentsScreen, PickerScreen
from ._tiers import TierPickerScreen

__all__ = ["AgentsScreen", "FollowScreen", "PickerScreen", "TierPickerScreen"]
