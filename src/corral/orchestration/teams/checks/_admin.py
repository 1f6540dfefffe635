"""Unresolved check claims, by hand: list them, and abandon one whose process is gone.

A check is claimed durably before its command runs (§6.2). When the process
running it dies, the record stays `claimed` for good: it is never replayed, and
it fences the run's cleanup, so the agent's name and file claims stay held in
its lead session. This is the way out, beyond the original contract:
`unresolved_checks` names every such record with the process that ran the
agent, and `abandon_check` settles one as `error` — only once that process is
proven gone, or with `force` when the person knows better. The command never
runs again and the record says its effects are unknown; `stop_teammate` (or a
same-name spawn) then cleans the run up as usual. The CLI is `corral checks
list|resolve`.
"""

from __future__ import annotations

from dataclasses import dataclass

from corral.orchestration.errors import ManagedAgentBusyError, TargetNotFoundError
from corral.orchestration.teams._repositories import TeamsRepositories
from corral.orchestration.teams.checks._rows import CheckRow
from corral.runtime import pid_alive

__all__ = ["UnresolvedCheck", "abandon_check", "abandoned_error", "unresolved_checks"]


@dataclass(frozen=True, slots=True)
class UnresolvedCheck:
    """A `claimed` check record and who may still be running it."""

    check: CheckRow
    agent: str | None
    """The teams agent's name (`None` if its member record is gone)."""
    lead_session_id: str | None
    """The lead session whose cleanup it fences."""
    pid: int | None
    """The process that runs the agent (its in-process host or its tmux worker), if known."""
    process_alive: bool
    """Whether that process exists now; then the check may still be running and is not abandoned."""


def abandoned_error(reason: str | None) -> str:
    """The `error` an abandoned check record keeps."""
    text = (
        "Abandoned by hand: the process that ran this check is gone, so whether the command "
        "finished and what it changed are unknown"
    )
    return text + (f" ({reason.strip()})." if reason and reason.strip() else ".")


def unresolved_checks(repos: TeamsRepositories) -> list[UnresolvedCheck]:
    """Every `claimed` check of the store, oldest first."""
    return [_unresolved(repos, row) for row in repos.checks.claimed_checks()]


def _unresolved(repos: TeamsRepositories, row: CheckRow) -> UnresolvedCheck:
    member = repos.roster.team_member(row.run_id)
    generation = repos.kernel.get_generation(row.run_id)
    pid = None if generation is None or generation.phase == "finalized" else generation.pid
    return UnresolvedCheck(
        check=row,
        agent=None if member is None else member.name,
        lead_session_id=None if member is None else member.lead_session_id,
        pid=pid,
        process_alive=pid is not None and pid_alive(pid),
    )


def abandon_check(
    repos: TeamsRepositories, check_id: str, *, reason: str | None = None, force: bool = False
) -> CheckRow:
    """Settle the `claimed` check `check_id` as `error` because the process that ran it is gone.

    Args:
        repos: The teams repositories.
        check_id: The exact `check:<64 hex>` id.
        reason: A note kept in the record's error.
        force: Skip the proof that the agent's process is gone (its pid may have been reused).

    Raises:
        TargetNotFoundError: No such check.
        InvalidRequestError: It already settled.
        ManagedAgentBusyError: The agent's process still exists, so the check may be running.
    """
    row = repos.checks.get_check(check_id)
    if row is None:
        raise TargetNotFoundError(f"No check {check_id}; `corral checks list` shows the unresolved ones.")
    current = _unresolved(repos, row)
    if row.state == "claimed" and current.process_alive and not force:
        raise ManagedAgentBusyError(
            f"Check {check_id} may still be running: process {current.pid} of agent "
            f"{current.agent or current.check.run_id} exists. Stop that corral first; pass --force only "
            "if you know that pid now belongs to another program.",
            ids={"checkId": check_id, "runId": current.check.run_id},
        )
    return repos.checks.abandon_check(check_id, error=abandoned_error(reason))
