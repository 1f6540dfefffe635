"""`corral` leaves with `os._exit` once a command is done (`_cli/_exit.py`): nothing durable is lost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from corral.orchestration import Repositories
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE

from .conftest import Env, RunCorral

AGENTS = 6

SWARM = json.dumps(
    {
        "steps": [
            {
                "tool_calls": [
                    {
                        "name": "spawn_swarm_agents",
                        "args": {
                            "defaults": {"model_slot": "read-collect"},
                            "agents": [{"name": f"a{i}", "prompt": f"task {i}"} for i in range(AGENTS)],
                        },
                    }
                ]
            },
            {"text": "All reports are in."},
        ],
        "on_exhausted": "repeat_last",
        "agents": {
            "*": [
                {
                    "tool_calls": [
                        {"name": "report_and_exit", "args": {"content": "r" * 1500, "outcome": "succeeded"}}
                    ]
                }
            ]
        },
    }
)


def _entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_report_and_entry_is_on_disk_after_the_fast_exit(corral: RunCorral, cli_env: Env) -> None:
    (cli_env.scripts / "lead.json").write_text(SWARM)
    done = corral("run", "--surfaces", "teams", "--mode", "json", "--model", "scripted/lead", "-p", "go")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    sessions = {path: _entries(path) for path in cli_env.sessions()}
    [lead] = [path for path, lines in sessions.items() if not (lines[0].get("corral") or {}).get("managed")]
    lead_entries = sessions[lead]
    reports = [e for e in lead_entries if e.get("customType") == TEAM_REPORT_TYPE]
    assert len(reports) == AGENTS
    assert len({e["details"]["report_id"] for e in reports}) == AGENTS
    # Every message the run announced is in the lead's file, the final answer last.
    ended = [e["message"] for e in events if e["type"] == "message_end"]
    stored = [e["message"] for e in lead_entries if e.get("type") == "message"]
    assert [m["role"] for m in stored] == [m["role"] for m in ended if m["role"] != "custom"]
    assert stored[-1]["content"][0]["text"] == "All reports are in."
    # Each agent's own session holds its report call and its result.
    agents = [lines for path, lines in sessions.items() if path != lead]
    assert len(agents) == AGENTS
    for lines in agents:
        results = [e for e in lines if e.get("type") == "message" and e["message"]["role"] == "toolResult"]
        assert [r["message"]["toolName"] for r in results] == ["report_and_exit"]
    with Repositories.open(cli_env.home / "corral.db") as store:
        stored_reports = store.teams.reports.team_reports(lead_session_id=str(lead_entries[0]["id"]))
        assert len(stored_reports) == AGENTS
        assert all(r.delivery == "delivered" for r in stored_reports)


def test_the_exit_code_survives_the_fast_exit(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("fail", "steps:\n  - text: 'the provider fell over'\n    stop: error\n")
    failed = corral("run", "--model", "scripted/fail", "--surfaces", "", "-p", "hi")
    assert failed.returncode == 1
    assert "the provider fell over" in failed.stderr
    usage = corral("run", "--mode", "rpc", "-p", "hi")
    assert usage.returncode == 2
    assert usage.stderr.startswith("corral: error:")


EXIT_PROBE = """
import atexit, gc, sys, threading
from pathlib import Path
from corral._cli._exit import exit_now

out = Path(sys.argv[1])
atexit.register(lambda: (out / "atexit").write_text("ran"))

class Finalized:
    def __del__(self):
        (out / "teardown").write_text("ran")

cycle = Finalized()
cycle.self = cycle  # collected only by the interpreter's teardown
del cycle
gc.disable()
if sys.argv[2] == "thread":
    gate = threading.Event()
    threading.Thread(target=gate.wait).start()
    exit_now(5)
    print("returned", end="", flush=True)
    gate.set()
    sys.exit(6)
print("said", end="")
exit_now(int(sys.argv[2]))
"""


def _probe(tmp_path: Path, arg: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", EXIT_PROBE, str(tmp_path), arg],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_exit_now_skips_the_teardown_but_runs_atexit_and_flushes(tmp_path: Path) -> None:
    done = _probe(tmp_path, "3")
    assert done.returncode == 3, done.stderr
    assert done.stdout == "said"  # flushed before leaving
    assert (tmp_path / "atexit").read_text() == "ran"
    assert not (tmp_path / "teardown").exists()


def test_exit_now_leaves_normally_while_another_thread_runs(tmp_path: Path) -> None:
    done = _probe(tmp_path, "thread")
    assert done.returncode == 6, done.stderr
    assert done.stdout == "returned"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "teardown").read_text() == "ran"
