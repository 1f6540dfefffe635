"""`corral acp` against the ACP SDK's client: initialize, a prompt whose lead delegates, cancel, load."""

from __future__ import annotations

import asyncio
import signal

from acp.schema import AvailableCommandsUpdate, ToolCallProgress, UserMessageChunk

from .conftest import LATER, SLOW, SPAWNING, WAIT, AcpEnv, Recorder, shown_results, text_block


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
        # `/agents` is answered by the server itself, without a model turn.
        commands = [u for u in recorder.of(sid) if isinstance(u, AvailableCommandsUpdate)]
        assert [c.name for c in commands[0].available_commands] == ["agents", "merge"]
        listed = await conn.prompt(session_id=sid, prompt=[text_block("/agents")])
        assert listed.stop_reason == "end_turn"
        assert recorder.text(sid).endswith("No agents.")  # its result was delivered: nothing is left
    assert scout["title"].startswith("delegate: reader")
    assert "A sample project for corral acp." in scout["text"]  # the scout's result, as the lead got it
    assert scout["raw_output"]["kind"] == "result"


async def test_cancel_stops_the_turn_and_the_prompt_answers_cancelled(acp_env: AcpEnv) -> None:
    acp_env.script("slow", SLOW)
    async with acp_env.server(model="scripted/slow") as (conn, _process, recorder):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("go")]))
        await recorder.until(
            lambda: any(c.get("status") == "completed" for c in recorder.tool_calls(sid).values())
        )
        await conn.cancel(session_id=sid)
        async with asyncio.timeout(WAIT):
            answer = await turn
        assert answer.stop_reason == "cancelled"
        # The server goes on serving: another session opens.
        assert (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id != sid
    assert "never" not in recorder.text(sid)


async def test_a_result_after_the_turn_streams_in_the_leads_wake_turn(acp_env: AcpEnv) -> None:
    acp_env.script("later", LATER)
    async with acp_env.server(model="scripted/later") as (conn, _process, recorder):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("start the reader")])
        assert answer.stop_reason == "end_turn"
        assert "Reader is working" in recorder.text(sid)
        (reader,) = [c for c in recorder.tool_calls(sid).values() if c.get("kind") == "think"]
        assert reader["status"] == "in_progress"
        listed = await conn.prompt(session_id=sid, prompt=[text_block("/agents")])
        assert listed.stop_reason == "end_turn"
        assert "- reader (generalist): working" in recorder.text(sid)
        # Its tool call streams its progress while it works.
        await recorder.until(lambda: "→ bash while [ ! -e go ]" in _all_progress(recorder, sid))
        assert "Waiting for the gate." in _all_progress(recorder, sid)
        (acp_env.work / "go").touch()
        await recorder.until(lambda: "Reader reported back." in recorder.text(sid))
        await recorder.until(lambda: recorder.agent_statuses(sid) == ["completed"])
        (reader,) = [c for c in recorder.tool_calls(sid).values() if c.get("kind") == "think"]
    assert "The gate opened." in reader["text"]


def _all_progress(recorder: Recorder, sid: str) -> str:
    return "\n".join(
        "\n".join(getattr(getattr(c, "content", None), "text", "") for c in (u.content or []))
        for u in recorder.of(sid)
        if isinstance(u, ToolCallProgress)
    )


async def test_load_replays_the_history_once_and_the_result_in_its_tool_call(acp_env: AcpEnv) -> None:
    async with acp_env.server() as (conn, _process, recorder):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("what is in the README?")])
        await recorder.until(lambda: recorder.agent_statuses(sid) == ["completed"])
    replayed = Recorder()
    async with acp_env.server(recorder=replayed) as (conn, _process, _recorder):
        await conn.initialize(protocol_version=1)
        await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        updates = replayed.of(sid)
        prompts = [u for u in updates if isinstance(u, UserMessageChunk)]
        assert [p.content.text for p in prompts] == ["what is in the README?"]
        assert "I'll ask a scout to read the README" in replayed.text(sid)
        scouts = [c for c in replayed.tool_calls(sid).values() if c.get("kind") == "think"]
        assert len(scouts) == 1 and scouts[0]["status"] == "completed"
        assert "A sample project for corral acp." in scouts[0]["text"]
        assert shown_results(replayed, sid) == 1


async def test_a_spawned_teams_agent_is_a_tool_call_that_completes_with_its_report(acp_env: AcpEnv) -> None:
    acp_env.script("spawning", SPAWNING)
    async with acp_env.server("--surfaces", "teams", model="scripted/spawning") as (conn, _process, recorder):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("review")])
        await recorder.until(lambda: recorder.agent_statuses(sid) == ["completed"])
        (lister,) = [c for c in recorder.tool_calls(sid).values() if c.get("kind") == "think"]
    assert lister["title"] == "spawn: lister"
    assert "The directory holds README.md." in lister["text"]
    assert lister["raw_output"]["kind"] == "report"
    assert shown_results(recorder, sid) == 1


async def test_a_result_after_the_editor_left_waits_for_the_next_load_once(acp_env: AcpEnv) -> None:
    acp_env.script("later", LATER)
    async with acp_env.server(model="scripted/later") as (conn, process, recorder):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("start the reader")])
        process.stdin.close()  # the editor is gone; the reader still waits for its gate
        (acp_env.work / "go").touch()
        async with asyncio.timeout(WAIT):
            assert await process.wait() == 0  # it stayed until the reader's result was delivered
    assert shown_results(recorder, sid) == 0
    replayed = Recorder()
    async with acp_env.server(recorder=replayed, model="scripted/later") as (conn, _process, _recorder):
        await conn.initialize(protocol_version=1)
        await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        assert shown_results(replayed, sid) == 1
        (reader,) = [c for c in replayed.tool_calls(sid).values() if c.get("kind") == "think"]
        assert reader["status"] == "completed" and "The gate opened." in reader["text"]
        assert "Reader reported back." in replayed.text(sid)  # the wake turn ran while nobody watched


async def test_continue_reopens_the_newest_session_on_the_first_new_and_sigterm_exits_143(
    acp_env: AcpEnv,
) -> None:
    async with acp_env.server() as (conn, process, recorder):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("what is in the README?")])
        await recorder.until(lambda: recorder.agent_statuses(sid) == ["completed"])
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(WAIT):
            assert await process.wait() == 143
    async with acp_env.server("--continue") as (conn, _process, reopened):
        await conn.initialize(protocol_version=1)
        assert (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id == sid
        await reopened.until(lambda: shown_results(reopened, sid) == 1)
        assert "I'll ask a scout to read the README" in reopened.text(sid)
        # Only the first session/new reopens it.
        assert (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id != sid
