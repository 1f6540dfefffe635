"""One data root's database and every repository over it, as the composition roots open them.

`Repositories.open` opens (creates, migrates) the `Database` and builds one repository per
aggregate over it: the kernel's `Generations` (`kernel/_generations.py`), the teams features'
(`teams/_repositories.py`) and the isolated writers' `Worktrees`. It also registers the teams
roster's `retire_in` as the kernel's finalize hook, so a finalized member is retired in the same
transaction whichever process finalizes it (the lead, a tmux worker, `corral agents close`).

A plain bundle: no base class and no verbs of its own. Callers take the repository they need
(`repos.kernel.get_generation(...)`, `repos.teams.roster.team_member(...)`); every repository verb is
one transaction with check-and-set. The host receives `kernel`; the teams core builds its own
`TeamsRepositories` over it (the same as `teams`); the worktrees extension receives `worktrees`.

Store calls are synchronous and short; async callers make them on the event loop (see "Store
calls and the event loop" in docs/development.md). One `Database` may be shared between threads
(one connection guarded by a lock); other processes open their own on the same file (WAL mode,
`busy_timeout`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from corral.orchestration.kernel._generations import Generations
from corral.orchestration.store._database import Database, Tracer
from corral.orchestration.teams._repositories import TeamsRepositories
from corral.orchestration.worktrees._repository import Worktrees

__all__ = ["Repositories"]


@dataclass(frozen=True, slots=True)
class Repositories:
    """The database of one data root and its repositories. Open with `Repositories.open`."""

    db: Database
    """The one connection every repository writes through."""
    kernel: Generations
    """Generations, requests, asks, results (the agent-API kernel)."""
    teams: TeamsRepositories
    """The teams features' repositories (roster, reports, checks, repair, groups, checkpoints)."""
    worktrees: Worktrees
    """Isolated writers' worktrees and merges."""

    @classmethod
    def over(cls, db: Database) -> Self:
        """Build the repositories over an open database and register the roster's finalize hook."""
        kernel = Generations(db)
        teams = TeamsRepositories.over(kernel)
        kernel.add_finalize_hook(teams.roster.retire_in)
        return cls(
            db=db,
            kernel=kernel,
            teams=teams,
            worktrees=Worktrees(db),
        )

    @classmethod
    def open(
        cls,
        path: Path | None = None,
        *,
        readonly: bool = False,
        tracer: Tracer | None = None,
        clock: Callable[[], int] | None = None,
    ) -> Self:
        """Open (and create or migrate) the database; see `Database.open` for the arguments and errors."""
        return cls.over(Database.open(path, readonly=readonly, tracer=tracer, clock=clock))

    def close(self) -> None:
        """Close the database (idempotent)."""
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
