"""The Python API: every tool through `Lead.call`, items exactly once with a cursor, reopening, prompts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest

import corral
from corral.errors import UsageError
from corral.lead import ItemKind, LeadItem
from corral.lead._items import ITEM_TYPES
from tests._waits import eventually

from .conftest import WAIT, ApiEnv


async def _item(lead: corral.Lead, kind: ItemKind) -> LeadItem:
    item = await lead.next_item(timeout=WAIT)
    assert item is not None, f"no {kind} arrived"
    assert item.kind == kind, item
    return item


def _gate(env: ApiEnv, name: str) -> dict[str, Any]:
    """An agent step that says it started, then waits for the test to open the gate."""
    started, gate = env.work / f"{name}.started", env.work / f"{name}.go"
    command = f"touch {started}; while [ ! -f {gate} ]; do sleep 0.01; done; echo ok"
    return {"tool_calls": [{"name": "bash", "args": {"command": command}}]}


async def test_delegate_and_list_return_what_the_model_gets(api_env: ApiEnv) -> None:
    async with corral.open_lead(api_env.work) as lead:
        assert lead.session_path.is_file() and lead.session_id in lead.session_path.name
        listed = await lead.call("agent", {"action": "list"})
        assert listed.ok and listed.details is not None and listed.details["agents"] == []
        out = await lead.call(
            "agent", {"action": "delegate", "definition": "scout", "task": "look", "label": "s1"}
        )
        assert out.ok and out.category is None
        assert out.text.startswith("Started agent s1 (definition scout)")
        assert out.details is not None and out.details["agent"] == "s1"
        result = await _item(lead, "result")
        assert result.details["request_id"] == out.details["request_id"]
        assert result.text.endswith("agent result") and result.agent == "s1"
        assert await lead.next_item(timeout=0) is None


async def test_per_operation_tools_are_callable_by_name(api_env: ApiEnv) -> None:
    ask = {"tool_calls": [{"name": "ask_owner", "args": {"question": "Which?"}}]}
    api_env.script({"*": [ask, {"text": "first"}, {"text": "continued"}]})
    async with corral.open_lead(api_env.work) as lead:
        assert lead.tool_names == (
            "agent",
            "agent_list",
            "agent_delegate",
            "agent_continue",
            "agent_steer",
            "agent_interrupt",
            "agent_reply",
            "agent_close",
            "agent_inspect",
            "agent_transcript",
        )
        out = await lead.call("agent_delegate", {"definition": "scout", "task": "look", "label": "p1"})
        assert out.ok and out.details is not None and out.details["action"] == "delegate"
        await _item(lead, "ask")
        listed = await lead.call("agent_list", {})
        assert listed.ok and listed.details is not None and listed.details["agents"][0]["agent"] == "p1"
        transcript = await lead.call("agent_transcript", {"agent": "p1"})
        assert transcript.ok and "Which?" in transcript.text
        inspected = await lead.call("agent_inspect", {"agent": "p1"})
        assert inspected.ok and inspected.details is not None and inspected.details["action"] == "inspect"
        replied = await lead.call("agent_reply", {"agent": "p1", "message": "this one"})
        assert replied.ok, replied.text
        assert (await _item(lead, "result")).text.endswith("first")
        again = await lead.call("agent_continue", {"session": out.details["session_id"], "task": "more"})
        assert again.ok and again.details is not None, again.text
        second = await _item(lead, "result")
        assert second.details["request_id"] == again.details["request_id"]
        assert second.text.endswith("continued")
        await lead.call("agent_delegate", {"definition": "scout", "task": "look", "label": "p2"})
        await _item(lead, "ask")
        closed = await lead.call("agent_close", {"agent": "p2"})
        assert closed.ok and closed.details is not None and closed.details["action"] == "close"
        assert (await lead.call("agent_list", {})).details == {**(listed.details or {}), "agents": []}


async def test_bad_calls_get_the_models_error_and_category(api_env: ApiEnv) -> None:
    async with corral.open_lead(api_env.work) as lead:
        missing = await lead.call("agent", {"action": "delegate", "definition": "scout"})
        assert not missing.ok and missing.category == "invalid_request" and "task" in missing.text
        unknown_field = await lead.call("agent_list", {"bogus": 1})
        assert not unknown_field.ok and unknown_field.category == "invalid_request"
        nobody = await lead.call("agent_steer", {"agent": "nobody", "message": "x"})
        assert not nobody.ok and nobody.category == "target_not_found"
        assert "Next:" in nobody.text
        no_tool = await lead.call("spawn_agent", {"name": "a", "prompt": "p"})
        assert not no_tool.ok and no_tool.category == "invalid_request"
        assert no_tool.text.startswith("Tool spawn_agent not found")
        with pytest.raises(corral.LeadCallError) as raised:
            await lead.delegate("no-such-definition", "task")
        assert raised.value.category == "invalid_request"
        assert (await lead.agents()) == []  # nothing durable changed


async def test_reply_answers_an_ask_item(api_env: ApiEnv) -> None:
    api_env.script(
        {
            "*": [
                {"tool_calls": [{"name": "ask_owner", "args": {"question": "Which file?"}}]},
                {"text": "thanks"},
            ]
        }
    )
    async with corral.open_lead(api_env.work) as lead:
        handle = await lead.delegate("scout", "q", label="asker")
        ask = await _item(lead, "ask")
        assert "Which file?" in ask.text and ask.agent == "asker"
        rows = await lead.agents()
        assert [(row.label, row.definition) for row in rows] == [("asker", "scout")]
        assert "reply" in rows[0].available_actions
        replied = await lead.call("agent_reply", {"agent": "asker", "message": "README.md"})
        assert replied.ok, replied.text
        result = await handle.result(timeout=WAIT)
        assert result.text.endswith("thanks")
        assert (await lead.next_item(timeout=WAIT)) == result


async def test_steer_and_inspect_a_working_agent(api_env: ApiEnv) -> None:
    api_env.script(
        {"*": [_gate(api_env, "steer"), {"text": "steered", "expect": {"last_user_contains": "check docs"}}]}
    )
    async with corral.open_lead(api_env.work) as lead:
        handle = await lead.delegate("implementer", "work", label="w1")
        await eventually((api_env.work / "steer.started").exists)
        inspected = await lead.call("agent", {"action": "inspect", "agent": "w1"})
        assert inspected.ok and inspected.details is not None and inspected.details["agent"] == "w1"
        steered = await lead.call("agent", {"action": "steer", "agent": "w1", "message": "check docs"})
        assert steered.ok and steered.details is not None
        assert steered.details["assignment_request_id"] == handle.request_id
        (api_env.work / "steer.go").write_text("")
        assert (await handle.result(timeout=WAIT)).text.endswith("steered")


async def test_interrupt_redirects_the_same_assignment(api_env: ApiEnv) -> None:
    api_env.script(
        {
            "*": [
                {"text": "slow", "delay_ms": 60000},
                {"text": "redirected", "expect": {"last_user_contains": "Owner interrupt"}},
            ]
        }
    )
    async with corral.open_lead(api_env.work) as lead:
        handle = await lead.delegate("scout", "work", label="i1")
        await lead.host.wait_for(
            lambda: any(g.run_id for g in lead.host.kernel.generations() if g.phase == "active"), WAIT
        )
        await handle.interrupt("try another way")
        result = await handle.result(timeout=WAIT)
        assert result.text.endswith("redirected") and result.details["request_id"] == handle.request_id


def _report(content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "report_and_exit", "args": {"content": content, "outcome": "succeeded"}}]}


async def test_teams_tools_through_call(api_env: ApiEnv) -> None:
    api_env.script(
        {
            "writer": [
                {
                    "tool_calls": [
                        {"name": "send_message", "args": {"content": "Need X?", "summary": "question"}}
                    ]
                },
                _gate(api_env, "writer"),
                _report("wrote it"),
            ],
            "*": [_report("swarm part")],
        }
    )
    async with corral.open_lead(api_env.work, surfaces=("agent", "teams")) as lead:
        assert {"spawn_agent", "spawn_swarm_agents", "get_agent_status", "read_inbox"} <= set(lead.tool_names)
        spawned = await lead.call(
            "spawn_agent", {"name": "writer", "prompt": "write", "model_slot": "write-patch"}
        )
        assert spawned.ok, spawned.text
        message = await _item(lead, "message")
        assert "Need X?" in message.text
        status = await lead.call("get_agent_status", {"agent_name": "writer"})
        assert status.ok and "writer" in status.text
        checked = await lead.call("check_teammate", {"agent_name": "writer"})
        assert checked.ok, checked.text
        inbox = await lead.call("read_inbox", {})
        assert inbox.ok, inbox.text
        claims = await lead.call("list_file_claims", {})
        assert claims.ok, claims.text
        sent = await lead.call("send_message", {"recipient": "writer", "content": "Yes, X."})
        assert sent.ok, sent.text
        refused = await lead.call("report_and_exit", {"content": "x", "outcome": "succeeded"})
        assert not refused.ok and refused.category == "invalid_request"
        no_claim = await lead.call("claim_file", {"path": "a.txt"})
        assert not no_claim.ok and no_claim.category == "invalid_request"
        (api_env.work / "writer.go").write_text("")
        report = await _item(lead, "report")
        assert "wrote it" in report.text
        swarm = await lead.call(
            "spawn_swarm_agents",
            {
                "agents": [{"name": "p1", "prompt": "a"}, {"name": "p2", "prompt": "b"}],
                "defaults": {"model_slot": "write-patch"},
            },
        )
        assert swarm.ok, swarm.text
        parts = [await _item(lead, "report"), await _item(lead, "report")]
        assert sorted(part.text.split()[3] for part in parts) == ["p1", "p2"]
        grouped = await lead.call(
            "spawn_swarm_agents",
            {
                "agents": [{"name": "g1", "prompt": "a"}, {"name": "g2", "prompt": "b"}],
                "defaults": {"model_slot": "write-patch"},
                "completion_group": {"delivery": "all-settled"},
            },
        )
        assert grouped.ok, grouped.text
        index = await _item(lead, "group")
        assert "g1" in index.text and "g2" in index.text
        released = await lead.call("release_file", {"path": "a.txt"})
        assert not released.ok and released.category == "invalid_request"
        stopped = await lead.call("stop_teammate", {"agent_name": "nobody"})
        assert not stopped.ok and stopped.category == "target_not_found"
        interrupted = await lead.call("interrupt_teammate", {"agent_name": "nobody"})
        assert not interrupted.ok and interrupted.category == "target_not_found"


async def test_each_item_once_and_replay_from_a_cursor(api_env: ApiEnv) -> None:
    async with corral.open_lead(api_env.work) as lead:
        first = await lead.delegate("scout", "one", label="a1")
        await first.result(timeout=WAIT)
        second = await lead.delegate("scout", "two", label="a2")
        await second.result(timeout=WAIT)
        got = [await lead.next_item(timeout=WAIT), await lead.next_item(timeout=WAIT)]
        assert [item.details["request_id"] for item in got if item] == [first.request_id, second.request_id]
        assert await lead.next_item(timeout=0) is None  # each item once per open lead
        replay = [item async for item in lead.items()]
        assert replay == got
        after_first = [item async for item in lead.items(after=got[0].entry_id if got[0] else None)]
        assert after_first == got[1:]
        with pytest.raises(UsageError, match="no item 'nope'"):
            _ = [item async for item in lead.items(after="nope")]
        third = await lead.delegate("scout", "three", label="a3")
        replayed = [item async for item in lead.items(after=got[1].entry_id if got[1] else None)]
        while not replayed:
            await lead.wait_quiet(WAIT)
            replayed = [item async for item in lead.items(after=got[1].entry_id if got[1] else None)]
        assert replayed[0].details["request_id"] == third.request_id
        assert await lead.next_item(timeout=0) is None  # `items` yielded it: not returned again


async def test_reopening_recovers_like_continue(api_env: ApiEnv) -> None:
    api_env.script({"*": [{"text": "slow", "delay_ms": 60000}]})
    async with corral.open_lead(api_env.work) as lead:
        session_id = lead.session_id
        await lead.delegate("scout", "never finishes here", label="gone")
        lead.save_cursor(None)
    async with corral.open_lead(api_env.work, session=session_id[:8]) as lead:
        assert lead.session_id == session_id
        rows = await lead.agents()
        assert [(row.label, row.state) for row in rows] == [("gone", "lost")]
        assert lead.saved_cursor() is None
    async with corral.open_lead(api_env.work, continue_recent=True) as lead:
        assert lead.session_id == session_id


async def test_saved_cursor_is_durable(api_env: ApiEnv) -> None:
    async with corral.open_lead(api_env.work) as lead:
        handle = await lead.delegate("scout", "x")
        item = await handle.result(timeout=WAIT)
        lead.save_cursor(item.entry_id)
        with pytest.raises(UsageError):
            lead.save_cursor("not-an-item")
        session_id = lead.session_id
    async with corral.open_lead(api_env.work, session=session_id) as lead:
        assert lead.saved_cursor() == item.entry_id
        assert [i async for i in lead.items(after=lead.saved_cursor())] == []


async def test_prompt_needs_a_model_and_runs_one_turn_with_one(api_env: ApiEnv) -> None:
    async with corral.open_lead(api_env.work) as lead:
        assert not lead.has_model
        with pytest.raises(UsageError, match="no model"):
            await lead.prompt("hello")
    api_env.script(
        {"*": [{"text": "scouted"}]},
        steps=[
            {
                "tool_calls": [
                    {"name": "agent", "args": {"action": "delegate", "definition": "scout", "task": "t"}}
                ]
            },
            {"text": "delegated; waiting"},
        ],
    )
    async with corral.open_lead(api_env.work, model="scripted/team") as lead:
        assert lead.has_model
        assert await lead.prompt("go") == "delegated; waiting"
        result = await _item(lead, "result")
        assert result.text.endswith("scouted")


async def test_deliveries_start_no_turn_for_a_program_lead(api_env: ApiEnv) -> None:
    async with corral.open_lead(api_env.work) as lead:
        await (await lead.delegate("scout", "x")).result(timeout=WAIT)
        await lead.wait_quiet(WAIT)
        kinds = [json.loads(line).get("type") for line in lead.session_path.read_text().splitlines()]
        assert "message" not in kinds  # no assistant turn, no guidance: only the delivered item
        assert kinds.count("custom_message") == 1


def test_open_lead_from_a_plain_script(api_env: ApiEnv) -> None:
    code = (
        "import asyncio, corral\n"
        "async def main():\n"
        "    async with corral.open_lead('.') as lead:\n"
        "        handle = await lead.delegate('scout', 'x')\n"
        "        print((await handle.result(timeout=30)).text.splitlines()[-1])\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=api_env.work,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "agent result"


async def test_bad_options_are_usage_errors(api_env: ApiEnv) -> None:
    with pytest.raises(UsageError, match="surface"):
        async with corral.open_lead(api_env.work, surfaces=()):
            pass
    with pytest.raises(UsageError, match="unknown surface"):
        async with corral.open_lead(api_env.work, surfaces=("bogus",)):
            pass
    with pytest.raises(UsageError, match="not a directory"):
        async with corral.open_lead(api_env.work / "missing"):
            pass


def test_item_types_match_the_cores_message_types() -> None:
    from corral.orchestration import ASK_TYPE, RESULT_TYPE, TEAM_MESSAGE_TYPE, TEAM_REPORT_TYPE
    from corral.orchestration.teams.groups._groups import GROUP_MESSAGE_TYPE

    assert ITEM_TYPES == {
        RESULT_TYPE: "result",
        ASK_TYPE: "ask",
        TEAM_REPORT_TYPE: "report",
        GROUP_MESSAGE_TYPE: "group",
        TEAM_MESSAGE_TYPE: "message",
    }


def test_corral_exports_the_api_lazily() -> None:
    code = (
        "import sys, corral\n"
        "assert 'corral.lead' not in sys.modules\n"
        "names = [getattr(corral, n) for n in corral.__all__]\n"
        "assert 'corral.lead' in sys.modules and corral.open_lead.__module__ == 'corral.lead._lead'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    with pytest.raises(AttributeError):
        _ = corral.no_such_name  # type: ignore[attr-defined]


async def test_two_leads_in_one_loop(api_env: ApiEnv) -> None:
    async with corral.open_lead(api_env.work) as one, corral.open_lead(api_env.work) as two:
        assert one.session_id != two.session_id
        a, b = await asyncio.gather(one.delegate("scout", "a"), two.delegate("scout", "b"))
        assert (await a.result(timeout=WAIT)).details["owner_session_id"] == one.session_id
        assert (await b.result(timeout=WAIT)).details["owner_session_id"] == two.session_id


async def test_teams_conveniences_and_report_acceptance(api_env: ApiEnv) -> None:
    api_env.script({"*": [_report("done")]})
    async with corral.open_lead(api_env.work, surfaces=("teams",)) as lead:
        await lead.spawn("solo", "do it", model_slot="write-patch")
        report = await _item(lead, "report")
        report_id = report.details["report_id"]
        with pytest.raises(corral.LeadCallError) as bad_state:
            lead.record_report_acceptance(report_id, "maybe")
        assert bad_state.value.category == "invalid_request"
        with pytest.raises(corral.LeadCallError) as unknown:
            lead.record_report_acceptance("report-nope", "accepted")
        assert unknown.value.category == "target_not_found"
        result = lead.record_report_acceptance(report_id, "accepted", "looks right")
        assert result["acceptance"]["state"] == "accepted" and result["acceptance"]["reason"] == "looks right"
        await lead.spawn_swarm(
            [{"name": "s1", "prompt": "a"}, {"name": "s2", "prompt": "b"}],
            defaults={"model_slot": "write-patch"},
            completion_group={"delivery": "all-settled"},
        )
        assert (await _item(lead, "group")).kind == "group"
        with pytest.raises(corral.LeadCallError) as refused:
            await lead.spawn("bad name!", "x")
        assert refused.value.category == "invalid_request"
