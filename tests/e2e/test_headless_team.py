"""`corral run -p` with managed agents: the command ends only when nothing more can arrive for the lead."""

from __future__ import annotations

import json

from .conftest import Env, RunCorral

TEAM = """
steps:
  - text: "Sending a scout."
    tool_calls:
      - name: agent
        args: {action: delegate, definition: scout, task: "What is the project's title?"}
  - text: "Waiting for the scout's result."
  - text: "The scout reports: {{ last_custom.status }}."
    expect:
      context_contains: ["Agent result · agent=scout · definition=scout", "The title is Invoice."]
agents:
  "*":
    - text: "Reading the README."
      tool_calls:
        - name: read
          args: {path: README.md}
    - text: "The title is Invoice."
"""


def _result_entries(env: Env) -> list[dict]:
    leads = [p for p in env.sessions() if '"managed"' not in p.read_text().splitlines()[0]]
    [lead] = leads
    entries = [json.loads(line) for line in lead.read_text().splitlines()[1:]]
    return [e for e in entries if e["type"] == "custom_message" and e["customType"] == "corral-agent-result"]


def test_print_mode_waits_for_the_delegated_result_and_the_leads_answer(
    corral: RunCorral, cli_env: Env
) -> None:
    (cli_env.project / "README.md").write_text("# Invoice\n")
    cli_env.script("team", TEAM)
    done = corral("run", "--model", "scripted/team", "-p", "find the title")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The scout reports: completed.\n"
    [delivered] = _result_entries(cli_env)
    details = delivered["details"]
    assert (
        details["status"] == "completed" and details["agent"] == "scout" and details["definition"] == "scout"
    )
    assert details["result_ref"] == f"result:{details['request_id']}"
    assert delivered["content"].startswith("Agent result · agent=scout · definition=scout · session=")
    # The managed agent's session is kept as its continuation identity, marked managed.
    managed = [p for p in cli_env.sessions() if '"managed"' in p.read_text().splitlines()[0]]
    assert len(managed) == 1
    assert json.loads(managed[0].read_text().splitlines()[0])["id"] == details["session_id"]


def test_no_surfaces_means_no_agent_tool(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script(
        "plain", "steps:\n  - text: plain\n    expect: {tools_exclude: [agent], tools_include: [read]}\n"
    )
    done = corral("run", "--surfaces", "", "--model", "scripted/plain", "-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "plain\n"


def test_unknown_surface_is_a_one_line_error(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("plain", "steps:\n  - text: plain\n")
    done = corral("run", "--surfaces", "agent,bogus", "--model", "scripted/plain", "-p", "hi")
    assert done.returncode == 2
    assert "bogus" in done.stderr and len(done.stderr.strip().splitlines()) == 1
