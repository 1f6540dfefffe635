"""`corral run` with the teams surface: the real command in a subprocess, a scripted lead and its agents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import Env, RunCorral

REPORT_TYPE = "corral-team-report"

# The lead spawns two read agents; each reads real files and reports with findings. Reports arrive
# one turn each or both at once, so every wake-up answers with the same templated step.
TWO_REVIEWERS = """
steps:
  - text: "Spawning two reviewers."
    tool_calls:
      - name: spawn_agent
        args: {name: style, model_slot: read-review, prompt: "Review the README's wording."}
      - name: spawn_agent
        args: {name: logic, model_slot: read-review, prompt: "Review calc.py for correctness."}
  - text: "Waiting for both reports."
  - text: "Integrated the report from {{ last_custom.name }} ({{ last_custom.outcome }})."
    expect: {last_user_contains: "Report from agent"}
on_exhausted: repeat_last
agents:
  style:
    - delay_ms: 200          # still working when the lead's turn ends
      tool_calls:
        - name: read
          args: {path: README.md}
    - tool_calls:
        - name: report_and_exit
          args:
            content: "The README's title is Calc; wording is clear."
            summary: "wording clear"
            outcome: succeeded
            findings: [{id: S1, text: "Title is Calc", evidence: ["README.md:1"]}]
  logic:
    - tool_calls:
        - name: grep
          args: {pattern: "def add", path: calc.py}
    - tool_calls:
        - name: report_and_exit
          args:
            content: "add() subtracts instead of adding."
            summary: "one bug"
            outcome: succeeded
            findings:
              - {id: L1, text: "add() returns a - b", evidence: ["calc.py:2"]}
              - {id: L2, text: "no tests for add()", evidence: ["calc.py"]}
