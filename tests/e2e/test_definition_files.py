"""Definition files through the real `corral` command: invalid files are listed, never dropped;
Claude Code (`.claude/agents`) and Pi (`.pi/agents`) files load with their fields mapped.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._seed import lead_session
from .conftest import Env, RunCorral


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _definitions(corral: RunCorral) -> dict:
    done = corral("agents", "definitions", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


LIST_LEAD = """
steps:
  - text: "Roster."
    tool_calls:
      - {name: agent, args: {action: list}}
  - text: "Done."
"""


def test_invalid_definition_files_are_listed_with_path_and_problem(corral: RunCorral, cli_env: Env) -> None:
    agents = cli_env.config / "corral" / "agents"
    unknown = _write(agents / "typo.md", "---\nname: typo\ncolour: red\n---\nBody.\n")
    bad = _write(agents / "loud.md", "---\nname: loud\nthinking: loud\n---\nBody.\n")

    listed = _definitions(corral)
    problems = {item["path"]: item["problem"] for item in listed["invalid"]}
    assert problems[str(unknown)].startswith("unknown field(s) colour")
    assert "thinking must be one of" in problems[str(bad)]
    text = corral("agents", "definitions").stdout
    assert f"INVALID\t{unknown}: unknown field(s) colour" in text

    lead_session(cli_env)
    agents_list = corral("agents", "list")
    assert agents_list.returncode == 0, agents_list.stderr
    assert agents_list.stdout.splitlines()[0] == "No agents."
    assert f"INVALID\t{unknown}: unknown field(s) colour" in agents_list.stdout

    doctor = json.loads(corral("doctor", "--json").stdout)
    warnings = [c["message"] for c in doctor["checks"] if c["name"] == "definitions"]
    assert any(m.startswith(f"INVALID {unknown}: unknown field(s) colour") for m in warnings)
    assert any(m.startswith(f"INVALID {bad}: thinking must be one of") for m in warnings)

    cli_env.script("lead", LIST_LEAD)
    run = corral("run", "--mode", "json", "--model", "scripted/lead", "-p", "go")
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    [result] = [e["result"] for e in events if e.get("type") == "tool_execution_end"]
    assert {item["path"] for item in result["details"]["invalid_definitions"]} == {str(unknown), str(bad)}
    assert f"- INVALID {unknown}: unknown field(s) colour" in result["content"][0]["text"]


CLAUDE = """---
name: cc-reviewer
description: Reviews diffs (a Claude Code subagent).
tools: Read, Grep, Glob, Bash, WebFetch, mcp__github__search
model: sonnet
color: blue
---
You review.
"""

PI = """---
name: pi-scout
description: Pi scout.
tools: read, ls
model: inherit
---
You scout.
"""

DELEGATE = """
steps:
  - text: "Delegating."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: cc-reviewer, task: "Review."}}
  - text: "Waiting."
  - text: "Got {{ last_custom.status }}"
agents:
  cc-reviewer:
    - text: "Reviewed."
      expect: {tools_include: [read, grep, find, bash], tools_exclude: [edit, write, ls]}
"""


def test_claude_code_and_pi_files_load_with_fields_mapped(corral: RunCorral, cli_env: Env) -> None:
    home = Path(cli_env.vars["HOME"])
    _write(home / ".claude" / "agents" / "cc-reviewer.md", CLAUDE)
    _write(home / ".pi" / "agent" / "agents" / "pi-scout.md", PI)
    _write(home / ".claude" / "agents" / "bad.md", "---\nname: bad\ntools: Read, Teleport\n---\nx\n")
    cli_env.settings('[model_aliases]\nsonnet = "scripted/lead"\n')

    listed = _definitions(corral)
    by_name = {d["name"]: d for d in listed["definitions"]}
    reviewer = by_name["cc-reviewer"]
    assert reviewer["format"] == "claude"
    assert reviewer["tools"] == ["read", "grep", "find", "bash"]
    assert (reviewer["model"], reviewer["modelAlias"]) == ("scripted/lead", "sonnet")
    scout = by_name["pi-scout"]
    assert scout["format"] == "pi" and scout["tools"] == ["read", "ls"]
    assert "model" not in scout and scout["modelAlias"] == "inherit"
    [invalid] = listed["invalid"]
    assert invalid["path"].endswith("bad.md") and "Teleport is not a Claude Code tool" in invalid["problem"]

    # The mapped definition really runs: the agent is offered exactly the mapped tools.
    cli_env.script("lead", DELEGATE)
    run = corral("run", "--model", "scripted/lead", "-p", "go")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "Got completed\n"


def test_project_claude_agents_count_only_once_trusted(corral: RunCorral, cli_env: Env) -> None:
    _write(cli_env.project / ".claude" / "agents" / "local.md", "---\nname: local\ndescription: x\n---\nx\n")
    before = {d["name"]: d for d in _definitions(corral)["definitions"]}
    assert before["local"]["enabled"] is False
    text = corral("agents", "definitions").stdout
    assert "local\tdisabled (the project" in text and "is not trusted" in text
    assert corral("trust").returncode == 0
    after = {d["name"]: d for d in _definitions(corral)["definitions"]}
    assert after["local"].get("enabled", True) is True
    assert after["local"]["projectSource"].endswith(".claude/agents/local.md")
    # Trust is pinned to the file's content: an edit (say, a pull) untrusts the project again.
    _write(cli_env.project / ".claude" / "agents" / "local.md", "---\nname: local\ndescription: y\n---\ny\n")
    edited = {d["name"]: d for d in _definitions(corral)["definitions"]}
    assert edited["local"]["enabled"] is False
