"""Controller scenarios: delegate → result delivered once, list, errors, continue, fork."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.orchestration import (
    RESULT_TYPE,
    AgentLabelExistsError,
    InvalidRequestError,
    TargetNotFoundError,
)
from corral.orchestration.surfaces import ContinueParams, DelegateParams, ListParams
from tests.orchestration._host_helpers import team, write_script


async def test_delegate_delivers_result_once_and_finalizes(env: Path) -> None:
    write_script(
        env,
        "team",
        {
            "steps": [{"text": "noted"}],
            "on_exhausted": "repeat_last",
            "agents": {"*": [{"text": "The answer is 42."}]},
        },
    )
    async with team(env, "team") as t:
        result = await t.controller.delegate(
            t.caller, DelegateParams(definition="scout", task="Find the answer")
        )
        details = result.to_details()
        assert details["ok"] is True and details["action"] == "delegate"
        assert details["agent"] == "scout" and details["definition"] == "scout"
        assert details["owner_session_id"] == t.caller.session_id
        assert set(details) == {
            "ok",
            "action",
            "agent",
            "definition",
            "owner_session_id",
            "pane_id",
            "session_id",
            "session_path",
            "request_id",
        }
        await t.quiet()
        entries = t.lead_entries(RESULT_TYPE)
        assert len(entries) == 1
        entry = entries[0]
        assert entry["display"] is True
        assert entry["content"].startswith(
            f"Agent result · agent=scout · definition=scout · session={details['session_id']} · "
            f"request={details['request_id']} · status=completed"
        )
        assert "The answer is 42." in entry["content"]
        assert set(entry["details"]) == {
            "run_id",
            "request_id",
            "owner_session_id",
            "agent",
            "definition",
            "session_id",
            "session_path",
            "cwd",
            "status",
            "elapsed_ms",
            "context_usage",
            "truncated",
            "result_ref",
        }
        assert entry["details"]["result_ref"] == f"result:{details['request_id']}"
        stored = t.host.kernel.get_result(details["request_id"])
        assert stored is not None and stored.delivery == "delivered"
        generation = t.host.kernel.get_generation(result.run_id)
        assert generation is not None and generation.phase == "finalized"
        # the managed session is kept, marked managed, with the definition entry
        lines = [json.loads(x) for x in Path(details["session_path"]).read_text().splitlines()]
        assert lines[0]["corral"] == {"managed": True, "definition": "scout", "label": "scout"}
        defs = [
            x for x in lines if x.get("type") == "custom" and x.get("customType") == "corral-agent-definition"
        ]
        assert defs and defs[0]["data"] == {
            "sessionId": details["session_id"],
            "definition": "scout",
            "label": "scout",
        }


async def test_empty_result_is_failed(env: Path) -> None:
    write_script(
        env,
        "team",
        {
            "steps": [{"text": "noted"}],
            "on_exhausted": "repeat_last",
            "agents": {
                "*": [{"tool_calls": [{"name": "bash", "args": {"command": "true"}}]}, {"thinking": "hm"}]
            },
        },
    )
    async with team(env, "team") as t:
        result = await t.controller.delegate(t.caller, DelegateParams(definition="generalist", task="Do it"))
        await t.quiet()
        entries = t.lead_entries(RESULT_TYPE)
        assert len(entries) == 1 and entries[0]["details"]["status"] == "failed"
        stored = t.host.kernel.get_result(result.request_id)
        assert stored is not None and stored.error_code == "empty_result"


async def test_labels_auto_and_explicit_conflict(env: Path) -> None:
    write_script(
        env,
        "team",
        {
            "steps": [{"text": "noted"}],
            "on_exhausted": "repeat_last",
            "agents": {"*": [{"text": "wait", "delay_ms": 60000}]},
        },
    )
    async with team(env, "team") as t:
        first = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="a"))
        second = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="b"))
        assert (first.agent, second.agent) == ("scout", "scout-2")
        with pytest.raises(AgentLabelExistsError):
            await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="c", label="scout"))
        listed = (await t.controller.list(t.caller, ListParams())).to_details()
        assert [a["agent"] for a in listed["agents"]] == ["scout", "scout-2"]
        assert {"name": "scout"}.items() <= listed["agent_definitions"][-1].items() or any(
            d["name"] == "scout" for d in listed["agent_definitions"]
        )
        assert listed["agents"][0]["state"] == "working"
        assert "interrupt" in listed["agents"][0]["available_actions"]


async def test_delegate_errors(env: Path) -> None:
    write_script(env, "team", {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"})
    async with team(env, "team") as t:
        with pytest.raises(InvalidRequestError, match="was not found"):
            await t.controller.delegate(t.caller, DelegateParams(definition="nobody", task="x"))
        with pytest.raises(InvalidRequestError, match="not a directory"):
            await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="x", cwd="missing"))
        with pytest.raises(InvalidRequestError, match="Cannot read file"):
            await t.controller.delegate(
                t.caller, DelegateParams(definition="scout", task="x", files=["nope.txt"])
            )
        with pytest.raises(InvalidRequestError):
            await t.controller.delegate(
                t.caller, DelegateParams(definition="scout", task="x", fork="0000-not-a-session")
            )
        assert t.host.kernel.generations() == ()


async def test_continue_reuses_session_and_label(env: Path) -> None:
    write_script(
        env,
        "team",
        {
            "steps": [{"text": "noted"}],
            "on_exhausted": "repeat_last",
            "agents": {"*": [{"text": "first answer"}, {"text": "second answer"}]},
        },
    )
    async with team(env, "team") as t:
        first = await t.controller.delegate(
            t.caller, DelegateParams(definition="scout", task="one", label="finder")
        )
        await t.quiet()
        with pytest.raises(InvalidRequestError, match="outside the caller's proven session ownership"):
            await t.controller.continue_(
                t.caller, ContinueParams(session="0" * 8 + "-0000-4000-8000-" + "0" * 12, task="x")
            )
        with pytest.raises(InvalidRequestError, match="own active session"):
            await t.controller.continue_(t.caller, ContinueParams(session=t.caller.session_id, task="x"))
        again = await t.controller.continue_(t.caller, ContinueParams(session=first.session_id, task="two"))
        assert again.to_details()["action"] == "continue"
        assert (again.agent, again.session_id, again.session_path) == (
            "finder",
            first.session_id,
            first.session_path,
        )
        assert again.request_id != first.request_id
        await t.quiet()
        contents = [e["content"] for e in t.lead_entries(RESULT_TYPE)]
        assert len(contents) == 2 and "second answer" in contents[1]


async def test_fork_creates_new_managed_session(env: Path) -> None:
    write_script(
        env,
        "team",
        {
            "steps": [{"text": "noted"}],
            "on_exhausted": "repeat_last",
            "agents": {"*": [{"text": "from fork"}]},
        },
    )
    async with team(env, "team") as t:
        first = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="one"))
        await t.quiet()
        forked = await t.controller.delegate(
            t.caller, DelegateParams(definition="scout", task="two", fork=first.session_id)
        )
        assert forked.session_id != first.session_id
        await t.quiet()
        lines = [json.loads(x) for x in Path(forked.session_path).read_text().splitlines()]
        assert lines[0]["corral"]["managed"] is True and lines[0]["parentSession"].endswith(".jsonl")
        assert any(x.get("type") == "message" and "one" in json.dumps(x) for x in lines)


async def test_control_of_unknown_agent_is_target_not_found(env: Path) -> None:
    from corral.orchestration.surfaces import SteerParams

    write_script(env, "team", {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"})
    async with team(env, "team") as t:
        with pytest.raises(TargetNotFoundError):
            await t.controller.steer(t.caller, SteerParams(agent="ghost", message="hi"))


async def test_retired_session_cannot_be_continued_or_forked(env: Path) -> None:
    from corral.orchestration.kernel._child import RETIRED_ENTRY
    from corral.session import SessionManager

    write_script(
        env,
        "team",
        {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": {"*": [{"text": "handoff"}]}},
    )
    async with team(env, "team") as t:
        first = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="one"))
        await t.quiet()
        with SessionManager.open(Path(first.session_path)) as saved:
            saved.append_custom(RETIRED_ENTRY, {"sessionId": first.session_id})
        with pytest.raises(InvalidRequestError, match="retired"):
            await t.controller.continue_(t.caller, ContinueParams(session=first.session_id, task="more"))
        with pytest.raises(InvalidRequestError, match="retired"):
            await t.controller.delegate(
                t.caller, DelegateParams(definition="scout", task="x", fork=first.session_path)
            )
        t.host.context_retirement = False
        again = await t.controller.continue_(
            t.caller, ContinueParams(session=first.session_path, task="more")
        )
        assert again.session_id == first.session_id
        await t.quiet()
        assert len(t.lead_entries(RESULT_TYPE)) == 2


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo", "dangling-symlink", "result-ref"])
async def test_bad_files_on_delegate_fail_invalid_request_and_change_nothing(env: Path, kind: str) -> None:
    import os

    write_script(env, "team", {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"})
    async with team(env, "team") as t:
        cwd = t.caller.cwd
        target = {
            "missing": "absent.txt",
            "directory": "adir",
            "fifo": "apipe",
            "dangling-symlink": "alink",
            "result-ref": "result:00000000-0000-4000-8000-000000000000",
        }[kind]
        (cwd / "adir").mkdir(exist_ok=True)
        if not (cwd / "apipe").exists():
            os.mkfifo(cwd / "apipe")
        if not (cwd / "alink").is_symlink():
            (cwd / "alink").symlink_to(cwd / "gone.txt")
        from dataclasses import replace

        before = replace(t.host.kernel.snapshot(), taken_at=0)
        with pytest.raises(InvalidRequestError):
            await t.controller.delegate(
                t.caller, DelegateParams(definition="scout", task="x", files=[target])
            )
        assert replace(t.host.kernel.snapshot(), taken_at=0) == before
        assert t.host.kernel.generations() == ()


async def test_a_delivered_result_is_addressable_as_a_file_reference(env: Path) -> None:
    write_script(
        env,
        "team",
        {
            "steps": [{"text": "noted"}],
            "on_exhausted": "repeat_last",
            "agents": {
                "first": [{"text": "The answer is 42."}],
                "second": [
                    {
                        "text": "I can see the first result.",
                        "expect": {"context_contains": ["The answer is 42.", '<file name="result:']},
                    }
                ],
            },
        },
    )
    async with team(env, "team") as t:
        first = await t.controller.delegate(
            t.caller, DelegateParams(definition="scout", label="first", task="Find the answer")
        )
        await t.quiet()
        ref = f"result:{first.to_details()['request_id']}"
        await t.controller.delegate(
            t.caller, DelegateParams(definition="scout", label="second", task="Use it", files=[ref])
        )
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert [r["details"]["agent"] for r in results] == ["first", "second"]
        assert results[1]["details"]["status"] == "completed"  # the expectation held
        assert "I can see the first result." in results[1]["content"]


def test_the_default_retirement_steer_is_pinned() -> None:
    from corral.orchestration.kernel import texts
    from corral.orchestration.kernel.notices import ContextRetired

    assert texts.context_retired(ContextRetired(run_id="r", session_id="s")) == (
        "Your context is under pressure and this session is now retired. Do not start new work: finish the "
        "current coherent step and end with a self-contained handoff (what is done, what remains, relevant "
        "files) as your final answer."
    )


async def test_threshold_compaction_retires_the_session_with_the_retirement_steer(env: Path) -> None:
    from corral.llm._registry import SCRIPTED_CONTEXT_WINDOW
    from corral.orchestration.kernel._child import RETIRED_ENTRY, RETIREMENT_TYPE
    from corral.orchestration.kernel.texts import RETIREMENT_TEXT
    from corral.session import SessionManager
    from corral.settings import Settings

    big = {"input": SCRIPTED_CONTEXT_WINDOW - 100, "output": 10, "cache_read": 0, "cache_write": 0}
    agent = [
        {"text": "worked a lot " * 50, "usage": big},
        {"text": "the summary"},
        {"text": "Handed off.", "expect": {"last_user_contains": "this session is now retired"}},
    ]
    write_script(
        env, "team", {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": {"*": agent}}
    )
    settings = Settings.model_validate({"compaction": {"keep_recent_tokens": 20}})
    async with team(env, "team", settings=settings) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="one"))
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "Handed off." in results[0]["content"]
        assert started.session_path is not None
        with SessionManager.open(Path(started.session_path), read_only=True) as saved:
            entries = saved.entries
        assert any(getattr(e, "custom_type", None) == RETIRED_ENTRY for e in entries)
        # The steer the model read (its script expected it) is the retirement text, once.
        steers = [e for e in entries if getattr(e, "custom_type", None) == RETIREMENT_TYPE]
        assert len(steers) == 1 and getattr(steers[0], "content", None) == RETIREMENT_TEXT, steers


async def test_a_message_with_files_puts_its_text_under_its_kinds_heading(env: Path) -> None:
    agent = [{"text": "read it", "expect": {"last_user_contains": "</file>\n\nTask:\nSurvey the note."}}]
    write_script(
        env, "team", {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": {"*": agent}}
    )
    async with team(env, "team") as t:
        (t.caller.cwd / "note.txt").write_text("a note\n")
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="scout", task="Survey the note.", files=["note.txt"])
        )
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "read it" in results[0]["content"], results
        assert started.session_path is not None
        assert "</file>\\n\\nTask:\\nSurvey the note." in Path(started.session_path).read_text()
