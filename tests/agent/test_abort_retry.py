"""Abort (model stream, bash tool) and auto-retry."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from corral.agent.tools import create_builtin_tools
from corral.llm import AssistantMessage, ToolResultMessage
from corral.session import SessionManager
from corral.settings import Settings

from .helpers import Fail, GateTool, Hang, Harness, PlannedModel, Reply, SleepRecorder, wait


async def test_abort_during_stream_persists_partial_and_new_prompt_works(harness: Harness) -> None:
    model = PlannedModel([Hang("half an ans"), Reply("fresh")])
    agent, rec = harness.agent(model)
    task = asyncio.create_task(agent.prompt("go"))
    await wait(model.request_started.wait())
    while "message_update" not in rec.types():
        await wait(asyncio.sleep(0))
    agent.steer("kept")
    await wait(agent.abort())
    await wait(task)
    assert agent.is_idle and not agent.is_streaming
    aborted = agent.messages[-1]
    assert isinstance(aborted, AssistantMessage)
    assert aborted.stop_reason == "aborted" and aborted.text == "half an ans"
    assert agent.pending_message_count == 1  # queues survive
    assert rec.types()[-3:] == ["turn_end", "agent_end", "agent_settled"]
    agent.clear_queue()
    path = agent.session.path
    assert path is not None
    on_disk = SessionManager.open(path, read_only=True).build_context().messages
    assert isinstance(on_disk[-1], AssistantMessage) and on_disk[-1].stop_reason == "aborted"
    await wait(agent.prompt("again"))
    assert agent.last_assistant_text() == "fresh"
    # the aborted partial is not sent back to the model
    assert model.requests[1].texts() == ["go", "again"]


async def test_abort_when_idle_is_a_no_op(harness: Harness) -> None:
    agent, rec = harness.agent(PlannedModel())
    await wait(agent.abort())
    assert rec.events == []


async def test_abort_during_bash_kills_the_process_and_persists_an_error(
    harness: Harness, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    command = f"echo started; echo $$ > {pid_file}; exec sleep 300"
    model = PlannedModel([Reply(calls=[("bash", {"command": command})]), Reply("never")])
    agent, rec = harness.agent(model, tools=create_builtin_tools(harness.cwd, names=["bash"]))
    task = asyncio.create_task(agent.prompt("run it"))
    await wait(_until(lambda: pid_file.exists() and pid_file.read_text().strip() != ""))
    pid = int(pid_file.read_text())
    await wait(agent.abort())
    await wait(task)
    result = agent.messages[-1]
    assert isinstance(result, ToolResultMessage)
    assert result.is_error and result.text.endswith("Command aborted")
    assert "started" in result.text
    assert len(model.requests) == 1
    await wait(_until(lambda: not _alive(pid)))
    path = agent.session.path
    assert path is not None
    persisted = SessionManager.open(path, read_only=True).build_context().messages
    assert isinstance(persisted[-1], ToolResultMessage) and persisted[-1].is_error
    end = rec.of("tool_execution_end")[0]
    assert end.is_error


async def test_abort_cancels_every_running_tool_with_a_result_each(harness: Harness) -> None:
    a, b = GateTool("a"), GateTool("b")
    model = PlannedModel([Reply(calls=[("a", {}), ("b", {})])])
    agent, _ = harness.agent(model, tools=[a, b])
    task = asyncio.create_task(agent.prompt("go"))
    await wait(a.started.wait())
    await wait(b.started.wait())
    await wait(agent.abort())
    await wait(task)
    assert a.cancelled and b.cancelled
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_name, r.text, r.is_error) for r in results] == [
        ("a", "Operation aborted", True),
        ("b", "Operation aborted", True),
    ]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return True


async def _until(predicate: object) -> None:
    assert callable(predicate)
    while not predicate():
        await asyncio.sleep(0.01)


def _backoff_with_jitter(delays: list[float], base: list[float]) -> bool:
    """Each delay is its back-off plus at most 25 % jitter (never less)."""
    return len(delays) == len(base) and all(b <= d <= b * 1.25 for d, b in zip(delays, base, strict=True))


async def test_retry_waits_2_4_8_seconds_and_succeeds(harness: Harness) -> None:
    sleep = SleepRecorder()
    model = PlannedModel(
        [Fail("503 service unavailable"), Fail("overloaded"), Fail("429 rate limit"), Reply("ok")]
    )
    agent, rec = harness.agent(model, sleep=sleep)
    await wait(agent.prompt("go"))
    assert _backoff_with_jitter(sleep.delays, [2.0, 4.0, 8.0])
    starts = rec.of("auto_retry_start")
    assert [(s.attempt, s.max_attempts) for s in starts] == [(1, 3), (2, 3), (3, 3)]
    assert [s.delay_ms / 1000 for s in starts] == sleep.delays
    assert starts[0].error_message == "503 service unavailable"
    ends = rec.of("auto_retry_end")
    assert len(ends) == 1 and ends[0].success and ends[0].attempt == 3
    assert [e.will_retry for e in rec.of("agent_end")] == [True, True, True, False]
    assert rec.types().count("agent_settled") == 1 and rec.types()[-1] == "agent_settled"
    # errors were dropped from memory but stay in the file
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    errors = [
        e
        for e in agent.session.entries
        if e.type == "message"
        and isinstance(e.message, AssistantMessage)
        and e.message.stop_reason == "error"
    ]
    assert len(errors) == 3
    # each retry request saw the conversation without the error
    assert all(r.texts() == ["go"] for r in model.requests)
    # the retry passed the failed reply as previous response
    assert model.requests[1].options.previous_response is not None
    assert model.requests[1].options.previous_response.stop_reason == "error"


async def test_retry_exhausted_reports_the_final_error(harness: Harness) -> None:
    sleep = SleepRecorder()
    model = PlannedModel([Fail("502 bad gateway")] * 4)
    agent, rec = harness.agent(model, sleep=sleep)
    await wait(agent.prompt("go"))
    assert _backoff_with_jitter(sleep.delays, [2.0, 4.0, 8.0])
    ends = rec.of("auto_retry_end")
    assert len(ends) == 1
    assert not ends[0].success and ends[0].attempt == 3 and ends[0].final_error == "502 bad gateway"
    assert rec.of("agent_end")[-1].will_retry is False
    assert rec.types()[-1] == "agent_settled" and rec.types().count("agent_settled") == 1


async def test_non_retryable_error_ends_the_run(harness: Harness) -> None:
    sleep = SleepRecorder()
    agent, rec = harness.agent(PlannedModel([Fail("invalid api key")]), sleep=sleep)
    await wait(agent.prompt("go"))
    assert sleep.delays == [] and rec.of("auto_retry_start") == []
    assert agent.messages[-1].role == "assistant"


async def test_retry_disabled_in_settings(harness: Harness) -> None:
    sleep = SleepRecorder()
    settings = Settings.model_validate({"retry": {"enabled": False}})
    agent, rec = harness.agent(PlannedModel([Fail("503")]), sleep=sleep, settings=settings)
    await wait(agent.prompt("go"))
    assert sleep.delays == [] and rec.of("auto_retry_start") == []


async def test_abort_during_retry_wait_cancels_the_retry(harness: Harness) -> None:
    waiting = asyncio.Event()

    async def slow_sleep(seconds: float) -> None:
        waiting.set()
        await asyncio.Event().wait()

    model = PlannedModel([Fail("503"), Reply("never")])
    agent, rec = harness.agent(model, sleep=slow_sleep)
    task = asyncio.create_task(agent.prompt("go"))
    await wait(waiting.wait())
    await wait(agent.abort())
    await wait(task)
    ends = rec.of("auto_retry_end")
    assert len(ends) == 1 and not ends[0].success and ends[0].final_error == "Retry cancelled"
    assert len(model.requests) == 1
    assert rec.types()[-1] == "agent_settled"
