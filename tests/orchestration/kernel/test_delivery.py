"""Delivery routine: dedupe by the owner's persisted entries, message shape, truncation, ask delivery."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from corral.agent import SEEN_REFERENCE_KEY
from corral.orchestration import RESULT_TYPE, PaneNotReadyError
from corral.orchestration.kernel import texts
from corral.orchestration.kernel._delivery import deliver_message, result_message
from corral.orchestration.kernel.notices import AskPending, ResultReady
from corral.orchestration.kernel.records import AskRecord, GenerationRecord, ResultRecord
from corral.orchestration.surfaces import DelegateParams
from corral.session import find_recent_session
from tests.agent._deliveries import held_compaction
from tests.agent.helpers import Harness, Reply, wait
from tests.orchestration._host_helpers import team, write_script

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}


def _generation() -> GenerationRecord:
    return GenerationRecord(
        run_id="r", label="scout", definition="scout", owner_session_id="o", parent_run_id=None,
        parent_label=None, delegating=False, cwd="/w", session_id="s", session_path="/w/s.jsonl",
        runtime_kind="inprocess", pid=1, host_id="h", pane_id="p", phase="completed", presence="live",
        active_request_id=None, completed_request_id="q", created_at=1000, started_at=1000,
        finalized_at=None, last_activity_at=None, updated_at=1000, tokens=None, cleanup_error=None,
        result_error=None, diagnostic=None,
    )  # fmt: skip


def _result(status: str = "completed") -> ResultRecord:
    return ResultRecord(
        request_id="q", run_id="r", owner_session_id="o", status=status,  # type: ignore[arg-type]
        text="x", artifact_path=None, error_code=None if status == "completed" else "empty_result",
        error_message=None if status == "completed" else "Agent produced no assistant text",
        context_tokens=7, created_at=1500, delivery="pending", delivered_entry_id=None, delivered_at=None,
    )  # fmt: skip


def test_a_result_message_carries_its_short_stand_in_only_when_it_is_shorter() -> None:
    long = result_message(_generation(), _result(), "finding " * 100)
    assert long.details[SEEN_REFERENCE_KEY] == texts.result_reference(
        ResultReady(_generation(), _result(), "finding " * 100, truncated=False, retired=False)
    )
    assert long.content.endswith("finding " * 99 + "finding ")  # the message itself stays whole
    short = result_message(_generation(), _result(), "ok")
    assert SEEN_REFERENCE_KEY not in short.details  # the stand-in would be longer than the result


def _texts(context: Any) -> list[str]:
    out: list[str] = []
    for message in context.messages:
        content = getattr(message, "content", None)
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(getattr(block, "text", "") for block in content)
    return out


async def test_a_delivered_result_reaches_the_owners_requests_in_full_exactly_once(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request the result woke the owner for carries it in full; the owner's later requests carry
    the short stand-in; the session keeps the full text."""
    body = "full result:" + " the parser reads every entry point." * 40
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": body}]}})
    async with team(env, "team") as t:
        stream = t.lead.model.stream
        contexts: list[Any] = []

        async def recorded(context: Any, options: Any) -> AsyncIterator[Any]:
            contexts.append(context)
            async for event in stream(context, options):
                yield event

        monkeypatch.setattr(t.lead.model, "stream", recorded)
        await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Look."))
        await t.quiet()
        await t.lead.wait_for_idle()
        await t.lead.prompt("What next?")
        await t.lead.prompt("And then?")
        assert len(contexts) == 3  # the result's wake, then the two prompts
        carrying = [i for i, context in enumerate(contexts) if any(body in text for text in _texts(context))]
        assert carrying == [0]
        later = [
            text
            for context in contexts[1:]
            for text in _texts(context)
            if "Agent result · agent=scout" in text
        ]
        assert len(later) == 2 and all("Shown in full once already" in text for text in later)
        stored = t.lead_entries(RESULT_TYPE)
        assert len(stored) == 1 and body in stored[0]["content"]


def test_result_message_head_truncates_long_results() -> None:
    text = "\n".join(f"line {i}" for i in range(2500))
    message = result_message(_generation(), _result(), text)
    assert message.details["truncated"] is True
    assert "line 1999" in message.content and "line 2000\n" not in message.content
    assert "result:q" in message.content
    assert message.details["elapsed_ms"] == 500 and message.details["context_usage"] == {"tokens": 7}
    failed = result_message(_generation(), _result("failed"), None)
    assert failed.content.endswith("Agent produced no assistant text")
    assert failed.details["status"] == "failed"


