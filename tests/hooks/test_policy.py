"""Hooks in Claude Code's format and the rules, as one agent's tool gate (`ToolPolicy`): what a hook
reads, how its exit code and JSON decide, how a slow, crashing or malformed hook behaves as configured,
and how hooks and rules combine."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from corral import _tracing
from corral._process import stat_fields
from corral._tracing._builtin import MemorySink
from corral.agent import ToolCheck, ToolResult
from corral.hooks import AgentIdentity, ToolPolicy, policy_of
from corral.settings import Settings
from tests._waits import eventually

AGENT = AgentIdentity("run-1", "scout-1", "scout", "lead-session", "lead-session")
WAIT_S = 60.0
"""Bound on one gate call in these tests (hooks are Python or shell processes on a loaded machine)."""


def _running(pid: int) -> bool:
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def settings(
    pre: list[dict[str, Any]] | None = None,
    post: list[dict[str, Any]] | None = None,
    *,
    fail: str = "closed",
    **permissions: Any,
) -> Settings:
    """Settings as a TOML file would give them (validated the same way)."""
    data: dict[str, Any] = {"hooks": {"PreToolUse": pre or [], "PostToolUse": post or [], "fail": fail}}
    if permissions:
        data["permissions"] = permissions
    return Settings.model_validate(data)


def gate(tmp_path: Path, s: Settings) -> ToolPolicy:
    return ToolPolicy(policy_of(s), AGENT, cwd=tmp_path)


def check(tmp_path: Path, tool: str = "bash", **arguments: Any) -> ToolCheck:
    return ToolCheck(
        "call-1", tool, arguments or {"command": "git push"}, "sess-1", tmp_path / "s.jsonl", tmp_path
    )


def python_hook(tmp_path: Path, body: str, name: str = "hook.py") -> str:
    """A command running a Python hook script (stdin: the event)."""
    script = tmp_path / name
    script.write_text("import json, sys, os\nevent = json.load(sys.stdin)\n" + body)
    return f"{sys.executable} {script}"


def group(command: str, matcher: str = "", **hook: Any) -> dict[str, Any]:
    return {"matcher": matcher, "hooks": [{"type": "command", "command": command, **hook}]}


async def test_the_event_carries_claude_code_s_fields_and_the_agent_s_place_in_the_tree(
    tmp_path: Path,
) -> None:
    seen = tmp_path / "event.json"
    command = python_hook(
        tmp_path,
        f"json.dump({{'event': event, 'env': dict(os.environ), 'cwd': os.getcwd()}}, open({str(seen)!r}, 'w'))",
    )
    g = gate(tmp_path, settings([group(command, "Edit|Write")]))
    verdict = await g.before_tool(check(tmp_path, "edit", path="src/a.py", oldText="a", newText="b"))
    assert verdict.decision == "allow"
    got = json.loads(seen.read_text())
    assert got["event"] == {
        "session_id": "sess-1",
        "transcript_path": str(tmp_path / "s.jsonl"),
        "cwd": str(tmp_path),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {
            "path": "src/a.py",
            "oldText": "a",
            "newText": "b",
            "file_path": str(tmp_path / "src/a.py"),
            "old_string": "a",
            "new_string": "b",
        },
        "tool_use_id": "call-1",
        "corral_tool_name": "edit",
        "agent_id": "run-1",
        "agent_label": "scout-1",
        "agent_type": "scout",
        "parent_agent_id": "lead-session",
        "lead_session_id": "lead-session",
    }
    assert got["cwd"] == str(tmp_path)
    env = got["env"]
    assert env["CLAUDE_PROJECT_DIR"] == env["CORRAL_PROJECT_DIR"] == str(tmp_path)
    assert set(env) <= {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ",
        "CLAUDE_PROJECT_DIR", "CORRAL_PROJECT_DIR", "PWD", "SHLVL", "_",
    } | {k for k in env if k.startswith("LC_")}  # fmt: skip


async def test_exit_code_2_blocks_with_stderr_as_the_reason(tmp_path: Path) -> None:
    g = gate(tmp_path, settings([group("cat >/dev/null; echo 'no pushing from agents' >&2; exit 2", "Bash")]))
    verdict = await g.before_tool(check(tmp_path))
    assert (verdict.decision, verdict.reason) == ("deny", "no pushing from agents")


async def test_a_copied_claude_code_settings_json_hook_works_unchanged(tmp_path: Path) -> None:
    """A `settings.json` hooks block and its script, as Claude Code's documentation writes them: a
    `Bash` matcher, `jq`-free JSON decision on stdout, `tool_input.command`."""
    script = tmp_path / ".claude" / "hooks" / "block-rm.py"
    script.parent.mkdir(parents=True)
    script.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "if data['tool_name'] == 'Bash' and 'rm -rf' in data['tool_input'].get('command', ''):\n"
        "    print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse',\n"
        "        'permissionDecision': 'deny',\n"
        "        'permissionDecisionReason': 'Destructive command blocked by hook'}}))\n"
        "sys.exit(0)\n"
    )
    claude_settings = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {
                            "type": "command",
                            "command": f'{sys.executable} "$CLAUDE_PROJECT_DIR"/.claude/hooks/block-rm.py',
                        }
                    ],
                }
            ]
        }
    }
    (tmp_path / ".corral").mkdir()  # the project root the hook's $CLAUDE_PROJECT_DIR names
    g = gate(tmp_path, Settings.model_validate(claude_settings))
    denied = await g.before_tool(check(tmp_path, command="rm -rf build"))
    assert (denied.decision, denied.reason) == ("deny", "Destructive command blocked by hook")
    assert (await g.before_tool(check(tmp_path, command="ls"))).decision == "allow"
    assert (await g.before_tool(check(tmp_path, "read", path="x"))).decision == "allow"  # not matched


@pytest.mark.parametrize(
    ("output", "decision", "reason", "context"),
    [
        (
            {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "nope"}},
            "deny",
            "nope",
            "",
        ),
        (
            {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "sure?"}},
            "ask",
            "sure?",
            "",
        ),
        (
            {"hookSpecificOutput": {"permissionDecision": "allow", "additionalContext": "be careful"}},
            "allow",
            "",
            "be careful",
        ),
        ({"decision": "block", "reason": "old style"}, "deny", "old style", ""),
        ({"decision": "approve"}, "allow", "", ""),
        ({"continue": False, "stopReason": "stop everything"}, "deny", "stop everything", ""),
        ({"suppressOutput": True}, "allow", "", ""),
    ],
)
async def test_json_answers(
    tmp_path: Path, output: dict[str, Any], decision: str, reason: str, context: str
) -> None:
    command = python_hook(tmp_path, f"print(json.dumps({output!r}))")
    verdict = await gate(tmp_path, settings([group(command)])).before_tool(check(tmp_path))
    assert (verdict.decision, verdict.reason, verdict.context) == (decision, reason, context)


async def test_plain_text_on_stdout_is_no_answer(tmp_path: Path) -> None:
    verdict = await gate(tmp_path, settings([group("echo looks fine to me")])).before_tool(check(tmp_path))
    assert verdict.decision == "allow"


@pytest.mark.parametrize(
    ("command", "failure"),
    [
        ("sleep 30", "timed out after 0.5 s"),
        ("echo 'it broke' >&2; exit 1", "exited with 1: it broke"),
        ("kill -9 $$", "was killed by signal 9"),
        ("echo '{not json'", "printed malformed JSON"),
        ("""echo '{"hookSpecificOutput": {"permissionDecision": "maybe"}}'""", "permissionDecision 'maybe'"),
        ("""echo '["deny"]'""", "not a JSON object"),
        ("/nonexistent/hook", "exited with 127"),
    ],
)
@pytest.mark.parametrize("fail", ["closed", "open"])
async def test_a_failing_hook_fails_closed_or_open_as_configured(
    tmp_path: Path, command: str, failure: str, fail: str, caplog: pytest.LogCaptureFixture
) -> None:
    g = gate(tmp_path, settings([group(command, timeout=0.5)], fail=fail))
    # the slow one is stopped at its timeout: its failure says so ("timed out after 0.5 s"), and the
    # call is bounded so that a hook left running fails the test instead of hanging it
    verdict = await asyncio.wait_for(g.before_tool(check(tmp_path)), WAIT_S)
    if fail == "closed":
        assert verdict.decision == "deny"
        assert failure in verdict.reason and "a failing hook blocks the call" in verdict.reason
    else:
        assert verdict.decision == "allow"
    [warning] = [r for r in caplog.records if r.name == "corral.hooks"]
    assert failure in warning.getMessage()
    assert ("fails closed" if fail == "closed" else "fails open") in warning.getMessage()


async def test_a_hook_s_own_fail_setting_wins(tmp_path: Path) -> None:
    s = settings([group("exit 1", fail="open")], fail="closed")
    assert (await gate(tmp_path, s).before_tool(check(tmp_path))).decision == "allow"


async def test_a_timed_out_hook_s_processes_are_gone(tmp_path: Path) -> None:
    marker, pid_file = tmp_path / "alive", tmp_path / "child.pid"
    # a child in the hook's process group that would touch the marker much later, and its pid
    command = f"(sleep 30; touch {marker}) & echo $! > {pid_file}; sleep 60"
    verdict = await gate(tmp_path, settings([group(command, timeout=2)])).before_tool(check(tmp_path))
    assert verdict.decision == "deny"
    child = int(pid_file.read_text())
    await eventually(lambda: not _running(child))  # its whole process group was stopped
    assert not marker.exists()


@pytest.mark.parametrize(
    ("matcher", "tool", "runs"),
    [
        ("bash", "bash", True),
        ("Bash", "bash", True),
        ("Bas", "bash", False),  # a plain name matches exactly
        ("Edit|Write", "write", True),
        ("Edit|Write", "read", False),
        ("Glob", "find", True),
        ("LS", "ls", True),
        ("mcp__github__.*", "mcp__github__create_issue", True),
        ("mcp__.*", "bash", False),
        ("", "anything", True),
        ("*", "anything", True),
        ("spawn_agent", "spawn_agent", True),
    ],
)
async def test_matchers_match_corral_s_and_claude_code_s_names(
    tmp_path: Path, matcher: str, tool: str, runs: bool
) -> None:
    g = gate(tmp_path, settings([group("exit 2", matcher)]))
    verdict = await g.before_tool(check(tmp_path, tool, path="x"))
    assert (verdict.decision == "deny") is runs


def _meet(tmp_path: Path, mine: str, other: str) -> str:
    """Hook code that says it started (`<mine>.started`), counts its run (`<mine>.runs`) and waits
    (bounded) until the `other` hook has started too: both can only get past it side by side."""
    return (
        "import pathlib, time\n"
        f"here = pathlib.Path({str(tmp_path)!r})\n"
        f"(here / '{mine}.started').touch()\n"
        f"with open(here / '{mine}.runs', 'a') as runs: runs.write('x')\n"
        "end = time.monotonic() + 30\n"
        f"while not (here / '{other}.started').exists() and time.monotonic() < end: time.sleep(0.01)\n"
        f"met = (here / '{other}.started').exists()\n"
    )


async def test_hooks_run_in_parallel_and_the_strictest_answer_wins(tmp_path: Path) -> None:
    allow = python_hook(
        tmp_path,
        _meet(tmp_path, "a", "d") + "print(json.dumps({'decision': 'approve' if met else 'block'}))",
        "a.py",
    )
    deny = python_hook(
        tmp_path,
        _meet(tmp_path, "d", "a") + "sys.stderr.write('second says no' if met else 'ran alone'); sys.exit(2)",
        "d.py",
    )
    s = settings([group(allow), {"matcher": "Bash", "hooks": [{"command": deny}, {"command": deny}]}])
    verdict = await asyncio.wait_for(gate(tmp_path, s).before_tool(check(tmp_path)), WAIT_S)
    assert (verdict.decision, verdict.reason) == (
        "deny",
        "second says no",
    )  # side by side: each met the other
    assert (tmp_path / "a.runs").read_text() == "x"
    assert (tmp_path / "d.runs").read_text() == "x"  # the duplicate ran once


async def test_rules_and_hooks_together(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    marker = tmp_path / "ran"
    approve = f'touch {marker}; echo \'{{"decision": "approve"}}\''
    s = settings([group(approve)], deny=["Bash(git push:*)"], ask=["Bash(rm:*)"], default="ask")
    g = gate(tmp_path, s)
    # a deny rule ends it there: no hook runs
    denied = await g.before_tool(check(tmp_path, command="git push"))
    assert (denied.decision, denied.reason) == ("deny", "the permission rule `Bash(git push:*)` denies it")
    assert not marker.exists()
    # a hook's allow does not override an ask rule ...
    asked = await g.before_tool(check(tmp_path, command="rm x"))
    assert (asked.decision, asked.reason) == ("ask", "the permission rule `Bash(rm:*)` asks for approval")
    assert marker.exists()
    # ... but stands in for an allow rule where no rule matched
    assert (await g.before_tool(check(tmp_path, command="ls"))).decision == "allow"
    # without the hook the default decides
    plain = gate(tmp_path, settings(deny=["Bash(git push:*)"], default="ask"))
    verdict = await plain.before_tool(check(tmp_path, command="ls"))
    assert (verdict.decision, verdict.reason) == (
        "ask",
        "no permission rule allows this bash call, and permissions.default asks for approval",
    )


async def test_post_tool_use_hooks_add_context_for_the_model(tmp_path: Path) -> None:
    seen = tmp_path / "post.json"
    context = python_hook(
        tmp_path,
        f"json.dump(event, open({str(seen)!r}, 'w'))\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUse', 'additionalContext': 'lint: ok'}}))",
    )
    s = settings(post=[group(context, "Bash"), group("echo 'tests failed' >&2; exit 2", "Bash")])
    g = gate(tmp_path, s)
    added = await g.after_tool(check(tmp_path, command="make"), ToolResult.text("built", is_error=False))
    assert added is not None and set(added.split("\n\n")) == {"lint: ok", "tests failed"}
    event = json.loads(seen.read_text())
    assert event["hook_event_name"] == "PostToolUse"
    assert event["tool_response"] == {"content": "built", "is_error": False}
    assert await g.after_tool(check(tmp_path, "read", path="x"), ToolResult.text("x")) is None


async def test_a_failing_post_tool_use_hook_is_reported_and_changes_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    g = gate(tmp_path, settings(post=[group("exit 1")]))
    assert await g.after_tool(check(tmp_path), ToolResult.text("ok")) is None
    assert any("PostToolUse hook `exit 1` exited with 1" in r.getMessage() for r in caplog.records)


async def test_each_hook_run_is_a_span(tmp_path: Path) -> None:
    sink = MemorySink()
    _tracing.setup(sinks=(sink,))
    try:
        g = gate(tmp_path, settings([group("exit 2", "Bash"), group("exit 1")]))
        await g.before_tool(check(tmp_path))
    finally:
        _tracing.shutdown()
    spans = sorted(
        (s for s in sink.spans if s.name == "corral.hook"),
        key=lambda s: str(s.attributes["corral.hook.command"]),
    )
    assert [s.attributes["corral.hook.command"] for s in spans] == ["exit 1", "exit 2"]
    assert spans[0].error == "exited with 1" and spans[0].attributes["corral.hook.exit_code"] == 1
    assert spans[1].error is None and spans[1].attributes["corral.hook.decision"] == "deny"
    assert all(
        s.attributes["corral.hook.event"] == "PreToolUse" and s.attributes["corral.agent"] == "scout-1"
        for s in spans
    )


def test_no_rules_and_no_hooks_means_no_gate(tmp_path: Path) -> None:
    assert policy_of(Settings()).empty
    assert not policy_of(settings([group("true")])).empty
    assert not policy_of(Settings.model_validate({"permissions": {"deny": ["Bash"]}})).empty


async def test_a_hook_that_leaves_a_child_holding_its_output_is_read_and_the_child_ended(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "child.pid"
    answer = json.dumps({"decision": "block", "reason": "nope"})
    command = f"echo '{answer}'; sleep 300 & echo $! > {pid_file}"  # the child keeps the hook's stdout open
    g = gate(tmp_path, settings([group(command, timeout=30)]))
    verdict = await asyncio.wait_for(g.before_tool(check(tmp_path)), WAIT_S)
    assert (verdict.decision, verdict.reason) == ("deny", "nope")  # its answer, not "timed out after 30 s"
    child = int(pid_file.read_text())
    await eventually(lambda: not _running(child))
