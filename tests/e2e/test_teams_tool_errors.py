"""The teams tools' error results through the real `corral run --surfaces teams`.

A swarm whose every member failed is an error result (not "Spawned 0/2"); `stop_teammate` and
`interrupt_teammate` check the name like the other tools: a malformed name is `invalid_request`, a
name this lead never spawned is `target_not_found` naming the agents it has.
"""

from __future__ import annotations

import json

from .conftest import Env, RunCorral

LEAD = """
steps:
  - text: "A swarm in directories that do not exist."
    tool_calls:
      - name: spawn_swarm_agents
        args:
          agents:
            - {name: one, prompt: "Look.", cwd: nowhere-1}
            - {name: two, prompt: "Look.", cwd: nowhere-2}
  - text: "Controls on names that are not agents."
    tool_calls:
      - {name: stop_teammate, args: {agent_name: ghost}}
      - {name: interrupt_teammate, args: {agent_name: ghost}}
      - {name: stop_teammate, args: {agent_name: "not a name!"}}
      - {name: interrupt_teammate, args: {agent_name: team-lead}}
  - text: "Done."
"""


def test_failed_swarm_and_unknown_teammate_names_are_errors(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("lead", LEAD)
    done = corral("run", "--mode", "json", "--surfaces", "teams", "--model", "scripted/lead", "-p", "go")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    ends = [e for e in events if e.get("type") == "tool_execution_end"]
    assert [e["toolName"] for e in ends] == [
        "spawn_swarm_agents",
        "stop_teammate",
        "interrupt_teammate",
        "stop_teammate",
        "interrupt_teammate",
    ]
    assert all(e["isError"] for e in ends), [e["result"] for e in ends]
    swarm = ends[0]["result"]
    assert swarm["details"]["spawned"] == [] and len(swarm["details"]["failed"]) == 2
    assert "No agent was started" in swarm["content"][0]["text"]
    categories = [e["result"]["details"]["error"]["category"] for e in ends[1:]]
    assert categories == ["target_not_found", "target_not_found", "invalid_request", "invalid_request"]
    assert "No agent named ghost in this session" in ends[1]["result"]["content"][0]["text"]
