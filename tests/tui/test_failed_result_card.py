"""A managed agent that failed because of its provider shows the provider's error on its result card."""

from __future__ import annotations

from corral.tui.widgets import AgentResultCard

from .conftest import SIZE, TuiEnv, type_text, wait_until

LEAD = """\
steps:
  - text: "Delegating."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: generalist, label: worker, task: "Do it."}}
  - text: "Waiting."
  - text: "Done."
agents:
  worker:
    - text: "Value: {{ env.CORRAL_TEST_UNSET_VARIABLE }}"
"""


async def test_a_provider_error_reaches_the_result_card(tui_env: TuiEnv) -> None:
    app = tui_env.app(tui_env.script("lead", LEAD))
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(app.chat.query(AgentResultCard)))
        card = app.chat.query_one(AgentResultCard)
        shown = str(card.render())
        assert card.status == "failed" and shown.startswith("✗ worker · failed · ")
        assert "the model request ended with an error" in shown
        assert "CORRAL_TEST_UNSET_VARIABLE is not set" in shown
        assert "no assistant text" not in shown
