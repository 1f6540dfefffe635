"""Team reports: `report_and_exit`, the fallback report, the report row and its delivery, acceptance.

`SwarmWakes` (which swarm reports wake their owner) is re-exported for the spawn path and the
teams extension.
"""

from corral.orchestration.teams.reports._swarm_wakes import SwarmWakes

__all__ = ["SwarmWakes"]
