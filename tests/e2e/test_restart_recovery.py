"""Restart recovery through the real command: the host is SIGKILLed while a managed agent works;
resuming the lead's session proves the in-process generation lost (nothing guessed) and says so."""

from __future__ import annotations

import json
import signal
import subprocess

from .conftest import CORRAL, Env, RunCorral

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
    with subprocess.Popen(
        [CORRAL, "run", "--mode", "json", "--model", "scripted/lead", "-p", "start"],
        cwd=cli_env.project,
        env=cli_env.vars,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        settled = 0
        for line in proc.stdout:
            event = json.loads(line)
            settled += event.get("type") == "agent_settled"
            if settled:  # the lead settled; the worker is still working in this process
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)

    done = corral("run", "--continue", "-p", "status?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'Worker is lost; it can ["transcript", "close"].\n'
    assert "agent worker (generalist) was lost" in done.stderr
