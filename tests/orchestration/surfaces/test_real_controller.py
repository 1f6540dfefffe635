"""The `agent` tool over the real Host and Controller, driven by scripted models end to end."""

from __future__ import annotations

import asyncio
from pathlib import Path

from corral.llm import CustomMessage, ToolResultMessage
from corral.orchestration import RESULT_TYPE
from corral.orchestration.surfaces import DELEGATION_GUIDANCE_TYPE
from tests.orchestration._host_helpers import WAIT, team, write_script


def _tool_results(messages: list[object]) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage)]


async def test_lead_delegates_through_the_tool_and_gets_the_result(env: Path) -> None:
    write_script(
        env,
        "team",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "agent",
                            "id": "d1",
                            "args": {
                                "action": "delegate",
                                "definition": "scout",
                                "task": "Find the answer",
                                "label": None,
                                "cwd": "",
                                "files": [],
                                "fork": None,
                                "timeoutMs": None,
                                "session": "",
                                "agent": "",
                                "message": "",
                            },
                        },
                        {"name": "agent", "id": "l1", "args": {"action": "list"}},
                    ],
                    "expect": {"tools_include": ["agent"]},
                },
                {"text": "Waiting.", "expect": {"context_contains": ["Delegation guidance"]}},
                {
                    "text": "Got it: 42.",
                    "expect": {"context_contains": ["Agent result", "The answer is 42."]},
                },
            ],
            "on_exhausted": "repeat_last",
            "agents": {"*": [{"text": "The answer is 42."}]},
        },
    )
    async with team(env, "team", surfaces=("agent",)) as t:
        await asyncio.wait_for(t.lead.prompt("Delegate it."), WAIT)
        await asyncio.wait_for(t.lead.wait_for_idle(), WAIT)
        await t.quiet()
        await asyncio.wait_for(t.lead.wait_for_idle(), WAIT)
        delegate, listed = _tool_results(t.lead.messages)[:2]
        assert not delegate.is_error, delegate.content
        assert delegate.details["action"] == "delegate"
        assert delegate.details["agent"] == "scout"
        assert listed.details["action"] == "list"
        assert [r["agent"] for r in listed.details["agents"]] == ["scout"]
        assert "scout" in [d["name"] for d in listed.details["agent_definitions"]]
        guidance = [
            m
            for m in t.lead.messages
            if isinstance(m, CustomMessage) and m.custom_type == DELEGATION_GUIDANCE_TYPE
        ]
        assert len(guidance) == 1
        assert len(t.lead_entries(RESULT_TYPE)) == 1
        assert t.lead.last_assistant_text() == "Got it: 42."


async def test_unknown_agent_through_the_tool_is_target_not_found(env: Path) -> None:
    write_script(
        env,
        "team",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "agent",
                            "id": "s1",
                            "args": {"action": "steer", "agent": "ghost", "message": "hi"},
                        }
                    ]
                },
                {"text": "No such agent.", "expect": {"context_contains": ["target_not_found"]}},
            ],
        },
    )
    async with team(env, "team", surfaces=("agent",)) as t:
        await asyncio.wait_for(t.lead.prompt("Steer ghost."), WAIT)
        await asyncio.wait_for(t.lead.wait_for_idle(), WAIT)
        [result] = _tool_results(t.lead.messages)
        assert result.is_error
        assert result.details["ok"] is False
        assert result.details["error"]["category"] == "target_not_found"
        assert result.details["error"]["operation"] == "steer"
        assert t.lead.last_assistant_text() == "No such agent."
