"""The teams features' repositories over one database, wired to each other once.

Each teams feature owns its tables through its repository (`roster/`, `reports/`, `checks/`,
`repair/`, `groups/`, `checkpoints/`, each `_repository.py`). A repository holds no state besides
the database and the repositories it composes inside its own transactions, so the teams core
builds this bundle over the host's `Generations` when it is made; the roster's `retire_in` hook
is registered on `Generations` by whoever opened the database (`corral.orchestration.Repositories`),
not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from corral.orchestration.kernel._generations import Generations
from corral.orchestration.teams.checkpoints._repository import Checkpoints
from corral.orchestration.teams.checks._repository import Checks
from corral.orchestration.teams.groups._repository import Groups
from corral.orchestration.teams.repair._repository import RepairLedgers
from corral.orchestration.teams.reports._repository import Reports
from corral.orchestration.teams.roster._repository import Roster

__all__ = ["TeamsRepositories"]


@dataclass(frozen=True, slots=True)
class TeamsRepositories:
    """One repository per teams feature, over the database of one `Generations`."""

    kernel: Generations
    """The kernel's repository the teams writes compose (a member is a generation)."""
    roster: Roster
    """Members, messages and file claims."""
    reports: Reports
    """Team reports, their acceptance and delivery rows."""
    checks: Checks
    """Assigned check rows."""
    repair: RepairLedgers
    """Bounded repair ledgers."""
    groups: Groups
    """Completion groups, slots and wakes."""
    checkpoints: Checkpoints
    """Checkpoints (`continue_from`)."""

    @classmethod
    def over(cls, kernel: Generations) -> Self:
        """The teams repositories over `kernel`'s database (they compose `kernel` in their writes)."""
        db = kernel.db
        roster = Roster(db, kernel)
        repair = RepairLedgers(db)
        reports = Reports(db, kernel, roster)
        return cls(
            kernel=kernel,
            roster=roster,
            reports=reports,
            checks=Checks(db, repair),
            repair=repair,
            groups=Groups(db, kernel, roster, reports),
            checkpoints=Checkpoints(db),
        )
