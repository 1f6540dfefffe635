"""The app says when a reply is not an answer (empty) and when it retries ("retrying in N s")."""

from __future__ import annotations

import re

from corral.tui import CorralApp
from corral.tui.widgets import AssistantCard, NoticeCard

from .conftest import SIZE, TuiEnv, type_text, wait_until


def _idle(app: CorralApp) -> bool:
    return app.launched is not None and app.launched.agent.is_idle


def _notices(app: CorralApp) -> list[str]:
    return [str(card.render()) for card in app.query(NoticeCard)]


async def test_a_retry_shows_retrying_in_n_s(tui_env: TuiEnv) -> None:
    tui_env.settings("[retry]\nbase_delay_ms = 10\n")
    model = tui_env.script(
        "flaky",
        "steps:\n"
        "  - text: 'server overloaded'\n    stop: error\n    error_retryable: true\n"
        "  - text: 'fine now'\n",
    )
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: _idle(app) and any(c.text == "fine now" for c in app.query(AssistantCard))
        )
        # 10 ms back-off plus up to 25 % jitter
        assert any(re.search(r"retrying in 0\.01\d* s \(attempt 1 of 3\)", n) for n in _notices(app))


async def test_an_empty_reply_is_named_under_the_reply(tui_env: TuiEnv) -> None:
    model = tui_env.script("empty", "steps:\n  - text: ''\n")
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await wait_until(pilot, lambda: _idle(app) and bool(app.query(AssistantCard)))
        await pilot.pause()
        card = app.query(AssistantCard).last()
        texts = [str(static.render()) for static in card.query(".error")]
        assert texts == ["note: the model returned an empty reply (no text and no tool call)"]
