"""The teams features' repositories over one database, wired to each other once.

Each teams feature owns its tables through its repository (`roster/`, `messages/`, `reports/`, `checks/`,
`repair/`, `groups/`, `checkpoints/`, each `_repository.py`). A repository holds no state besides
the database and the repositories it composes inside its own transactions, so the teams core
builds this bundle over the host's `Generations` when it is made; the roster's `retire_in` hook
is registered on `Generations` by whoever opened the database (`corral.orchestration.Repositories`),
not here.

Every process that opens the database builds this bundle, but most never touch a team: only the
roster (asked at every lead's attach whether there is teams state, and the finalize hook) is made
with the bundle; each other repository, and its module, on first use.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Self

from corral.orchestration.kernel._generations import Generations
from corral.orchestration.teams.roster import Roster

if TYPE_CHECKING:
    from corral.orchestration.teams.checkpoints._repository import Checkpoints
    from corral.orchestration.teams.checks._repository import Checks
    from corral.orchestration.teams.groups._repository import Groups
    from corral.orchestration.teams.messages.repository import Messages
    from corral.orchestration.teams.repair._repository import RepairLedgers
    from corral.orchestration.teams.reports._repository import Reports

__all__ = ["TeamsRepositories"]


class TeamsRepositories:
    """One repository per teams feature, over the database of one `Generations`."""

    def __init__(self, kernel: Generations, roster: Roster) -> None:
        self.kernel = kernel
        """The kernel's repository the teams writes compose (a member is a generation)."""
        self.roster = roster
        """Members and file claims."""

    @classmethod
    def over(cls, kernel: Generations) -> Self:
        """The teams repositories over `kernel`'s database (they compose `kernel` in their writes)."""
        return cls(kernel, Roster(kernel.db, kernel))

    @cached_property
    def messages(self) -> Messages:
        """Messages between members and to the lead."""
        from corral.orchestration.teams.messages.repository import Messages

        return Messages(self.kernel.db, self.roster)

    @cached_property
    def reports(self) -> Reports:
        """Team reports, their acceptance and delivery rows."""
        from corral.orchestration.teams.reports._repository import Reports

        return Reports(self.kernel.db, self.kernel, self.roster)

    @cached_property
    def checks(self) -> Checks:
        """Assigned check rows."""
        from corral.orchestration.teams.checks._repository import Checks

        return Checks(self.kernel.db, self.repair)

    @cached_property
    def repair(self) -> RepairLedgers:
        """Bounded repair ledgers."""
        from corral.orchestration.teams.repair._repository import RepairLedgers

        return RepairLedgers(self.kernel.db)

    @cached_property
    def groups(self) -> Groups:
        """Completion groups, slots and wakes."""
        from corral.orchestration.teams.groups._repository import Groups

        return Groups(self.kernel.db, self.kernel, self.roster, self.reports)

    @cached_property
    def checkpoints(self) -> Checkpoints:
        """Checkpoints (`continue_from`)."""
        from corral.orchestration.teams.checkpoints._repository import Checkpoints

        return Checkpoints(self.kernel.db)
