"""Keeping the garbage collector's full passes off the long-lived heap (`gc.freeze`).

CPython's collector walks every tracked object of a generation at each pass of it, and a full pass
walks the whole heap. A host's heap is mostly long-lived: the modules and classes loaded at start-up,
and each running agent's session, tools and model. Measured with `benchmarks/bench_fanout.py` before
this (Python 3.11, load ≈ 11 on 2 cores), 1,000 agents × 5 tool calls spent 33 s of 62 s of CPU in
the collector: 12 full passes and 127 of the middle generation, each over a heap that grows with N.

So the host moves what is long-lived into the permanent generation, which no pass walks:

* `settled()` after start-up (a lead attached), after each launch (the agent's objects exist) and
  after each turn of an agent (its new messages and entries stay as long as it runs):
  `gc.freeze()`, which is O(1) (it splices the generations' lists). Between two of them a
  collection walks only what was made since.
* Frozen objects are never collected, so what becomes garbage in a reference cycle after it was
  frozen (a finished agent's session and tools, a turn's leftovers) waits. It is reclaimed — unfreeze,
  one full collection, freeze again — once as many agents were released since the last time as
  are still live, plus `_SLACK` (`released(live)`), or once `_TURNS_PER_AGENT` times as many
  turns ended (`settled`; a long-running agent's leftovers). A full pass costs the whole heap, so
  it comes once per that much work: linear in N overall, and a session with a few agents at a time
  pays one per `_SLACK` agents rather than one at the end of each (memory: the cyclic garbage of
  at most that much work waits).

The collector is process-wide, so the state is too: every host of the process shares it. It acts
only in the `corral` command's own process (a library user's collector is theirs); `ENABLED` forces
it on or off (benchmarks measure with and without).
"""

from __future__ import annotations

import gc

__all__ = ["ENABLED", "released", "settled"]

ENABLED: bool | None = None
"""Whether hosts freeze the long-lived heap: `None` (default) only in the `corral` command's own
process (`corral._startup.owns_process`), never in a program that uses corral as a library (its
collector stays as it set it, docs/python-api.md); benchmarks set it on or off to measure."""

_SLACK = 100
"""Releases beyond the number of live agents before the frozen garbage is reclaimed anyway."""

_TURNS_PER_AGENT = 20
"""Settles (turns, launches) per live agent, plus `_SLACK`, before the frozen garbage is reclaimed."""

_released = 0
_settled = 0


def settled(live: int = 0) -> None:
    """Start-up, a launch or an agent's turn is done (`live` agents run in this host): what exists
    now is long-lived; no collection walks it again until the frozen garbage is reclaimed."""
    global _settled
    if not _active():
        return
    _settled += 1
    if _settled >= _TURNS_PER_AGENT * (live + _SLACK):
        _reclaim()
    else:
        gc.freeze()


def released(live: int) -> None:
    """An agent was released and `live` remain in this host: reclaim the frozen garbage when due."""
    global _released
    if not _active():
        return
    _released += 1
    if _released >= live + _SLACK:
        _reclaim()


def _active() -> bool:
    if ENABLED is None:
        from corral._startup import owns_process

        return owns_process()
    return ENABLED


def _reclaim() -> None:
    global _released, _settled
    _released = _settled = 0
    gc.unfreeze()
    gc.collect()
    gc.freeze()
