"""ACP agents as managed agents: delegated through the `agent` tool's controller, run by a real host,
against the scripted fake ACP agent (`fake_acp_agent.py`, no model, no npm)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from corral.harness.acp import SESSION_ENTRY
from corral.orchestration import ASK_TYPE, RESULT_TYPE, InvalidRequestError
from corral.orchestration.kernel._transcript import read_transcript
from corral.orchestration.surfaces import (
    CloseParams,
    ContinueParams,
    DelegateParams,
    InterruptParams,
    ReplyParams,
    SteerParams,
    TranscriptParams,
)
from corral.orchestration.surfaces.agent._render import render_list
from corral.session import CustomEntry, SessionManager
from tests._waits import eventually
from tests.orchestration._host_helpers import Team, prepare_env, team, write_script

FAKE = Path(__file__).with_name("fake_acp_agent.py")
LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}


def _define(env: Path, name: str, **fields: object) -> None:
    agents = env / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    front = {"name": name, "description": "a fake ACP agent", **fields}
    (agents / f"{name}.md").write_text(f"---\n{json.dumps(front)}\n---\n")


@pytest.fixture
def acp_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private corral home with the `fake` ACP definition, the lead's script, and the fake agent's log."""
    prepare_env(tmp_path, monkeypatch)
    env = tmp_path
    _define(env, "fake", harness="acp", command=[sys.executable, str(FAKE)], runtime="inprocess")
    write_script(env, "lead", LEAD)
    monkeypatch.setenv("FAKE_ACP_LOG", str(env / "fake.jsonl"))
    return env


def _logged(env: Path, method: str) -> bool:
    log = env / "fake.jsonl"
    return log.exists() and any(
        json.loads(line).get("method") == method for line in log.read_text().splitlines()
    )


