"""Texts a shell user reads from `corral`: Ctrl-C, error prefixes, hints, `--help`, empty prompts."""

from __future__ import annotations

import json
import signal
import subprocess

from .conftest import CORRAL, Env, RunCorral, wait_until

TEAM = """\
steps:
  - text: "Delegating two agents."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: generalist, label: slow, task: "Run a long command."}}
      - {name: agent, args: {action: delegate, definition: generalist, label: asker, task: "Ask me."}}
  - text: "Both started."
on_exhausted: repeat_last
agents:
  slow:
    - {tool_calls: [{name: bash, args: {command: "touch slow.started; sleep 120"}}]}
    - {text: "done"}
  asker:
    - {tool_calls: [{name: bash, args: {command: "touch asker.started"}}]}
    - {tool_calls: [{name: ask_owner, args: {question: "Postgres or SQLite?"}}]}
    - {text: "thanks"}
"""


def test_ctrl_c_names_the_agents_it_made_lost_and_how_to_resume(cli_env: Env, corral: RunCorral) -> None:
    cli_env.script("team", TEAM)
    with subprocess.Popen(
        [CORRAL, "run", "--model", "scripted/team", "-p", "go"],
        cwd=cli_env.project,
        env=cli_env.vars,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A child of a non-interactive shell may inherit SIGINT ignored; a terminal's Ctrl-C is not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as proc:
        try:
            wait_until(
                lambda: all((cli_env.project / f"{name}.started").exists() for name in ("slow", "asker")),
                timeout=60,
                what="both agents running",
            )
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 130
    lines = err.splitlines()
    assert lines[0] == "corral: interrupted"
    [lead] = [path for path in cli_env.sessions() if '"managed"' not in path.read_text().splitlines()[0]]
    lead_id = json.loads(lead.read_text().splitlines()[0])["id"]
    for label, definition in (("slow", "generalist"), ("asker", "generalist")):
        [line] = [line for line in lines if line.startswith(f"corral: agent {label} ({definition})")]
        assert "was lost before it finished" in line
        assert f"`corral run --session {lead_id} -p ...`" in line
    listed = corral("agents", "list", "--session", lead_id)
    assert listed.returncode == 0, listed.stderr
    states = {row.split("\t")[0]: row.split("\t")[1] for row in listed.stdout.splitlines() if "\t" in row}
    assert states == {"slow": "lost", "asker": "lost"}
