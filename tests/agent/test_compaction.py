"""Compaction: threshold, overflow recovery, manual, and context usage around it."""

from __future__ import annotations

import asyncio

import pytest

from corral.agent import AgentBusyError, CompactionError
from corral.llm import AssistantMessage, CompactionSummaryMessage, Usage
from corral.session import SUMMARIZATION_SYSTEM_PROMPT, SessionManager
from corral.settings import Settings

from .helpers import Fail, Hang, Harness, PlannedModel, Reply, wait

SMALL = Settings.model_validate({"compaction": {"reserve_tokens": 1000, "keep_recent_tokens": 20}})
KEEP_TURN = Settings.model_validate({"compaction": {"reserve_tokens": 1000, "keep_recent_tokens": 300}})
"""Keeps the last question and answer whole (no split turn)."""
LONG = "word " * 200


def _usage(total: int) -> Usage:
    return Usage(input=total - 10, output=10, total_tokens=total)


async def _history(agent: object, model: PlannedModel, prompts: int) -> None:
    for i in range(prompts):
        model.plan.insert(0, Reply(f"answer {i} {LONG}", usage=_usage(300 + i)))
        await wait(agent.prompt(f"question {i} {LONG}"))  # type: ignore[attr-defined]


async def test_manual_compaction_summarises_and_resets_context_usage(harness: Harness) -> None:
    model = PlannedModel(context_window=10_000)
    agent, rec = harness.agent(model, settings=SMALL)
    await _history(agent, model, 3)
    usage = agent.context_usage()
    assert usage is not None and usage.tokens is not None and usage.percent is not None
    model.plan.append(Reply("## Goal\nSummary text", usage=Usage(input=50, output=5, total_tokens=55)))
    model.plan.append(Reply("## Original Request\nprefix", usage=Usage(input=40, output=5, total_tokens=45)))
    entry = await wait(agent.compact("focus on questions"))
    assert entry.type == "compaction" and entry.summary.startswith("## Goal\nSummary text")
    # the cut split the last turn: its prefix was summarised in parallel and merged
    assert "**Turn Context (split turn):**\n\n## Original Request\nprefix" in entry.summary
    assert entry.usage is not None and entry.usage.total_tokens == 100
    request, prefix_request = model.requests[-2:]
    assert prefix_request.options.max_tokens == 500
    assert request.context.system_prompt == SUMMARIZATION_SYSTEM_PROMPT
    assert list(request.context.tools) == []
    sent = request.texts()[0]
    assert sent.startswith("<conversation>\n") and "Additional focus: focus on questions" in sent
    assert request.options.max_tokens == 800
    assert [e.type for e in rec.events if e.type.startswith("compaction")] == [
        "compaction_start",
        "compaction_end",
    ]
    end = rec.of("compaction_end")[0]
    assert end.reason == "manual" and end.result.summary == entry.summary and not end.will_retry
    assert isinstance(agent.messages[0], CompactionSummaryMessage)
    after = agent.context_usage()
    assert after is not None and after.tokens is None and after.percent is None
    assert agent.stats().context_usage == after
    model.plan.append(Reply("fresh", usage=_usage(120)))
    await wait(agent.prompt("next"))
    usage_now = agent.context_usage()
    assert usage_now is not None and usage_now.tokens is not None and usage_now.tokens >= 120


async def test_manual_compaction_with_nothing_to_compact_raises(harness: Harness) -> None:
    agent, rec = harness.agent(PlannedModel())
    with pytest.raises(CompactionError, match="Nothing to compact"):
        await wait(agent.compact())
    assert rec.of("compaction_end")[0].error_message is not None


async def test_compact_while_running_is_refused(harness: Harness) -> None:
    model = PlannedModel([Hang()])
    agent, _ = harness.agent(model)
    task = asyncio.create_task(agent.prompt("go"))
    await wait(model.request_started.wait())
    with pytest.raises(AgentBusyError):
        await agent.compact()
    await wait(agent.abort())
    await wait(task)


async def test_threshold_compaction_after_a_run(harness: Harness) -> None:
    model = PlannedModel(context_window=2000)
    agent, rec = harness.agent(model, settings=SMALL)
    await _history(agent, model, 2)
    assert rec.of("compaction_start") == []
    # The 2,000-token window scales the 1,000-token reserve down to 500: the threshold is 1,500.
    model.plan = [Reply("big", usage=_usage(1600)), Reply("the summary")]
    await wait(agent.prompt("push it over"))
    starts = rec.of("compaction_start")
    assert [s.reason for s in starts] == ["threshold"]
    end = rec.of("compaction_end")[0]
    assert end.result is not None and end.result.summary.startswith("the summary") and not end.will_retry
    types = rec.types()
    assert types.index("compaction_end") < len(types) - 1 and types[-1] == "agent_settled"
    assert types.count("agent_settled") == 3
    path = agent.session.path
    assert path is not None
    reopened = SessionManager.open(path, read_only=True)
    assert isinstance(reopened.build_context().messages[0], CompactionSummaryMessage)


async def test_overflow_compacts_and_retries_once(harness: Harness) -> None:
    model = PlannedModel(context_window=10_000)
    agent, rec = harness.agent(model, settings=KEEP_TURN)
    await _history(agent, model, 2)
    model.plan = [
        Fail("prompt is too long: 250000 tokens > 200000 maximum"),
        Reply("summary after overflow"),
        Reply("recovered"),
    ]
    await wait(agent.prompt("one more"))
    assert [e.will_retry for e in rec.of("agent_end")][-2:] == [True, False]
    end = rec.of("compaction_end")[0]
    assert end.reason == "overflow" and end.will_retry and end.result is not None
    assert agent.last_assistant_text() == "recovered"
    # the retried request carries the summary, not the failed reply
    retried = model.requests[-1]
    assert retried.texts()[0].startswith("The conversation history before this point was compacted")
    assert not any(isinstance(m, AssistantMessage) and m.stop_reason == "error" for m in retried.messages)
    assert rec.types().count("agent_settled") == 3


async def test_second_overflow_in_one_prompt_is_not_retried(harness: Harness) -> None:
    model = PlannedModel(context_window=10_000)
    agent, rec = harness.agent(model, settings=KEEP_TURN)
    await _history(agent, model, 2)
    overflow = Fail("prompt is too long: 250000 tokens > 200000 maximum")
    model.plan = [overflow, Reply("summary"), overflow]
    await wait(agent.prompt("one more"))
    assert len(rec.of("compaction_start")) == 1
    assert rec.of("agent_end")[-1].will_retry is False
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "error"
