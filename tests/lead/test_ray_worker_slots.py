"""The Ray worker's slots count working agents: a finished run its host has not ended yet (its result
held until confirmed) does not keep a new agent out. No Ray needed: the worker is a plain class."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from corral._ray_worker import RayWorker, _Run
from corral.orchestration import Repositories
from corral.orchestration.host._ray_launch import RayLaunch
from corral.orchestration.host.protocol import LaunchError
from tests.orchestration._store_helpers import new_generation


async def _done() -> None:
    return None


async def _forever() -> None:
    await asyncio.Event().wait()


def _launch(store: Repositories, session_id: str) -> RayLaunch:
    generation, task = new_generation(store.kernel, session_id=session_id, ack=False)
    # No launch description: a launch that passes the slot check fails right after it, before any agent runs.
    return RayLaunch(
        generation=generation,
        task=task,
        launch_json="{}",
        session_name="s.jsonl",
        session_bytes=b"",
    )


async def test_a_finished_run_held_for_its_host_frees_its_slot_and_a_working_one_does_not(
    tmp_path: Path,
) -> None:
    worker = RayWorker(slots=1)
    with Repositories.open(tmp_path / "corral.db") as store:
        held = asyncio.get_running_loop().create_task(_done())
        await held
        worker.runs["finished"] = _Run(child=None, store=None, session=None, task=held)  # type: ignore[arg-type]
        assert worker.working() == 0
        with pytest.raises(LaunchError, match="not a launch description"):  # past the slot check
            await worker.start(_launch(store, "s-next"))

        busy = asyncio.get_running_loop().create_task(_forever())
        worker.runs["working"] = _Run(child=None, store=None, session=None, task=busy)  # type: ignore[arg-type]
        try:
            assert worker.working() == 1
            assert await worker.start(_launch(store, "s-later")) is None  # no free slot
        finally:
            busy.cancel()
    worker.runs.clear()
    await worker.shutdown()
