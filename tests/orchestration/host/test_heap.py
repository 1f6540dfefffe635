"""The host keeps the collector off its long-lived heap (`host/_heap.py`): what start-up and a launch
made is frozen (no collection walks it), and frozen garbage is reclaimed once enough agents ended."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from corral.orchestration.host import _heap
from corral.orchestration.surfaces import DelegateParams
from tests._waits import eventually
from tests.orchestration._host_helpers import team, write_script


def _tracked(obj: object) -> bool:
    """Whether a collection pass walks `obj` (frozen objects are in no generation)."""
    return any(found is obj for found in gc.get_objects())


async def test_start_up_a_launched_agent_and_its_turns_are_out_of_the_collectors_generations(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_heap, "ENABLED", True)  # as in the `corral` command's own process
    steps = [{"tool_calls": [{"name": "ls", "args": {}}]}, {"text": "slow", "delay_ms": 60000}]
    write_script(env, "team", {"steps": [{"text": "noted"}], "agents": {"*": steps}})
    async with team(env, "team") as t:
        assert not _tracked(t.lead)  # frozen at the lead's attach: start-up is done
        await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x"))
        await eventually(lambda: t.host.runs.child_count() == 1, t.host)
        [child] = t.host.runs.children()
        assert not _tracked(child.agent)
        assert not _tracked(child.agent.session)

        def first_turn_ended() -> bool:
            return any(getattr(m, "role", "") == "toolResult" for m in child.agent.messages)

        await eventually(first_turn_ended)
        await eventually(lambda: child.agent.is_idle is False and len(child.agent.messages) >= 3)
        first_reply = next(m for m in child.agent.messages if getattr(m, "role", "") == "assistant")
        assert not _tracked(first_reply)  # frozen when its turn ended


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_frozen_garbage_is_reclaimed_once_enough_agents_were_released(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_heap, "ENABLED", True)
    monkeypatch.setattr(_heap, "_SLACK", 3)
    monkeypatch.setattr(_heap, "_released", 0)
    cycle = _Cycle()
    alive = weakref.ref(cycle)
    _heap.settled()
    del cycle
    gc.collect()
    assert alive() is not None  # frozen: no collection frees it
    _heap.released(live=2)
    _heap.released(live=1)
    _heap.released(live=1)
    gc.collect()
    assert alive() is not None  # 3 released, 1 still live: not yet due (1 + 3)
    _heap.released(live=0)
    assert alive() is None
    assert not _tracked(_heap)  # what survived the reclaiming pass is frozen again


def test_a_program_using_corral_as_a_library_keeps_its_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    # The default: only the `corral` command's own process freezes its heap (docs/python-api.md).
    monkeypatch.setattr(_heap, "ENABLED", None)
    monkeypatch.setattr(_heap, "_released", 0)
    monkeypatch.setattr(_heap, "_settled", 0)
    cycle = _Cycle()
    alive = weakref.ref(cycle)
    _heap.settled()
    _heap.released(live=0)
    assert _tracked(cycle)  # not frozen
    del cycle
    gc.collect()
    assert alive() is None
