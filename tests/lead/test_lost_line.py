"""The line a run prints for a managed agent it lost says why, when the store knows (a full disk)."""

from __future__ import annotations

from dataclasses import replace

from corral.lead._compose import _lost_line
from tests.orchestration.kernel.test_delivery import _generation

RESUME = "`corral run --session L -p ...`"


def test_a_lost_agents_line_names_the_cause_and_how_to_go_on() -> None:
    cause = (
        "agent task failed: SessionWriteError: cannot append to session file x.jsonl: No space left on device"
    )
    lost = replace(_generation(), phase="active", presence="lost", diagnostic=cause)
    line = _lost_line("agent scout (scout)", RESUME, lost)
    assert line.startswith(
        f"agent scout (scout) was lost before it finished ({cause}); its transcript is kept"
    )
    assert f"{RESUME} lets the lead `close` it and `continue` its session s" in line


def test_without_a_known_cause_the_line_says_only_what_was_lost() -> None:
    lost = replace(_generation(), phase="active", presence="lost")
    line = _lost_line("agent scout (scout)", RESUME, lost)
    assert line.startswith("agent scout (scout) was lost before it finished; its transcript is kept")
