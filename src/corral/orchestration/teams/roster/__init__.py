"""Team members and file claims: records and their SQL.

`Roster` (the repository) is re-exported: every process that opens the database makes it.
"""

from corral.orchestration.teams.roster._repository import Roster

__all__ = ["Roster"]
