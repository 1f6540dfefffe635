"""The real ACP agents from npm (pinned, `_install.py`) as corral managed agents, each against the
scripted fake model (`_model.py`): delegate → streamed reply → the result delivered once; a permission
request becomes the owner's ask, answered by a `reply` naming an option; `interrupt` sends
`session/cancel` and ends the turn; `close` ends the agent's whole process tree.

Each agent starts from its preset (`harness: <name>`, the program found on `PATH`), with the fake
model's address in the environment the way a user would give it. A missing agent is `unavailable`
(installed here on first use; `.ci/run` installs them ahead)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.orchestration import ASK_TYPE, RESULT_TYPE
from corral.orchestration.surfaces import CloseParams, DelegateParams, InterruptParams, ReplyParams
from corral.session import SessionManager
from corral.settings import Settings
from tests._waits import eventually
from tests.e2e._pi_real import cache_root
from tests.harness.real._install import REAL_AGENTS, RealAgent, install, provider_environment
from tests.harness.real._model import AFTER_TOOL, HELLO, ScriptedModel
from tests.orchestration._host_helpers import Team, prepare_env, team, write_script

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}
AGENT_WAIT = 180.0
"""Bound on one step of a real agent (its start-up is seconds idle; the suite must hold at load 8+)."""
MARK = "CORRAL_REAL_ACP_TEST"
"""An environment variable every process of the agent's tree inherits: how the test finds them."""


@pytest.fixture(params=list(REAL_AGENTS))
def real_agent(request: pytest.FixtureRequest) -> RealAgent:
    return install(str(request.param))


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as scripted:
        yield scripted


