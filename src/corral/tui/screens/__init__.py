"""The TUI's screens."""

from ._follow import FollowScreen
from ._modal import AgentsScreen, PickerScreen

__all__ = ["AgentsScreen", "FollowScreen", "PickerScreen"]
