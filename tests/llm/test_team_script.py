"""The bundled `scripted/team`, request by request: the scout's result is answered once, whether it
arrives after the lead said the scout is working or already beside the delegation's tool result (the
scout finished before the lead's next request: a busy machine, a quick scout)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.llm import UserMessage

from .test_tour_script import Lead, text

DELIVERED = "The scout `reader` delivered its result (completed) to me, exactly once"
WORKING = "The scout `reader` is working; its result will come back to me by itself."
OVER = "I'm `scripted/team`, a script"


@pytest.mark.parametrize("early", [False, True], ids=["after the working reply", "with the tool result"])
async def test_the_scouts_result_is_answered_once(tmp_path: Path, early: bool) -> None:
    lead = Lead(tmp_path, "scripted/team")
    lead.messages.append(UserMessage(content="what is in the README?"))
    lead.tools_ran(await lead.ask())  # the delegation
    if early:
        lead.result("reader")
    else:
        assert text(await lead.ask()) == WORKING
        lead.result("reader")
    assert text(await lead.ask()).startswith(DELIVERED)
    for prompt in ("Fix it.", "And now?"):
        lead.messages.append(UserMessage(content=prompt))
        assert text(await lead.ask()).startswith(OVER)


async def test_a_scout_that_could_not_start_is_said_and_then_the_script_is_over(tmp_path: Path) -> None:
    lead = Lead(tmp_path, "scripted/team")
    lead.messages.append(UserMessage(content="what is in the README?"))
    lead.tools_ran(await lead.ask(), failed="Tool agent not found")  # the delegation
    assert text(await lead.ask()).startswith("I could not start the scout: Tool agent not found")
    lead.messages.append(UserMessage(content="Fix it."))
    assert text(await lead.ask()).startswith(OVER)
