"""Shared helpers for the store and lifecycle tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from corral.orchestration import GenerationRecord, NewGeneration, RequestRecord
from corral.orchestration.kernel._generations import Generations

LEAD = "lead-session"


def new_generation(
    kernel: Generations,
    *,
    session_id: str,
    owner: str = LEAD,
    definition: str = "worker",
    label: str | None = None,
    parent_run_id: str | None = None,
    delegating: bool = False,
    ack: bool = True,
) -> tuple[GenerationRecord, RequestRecord]:
    """Create a generation (and accept its task unless `ack=False`)."""
    generation, task = kernel.create_generation(
        NewGeneration(
            definition=definition,
            owner_session_id=owner,
            cwd="/work/project",
            session_id=session_id,
            task="Do the thing.",
            label=label,
            parent_run_id=parent_run_id,
            delegating=delegating,
        )
    )
    if ack:
        kernel.record_ack(generation.run_id, task.request_id, accepted=True)
        refreshed = kernel.get_generation(generation.run_id)
        assert refreshed is not None
        generation = refreshed
    return generation, task


def dump(path: Path) -> list[str]:
    """Every row of the database as SQL text (to prove a failed mutation changed nothing)."""
    conn = sqlite3.connect(path)
    try:
        return [line for line in conn.iterdump() if line.startswith("INSERT")]
    finally:
        conn.close()
