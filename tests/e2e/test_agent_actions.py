"""The `agent` tool's actions and error categories through the real `corral run` command.

One scripted lead drives a team: it lists, delegates, hits the error categories on purpose, steers,
inspects, interrupts and closes. The JSON event stream shows each tool result's `details`.
"""

from __future__ import annotations

import json

from .conftest import Env, RunCorral

LEAD = """
steps:
  - text: "Roster first."
    tool_calls:
      - {name: agent, args: {action: list}}
  - text: "Delegating."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: generalist, label: worker, task: "Summarise the README.", files: [README.md]}}
      - {name: agent, args: {action: delegate, definition: scout, label: idler, task: "Wait."}}
  - text: "Probing the rules."
    delay_ms: 200
    tool_calls:
      - {name: agent, args: {action: delegate, definition: scout, label: worker, task: "Duplicate label."}}
      - {name: agent, args: {action: delegate, definition: nosuch, task: "Unknown definition."}}
      - {name: agent, args: {action: steer, agent: ghost, message: "Nobody here."}}
      - {name: agent, args: {action: reply, agent: worker, message: "Nothing was asked."}}
      - {name: agent, args: {action: delegate, definition: scout, task: "x", timeoutMs: 10}}
      - {name: agent, args: {action: list, agent: worker}}
  - text: "Controls."
    tool_calls:
      - {name: agent, args: {action: steer, agent: worker, message: "Keep it to one line."}}
      - {name: agent, args: {action: inspect, agent: worker}}
  - text: "Interrupting and closing."
    tool_calls:
      - {name: agent, args: {action: interrupt, agent: worker, message: "Stop waiting and answer now."}}
      - {name: agent, args: {action: close, agent: idler}}
  - text: "Waiting for the worker."
  - text: "Done: {{ last_custom.status }}"
agents:
  worker:
    - text: "Reading."
      tool_calls:
        - {name: read, args: {path: README.md}}
    - text: "Thinking for a long time."
      delay_ms: 60000
    - text: "The README says hello."
  idler:
    - text: "Idling."
      delay_ms: 60000
"""


def _tool_results(stdout: str) -> list[dict]:
    events = [json.loads(line) for line in stdout.splitlines()]
    return [e for e in events if e.get("type") == "tool_execution_end" and e["toolName"] == "agent"]


def test_agent_actions_and_error_categories_through_corral_run(cli_env: Env, corral: RunCorral) -> None:
    (cli_env.project / "README.md").write_text("hello\n")
    cli_env.script("lead", LEAD)
    done = corral("run", "--mode", "json", "--model", "scripted/lead", "-p", "go")
    assert done.returncode == 0, done.stderr
    results = _tool_results(done.stdout)
    details = [r["result"]["details"] for r in results]
    actions = [d.get("action") if d.get("ok") else d["error"]["category"] for d in details]
    assert actions == [
        "list",
        "delegate",
        "delegate",
        "agent_label_exists",
        "invalid_request",
        "target_not_found",
        "agent_busy",
        "invalid_request",
        "invalid_request",
        "steer",
        "inspect",
        "interrupt",
        "close",
    ]
    listed = details[0]
    assert {d["name"] for d in listed["agent_definitions"]} >= {
        "scout",
        "reviewer",
        "implementer",
        "generalist",
    }
    assert listed["agents"] == []
    delegate = details[1]
    assert delegate["agent"] == "worker" and delegate["definition"] == "generalist" and delegate["request_id"]
    assert "timeoutMs" in details[7]["error"]["message"]
    assert "agent" in details[8]["error"]["message"]  # a field `list` does not take
    assert all(r["isError"] == (not d["ok"]) for r, d in zip(results, details, strict=True))
    inspect = details[10]
    assert inspect["agent"] == "worker" and "recent_output_truncated" in inspect
    # The interrupted worker continued the same assignment and its one result was delivered once.
    events = [json.loads(line) for line in done.stdout.splitlines()]
    delivered = [
        e["message"]
        for e in events
        if e.get("type") == "message_end"
        and e["message"].get("role") == "custom"
        and e["message"].get("customType") == "corral-agent-result"
    ]
    assert [m["details"]["agent"] for m in delivered] == ["worker"]
    assert delivered[0]["details"]["status"] == "completed"
    assert delivered[0]["content"].splitlines()[-1] == "The README says hello."
    assert [e["type"] for e in events[-2:]] == ["agent_settled", "run_end"]
