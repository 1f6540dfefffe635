"""Keeping the garbage collector's full passes off the long-lived heap (`gc.freeze`).

CPython's collector walks every tracked object of a generation at each pass of it, and a full pass
walks the whole heap. A host's heap is mostly long-lived: the modules and classes loaded at start-up,
and each running agent's session, tools and model. Measured with `benchmarks/bench_fanout.py` before
this (Python 3.11, load ≈ 11 on 2 cores), 1,000 agents × 5 tool calls spent 33 s of 62 s of CPU in
the collector: 12 full passes and 127 of the middle generation, each over a heap that grows with N.

So the host moves what is long-lived into the permanent generation, which no pass walks:

* `settled()` after start-up (a lead attached) and after each launch (the agent's objects exist):
  `gc.freeze()`, which is O(1) (it splices the generations' lists).
* Frozen objects are never collected, so what becomes garbage in a reference cycle after it was
  frozen (a finished agent's session and tools) waits. `released(live)` reclaims it once as many
  agents were released since the last time as are still live, plus `_SLACK`: it unfreezes, runs one
  full collection and freezes again. A full pass costs the whole heap, so it comes once per that
  many finished agents: linear in N overall, and a session with a few agents at a time pays one
  per `_SLACK` agents rather than one at the end of each (memory: the cyclic garbage of at most
  that many finished agents waits).

The collector is process-wide, so the state is too: every host of the process shares it. `ENABLED`
switches it off (benchmarks measure with and without).
"""

from __future__ import annotations

import gc

__all__ = ["ENABLED", "released", "settled"]

ENABLED = True
"""Whether hosts freeze the long-lived heap (benchmarks turn it off to measure the difference)."""

_SLACK = 100
"""Releases beyond the number of live agents before the frozen garbage is reclaimed anyway."""

_released = 0


def settled() -> None:
    """Start-up or a launch is done: what exists now is long-lived; no collection walks it again."""
    if ENABLED:
        gc.freeze()


def released(live: int) -> None:
    """An agent was released and `live` remain in this host: reclaim the frozen garbage when due."""
    global _released
    if not ENABLED:
        return
    _released += 1
    if _released < live + _SLACK:
        return
    _released = 0
    gc.unfreeze()
    gc.collect()
    gc.freeze()
