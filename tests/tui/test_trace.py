"""`corral --trace FILE` for the app: a traced app session (the real app under Pilot, set up the way the
`corral` command sets it up) round-trips through `corral trace` — the lead's root span, its turn, the
delegating tool call and the delegated agent's span under that call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from corral import _tracing
from corral._cli._trace import TraceSpan, read_trace, start_run_trace

from .conftest import SIZE, TuiEnv, type_text, wait_until

CORRAL = str(Path(sys.executable).with_name("corral"))

LEAD = """\
steps:
  - text: "Delegating."
    tool_calls:
      - name: agent
        args: {action: delegate, definition: scout, label: scout, task: "Map the code."}
  - text: "Waiting."
on_exhausted: repeat_last
agents:
  scout:
    - text: "Looking."
      tool_calls:
        - name: ls
          args: {path: "."}
    - text: "Mapped."
"""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" │├└─"))


def _walk(span: TraceSpan) -> list[TraceSpan]:
    return [span, *(s for child in span.children for s in _walk(child))]


async def test_a_traced_app_session_round_trips_through_corral_trace(tui_env: TuiEnv) -> None:
    _tracing.shutdown()
    trace_file = tui_env.root / "app-trace.jsonl"
    traced = start_run_trace(trace_file, command="app")  # what `corral --trace FILE` does around the app
    assert traced is not None
    try:
        app = tui_env.app(tui_env.script("team", LEAD))
        async with app.run_test(size=SIZE) as pilot:
            await type_text(pilot, "go")
            await pilot.press("enter")
            # The scout's span is written when its run ends.
            await wait_until(
                pilot, lambda: trace_file.exists() and '"name":"invoke_agent scout"' in trace_file.read_text()
            )
    finally:
        traced.close(code=0)
    assert _tracing.active is None

    [root] = read_trace(trace_file)
    assert root.name == "invoke_agent lead" and root.parent_id is None
    assert root.attributes["corral.command"] == "app" and not root.failed
    spans = _walk(root)
    assert len({s.trace_id for s in spans}) == 1
    [call] = [s for s in spans if s.name == "execute_tool agent"]
    lead_turns = [c for c in root.children if c.name == "corral.turn"]
    assert call in [c for turn in lead_turns for c in turn.children]
    [scout] = [c for c in call.children if c.name == "invoke_agent scout"]
    assert scout.attributes["corral.agent"] == "scout"
    scout_turns = [c for c in scout.children if c.name == "corral.turn"]
    assert len(scout_turns) == 2
    assert any(c.name == "execute_tool ls" for turn in scout_turns for c in turn.children)

    shown = subprocess.run(
        [CORRAL, "trace", str(trace_file)], capture_output=True, text=True, timeout=60, check=False
    )
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"trace {root.trace_id.removeprefix('0x')}")
    [lead_line] = [line for line in lines if "invoke_agent lead" in line]
    [call_line] = [line for line in lines if "execute_tool agent" in line]
    [scout_line] = [line for line in lines if "invoke_agent scout" in line]
    assert _indent(lead_line) < _indent(call_line) < _indent(scout_line)
    assert lines.index(lead_line) < lines.index(call_line) < lines.index(scout_line)
