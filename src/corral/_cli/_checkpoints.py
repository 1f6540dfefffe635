"""`corral checkpoints list|delete`: the specialist checkpoints of the store, from a shell.

Checkpoints are global to the data root (not to one lead session), so these
commands need no session. `list` prints one line per checkpoint and a warning
on stderr for each unreadable one; it changes nothing (a due checkpoint shows
as `expired` until startup retires it). `delete` retires one exact id for
good. A bad id or a missing checkpoint is a user error (one line, exit 2).
"""

from __future__ import annotations

from typing import IO

__all__ = ["checkpoints_delete", "checkpoints_list"]


def checkpoints_list(*, out: IO[str], err: IO[str]) -> int:
    """Print every checkpoint (`id | agent | tier | ready|expired | expires <ISO>` or `id | state`)."""
    from corral.orchestration import Repositories, default_store_path
    from corral.orchestration.teams.checkpoints._checkpoints import NO_CHECKPOINTS_MESSAGE, Checkpoints

    path = default_store_path()
    if not path.exists():
        out.write(NO_CHECKPOINTS_MESSAGE + "\n")
        return 0
    with Repositories.open(path) as store:
        lines, warnings = Checkpoints(store.teams.checkpoints).list_entries()
    for line in lines or [NO_CHECKPOINTS_MESSAGE]:
        out.write(line + "\n")
    for warning in warnings:
        err.write(f"corral: warning: {warning}\n")
    return 0


def checkpoints_delete(checkpoint_id: str, *, out: IO[str]) -> int:
    """Retire one checkpoint as deleted and print the confirmation."""
    from corral.orchestration import Repositories, default_store_path
    from corral.orchestration.teams.checkpoints._checkpoints import Checkpoints
    from corral.orchestration.teams.checkpoints.records import CheckpointError, parse_checkpoint_ref

    checkpoint_id = parse_checkpoint_ref(checkpoint_id)
    path = default_store_path()
    if not path.exists():
        raise CheckpointError(f"Checkpoint unavailable: {checkpoint_id}. Request a new checkpoint.")
    with Repositories.open(path) as store:
        out.write(Checkpoints(store.teams.checkpoints).delete(checkpoint_id) + "\n")
    return 0