"""

DETAIL_KEYS = {
    "name",
    "task_id",
    "run_id",
    "report_id",
    "outcome",
    "effective_outcome",
    "verification",
    "acceptance",
    "elapsed_ms",
    "tokens",
    "status",
    "tier",
}


def _entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _lead_session(env: Env) -> Path:
    leads = [p for p in env.sessions() if "managed" not in _entries(p)[0].get("corral", {})]
    [lead] = leads
    return lead


def _write_project(env: Env) -> None:
    (env.project / "README.md").write_text("# Calc\n\nA tiny calculator.\n")
    (env.project / "calc.py").write_text("def add(a, b):\n    return a - b\n")


def test_print_mode_waits_for_both_reports_and_the_lead_integrates_them(
    corral: RunCorral, cli_env: Env
) -> None:
    _write_project(cli_env)
    cli_env.script("lead", TWO_REVIEWERS)
    done = corral("run", "--surfaces", "teams", "--model", "scripted/lead", "-p", "review this")
    assert done.returncode == 0, done.stderr

    lead = _lead_session(cli_env)
    entries = _entries(lead)
    lead_id = entries[0]["id"]
    reports = [e for e in entries if e["type"] == "custom_message" and e["customType"] == REPORT_TYPE]
    assert len(reports) == 2
    by_name = {e["details"]["name"]: e for e in reports}
    assert set(by_name) == {"style", "logic"}
    for name, entry in by_name.items():
        details = entry["details"]
        assert entry["display"] is False
        assert set(details) >= DETAIL_KEYS
        assert details["report_id"] == f"report:session-{lead_id}:{name}:{details['run_id']}"
        assert details["task_id"] == f"task:session-{lead_id}:{name}:{details['run_id']}"
        assert details["status"] == "completed" and details["tier"] == "read-review"
        assert details["outcome"] == "succeeded" and details["effective_outcome"] == "succeeded"
        assert details["verification"] == {"state": "not-requested"}
        assert details["acceptance"] == {"state": "pending"}
        assert isinstance(details["elapsed_ms"], int) and isinstance(details["tokens"], int)
        assert entry["content"].startswith(f"Report from agent {name} (read-review) · status=completed")
    assert "add() subtracts instead of adding." in by_name["logic"]["content"]
    assert '"id": "L2"' in by_name["logic"]["content"]  # the structured findings reach the lead
    assert "The README's title is Calc" in by_name["style"]["content"]

    # The lead's answer came after both reports were in its context, and it is what was printed.
    last_report = max(entries.index(e) for e in reports)
    answers = [
        i
        for i, e in enumerate(entries)
        if e["type"] == "message" and e["message"]["role"] == "assistant" and i > last_report
    ]
    assert answers, "the lead never answered after the second report"
    newest = entries[last_report]["details"]
    assert done.stdout == f"Integrated the report from {newest['name']} (succeeded).\n"
    assert entries[answers[-1]]["message"]["content"][0]["text"] == done.stdout.strip()
    # Both agents ran in sessions of their own, marked as managed members of this team.
    managed = [_entries(p)[0]["corral"] for p in cli_env.sessions() if p != lead]
    assert sorted(m["label"] for m in managed) == ["logic", "style"]
    assert all(m["managed"] is True and m["team"] == f"session-{lead_id}" for m in managed)


@pytest.mark.parametrize(
    ("surfaces", "include", "exclude"),
    [
        ("teams", ["spawn_agent", "spawn_swarm_agents", "get_agent_status", "read"], ["agent"]),
        ("teams,agent", ["agent", "spawn_agent", "send_message", "list_file_claims", "bash"], []),
        ("agent", ["agent"], ["spawn_agent", "report_and_exit"]),
    ],
)
def test_surfaces_choose_the_leads_tool_sets(
    corral: RunCorral, cli_env: Env, surfaces: str, include: list[str], exclude: list[str]
) -> None:
    cli_env.script(
        "tools",
        json.dumps(
            {"steps": [{"text": "ok", "expect": {"tools_include": include, "tools_exclude": exclude}}]}
        ),
    )
    done = corral("run", "--surfaces", surfaces, "--model", "scripted/tools", "-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"


def test_a_missing_tool_set_fails_the_expectation(corral: RunCorral, cli_env: Env) -> None:
    """The check above has teeth: the teams surface alone does not offer the agent tool."""
    cli_env.script("tools", json.dumps({"steps": [{"text": "ok", "expect": {"tools_include": ["agent"]}}]}))
    done = corral("run", "--surfaces", "teams", "--model", "scripted/tools", "-p", "hi")
    assert done.returncode == 1
    assert "tools_include" in done.stderr


def test_unknown_surface_is_one_stderr_line_naming_the_choices(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("plain", "steps:\n  - text: plain\n")
    done = corral("run", "--surfaces", "bogus", "--model", "scripted/plain", "-p", "hi")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "bogus" in lines[0] and "agent" in lines[0] and "teams" in lines[0]
    assert done.stdout == ""
    assert cli_env.sessions() == []  # nothing was written


def test_json_mode_streams_the_teams_tool_calls_and_the_hidden_report(
    corral: RunCorral, cli_env: Env
) -> None:
    _write_project(cli_env)
    cli_env.script("lead", TWO_REVIEWERS)
    done = corral("run", "--mode", "json", "--surfaces", "teams", "--model", "scripted/lead", "-p", "go")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["type"] == "session"
    starts = [e for e in events if e["type"] == "tool_execution_start" and e["toolName"] == "spawn_agent"]
    assert sorted(e["args"]["name"] for e in starts) == ["logic", "style"]
    ends = [e for e in events if e["type"] == "tool_execution_end" and e["toolName"] == "spawn_agent"]
    assert len(ends) == 2 and not any(e["isError"] for e in ends)
    assert {e["result"]["details"]["modelSlot"] for e in ends} == {"read-review"}
    reports = [
        e["message"]
        for e in events
        if e["type"] == "message_end" and e["message"].get("customType") == REPORT_TYPE
    ]
    assert sorted(m["details"]["name"] for m in reports) == ["logic", "style"]
    assert all(m["display"] is False for m in reports)
