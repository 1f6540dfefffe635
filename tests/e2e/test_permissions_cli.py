"""The user's `[permissions]` through the real `corral` command: a headless run never waits on an `ask`
(the lead's call is denied, saying why; a managed agent's goes to the lead as a question, which the
lead answers or leaves, and the run ends either way), and `corral permissions check` says what a call
would get and why."""

from __future__ import annotations

import json

from .conftest import Env, RunCorral

SETTINGS = """
[permissions]
deny = ["Read(.env)"]
ask = ["Bash(git push:*)"]

[[hooks.PreToolUse]]
matcher = "Bash"
hooks = [{ type = "command", command = "cat >/dev/null; echo 'checked by the hook' >&2" }]
"""

ASKED = (
    "bash was not run: the permission rule `Bash(git push:*)` asks for approval, and no one can approve it "
    "here (no owner or person to ask), so it was denied"
)


def _tool_texts(env: Env, tool: str) -> list[str]:
    found = []
    for path in env.sessions():
        for line in path.read_text().splitlines():
            message = json.loads(line).get("message") or {}
            if message.get("role") == "toolResult" and message.get("toolName") == tool:
                found.append("".join(block.get("text", "") for block in message["content"]))
    return found


def test_a_headless_ask_is_denied_without_waiting(corral: RunCorral, cli_env: Env) -> None:
    cli_env.settings(SETTINGS)
    cli_env.script(
        "pushes",
        """
steps:
  - tool_calls: [{name: bash, args: {command: "git push origin main"}}]
  - tool_calls: [{name: read, args: {path: sub/.env}}]
  - text: "{{ last_tool_output }}"
""",
    )
    done = corral("run", "--model", "scripted/pushes", "-p", "ship it", timeout=120)  # a hang fails here
    assert done.returncode == 0, done.stderr
    assert done.stdout == "read was not run: the permission rule `Read(.env)` denies it\n"
    assert _tool_texts(cli_env, "bash") == [ASKED]


def _lead_texts(env: Env, custom_type: str) -> list[str]:
    found = []
    for path in env.sessions():
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("type") == "custom_message" and entry.get("customType") == custom_type:
                found.append(entry["content"])
    return found


QUESTION = "generalist wants to run bash git push: allow? (reason: the permission rule `Bash(git push:*)` asks for approval)"


def test_a_managed_agent_s_ask_goes_to_the_lead_which_answers(corral: RunCorral, cli_env: Env) -> None:
    cli_env.settings(SETTINGS)
    cli_env.script(
        "lead",
        """
steps:
  - tool_calls: [{name: agent, args: {action: delegate, definition: generalist, task: push}}]
  - text: "waiting"
  - tool_calls: [{name: agent, args: {action: reply, agent: generalist, message: "no, open a pull request"}}]
  - text: "answered"
on_exhausted: repeat_last
agents:
  generalist:
    - tool_calls: [{name: bash, args: {command: "git push"}}]
    - text: "{{ last_tool_output }}"
""",
    )
    done = corral("run", "--model", "scripted/lead", "-p", "go", timeout=120)  # a hang fails here
    assert done.returncode == 0, done.stderr
    [question] = _lead_texts(cli_env, "corral-agent-ask")
    assert QUESTION in question
    denied = "bash was not run: the owner did not approve it: no, open a pull request"
    assert _tool_texts(cli_env, "bash") == [denied]


def test_a_managed_agent_s_unanswered_ask_does_not_hang_a_headless_run(
    corral: RunCorral, cli_env: Env
) -> None:
    cli_env.settings(SETTINGS)
    cli_env.script(
        "lead",
        """
steps:
  - tool_calls: [{name: agent, args: {action: delegate, definition: generalist, task: push}}]
  - text: "waiting"
on_exhausted: repeat_last
agents:
  generalist:
    - tool_calls: [{name: bash, args: {command: "git push"}}]
    - text: "{{ last_tool_output }}"
""",
    )
    done = corral("run", "--model", "scripted/lead", "-p", "go", timeout=120)  # a hang fails here
    assert done.returncode == 0, done.stderr
    assert QUESTION in _lead_texts(cli_env, "corral-agent-ask")[0]
    assert "agent generalist (generalist) asked a question and runs in this process" in done.stderr
    assert _tool_texts(cli_env, "bash") == ["Command aborted"]  # it never ran


