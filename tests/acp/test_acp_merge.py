"""`/merge` in `corral acp`: an isolated writer's branch merged from the editor, without a model turn."""

from __future__ import annotations

import asyncio

import pytest
from acp.exceptions import RequestError

from tests._ci import require
from tests.orchestration.teams._git_helpers import GIT_ENV, git, make_repo

from .conftest import LATER, WAIT, AcpEnv, text_block

WRITER = {
    "steps": [
        {
            "text": "Delegating to the writer.",
            "tool_calls": [
                {
                    "name": "agent",
                    "args": {
                        "action": "delegate",
                        "definition": "implementer",
                        "label": "writer",
                        "task": "Set value to 2.",
                    },
                }
            ],
        },
        {
            "expect": {"context_contains": ["Agent result · agent=writer"]},
            "text": "The writer is done.",
            "otherwise": {"text": "Waiting for the writer."},
        },
    ],
    "on_exhausted": "repeat_last",
    "agents": {
        "writer": [
            {"tool_calls": [{"name": "write", "args": {"path": "app.py", "content": "value = 2\n"}}]},
            {"text": "Set the value."},
        ]
    },
}


async def test_merge_applies_an_isolated_writers_branch_and_says_why_not(acp_env: AcpEnv) -> None:
    require("git", "isolated writers work in git worktrees")
    make_repo(acp_env.work, {"app.py": "value = 1\n"})
    acp_env.vars.update(GIT_ENV)
    (acp_env.root / "config" / "corral" / "settings.toml").write_text('isolation = "worktree"\n')
    acp_env.script("writer", WRITER)
    async with acp_env.server(model="scripted/writer") as (conn, _process, recorder):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("Set value to 2.")])
        await recorder.until(lambda: recorder.agent_statuses(sid) == ["completed"])
        await recorder.until(lambda: "The writer is done." in recorder.text(sid))  # the lead's wake turn
        assert (acp_env.work / "app.py").read_text() == "value = 1\n"  # on its branch until merged

        for line, expected in (
            ("/merge", "Usage: /merge <agent> [--discard]"),
            ("/merge a b", "Usage: /merge <agent> [--discard]"),
            ("/merge nobody", "merge failed:"),
        ):
            before = recorder.text(sid)
            answer = await conn.prompt(session_id=sid, prompt=[text_block(line)])
            assert answer.stop_reason == "end_turn"
            assert recorder.text(sid)[len(before) :].startswith(expected), line
        assert (acp_env.work / "app.py").read_text() == "value = 1\n"

        before = recorder.text(sid)
        answer = await conn.prompt(session_id=sid, prompt=[text_block("/merge writer")])
        assert answer.stop_reason == "end_turn"
        assert "merged" in recorder.text(sid)[len(before) :].lower()
        assert (acp_env.work / "app.py").read_text() == "value = 2\n"
        assert git(acp_env.work, "branch", "--list", "corral/*") == ""
        # No model turn answered any of the commands: the script's second step is its last reply.
        assert recorder.text(sid).count("The writer is done.") == 1


async def test_merge_waits_for_the_leads_own_turn_and_is_a_turn_of_its_own(acp_env: AcpEnv) -> None:
    """A `/merge` sent while the lead's wake turn runs waits for it (its tools may be writing the files
    the merge touches); meanwhile another prompt is refused, and `session/cancel` cancels the merge."""
    busy = {
        **LATER,
        "steps": [
            LATER["steps"][0],
            {"text": "Reader is working."},
            {  # the wake turn: a tool call the editor sees, then a model request busy until cancelled
                "expect": {"context_contains": ["Agent result · agent=reader"]},
                "tool_calls": [{"name": "ls", "args": {"path": "."}}],
                "otherwise": {"text": "Reader is working."},
            },
            {"delay_ms": 600_000, "text": "never"},
        ],
    }
    acp_env.script("busy", busy)
    async with acp_env.server(model="scripted/busy") as (conn, _process, recorder):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("start the reader")])
        (acp_env.work / "go").touch()
        await recorder.until(
            lambda: any(str(c.get("title", "")).startswith("ls") for c in recorder.tool_calls(sid).values())
        )  # the lead's wake turn is running
        merge = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("/merge reader")]))
        with pytest.raises(RequestError, match="a prompt turn is running"):
            for _ in range(1000):  # until the server holds the merge as its turn (bounded)
                await conn.prompt(session_id=sid, prompt=[text_block("/agents")])
        assert not merge.done()  # waiting for the lead's wake turn
        await conn.cancel(session_id=sid)
        async with asyncio.timeout(WAIT):
            answer = await merge
        assert answer.stop_reason == "cancelled"
