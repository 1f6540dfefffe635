"""Restart recovery through the real command: the host is SIGKILLed while a managed agent works;
resuming the lead's session proves the in-process generation lost (nothing guessed) and says so."""

from __future__ import annotations

from .conftest import Env, RunCorral, kill_json_run

LEAD = """
steps:
  - text: "Delegating."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: generalist, label: worker, task: "Read the README slowly."}}
  - text: "Waiting for the worker."
  - text: "Checking on the team."
    tool_calls:
      - {name: agent, args: {action: list}}
  - text: "Worker is {{ last_tool_result.agents.0.state }}; it can {{ last_tool_result.agents.0.available_actions }}."
agents:
  worker:
    - text: "Reading."
      tool_calls:
        - {name: read, args: {path: README.md}}
    - text: "Still thinking."
      delay_ms: 60000
"""


def test_resumed_lead_sees_the_killed_hosts_agent_as_lost(cli_env: Env, corral: RunCorral) -> None:
    (cli_env.project / "README.md").write_text("hello\n")
    cli_env.script("lead", LEAD)
    kill_json_run(  # once the lead settled; the worker is still working in this process
        cli_env,
        *("--model", "scripted/lead", "-p", "start"),
        at=lambda event: event.get("type") == "agent_settled",
    )

    done = corral("run", "--continue", "-p", "status?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'Worker is lost; it can ["transcript", "close"].\n'
    assert "agent worker (generalist) was lost" in done.stderr
