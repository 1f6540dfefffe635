"""An agent's question becomes `session/request_permission`; no answer is a rejection, never a hang."""

from __future__ import annotations

import pytest

from .conftest import ASKING, AcpEnv, Recorder, text_block


@pytest.mark.parametrize(
    ("answer", "result"),
    [("allow", "allowed"), ("reject", "refused"), (None, "refused"), ("hang", "refused")],
    ids=["allowed", "rejected", "dismissed", "headless"],
)
async def test_an_ask_is_a_permission_request_and_its_answer_reaches_the_agent(
    acp_env: AcpEnv, answer: str | None, result: str
) -> None:
    acp_env.script("asking", ASKING)
    env = dict(acp_env.vars, CORRAL_ACP_ASK_TIMEOUT="1")
    recorder = Recorder(answer=answer)
    async with acp_env.server(model="scripted/asking", recorder=recorder, env=env) as (conn, _p, _r):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("go")])
        await recorder.until(lambda: bool(recorder.asked))
        await recorder.until(lambda: recorder.agent_statuses(sid) == ["completed"])
        (asker,) = [c for c in recorder.tool_calls(sid).values() if c.get("kind") == "think"]
    (asked,) = recorder.asked
    assert "May I read README.md?" in asked.title
    assert asker["text"].rstrip().endswith(result)
