"""Fitting the context window: scaled compaction thresholds, usage-less estimates, corral's own overhead."""

from __future__ import annotations

from corral.llm import Usage
from corral.session import fit_compaction_settings
from corral.settings import CompactionSettings, Settings

from .helpers import EchoTool, Harness, PlannedModel, Reply, wait

LONG = "word " * 400


def test_thresholds_scale_down_to_a_quarter_of_a_small_window() -> None:
    defaults = CompactionSettings()
    small = fit_compaction_settings(defaults, 2048)
    assert (small.reserve_tokens, small.keep_recent_tokens) == (512, 512)
    mid = fit_compaction_settings(defaults, 32_768)
    assert (mid.reserve_tokens, mid.keep_recent_tokens) == (8192, 8192)
    large = fit_compaction_settings(defaults, 200_000)
    assert (large.reserve_tokens, large.keep_recent_tokens) == (16_384, 20_000)


async def test_a_small_window_does_not_compact_a_short_conversation(harness: Harness) -> None:
    # Unscaled, 8,192 - 16,384 < 0 would compact before every prompt.
    model = PlannedModel([Reply("one"), Reply("two")], context_window=8192)
    agent, rec = harness.agent(model)
    await wait(agent.prompt("first"))
    await wait(agent.prompt("second"))
    assert rec.of("compaction_start") == []
    assert len(model.requests) == 2


async def test_replies_without_usage_keep_an_estimate_that_counts_the_prompt_and_tools(
    harness: Harness,
) -> None:
    model = PlannedModel([Reply(LONG, usage=Usage()) for _ in range(2)], context_window=100_000)
    agent, _ = harness.agent(model, tools=[EchoTool()], system_prompt="S" * 4000)
    overhead = agent.context_overhead().tokens
    assert overhead >= 1000
    await wait(agent.prompt("first " + LONG))
    first = agent.context_usage()
    assert first is not None and first.tokens is not None
    assert first.tokens >= overhead + 2 * 500
    await wait(agent.prompt("second"))
    second = agent.context_usage()
    assert second is not None and second.tokens is not None and second.tokens > first.tokens


async def test_usage_less_replies_still_reach_threshold_compaction(harness: Harness) -> None:
    model = PlannedModel(context_window=4096)
    agent, rec = harness.agent(model)
    for i in range(4):
        model.plan.insert(0, Reply(f"answer {i} {LONG}", usage=Usage()))
        await wait(agent.prompt(f"question {i} {LONG}"))
        if rec.of("compaction_start"):
            break
    assert [s.reason for s in rec.of("compaction_start")] == ["threshold"]


async def test_tools_larger_than_the_window_fail_before_any_request(harness: Harness) -> None:
    model = PlannedModel([Reply("never")], context_window=1000)
    agent, rec = harness.agent(model, tools=[EchoTool()], system_prompt="S" * 5000)
    await wait(agent.prompt("hi"))
    assert model.requests == []
    reply = agent.last_reply
    assert reply is not None and reply.stop_reason == "error"
    assert "more than the 1,000-token context window of test/planned" in (reply.error_message or "")
    assert rec.of("auto_retry_start") == [] and rec.of("compaction_start") == []


async def test_the_overhead_warning_is_given_once(harness: Harness) -> None:
    model = PlannedModel(context_window=3000)
    agent, _ = harness.agent(model, system_prompt="S" * 8000)
    warning = agent.overhead_warning_once()
    assert warning is not None and "67% of the 3,000-token context window" in warning
    assert agent.overhead_warning_once() is None


async def test_no_warning_when_the_overhead_is_small(harness: Harness) -> None:
    agent, _ = harness.agent(PlannedModel(context_window=200_000))
    assert agent.overhead_warning_once() is None


async def test_last_reply_keeps_a_failed_reply_dropped_from_the_context(harness: Harness) -> None:
    from .helpers import Fail

    model = PlannedModel([Reply("fine"), Fail("prompt is too long: 300000 tokens > 200000 maximum")])
    agent, _ = harness.agent(model, settings=Settings())
    await wait(agent.prompt("one"))
    await wait(agent.prompt("two"))
    reply = agent.last_reply
    assert reply is not None and reply.stop_reason == "error"
    # The overflow left the in-memory context (for compaction), so the context's last reply is
    # the previous answer; `last_reply` still says how the prompt ended.
    assert agent.last_assistant_text() == "fine"
