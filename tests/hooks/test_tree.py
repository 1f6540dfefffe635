"""The user's hooks and rules bind every agent in the tree: the same deny hook blocks the same call for
the lead, a managed agent, a nested helper (an agent a delegating agent started), a teams member and a
tmux worker's agent — each event naming the agent and its owner — and the agent goes on."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from corral.lead import LaunchOptions, launch_session
from corral.orchestration import RESULT_TYPE
from corral.orchestration.surfaces import DelegateParams
from corral.orchestration.surfaces.teams import parse_spawn
from corral.settings import Settings
from tests.orchestration._host_helpers import prepare_env, team, write_script
from tests.runtime._tmux_fixtures import tmux_socket

__all__ = ["tmux_socket"]

LS = {"tool_calls": [{"name": "ls", "args": {"path": "."}}]}
SAW = {"text": "saw: {{ last_tool_output }}"}
LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    prepare_env(tmp_path, monkeypatch)
    return tmp_path


def deny_ls(tmp: Path) -> dict[str, Any]:
    """`[hooks]` with one PreToolUse hook on `LS` (Claude Code's name of corral's `ls`) that logs the
    event and blocks with exit code 2."""
    script = tmp / "no-ls.py"
    script.write_text(
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        f"with open({str(tmp / 'events.jsonl')!r}, 'a') as log:\n"
        "    log.write(json.dumps(event) + '\\n')\n"
        "sys.stderr.write('no ls for ' + event['agent_label'])\n"
        "sys.exit(2)\n"
    )
    return {"PreToolUse": [{"matcher": "LS", "hooks": [{"type": "command", "command": f"{sys.executable} {script}"}]}]}


def events(tmp: Path) -> list[dict[str, Any]]:
    path = tmp / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def tool_results(session_path: str | Path | None, tool: str) -> list[dict[str, Any]]:
    assert session_path is not None
    found = []
    for line in Path(session_path).read_text().splitlines():
        entry = json.loads(line)
        message = entry.get("message") or {}
        if entry.get("type") == "message" and message.get("role") == "toolResult" and message.get("toolName") == tool:
            found.append(message)
    return found


def blocked(result: dict[str, Any], label: str) -> bool:
    text = "".join(block.get("text", "") for block in result["content"])
    return result["isError"] is True and text == f"ls was not run: no ls for {label}"


async def test_the_lead_is_bound(env: Path) -> None:
    config = env / "config" / "corral"
    config.mkdir(parents=True)
    hook = deny_ls(env)["PreToolUse"][0]["hooks"][0]["command"]
    (config / "settings.toml").write_text(
        f'[[hooks.PreToolUse]]\nmatcher = "LS"\nhooks = [{{ type = "command", command = {json.dumps(hook)} }}]\n'
    )
    write_script(env, "lead-ls", {"steps": [LS, SAW]})
    launched = launch_session(LaunchOptions(cwd=env / "work", model="scripted/lead-ls", surfaces=[]))
    try:
        await launched.agent.prompt("go")
        assert launched.agent.last_assistant_text() == "saw: ls was not run: no ls for lead"
        [result] = tool_results(launched.session.path, "ls")
        assert blocked(result, "lead")
    finally:
        launched.session.close()
    [event] = events(env)
    session_id = launched.session.session_id
    assert (event["agent_id"], event["agent_label"], event["agent_type"]) == (session_id, "lead", "lead")
    assert event["parent_agent_id"] is None and event["lead_session_id"] == session_id
    assert event["session_id"] == session_id and event["tool_name"] == "LS" and event["corral_tool_name"] == "ls"


async def test_a_managed_agent_and_a_nested_helper_are_bound(env: Path) -> None:
    delegate_scout = {
        "tool_calls": [{"name": "agent", "args": {"action": "delegate", "definition": "scout", "task": "look"}}]
    }
    agents = {
        "scout": [LS, SAW],
        "implementer": [delegate_scout, {"text": "waiting"}, {"text": "implementer done"}],
    }
    write_script(env, "team", {**LEAD, "agents": agents})
    async with team(env, "team", settings=Settings.model_validate({"hooks": deny_ls(env)})) as t:
        scout = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
        assert "saw: ls was not run: no ls for scout" in result["content"]
        implementer = await t.controller.delegate(t.caller, DelegateParams(definition="implementer", task="build"))
        await t.quiet()
        generations = t.host.kernel.generations(include_finalized=True)
        nested = next(g for g in generations if g.parent_run_id == implementer.run_id)
        assert nested.label == "scout" and nested.owner_session_id == implementer.session_id
        [nested_result] = tool_results(nested.session_path, "ls")
        assert blocked(nested_result, "scout")
    lead = t.caller.session_id
    by_agent = {e["agent_id"]: e for e in events(env)}
    assert set(by_agent) == {scout.run_id, nested.run_id}
    assert by_agent[scout.run_id]["parent_agent_id"] == lead
    assert by_agent[scout.run_id]["agent_type"] == "scout"
    assert by_agent[nested.run_id]["parent_agent_id"] == implementer.run_id
    assert by_agent[nested.run_id]["lead_session_id"] == lead


async def test_a_teams_member_is_bound(env: Path) -> None:
    report = {"tool_calls": [{"name": "report_and_exit", "args": {"content": "done", "outcome": "succeeded"}}]}
    write_script(env, "team", {**LEAD, "agents": {"member": [LS, report]}})
    settings = Settings.model_validate({"hooks": deny_ls(env)})
    async with team(env, "team", settings=settings, surfaces=("teams",)) as t:
        spawned = await t.host.teams.spawning.spawn(t.caller, parse_spawn({"name": "member", "prompt": "look"}))
        await t.quiet()
        generation = t.host.kernel.get_generation(spawned.run_id)
        assert generation is not None
        [result] = tool_results(generation.session_path, "ls")
        assert blocked(result, "member")
    [event] = events(env)
    assert (event["agent_label"], event["agent_type"]) == ("member", generation.definition)
    assert event["parent_agent_id"] == t.caller.session_id


async def test_a_tmux_worker_s_agent_is_bound(env: Path, tmux_socket: Path) -> None:
    write_script(env, "team", {**LEAD, "agents": {"scout": [LS, SAW]}})
    settings = Settings.model_validate({"runtime": "tmux", "hooks": deny_ls(env)})
    async with team(env, "team", settings=settings, tmux_socket=tmux_socket) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.runtime_kind == "tmux"
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
        assert "saw: ls was not run: no ls for scout" in result["content"]
    [event] = events(env)
    assert (event["agent_id"], event["parent_agent_id"]) == (started.run_id, t.caller.session_id)
