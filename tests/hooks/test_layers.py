"""Per-definition and per-tier permissions: a definition's `permissions:` and a teams tier's
`[teams.tier_permissions.<tier>]` narrow what its agents inherit — a child never gets more than its
parent. In-process children, nested helpers, teams members and tmux workers' agents."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from corral.agent import ToolCheck
from corral.hooks import AgentIdentity, ToolPolicy, policy_of
from corral.orchestration import ASK_TYPE, RESULT_TYPE
from corral.orchestration.definitions._roster import load_roster
from corral.orchestration.host.protocol import LaunchError, ManagedAgentSpec, WorkerLaunch
from corral.orchestration.surfaces import DelegateParams, ReplyParams
from corral.orchestration.surfaces.teams import parse_spawn
from corral.settings import PermissionLayer, PermissionsSettings, Settings
from tests._waits import eventually
from tests.hooks.test_tree import LEAD, LS, SAW, tool_results
from tests.orchestration._host_helpers import prepare_env, team, write_script
from tests.runtime._tmux_fixtures import tmux_socket

__all__ = ["tmux_socket"]

PUSH = {"tool_calls": [{"name": "bash", "args": {"command": "git push origin main"}}]}
AGENT = AgentIdentity("run-1", "fixer", "implementer", "lead-session", "lead-session")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    prepare_env(tmp_path, monkeypatch)
    return tmp_path


def define(tmp: Path, name: str, permissions: dict[str, Any]) -> None:
    """A user-level definition file over the bundled `name`, adding `permissions:`."""
    agents = tmp / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    front = yaml.safe_dump({"name": name, "permissions": permissions})
    (agents / f"{name}.md").write_text(f"---\n{front}---\n")


def text_of(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


# --- the rule: each layer checked, the strictest wins ---------------------------------------------


def gate(tmp_path: Path, settings: dict[str, Any], *layers: dict[str, Any]) -> ToolPolicy:
    s = Settings.model_validate({"permissions": settings})
    stack = [
        PermissionLayer(f"definition `d{i}`", PermissionsSettings.model_validate(r))
        for i, r in enumerate(layers)
    ]
    return ToolPolicy(policy_of(s), AGENT, cwd=tmp_path, layers=stack)


def call(tmp_path: Path, command: str) -> ToolCheck:
    return ToolCheck("call-1", "bash", {"command": command}, "sess-1", None, tmp_path)


async def test_a_child_s_allow_does_not_beat_the_settings_deny_ask_or_default(tmp_path: Path) -> None:
    loose = {"allow": ["Bash"]}
    denied = await gate(tmp_path, {"deny": ["Bash(git push:*)"]}, loose).before_tool(
        call(tmp_path, "git push")
    )
    assert denied.decision == "deny" and denied.reason == "the permission rule `Bash(git push:*)` denies it"
    asked = await gate(tmp_path, {"ask": ["Bash(git push:*)"]}, loose).before_tool(call(tmp_path, "git push"))
    assert asked.decision == "ask"
    default = await gate(tmp_path, {"default": "deny"}, loose).before_tool(call(tmp_path, "ls"))
    assert default.decision == "deny" and "permissions.default denies it" in default.reason
    # and a parent's layer binds its child's the same way
    nested = await gate(tmp_path, {}, {"deny": ["Bash(git push:*)"]}, loose).before_tool(
        call(tmp_path, "git push")
    )
    assert (
        nested.decision == "deny"
        and nested.reason == "the permission rule `Bash(git push:*)` of definition `d0` denies it"
    )


async def test_a_layer_adds_denials_questions_and_a_stricter_default(tmp_path: Path) -> None:
    g = gate(
        tmp_path,
        {"allow": ["Bash"]},
        {"ask": ["Bash(git push:*)"]},
        {"default": "deny", "allow": ["Bash(git *)"]},
    )
    assert (await g.before_tool(call(tmp_path, "git status"))).decision == "allow"
    asked = await g.before_tool(call(tmp_path, "git push"))
    assert (
        asked.decision == "ask"
        and asked.reason == "the permission rule `Bash(git push:*)` of definition `d0` asks for approval"
    )
    outside = await g.before_tool(call(tmp_path, "curl example.com"))
    assert outside.decision == "deny"
    assert (
        outside.reason
        == "no permission rule allows this bash call, and the permissions default of definition `d1` denies it"
    )


# --- definitions and settings ----------------------------------------------------------------------


def test_a_bad_rule_makes_the_definition_invalid_naming_it(tmp_path: Path) -> None:
    define(tmp_path, "implementer", {"deny": ["Bash(git push"]})
    define(tmp_path, "scout", {"allw": ["LS"]})
    define(tmp_path, "reviewer", {"deny": ["Bash(git push:*)"], "default": "ask"})
    roster = load_roster(tmp_path, user_dir=tmp_path / "config" / "agents", trust=False)
    problems = {issue.path.name: issue.problem for issue in roster.issues}
    assert problems["implementer.md"].startswith("permissions.deny: 'Bash(git push' is not a permission rule")
    assert "\n" not in problems["implementer.md"]
    assert (
        problems["scout.md"] == "permissions.allw is not a permissions key; use allow, ask, deny or default"
    )
    reviewer = roster.get("reviewer")
    assert reviewer is not None and reviewer.permissions is not None
    assert (reviewer.permissions.deny, reviewer.permissions.default) == (["Bash(git push:*)"], "ask")
    assert reviewer.metadata()["permissions"] == {"deny": ["Bash(git push:*)"], "default": "ask"}


def test_a_project_cannot_drop_a_tier_s_deny_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from corral.settings import _deep_merge

    user = {"teams": {"tier_permissions": {"read-review": {"deny": ["Bash"], "default": "ask"}}}}
    project = {"teams": {"tier_permissions": {"read-review": {"deny": ["LS"], "default": "allow"}}}}
    merged = Settings.model_validate(_deep_merge(user, project))
    rules = merged.teams.tier_permissions["read-review"]
    assert (rules.deny, rules.default) == (["Bash", "LS"], "ask")


def test_the_launch_carries_the_layers_and_reads_an_older_one_as_none() -> None:
    spec = ManagedAgentSpec("fixer", "implementer", "scripted/x", "off", ("bash",), "", "append")
    layer = PermissionLayer("definition `implementer`", PermissionsSettings(deny=["Bash(git push:*)"]))
    launch = WorkerLaunch.from_json(WorkerLaunch(spec, permissions=(layer,)).to_json())
    assert launch.permissions == (layer,) and launch.version == 3
    old = json.loads(WorkerLaunch(spec).to_json())
    old["version"] = 2
    del old["permissions"]
    assert WorkerLaunch.from_json(json.dumps(old)).permissions == ()
    bad = json.loads(WorkerLaunch(spec, permissions=(layer,)).to_json())
    bad["permissions"][0]["rules"]["deny"] = ["Bash(git push"]
    with pytest.raises(LaunchError, match="permissions"):
        WorkerLaunch.from_json(json.dumps(bad))


# --- the tree ----------------------------------------------------------------------------------------


async def test_a_definition_s_deny_binds_its_agents_only(env: Path) -> None:
    define(env, "implementer", {"deny": ["Bash(git push:*)"]})
    write_script(env, "team", {**LEAD, "agents": {"implementer": [PUSH, SAW], "generalist": [PUSH, SAW]}})
    async with team(env, "team") as t:
        fixer = await t.controller.delegate(t.caller, DelegateParams(definition="implementer", task="push"))
        other = await t.controller.delegate(t.caller, DelegateParams(definition="generalist", task="push"))
        await t.quiet()
        runs = {g.run_id: g for g in t.host.kernel.generations(include_finalized=True)}
        [denied] = tool_results(runs[fixer.run_id].session_path, "bash")
        [ran] = tool_results(runs[other.run_id].session_path, "bash")
    assert denied["isError"] is True
    assert (
        text_of(denied)
        == "bash was not run: the permission rule `Bash(git push:*)` of definition `implementer` denies it"
    )
    assert "was not run" not in text_of(ran)  # git ran (and failed: no repository here)


async def test_a_nested_helper_inherits_its_parent_s_deny(env: Path) -> None:
    define(env, "implementer", {"deny": ["LS"]})
    delegate_scout = {
        "tool_calls": [
            {"name": "agent", "args": {"action": "delegate", "definition": "scout", "task": "look"}}
        ]
    }
    agents = {"scout": [LS, SAW], "implementer": [delegate_scout, {"text": "waiting"}, {"text": "done"}]}
    write_script(env, "team", {**LEAD, "agents": agents})
    async with team(env, "team") as t:
        implementer = await t.controller.delegate(
            t.caller, DelegateParams(definition="implementer", task="build")
        )
        await t.quiet()
        generations = t.host.kernel.generations(include_finalized=True)
        nested = next(g for g in generations if g.parent_run_id == implementer.run_id)
        [result] = tool_results(nested.session_path, "ls")
    assert nested.definition == "scout"
    assert text_of(result) == "ls was not run: the permission rule `LS` of definition `implementer` denies it"


async def test_a_tier_s_deny_binds_its_members(env: Path) -> None:
    report = {
        "tool_calls": [{"name": "report_and_exit", "args": {"content": "done", "outcome": "succeeded"}}]
    }
    write_script(env, "team", {**LEAD, "agents": {"member": [LS, report]}})
    settings = Settings.model_validate({"teams": {"tier_permissions": {"read-review": {"deny": ["LS"]}}}})
    async with team(env, "team", settings=settings, surfaces=("teams",)) as t:
        spawned = await t.host.teams.spawning.spawn(
            t.caller, parse_spawn({"name": "member", "prompt": "look", "model_slot": "read-review"})
        )
        await t.quiet()
        generation = t.host.kernel.get_generation(spawned.run_id)
        assert generation is not None and generation.definition == "read-review"
        [result] = tool_results(generation.session_path, "ls")
    assert text_of(result) == "ls was not run: the permission rule `LS` of tier `read-review` denies it"


async def test_a_tmux_worker_s_agent_gets_its_definition_s_rules(env: Path, tmux_socket: Path) -> None:
    define(env, "scout", {"deny": ["LS"]})
    write_script(env, "team", {**LEAD, "agents": {"scout": [LS, SAW]}})
    settings = Settings.model_validate({"runtime": "tmux"})
    async with team(env, "team", settings=settings, tmux_socket=tmux_socket) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.runtime_kind == "tmux"
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
    assert (
        "saw: ls was not run: the permission rule `LS` of definition `scout` denies it" in result["content"]
    )


# --- an `ask` goes to the owner ----------------------------------------------------------------------


async def _asked(t: Any, label: str) -> dict[str, Any]:
    """The one question the lead got (the child waits on it, so the host is quiet)."""
    await t.quiet()
    [ask] = t.lead_entries(ASK_TYPE)
    assert ask["content"].count(f"{label} wants to run bash git push origin main: allow?") == 1
    assert (
        "reason: the permission rule `Bash(git push:*)` of definition `generalist` asks for approval"
        in ask["content"]
    )
    return ask


@pytest.mark.parametrize(("answer", "runs"), [("Yes.", True), ("no, not to main", False)])
async def test_a_child_s_ask_is_answered_by_its_owner(env: Path, answer: str, runs: bool) -> None:
    define(env, "generalist", {"ask": ["Bash(git push:*)"]})
    write_script(env, "team", {**LEAD, "agents": {"generalist": [PUSH, SAW]}})
    async with team(env, "team") as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="generalist", task="push"))
        await _asked(t, "generalist")
        await t.controller.reply(t.caller, ReplyParams(agent="generalist", message=answer))
        await t.quiet()
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None
        [result] = tool_results(generation.session_path, "bash")
        [delivered] = t.lead_entries(RESULT_TYPE)
    if runs:
        assert "was not run" not in text_of(result)  # git ran (and failed: no repository here)
    else:
        assert result["isError"] is True
        assert text_of(result) == "bash was not run: the owner did not approve it: no, not to main"
    assert "saw: " in delivered["content"]  # the agent went on and finished


async def test_an_unanswered_ask_is_denied_and_does_not_hang(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("corral._compose.ASK_TIMEOUT_S", 0.5)
    define(env, "generalist", {"ask": ["Bash(git push:*)"]})
    write_script(env, "team", {**LEAD, "agents": {"generalist": [PUSH, SAW]}})
    async with team(env, "team") as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="generalist", task="push"))
        await t.quiet()  # the lead does not answer; the call is denied when the wait ends
        await eventually(lambda: bool(t.lead_entries(RESULT_TYPE)), t.host)
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None
        [result] = tool_results(generation.session_path, "bash")
    assert result["isError"] is True
    assert text_of(result) == (
        "bash was not run: the permission rule `Bash(git push:*)` of definition `generalist` asks for approval, "
        "and its owner did not answer within 0.5 s, so it was denied"
    )


async def test_a_hook_s_allow_does_not_answer_a_layer_s_default(tmp_path: Path) -> None:
    allow = f'{sys.executable} -c "print(\'{{\\"decision\\": \\"approve\\"}}\')"'
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": allow}]}]}
    s = Settings.model_validate({"hooks": hooks, "permissions": {"default": "ask"}})
    layer = PermissionLayer("tier `write-patch`", PermissionsSettings(default="ask"))
    plain = await ToolPolicy(policy_of(s), AGENT, cwd=tmp_path).before_tool(call(tmp_path, "ls"))
    assert plain.decision == "allow"  # the hook answers the settings' default
    narrowed = await ToolPolicy(policy_of(s), AGENT, cwd=tmp_path, layers=[layer]).before_tool(
        call(tmp_path, "ls")
    )
    assert narrowed.decision == "ask" and "the permissions default of tier `write-patch`" in narrowed.reason


async def test_a_tmux_worker_s_ask_is_answered_by_its_owner(env: Path, tmux_socket: Path) -> None:
    define(env, "scout", {"ask": ["LS"]})
    write_script(env, "team", {**LEAD, "agents": {"scout": [LS, SAW]}})
    settings = Settings.model_validate({"runtime": "tmux"})
    async with team(env, "team", settings=settings, tmux_socket=tmux_socket) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="look"))
        await eventually(lambda: bool(t.lead_entries(ASK_TYPE)), t.host)
        [ask] = t.lead_entries(ASK_TYPE)
        assert 'scout wants to run ls {"path": "."}: allow?' in ask["content"]
        await t.controller.reply(t.caller, ReplyParams(agent="scout", message="not today"))
        await eventually(lambda: bool(t.lead_entries(RESULT_TYPE)), t.host)
        [delivered] = t.lead_entries(RESULT_TYPE)
        generation = t.host.kernel.get_generation(started.run_id)
    assert generation is not None and generation.runtime_kind == "tmux"
    assert "saw: ls was not run: the owner did not approve it: not today" in delivered["content"]


def test_a_definition_whose_roster_cannot_be_read_denies_every_call(tmp_path: Path) -> None:
    """Fail closed: an agent whose definitions cannot be read keeps no fewer rules than it had."""
    from types import SimpleNamespace

    from corral.orchestration.host.permission_layers import own_layer

    def unreadable(cwd: Path) -> Any:
        raise OSError(f"{cwd}: permission denied")

    generation: Any = SimpleNamespace(definition="releaser", cwd=str(tmp_path))
    layer = own_layer(generation, Settings(), unreadable)
    assert layer is not None and layer.rules.default == "deny"
    assert layer.source.startswith("definition `releaser` (its rules cannot be read now:")
