"""`corral acp` against the ACP SDK's client: initialize, a prompt whose lead delegates, cancel, load."""

from __future__ import annotations

from .conftest import AcpEnv, text_block


async def test_initialize_names_corral_and_offers_load_session(acp_env: AcpEnv) -> None:
    async with acp_env.server() as (conn, _process, _recorder):
        answer = await conn.initialize(protocol_version=1)
    assert answer.protocol_version == 1
    assert answer.agent_info is not None and answer.agent_info.name == "corral"
    assert answer.agent_capabilities is not None and answer.agent_capabilities.load_session is True


async def test_a_prompt_streams_the_leads_turn_and_the_delegated_agent_completes_with_its_result(
    acp_env: AcpEnv,
) -> None:
    async with acp_env.server() as (conn, _process, recorder):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])
        answer = await conn.prompt(
            session_id=session.session_id, prompt=[text_block("what is in the README?")]
        )
        assert answer.stop_reason == "end_turn"
        sid = session.session_id
        assert "I'll ask a scout to read the README" in recorder.text(sid)

        def scout_done() -> bool:
            calls = [c for c in recorder.tool_calls(sid).values() if c.get("kind") == "think"]
            return bool(calls) and calls[0].get("status") == "completed"

        await recorder.until(scout_done)
        (scout,) = [c for c in recorder.tool_calls(sid).values() if c.get("kind") == "think"]
    assert scout["title"].startswith("delegate: reader")
    assert "A sample project for corral acp." in scout["text"]  # the scout's result, as the lead got it
    assert scout["raw_output"]["kind"] == "result"