@pytest.fixture
def agent_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_agent: RealAgent, model: ScriptedModel
) -> Iterator[tuple[Path, str]]:
    """A private corral home with the definition `real` of the agent's preset; returns it and the mark."""
    prepare_env(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", real_agent.search_path())
    monkeypatch.setenv("CORRAL_TEST_CACHE", str(cache_root()))  # before HOME moves
    home = tmp_path / "agent-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for xdg in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(xdg, str(home / xdg.lower()))
    mark = uuid.uuid4().hex
    monkeypatch.setenv(MARK, mark)
    provider = provider_environment(real_agent.harness, model.server, tmp_path)
    for key, value in provider.items():
        monkeypatch.setenv(key, value)
    agents = tmp_path / "config" / "agents"
    agents.mkdir(parents=True)
    front = {
        "name": "real",
        "description": "a real ACP agent",
        "harness": real_agent.harness,
        "runtime": "inprocess",
    }
    (agents / "real.md").write_text(f"---\n{json.dumps(front)}\n---\n")
    write_script(tmp_path, "lead", LEAD)
    yield tmp_path, mark
    if "CODEX_HOME" in provider:  # outside the test's tmp_path (Codex refuses /tmp)
        shutil.rmtree(provider["CODEX_HOME"], ignore_errors=True)


def _tree(mark: str) -> set[int]:
    """Live processes whose environment carries `mark` (a dying process whose memory is gone has no
    environment to read: `_gone` decides for the ones seen alive)."""
    needle = f"{MARK}={mark}".encode()
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0") and not _gone(int(entry.name)):
                found.add(int(entry.name))
        except OSError:
            continue
    return found


def _gone(pid: int) -> bool:
    """`pid` has exited and been reaped (a zombie counts as gone only when another process than this
    one is its parent, which it may never reap)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return True
    return fields[0] == "Z" and int(fields[1]) != os.getpid()


def _all_gone(seen: set[int], mark: str) -> bool:
    return all(_gone(pid) for pid in seen) and not _tree(mark)


def _results(t: Team) -> list[str]:
    return [str(entry["content"]) for entry in t.lead_entries(RESULT_TYPE)]


async def _quiet(t: Team) -> None:
    await asyncio.wait_for(t.host.wait_until_quiet(t.caller.session_id), AGENT_WAIT)


ALLOW_ONCE = {
    "claude-code": "Yes",
    "goose": "allow_once",
    "opencode": "Allow once",
    "codex": "Yes, proceed",
    "gemini": "Allow",
}
"""The name each agent gives its option that allows a tool call once (`reply` names it)."""


def _options(ask: str) -> list[str]:
    """The options an ask lists (`Options: Name (id x); y; …`), by name."""
    listed = next(line for line in ask.splitlines() if line.startswith("Options: "))
    return [re.sub(r" \(id [^)]+\)$", "", option) for option in listed.removeprefix("Options: ").split("; ")]


@pytest.mark.timeout(900)
async def test_a_real_agent_asks_streams_delivers_once_cancels_and_is_closed(
    agent_env: tuple[Path, str], model: ScriptedModel, real_agent: RealAgent
) -> None:
    env, mark = agent_env
    work = env / "work"
    async with team(env, "lead") as t:
        # 1. A permission request is an ask; the reply naming "allow once" lets the command run.
        first = await t.controller.delegate(
            t.caller, DelegateParams(definition="real", task="RUN_CMD touch made-by-agent.txt ;;")
        )
        try:
            await eventually(lambda: bool(t.lead_entries(ASK_TYPE) or _results(t)), timeout=AGENT_WAIT)
            assert len(t.lead_entries(ASK_TYPE)) == 1
        except (TimeoutError, AssertionError):
            stderr = Path(str(first.session_path)).with_suffix(".acp-stderr.log")
            raise AssertionError(
                f"no ask (results: {_results(t)}); model requests: {model.describe()}; stderr: "
                f"{stderr.read_text()[-3000:] if stderr.exists() else ''}"
            ) from None
        seen = _tree(mark)  # the agent waits for the answer: its tree is alive
        assert seen
        ask = str(t.lead_entries(ASK_TYPE)[0]["content"])
        assert "touch made-by-agent.txt" in ask
        allow = ALLOW_ONCE[real_agent.harness]
        assert allow in _options(ask), ask
        await t.controller.reply(t.caller, ReplyParams(agent=first.agent, message=allow.upper()))
        await _quiet(t)
        results = _results(t)
        assert len(results) == 1 and AFTER_TOOL in results[0], (results, model.describe())
        assert (work / "made-by-agent.txt").exists()
        assert t.lead_entries(RESULT_TYPE)[0]["details"]["request_id"] == first.request_id
        await eventually(lambda: _all_gone(seen, mark), timeout=AGENT_WAIT)  # the assignment ended

        # 2. An interrupt mid-stream sends session/cancel; the turn ends aborted, the new prompt answers.
        second = await t.controller.delegate(t.caller, DelegateParams(definition="real", task="SLOW please"))
        await eventually(lambda: model.saw("slow"), timeout=AGENT_WAIT)
        seen = _tree(mark)
        await t.controller.interrupt(
            t.caller, InterruptParams(agent=second.agent, message="Stop that; just say HELLO.")
        )
        await _quiet(t)
        results = _results(t)
        assert len(results) == 2 and HELLO in results[1], (results, model.describe())
        assert second.session_path is not None
        with SessionManager.open(Path(second.session_path), read_only=True) as saved:
            stops = [
                getattr(m, "stop_reason", None)
                for m in saved.build_context().messages
                if m.role == "assistant"
            ]
        assert "aborted" in stops and stops[-1] == "stop"
        await eventually(lambda: _all_gone(seen, mark), timeout=AGENT_WAIT)

        # 3. close ends the agent's whole process tree, mid-turn.
        third = await t.controller.delegate(t.caller, DelegateParams(definition="real", task="SLOW again"))
        await eventually(lambda: model.served.count("slow") == 2, timeout=AGENT_WAIT)
        seen = _tree(mark)
        assert seen
        closed = await t.controller.close(t.caller, CloseParams(agent=third.agent))
        assert closed.closed == (third.agent,) and not closed.cleanup_errors
        await eventually(lambda: _all_gone(seen, mark), timeout=AGENT_WAIT)
        assert len(_results(t)) == 2


@pytest.mark.timeout(900)
@pytest.mark.parametrize("real_agent", ["claude-code", "codex", "opencode", "goose"], indirect=True)
async def test_a_real_agents_permission_request_is_denied_by_the_users_rule_without_an_ask(
    agent_env: tuple[Path, str], model: ScriptedModel, real_agent: RealAgent
) -> None:
    """The agent (configured to ask before a command) asks permission for `rm -rf x`; the
    `[permissions]` deny rule rejects it in corral, with no question to the owner, and x stays.
    Each agent describes the call its own way (Codex: an argv `["/bin/bash", "-lc", …]`; goose: kind
    `other`, `rawInput.command`). Gemini CLI (kind `execute`, the command only in the title) passes
    too, but is left out here: its process, SIGKILLed at the end of the assignment since it does not
    exit when its input closes, sometimes leaves its stdout pipe to the garbage collector under load
    (the `ResourceWarning` then fails the run), an existing weakness of `_rpc.py`'s reaping."""
    env, mark = agent_env
    work = env / "work"
    (work / "x").mkdir()
    (work / "x" / "keep.txt").write_text("kept")
    settings = Settings.model_validate({"permissions": {"deny": ["Bash(rm:*)"]}})
    async with team(env, "lead", settings=settings) as t:
        started = await t.controller.delegate(
            t.caller, DelegateParams(definition="real", task="RUN_CMD rm -rf x ;;")
        )
        await eventually(lambda: model.saw("tool"), timeout=AGENT_WAIT)
        seen = _tree(mark)  # the agent is asking, or about to: its tree is alive
        await _quiet(t)
        assert t.lead_entries(ASK_TYPE) == []
        assert len(_results(t)) == 1, (model.describe(),)
        assert (work / "x" / "keep.txt").read_text() == "kept"
        assert started.session_path is not None
        with SessionManager.open(Path(started.session_path), read_only=True) as saved:
            shown = [
                "".join(getattr(block, "text", "") for block in m.content)
                for m in saved.build_context().messages
                if m.role == "toolResult"
            ]
        assert any("the permission rule `Bash(rm:*)` denies it" in text for text in shown), shown
        await eventually(lambda: _all_gone(seen, mark), timeout=AGENT_WAIT)  # ended, and reaped


@pytest.mark.timeout(900)
@pytest.mark.parametrize("real_agent", ["codex"], indirect=True)
async def test_a_real_agent_gets_the_users_mcp_server_and_offers_its_tools_to_its_model(
    agent_env: tuple[Path, str], model: ScriptedModel, real_agent: RealAgent
) -> None:
    """`[mcp_servers.tiny]` reaches Codex through `session/new`: Codex starts the server itself and
    its model is offered the server's tools."""
    env, mark = agent_env
    tiny = Path(__file__).parents[2] / "mcp_servers" / "tiny_server.py"
    settings = Settings.model_validate(
        {"mcp_servers": {"tiny": {"command": sys.executable, "args": [str(tiny)]}}}
    )
    async with team(env, "lead", settings=settings) as t:
        await t.controller.delegate(t.caller, DelegateParams(definition="real", task="HELLO"))
        await eventually(lambda: model.saw("hello"), timeout=AGENT_WAIT)
        seen = _tree(mark)
        await _quiet(t)
        assert len(_results(t)) == 1
        await eventually(lambda: _all_gone(seen, mark), timeout=AGENT_WAIT)
    offered = {
        f"{tool['name']}.{inner.get('name')}" if tool.get("type") == "namespace" else str(tool.get("name"))
        for request in model.server.requests
        for tool in (request.body.get("tools") or [] if isinstance(request.body, dict) else [])
        if isinstance(tool, dict)
        for inner in (tool.get("tools") or [{}] if tool.get("type") == "namespace" else [{}])
        if isinstance(inner, dict)
    }
    assert {"mcp__tiny.echo", "mcp__tiny.add"} <= offered, offered  # Codex: a namespace per server
