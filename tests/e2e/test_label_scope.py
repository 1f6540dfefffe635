"""Labels belong to the lead that owns them, through the real `corral` command.

A lead in project A has a lost `scout` (its host died). An unrelated lead in project B can still
delegate with `label=scout`, and never learns of A's agent; A's owner sees the lost agent in
`corral agents list` and can close it, which frees the label.
"""

from __future__ import annotations

import json

from ._seed import lead_session, managed_agent
from .conftest import Env, RunCorral

LEAD_B = """
steps:
  - text: "Is there a scout?"
    tool_calls:
      - {name: agent, args: {action: steer, agent: scout, message: "Hello?"}}
  - text: "Delegating."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: scout, label: scout, task: "Map the repo."}}
  - text: "Waiting."
  - text: "Scout: {{ last_custom.status }}"
agents:
  scout:
    - text: "Mapped."
"""


def test_a_lost_label_of_another_lead_neither_blocks_nor_shows(cli_env: Env, corral: RunCorral) -> None:
    owner_a = lead_session(cli_env)
    managed_agent(cli_env, owner_a, "scout", lost=True)

    project_b = cli_env.root / "project-b"
    project_b.mkdir()
    cli_env.script("lead", LEAD_B)
    done = corral("run", "--mode", "json", "--model", "scripted/lead", "-p", "go", cwd=project_b)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    ends = [e["result"]["details"] for e in events if e.get("type") == "tool_execution_end"]
    assert ends[0]["ok"] is False and ends[0]["error"]["category"] == "target_not_found"
    assert "another owner" not in json.dumps(ends[0])  # A's agent is not revealed
    assert ends[1]["ok"] is True and ends[1]["agent"] == "scout"
    final = [e for e in events if e.get("type") == "message_end" and e["message"].get("role") == "assistant"]
    assert final[-1]["message"]["content"][0]["text"] == "Scout: completed"

    # A's owner still sees its lost scout, and can close it; the label is free again.
    listed = json.loads(corral("agents", "list", "--json").stdout)
    assert [(r["agent"], r["state"]) for r in listed] == [("scout", "lost")]
    closed = corral("agents", "close", "scout")
    assert closed.returncode == 0, closed.stderr
    assert json.loads(corral("agents", "list", "--json").stdout) == []