def test_permissions_check_says_what_would_happen_and_why(corral: RunCorral, cli_env: Env) -> None:
    cli_env.settings(SETTINGS)
    denied = corral("permissions", "check", "Read", '{"path": "config/.env"}')
    assert (denied.returncode, denied.stdout) == (
        0,
        "deny: the permission rule `Read(.env)` denies it\n",
    )
    asked = corral("permissions", "check", "bash", '{"command": "cd app && git push"}')
    assert asked.stdout.splitlines() == [
        "ask: the permission rule `Bash(git push:*)` asks for approval; with no one to ask (a headless run) "
        "it is denied",
        "hooks: 1 PreToolUse hook would run first and may deny it or ask: "
        "`cat >/dev/null; echo 'checked by the hook' >&2` (--run-hooks runs them)",
    ]
    ran = corral("permissions", "check", "bash", '{"command": "ls"}', "--run-hooks")
    assert ran.stdout.splitlines() == [
        "allow: no permission rule matches, and calls are allowed by default",
        "hooks: ran `cat >/dev/null; echo 'checked by the hook' >&2`",
    ]
    assert corral("permissions", "check", "grep", '{"pattern": "x"}').stdout == (
        "allow: no permission rule matches, and calls are allowed by default\n"
    )


def test_permissions_check_refuses_bad_input_in_one_line(corral: RunCorral, cli_env: Env) -> None:
    for args, message in [
        (("bash", '{"command": '), "corral: error: the tool input is not JSON"),
        (("bash", '["ls"]'), "corral: error: the tool input is not a JSON object"),
        (("two words", "{}"), "corral: error: 'two words' is not a tool name"),
    ]:
        done = corral("permissions", "check", *args)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.startswith(message) and done.stderr.count("\n") == 1
    cli_env.settings('[permissions]\ndeny = ["Bash(git push"]\n')
    bad = corral("permissions", "check", "bash", '{"command": "ls"}')
    assert (
        bad.returncode == 2 and "'permissions.deny': 'Bash(git push' is not a permission rule" in bad.stderr
    )


def test_doctor_names_the_rules_and_hooks_that_apply(corral: RunCorral, cli_env: Env) -> None:
    assert "policy" not in corral("doctor").stdout  # nothing set: nothing to name
    cli_env.settings(SETTINGS)
    done = corral("doctor", "--json")
    [policy] = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "policy"]
    assert policy["status"] == "ok"
    assert policy["message"] == (
        "permissions: 0 allow, 1 ask, 1 deny rule(s), default allow; "
        "PreToolUse hooks: Bash → `cat >/dev/null; echo 'checked by the hook' >&2` "
        "(they bind every agent: the lead, its agents and their helpers)"
    )


def test_permissions_check_for_an_agent_adds_its_definition_s_rules(corral: RunCorral, cli_env: Env) -> None:
    cli_env.settings(
        '[permissions]\ndeny = ["Read(.env)"]\n\n[teams.tier_permissions.read-review]\ndeny = ["Bash"]\n'
    )
    agents = cli_env.config / "corral" / "agents"
    agents.mkdir(parents=True)
    (agents / "releaser.md").write_text(
        "---\nname: releaser\ndescription: Releases.\npermissions:\n"
        "  allow: ['Read']\n  ask: ['Bash(git push:*)']\n---\nRelease.\n"
    )
    push = '{"command": "git push"}'
    assert corral("permissions", "check", "bash", push).stdout.startswith("allow: ")  # the lead
    asked = corral("permissions", "check", "bash", push, "--agent", "releaser")
    assert asked.stdout == (
        "ask: the permission rule `Bash(git push:*)` of definition `releaser` asks for approval; "
        "the agent's owner is asked (a yes runs it)\n"
    )
    env_file = corral("permissions", "check", "read", '{"path": ".env"}', "--agent", "releaser")
    assert (
        env_file.stdout == "deny: the permission rule `Read(.env)` denies it\n"
    )  # its allow does not beat it
    tier = corral("permissions", "check", "bash", '{"command": "ls"}', "--agent", "read-review")
    assert tier.stdout == "deny: the permission rule `Bash` of tier `read-review` denies it\n"
    unknown = corral("permissions", "check", "bash", push, "--agent", "nobody")
    assert unknown.returncode == 2 and unknown.stderr.startswith(
        "corral: error: no definition or teams tier named"
    )
