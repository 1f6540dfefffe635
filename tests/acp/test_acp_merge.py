"""`/merge` in `corral acp`: an isolated writer's branch merged from the editor, without a model turn."""

from __future__ import annotations

from tests._ci import require
from tests.orchestration.teams._git_helpers import GIT_ENV, git, make_repo

from .conftest import AcpEnv, text_block

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
