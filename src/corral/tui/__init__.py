"""The Textual terminal app (`corral` with no command).

Importing this package imports Textual; the CLI imports it only when the app opens.
"""

from corral.tui._commands import COMMANDS
from corral.tui.app import DEMO_MODEL, AgentProgress, CorralApp, HostChanged, LeadEvent, run_app

__all__ = ["COMMANDS", "DEMO_MODEL", "AgentProgress", "CorralApp", "HostChanged", "LeadEvent", "run_app"]