def _gone(pid: int) -> bool:
    """No such process (a zombie whose parent has not reaped it counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"


def _results(t: Team) -> list[str]:
    return [str(entry["content"]) for entry in t.lead_entries(RESULT_TYPE)]


async def test_the_final_answer_is_delivered_once_and_the_turn_is_in_the_transcript(acp_env: Path) -> None:
    async with team(acp_env, "lead") as t:
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="fake", task="TOOL: read notes.txt")
        )
        await t.quiet()
        results = _results(t)
        assert len(results) == 1 and "The notes say 42." in results[0]
        assert t.lead_entries(RESULT_TYPE)[0]["details"]["request_id"] == started.request_id
        assert started.session_path is not None
        transcript = read_transcript(Path(started.session_path), started.session_id).text
        for seen in ("TOOL: read notes.txt", "Reading the file.", "the notes say 42", "The notes say 42."):
            assert seen in transcript
        with SessionManager.open(Path(started.session_path), read_only=True) as saved:
            assert saved.is_managed
            context = saved.build_context()
            assert context.model is not None and context.model.provider == "acp"
            assert [m.role for m in context.messages] == ["user", "assistant", "toolResult", "assistant"]


async def test_interrupt_cancels_the_turn_and_the_assignment_goes_on(acp_env: Path) -> None:
    async with team(acp_env, "lead") as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="fake", task="SLOW work"))
        await eventually(lambda: _logged(acp_env, "session/prompt"))
        await t.controller.interrupt(t.caller, InterruptParams(agent="fake", message="Say hello instead"))
        await t.quiet()
        assert _logged(acp_env, "session/cancel")
        results = _results(t)
        assert len(results) == 1 and "Hello from the fake agent." in results[0]
        assert started.session_path is not None
        assert _stop_reasons(started.session_path) == ["aborted", "stop"]


@pytest.mark.parametrize(
    ("answer", "outcome"), [("allow ONCE", "permitted: allow-once"), (" reject-once ", "denied: reject-once")]
)
async def test_a_permission_request_is_an_ask_and_the_reply_selects_an_option(
    acp_env: Path, answer: str, outcome: str
) -> None:
    async with team(acp_env, "lead") as t:
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="fake", task="PERMISSION please")
        )
        await t.quiet()  # quiet: the agent is blocked on its question
        asks = t.lead_entries(ASK_TYPE)
        assert len(asks) == 1
        assert "touch created.txt" in asks[0]["content"]
        assert (
            "Allow once (id allow-once)" in asks[0]["content"]
            and "Reject (id reject-once)" in asks[0]["content"]
        )
        live = (await t.controller.transcript(t.caller, TranscriptParams(agent="fake"))).to_details()
        assert "PERMISSION please" in live["transcript"]  # messages are written once complete
        with pytest.raises(InvalidRequestError) as refused:
            await t.controller.reply(t.caller, ReplyParams(agent="fake", message="yes go ahead"))
        assert "Allow once (id allow-once)" in str(refused.value) and "Reject (id reject-once)" in str(
            refused.value
        )
        assert t.host.kernel.pending_ask(asks[0]["details"]["run_id"]) is not None  # still open
        await t.controller.reply(t.caller, ReplyParams(agent="fake", message=answer))
        await t.quiet()
        results = _results(t)
        assert len(results) == 1 and outcome in results[0]
        assert len(t.lead_entries(ASK_TYPE)) == 1
        assert started.session_path is not None
        transcript = read_transcript(Path(started.session_path), started.session_id).text
        assert "touch created.txt" in transcript and outcome in transcript


async def test_close_ends_the_agent_process_tree(acp_env: Path) -> None:
    pids = acp_env / "pids"
    async with team(acp_env, "lead") as t:
        await t.controller.delegate(
            t.caller, DelegateParams(definition="fake", task=f"SPAWN {pids} and wait")
        )
        await eventually(lambda: pids.exists() and len(pids.read_text().split()) == 2)
        agent_pid, sleeper_pid = (int(p) for p in pids.read_text().split())
        assert not _gone(agent_pid) and not _gone(sleeper_pid)
        closed = await t.controller.close(t.caller, CloseParams(agent="fake"))
        assert closed.closed == ("fake",) and not closed.cleanup_errors
        await eventually(lambda: _gone(agent_pid) and _gone(sleeper_pid))
        assert _results(t) == []


async def test_an_unknown_harness_is_refused_naming_the_allowed_ones(acp_env: Path) -> None:
    _define(acp_env, "odd", harness="claude", command=["claude"])
    async with team(acp_env, "lead") as t:
        with pytest.raises(InvalidRequestError) as refused:
            await t.controller.delegate(t.caller, DelegateParams(definition="odd", task="hi"))
        message = str(refused.value)
        assert "'claude'" in message
        for name in ("corral", "acp", "claude-code", "codex", "opencode", "gemini", "goose"):
            assert name in message
        assert t.host.kernel.snapshot().generations == ()


async def test_an_acp_agent_on_another_runtime_is_refused(acp_env: Path) -> None:
    _define(acp_env, "panes", harness="acp", command=[sys.executable, str(FAKE)], runtime="tmux")
    async with team(acp_env, "lead") as t:
        with pytest.raises(InvalidRequestError, match="in-process only") as refused:
            await t.controller.delegate(t.caller, DelegateParams(definition="panes", task="hi"))
        assert "runtime: inprocess" in (refused.value.next_action or "")
        assert t.host.kernel.snapshot().generations == ()


def _session_entries(path: str | None) -> list[object]:
    assert path is not None
    with SessionManager.open(Path(path), read_only=True) as saved:
        return [
            e.data for e in saved.entries if isinstance(e, CustomEntry) and e.custom_type == SESSION_ENTRY
        ]


@pytest.mark.parametrize("loads", [True, False], ids=["session-load", "seeded"])
async def test_continue_goes_on_with_the_agents_earlier_session(
    acp_env: Path, monkeypatch: pytest.MonkeyPatch, loads: bool
) -> None:
    if loads:
        (acp_env / "acp-sessions").mkdir()
        monkeypatch.setenv("FAKE_ACP_SESSIONS", str(acp_env / "acp-sessions"))
    async with team(acp_env, "lead") as t:
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="fake", task="first task ALPHA")
        )
        await t.quiet()
        again = await t.controller.continue_(
            t.caller, ContinueParams(session=started.session_id, task="RECALL")
        )
        await t.quiet()
        assert again.session_id == started.session_id and again.request_id != started.request_id
        results = _results(t)
        assert len(results) == 2 and "I remember: " in results[1] and "first task ALPHA" in results[1]
        assert [t.lead_entries(RESULT_TYPE)[i]["details"]["request_id"] for i in (0, 1)] == [
            started.request_id,
            again.request_id,
        ]
        hows = [e["how"] for e in _session_entries(started.session_path)]  # type: ignore[index]
        assert hows == ["new", "loaded" if loads else "seeded"]
        assert _logged(acp_env, "session/load") is loads
        transcript = read_transcript(Path(str(started.session_path)), started.session_id).text
        assert "first task ALPHA" in transcript and "RECALL" in transcript


async def test_steer_is_the_next_prompt_after_the_turn(acp_env: Path) -> None:
    flag = acp_env / "go"
    async with team(acp_env, "lead") as t:
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="fake", task=f"WAIT {flag}")
        )
        await eventually(lambda: _logged(acp_env, "session/prompt"))
        await t.controller.steer(t.caller, SteerParams(agent="fake", message="RECALL what you were asked"))
        flag.touch()
        await t.quiet()
        results = _results(t)
        assert len(results) == 1 and f"I remember: WAIT {flag}" in results[0]
        prompts = [json.loads(line) for line in (acp_env / "fake.jsonl").read_text().splitlines()]
        texts = [m["params"]["prompt"][0]["text"] for m in prompts if m.get("method") == "session/prompt"]
        assert texts[0] == f"WAIT {flag}" and "RECALL what you were asked" in texts[1] and len(texts) == 2
        assert not _logged(acp_env, "session/cancel")
        assert started.session_path is not None
        assert _stop_reasons(started.session_path) == ["stop", "stop"]


async def test_an_agent_that_reports_no_usage_is_listed_unmetered(acp_env: Path) -> None:
    first, second = acp_env / "first", acp_env / "second"
    async with team(acp_env, "lead") as t:
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="fake", task=f"WAIT {first}")
        )
        await eventually(lambda: _logged(acp_env, "session/prompt"))
        await t.controller.steer(t.caller, SteerParams(agent="fake", message=f"WAIT {second}"))
        first.touch()  # the first turn ends without usage; the steer's turn keeps the agent running
        await t.host.wait_for(
            lambda: bool(t.host.extensions.status_fields(started.run_id).get("budget", {}).get("unmetered")),
            60,
        )
        listed = (await t.controller.list(t.caller)).to_details()
        assert "unmetered: the agent reports no usage" in render_list(listed)
        second.touch()
        await t.quiet()
        (result,) = t.lead_entries(RESULT_TYPE)
        assert result["details"]["budget"]["unmetered"] is True


async def test_a_time_limit_ends_the_agents_turn_and_the_result_says_so(acp_env: Path) -> None:
    _define(
        acp_env,
        "timed",
        harness="acp",
        command=[sys.executable, str(FAKE)],
        runtime="inprocess",
        budget={"agent_minutes": 0.005},
    )
    async with team(acp_env, "lead") as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="timed", task="SLOW and never done"))
        await t.quiet()  # the SLOW turn never ends on its own: the 0.3 s limit ends it
        (result,) = t.lead_entries(RESULT_TYPE)
        assert result["details"].get("budget_exhausted") is True
        assert "agent_minutes" in str(result["content"])


async def test_the_definitions_model_and_thinking_reach_the_agents_session(acp_env: Path) -> None:
    _define(
        acp_env,
        "large",
        harness="acp",
        command=[sys.executable, str(FAKE)],
        runtime="inprocess",
        model="fake/fake-large",
        thinking="low",
    )
    async with team(acp_env, "lead") as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="large", task="CONFIG"))
        await t.quiet()
        results = _results(t)
        assert len(results) == 1 and "model=fake/fake-large thought=low" in results[0]


async def test_a_read_only_definitions_agent_may_read_but_not_write(acp_env: Path) -> None:
    _define(
        acp_env,
        "reader",
        harness="acp",
        command=[sys.executable, str(FAKE)],
        runtime="inprocess",
        tools=["read"],
    )
    async with team(acp_env, "lead") as t:
        work = Path(t.caller.cwd)
        (work / "notes.txt").write_text("the notes")
        await t.controller.delegate(t.caller, DelegateParams(definition="reader", task="READ notes.txt"))
        await t.quiet()
        await t.controller.delegate(t.caller, DelegateParams(definition="reader", task="WRITE made.txt hi"))
        await t.quiet()
        results = _results(t)
        assert "read: the notes" in results[0]
        assert "refused: this agent is read-only" in results[1]
        assert not (work / "made.txt").exists()


def _stop_reasons(session_path: str) -> list[object]:
    """The stop reason of each assistant message in a saved session, in order."""
    with SessionManager.open(Path(session_path), read_only=True) as saved:
        return [
            getattr(m, "stop_reason", None) for m in saved.build_context().messages if m.role == "assistant"
        ]
