"""`corral checks list|resolve`: assigned-check records left `claimed` by a process that died.

Such a record fences its agent's cleanup for good (see docs/verification.md,
"Stop, cancellation and fencing"). `list` prints one line per unresolved check
and changes nothing; `resolve` settles one as `error` once the agent's process
is proven gone (`--force` skips that proof). A bad or unknown id, a settled
check, or a live process is a user error (one line, exit 2).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import IO

__all__ = ["NO_UNRESOLVED_MESSAGE", "checks_list", "checks_resolve"]

NO_UNRESOLVED_MESSAGE = "No unresolved checks."


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def checks_list(*, out: IO[str]) -> int:
    """Print `id | agent | check (attempt N) | claimed <ISO> | process <pid> alive|gone | log <path>` lines."""
    from corral.orchestration import Repositories, default_store_path
    from corral.orchestration.teams.checks._admin import unresolved_checks

    path = default_store_path()
    if not path.exists():
        out.write(NO_UNRESOLVED_MESSAGE + "\n")
        return 0
    with Repositories.open(path) as store:
        found = unresolved_checks(store.teams)
    for item in found:
        row = item.check
        process = "process unknown" if item.pid is None else f"process {item.pid}"
        state = "alive (may still be running)" if item.process_alive else "gone"
        out.write(
            f"{row.check_id} | agent {item.agent or row.run_id} | {row.name} (attempt {row.attempt}) | "
            f"claimed {_when(row.started_at)} | {process} {state} | log {row.log_path}\n"
        )
    if not found:
        out.write(NO_UNRESOLVED_MESSAGE + "\n")
    return 0


def checks_resolve(check_id: str, *, reason: str | None, force: bool, out: IO[str]) -> int:
    """Settle one unresolved check as `error` and say what to do next."""
    from corral.orchestration import InvalidRequestError, Repositories, default_store_path
    from corral.orchestration.teams.checks._admin import abandon_check

    check_id = check_id.strip()
    if not check_id.startswith("check:"):
        raise InvalidRequestError(
            f"{check_id!r} is not a check id; `corral checks list` shows them (check:<64 hex>)."
        )
    path = default_store_path()
    if not path.exists():
        raise InvalidRequestError(f"No check {check_id}: there is no corral store yet.")
    with Repositories.open(path) as store:
        row = abandon_check(store.teams, check_id, reason=reason, force=force)
        member = store.teams.roster.team_member(row.run_id)
    agent = row.run_id if member is None else member.name
    out.write(
        f"Resolved {row.check_id} ({row.name} of agent {agent}) as error; it will not run again. "
        f"Stop the agent (stop_teammate {agent}, or x in the TUI) to free its name and file claims, "
        f"and check your working tree: the command's effects are unknown. Log: {row.log_path}\n"
    )
    return 0
