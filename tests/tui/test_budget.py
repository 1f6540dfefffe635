"""The app shows budgets: the footer has the tree's spend against its limit and the lead's own spend
beside it (not counted), the activity card each
agent's (and `format_budget` renders a record's `budget`)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from corral.tui._format import ActivityRow, format_budget
from corral.tui.widgets import ActivityCard, StatusFooter

from .conftest import SIZE, TuiEnv, type_text, wait_until


def test_format_budget() -> None:
    assert format_budget(None) == ""
    budget = {"spend": {"tokens": 3100, "costUsd": 0.12}, "limits": {"tokens": 50_000, "costUsd": 2.0}}
    assert format_budget(budget) == "3.1k/50.0k tok $0.12/$2.00"
    assert format_budget({**budget, "exhausted": "agent_tokens"}).endswith("✗ agent_tokens")
    assert format_budget({"spend": {"tokens": 10}, "limits": {"minutes": 5.0}}) == "5 min"


LEAD = """\
steps:
  - text: "Delegating."
    tool_calls:
      - name: agent
        args: {action: delegate, definition: scout, label: scout, task: "Map the code."}
  - text: "Waiting."
on_exhausted: repeat_last
agents:
  scout:
    - text: "Searching."
      usage: {input: 3000, output: 100}
      tool_calls:
        - name: ls
          args: {path: "."}
    - text: "Still searching."
      delay_ms: 60000
"""


async def test_footer_and_activity_card_show_spend_against_the_limits(
    tui_env: TuiEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    show_rows = ActivityCard.show_rows

    def spy(self: ActivityCard, rows: Sequence[ActivityRow]) -> None:
        seen.extend(r.budget for r in rows if r.label == "scout")
        show_rows(self, rows)

    monkeypatch.setattr(ActivityCard, "show_rows", spy)
    tui_env.settings("[budget]\ntree_tokens = 100000\nagent_tokens = 50000\n")
    model = tui_env.script("team", LEAD)
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "go")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "3.1k/50.0k tok" in seen)
        footer = app.query_one(StatusFooter)
        await wait_until(pilot, lambda: footer.budget_text.startswith("tree budget: 3,100 / 100,000 tok"))
        launched = app.launched
        assert launched is not None

        def lead_beside() -> bool:  # the lead's own spend is shown beside the tree's, not counted in it
            lead = launched.agent.stats()
            return footer.budget_text.endswith(
                f"; lead (not counted): {lead.tokens.total:,} tok, ${lead.cost:,.2f}"
            )

        await wait_until(pilot, lead_beside)
        card = app.query_one(ActivityCard)
        assert "budget 3.1k/50.0k tok" in str(card.render())
        await pilot.press("escape")
