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


async def test_a_lead_request_waiting_for_the_rate_limiter_is_noted_once(tui_env: TuiEnv) -> None:
    import time

    from corral.llm import RateLimitWait

    model = tui_env.script("plain", "steps:\n  - text: 'hello'\n")
    app = tui_env.app(model)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.launched is not None)
        assert app.launched is not None
        agent = app.launched.agent
        until = time.time() + 12.5
        # what the shared limiter tells the agent loop while its request waits out a Retry-After window
        agent._on_rate_limit(RateLimitWait(True, "http://127.0.0.1:9/v1", "retry_after", until))
        agent._on_rate_limit(RateLimitWait(True, "http://127.0.0.1:9/v1", "retry_after", until + 1))
        agent._on_rate_limit(RateLimitWait(False, "http://127.0.0.1:9/v1"))

        def noted() -> list[str]:
            return [n for n in _notices(app) if "rate limit" in n]

        await wait_until(pilot, lambda: bool(noted()))
        await pilot.pause()
        [note] = noted()
        assert re.fullmatch(r"waiting \(rate limit, 1[0-3]s\) at http://127\.0\.0\.1:9/v1", note), note
