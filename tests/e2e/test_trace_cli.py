"""`corral run --trace FILE` writes the run's spans as OTel JSON lines without any collector (the built-in
recorder), and `corral trace FILE` prints them back as a tree; bad files are one-line errors."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.otel_extra import require_otel

from .conftest import Env, RunCorral

TEAM = """
steps:
  - tool_calls:
      - name: agent
        args: {action: delegate, definition: scout, task: "count the files", label: counter}
    usage: {input: 1000, output: 20}
  - text: "Waiting."
    usage: {input: 1100, output: 5}
on_exhausted: repeat_last
agents:
  "*":
    - tool_calls: [{name: ls, args: {}}]
      usage: {input: 300, output: 10}
    - text: "Two files."
      usage: {input: 400, output: 4}
"""


@pytest.fixture
def env(cli_env: Env) -> Env:
    for key in [k for k in cli_env.vars if k.startswith("OTEL_")]:
        del cli_env.vars[key]  # no collector: the built-in recorder writes the file
    cli_env.script("team", TEAM)
    return cli_env


def test_a_traced_run_round_trips_through_corral_trace(env: Env, corral: RunCorral) -> None:
    trace = env.root / "run.jsonl"
    done = corral("run", "--model", "scripted/team", "--trace", str(trace), "-p", "count")
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(os.stat(trace).st_mode) == 0o600
    spans = [json.loads(line) for line in trace.read_text().splitlines()]
    for span in spans:
        assert {"name", "context", "parent_id", "start_time", "end_time", "attributes"} <= span.keys()
    assert len({s["context"]["trace_id"] for s in spans}) == 1
    by_id = {s["context"]["span_id"]: s for s in spans}
    [root] = [s for s in spans if s["parent_id"] is None]
    assert root["name"] == "invoke_agent lead" and root["attributes"]["corral.exit_code"] == 0
    [agent] = [s for s in spans if s["name"] == "invoke_agent counter"]
    assert agent["attributes"]["corral.agent"] == "counter"
    call = by_id[agent["parent_id"]]
    assert call["name"] == "execute_tool agent" and call["attributes"]["corral.agent"] == "lead"
    assert by_id[call["parent_id"]]["name"] == "corral.turn"
    chats = [s for s in spans if s["name"] == "chat team"]
    # The lead answers once more when the result arrives.
    assert sorted(s["attributes"]["gen_ai.usage.output_tokens"] for s in chats) == [4, 5, 5, 10, 20]

    shown = corral("trace", str(trace))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"trace {root['context']['trace_id'][2:]}")
    assert "2 agents" in lines[0] and "3,944 tok" in lines[0]  # every request's input + output
    assert lines[1].split()[:3] == ["invoke_agent", "lead", "lead"]
    call_line = next(i for i, line in enumerate(lines) if "execute_tool agent" in line)
    agent_line = lines[call_line + 1]
    indent = lambda line: len(line) - len(line.lstrip("│├└─ "))  # noqa: E731
    assert "invoke_agent counter" in agent_line and indent(agent_line) > indent(lines[call_line])
    assert "714 tok" in agent_line  # the agent's two requests: 310 + 404


def test_a_second_run_appends_its_own_trace(env: Env, corral: RunCorral) -> None:
    trace = env.root / "run.jsonl"
    for _ in range(2):
        assert corral("run", "--model", "scripted/team", "--trace", str(trace), "-p", "count").returncode == 0
    traces = {json.loads(line)["context"]["trace_id"] for line in trace.read_text().splitlines()}
    assert len(traces) == 2
    shown = corral("trace", str(trace))
    assert shown.returncode == 0 and sum(line.startswith("trace ") for line in shown.stdout.splitlines()) == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read the trace file"),
        ("", "holds no spans"),
        ('{"name": "x"}\n', "line 1 is not a span"),
        ("not json\n", "line 1 is not a span"),
        (b"\xff\xfe", "not UTF-8"),
    ],
    ids=["missing", "empty", "no-context", "not-json", "binary"],
)
def test_corral_trace_on_a_bad_file_is_one_line_and_exit_2(
    env: Env, corral: RunCorral, content: str | bytes | None, message: str
) -> None:
    path = env.root / "bad.jsonl"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    done = corral("trace", str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr


def test_a_trace_path_that_cannot_be_written_is_refused_before_the_run(env: Env, corral: RunCorral) -> None:
    for target in (env.root, env.root / "missing" / "t.jsonl"):
        done = corral("run", "--model", "scripted/team", "--trace", str(target), "-p", "count")
        assert done.returncode == 2
        assert len(done.stderr.strip().splitlines()) == 1 and "trace" in done.stderr, done.stderr
    assert not list((env.home / "sessions").rglob("*.jsonl")) if (env.home / "sessions").exists() else True


def test_opentelemetry_asked_for_with_an_unknown_exporter_is_a_usage_error(
    env: Env, corral: RunCorral
) -> None:
    require_otel(module_level=False)
    done = corral("run", "--model", "scripted/team", "-p", "count", env={"OTEL_TRACES_EXPORTER": "bogus"})
    assert done.returncode == 2
    assert "use otlp, console or none" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_without_trace_or_otel_variables_nothing_is_written(
    env: Env, corral: RunCorral, tmp_path: Path
) -> None:
    done = corral(
        "run", "--model", "scripted/team", "-p", "count", env={"CORRAL_TRACE_FILE": str(tmp_path / "x")}
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "x").exists()


NO_IMPORT = """\
import sys
from corral.cli import main
code = main(['run', '--model', 'scripted/team', '--no-session', '-p', 'hi', *sys.argv[1:]])
loaded = [m for m in ('opentelemetry', 'opentelemetry.sdk', 'corral._tracing._otel', 'corral._cli._trace')
          if m in sys.modules]
from corral import _tracing
print('loaded:', ','.join(loaded), 'active:', _tracing.active is not None)
raise SystemExit(code)
"""


def test_an_untraced_run_loads_nothing_of_tracing(env: Env) -> None:
    done = env.python(NO_IMPORT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "loaded:  active: False"