async def test_delivery_is_skipped_when_the_owner_already_holds_the_entry(env: Path) -> None:
    write_script(env, "team", LEAD)
    async with team(env, "team") as t:
        message = result_message(_generation(), _result(), "hello")
        first = await deliver_message(t.lead, message, key="request_id", value="q")
        await t.lead.wait_for_idle()
        again = await asyncio.wait_for(
            deliver_message(
                t.lead,
                result_message(_generation(), _result(), "hello"),
                key="request_id",
                value="q",
            ),
            5,
        )
        assert again == first
        assert len(t.lead_entries(RESULT_TYPE)) == 1


async def test_a_result_delivered_during_a_manual_compaction_is_delivered_once_it_ends(
    tmp_path: Path,
) -> None:
    """`/compact` in the app (or a program's `compact()`) while a result arrives: the delivery
    completes once the compaction ends, and the owner answers the result."""
    owner, _model, _rec, gate = await held_compaction(Harness(tmp_path), Reply("## Goal\nthe summary"))
    compaction = asyncio.create_task(owner.compact())
    await wait(gate.started.wait())
    message = result_message(_generation(), _result(), "hello")
    delivery = asyncio.create_task(deliver_message(owner, message, key="request_id", value="q"))
    await asyncio.sleep(0)  # the delivery sent its message; the compaction holds it
    assert owner.pending_message_count == 1
    assert not [e for e in owner.session.entries if getattr(e, "custom_type", None) == RESULT_TYPE]
    assert not delivery.done()
    gate.release.set()
    await wait(compaction)
    entry_id = await wait(delivery)
    await wait(owner.wait_for_idle())
    delivered = [e for e in owner.session.entries if getattr(e, "custom_type", None) == RESULT_TYPE]
    assert [e.id for e in delivered] == [entry_id]
    assert owner.last_assistant_text() == "answered the result"


async def test_task_not_acknowledged_in_time_is_pane_not_ready(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from corral.orchestration.kernel._child import ManagedChild

    async def never(self: ManagedChild) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(ManagedChild, "run", never)
    write_script(env, "team", LEAD)
    async with team(env, "team") as t:
        params = DelegateParams.model_construct(definition="scout", task="x", timeout_ms=50)
        with pytest.raises(PaneNotReadyError) as caught:
            await t.controller.delegate(t.caller, params)
        assert caught.value.rollback_occurred
        assert t.host.kernel.generations() == ()


async def test_managed_sessions_are_skipped_by_continue(env: Path) -> None:
    write_script(env, "team", {**LEAD, "agents": {"*": [{"text": "r"}]}})
    async with team(env, "team") as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x"))
        await t.quiet()
        recent = find_recent_session(env / "work", sessions_root=t.sessions_root)
        assert recent is not None and Path(recent) == t.lead.session.path
        assert Path(started.session_path).exists()


def test_the_default_result_and_ask_texts_are_pinned() -> None:
    generation, result = _generation(), _result()
    assert texts.result_text(ResultReady(generation, result, "hello", truncated=True, retired=True)) == (
        "Agent result · agent=scout · definition=scout · session=s · request=q · status=completed\n\n"
        "hello\n\n"
        "[Result truncated; the full text is available as result:q in `files`.]\n\n"
        "Session retired after context pressure. Do not continue this session. For follow-up, delegate a "
        "fresh agent and pass this result/handoff plus the relevant files."
    )
    failed = _result("failed")
    assert texts.result_text(ResultReady(generation, failed, None, truncated=False, retired=False)) == (
        "Agent result · agent=scout · definition=scout · session=s · request=q · status=failed\n\nAgent failed."
    )
    assert texts.result_reference(
        ResultReady(generation, result, "hello", truncated=True, retired=False)
    ) == (
        "Agent result · agent=scout · definition=scout · session=s · request=q · status=completed\n\n"
        "[Shown in full once already; it is the agent's last reply in /w/s.jsonl, and result:q in `files` "
        "hands it to an agent.]"
    )
    assert texts.result_reference(ResultReady(generation, failed, "boom", truncated=False, retired=True)) == (
        "Agent result · agent=scout · definition=scout · session=s · request=q · status=failed\n\n"
        "[Shown in full once already; the agent's session file is /w/s.jsonl.]\n\n"
        "Session retired after context pressure. Do not continue this session. For follow-up, delegate a "
        "fresh agent and pass this result/handoff plus the relevant files."
    )
    ask = AskRecord(
        ask_id="a", run_id="r", request_id="q", question="Which one?", state="pending", reply=None,
        created_at=1, resolved_at=None, delivered_entry_id=None,
    )  # fmt: skip
    assert texts.ask_text(AskPending(generation, ask)) == (
        "Agent scout needs your input:\n\nWhich one?\n\nAnswer with the agent tool: action reply, agent=scout."
    )
