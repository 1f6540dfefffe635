"""A SIGKILL of `corral acp` between a result's arrival in the lead's session and its display."""

from __future__ import annotations

import json

from .conftest import AcpEnv, Recorder, shown_results, text_block


async def test_a_result_killed_before_its_display_is_shown_once_by_the_next_load(acp_env: AcpEnv) -> None:
    crashing = dict(acp_env.vars, CORRAL_FAULTS="acp_before_show")
    first = Recorder()
    sid = ""
    async with acp_env.server(recorder=first, env=crashing) as (conn, process, _recorder):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id
        try:
            await conn.prompt(session_id=sid, prompt=[text_block("what is in the README?")])
        except Exception:
            pass
        assert await process.wait() == -9
    assert shown_results(first, sid) == 0  # killed before the result reached the editor
    session_file = next((acp_env.home / "sessions").rglob(f"*{sid}*.jsonl"))
    entries = [json.loads(line) for line in session_file.read_text().splitlines() if line.strip()]
    assert [e for e in entries if e.get("customType") == "corral-agent-result"]  # it had arrived
    assert not [e for e in entries if e.get("customType") == "corral-lead-cursor"]  # never shown

    replayed = Recorder()
    async with acp_env.server(recorder=replayed) as (conn, _process, _recorder):
        await conn.initialize(protocol_version=1)
        await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        assert shown_results(replayed, sid) == 1
        (scout,) = [c for c in replayed.tool_calls(sid).values() if c.get("kind") == "think"]
        assert scout["status"] == "completed" and "A sample project for corral acp." in scout["text"]
    entries = [json.loads(line) for line in session_file.read_text().splitlines() if line.strip()]
    results = [e for e in entries if e.get("customType") == "corral-agent-result"]
    assert len(results) == 1  # recovery delivered nothing twice
    cursors = [e for e in entries if e.get("customType") == "corral-lead-cursor"]
    assert cursors and cursors[-1]["data"]["after"] == results[0]["id"]
