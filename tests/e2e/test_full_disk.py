"""`corral run -p` when the disk holding `$CORRAL_HOME` fills up mid-run (a real, small tmpfs).

The run must fail cleanly — no traceback, exit 1, every agent it could not
settle named on stderr — and lose nothing: once space is freed, resuming the
session delivers every stored result exactly once, the SQLite store passes
its integrity check and every session file parses.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.tmpfs import fill, small_tmpfs

from .conftest import Env, RunCorral

_BIG = "x" * 12_000  # larger than any slack left in a file's last page

# The lead's bash call waits (bounded) until the scout's transcript holds the marker and its start
# is recorded (the delegation runs beside this call: on a busy machine the scout can reply before
# its launch is written), then fills the disk: with the marker in the scout's last reply its result
# is stored but cannot be delivered to the lead; with the marker in its first reply the scout's own
# next write fails.
_LEAD = """
steps:
  - text: "Sending a scout."
    tool_calls:
      - name: agent
        args: {action: delegate, definition: scout, task: "Report."}
      - name: bash
        args:
          command: >-
            for i in $(seq 1 600); do grep -rqs SCOUT-MARK "$CORRAL_HOME/sessions" &&
            "$TEST_PYTHON" -c "import os, sqlite3, sys; db = sqlite3.connect(os.environ['CORRAL_HOME'] + '/corral.db');
            sys.exit(db.execute('SELECT 1 FROM generations WHERE label = ? AND pid IS NOT NULL', ('scout',)).fetchone() is None)"
            && break; sleep 0.05; done;
            [ "$i" -lt 600 ] || { echo "the scout's start was never recorded" >&2; exit 1; };
            dd if=/dev/zero of="$CORRAL_HOME/fill1" bs=64k 2>/dev/null;
            dd if=/dev/zero of="$CORRAL_HOME/fill2" bs=1 2>/dev/null; echo filled
  - text: "Waiting for the scout's result."
  - text: "The scout reports: {{ last_custom.status }}."
"""
SCOUTS = {
    "result-undeliverable": f'agents:\n  "*":\n    - text: "SCOUT-MARK {_BIG}"\n',
    "agent-write-fails": (
        'agents:\n  "*":\n    - text: "SCOUT-MARK"\n      tool_calls:\n'
        "        - name: read\n          args: {path: README.md}\n"
        f'    - text: "{_BIG}"\n'
    ),
}


def _lines(path: Path) -> list[dict[str, object]]:
    data = path.read_bytes()
    assert data.endswith(b"\n"), f"{path} ends in a torn line"
    return [json.loads(line) for line in data.split(b"\n")[:-1]]


@pytest.mark.parametrize("scout", sorted(SCOUTS))
def test_full_disk_mid_run_fails_cleanly_and_resume_delivers_once(
    corral: RunCorral, cli_env: Env, scout: str
) -> None:
    (cli_env.project / "README.md").write_text("# Invoice\n")
    with small_tmpfs(cli_env.home, "3m") as home:
        cli_env.script("team", _LEAD + SCOUTS[scout])
        # Plain text: when the scout's own writes failed it stored no result, so nothing may arrive.
        cli_env.script("after", "steps:\n  - text: 'Resumed.'\n")
        # The lead's bash call reads the store with the suite's own Python (no `python3` assumed).
        done = corral("run", "--model", "scripted/team", "-p", "go", env={"TEST_PYTHON": sys.executable})
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        # The session file or the database ran out of space, whichever was written first.
        assert "No space left on device" in done.stderr or "out of space" in done.stderr, done.stderr
        assert (
            "corral: agent scout (scout)" in done.stderr
            or "corral: error: agent scout (scout)" in done.stderr
        )

        for filler in home.glob("fill*"):
            filler.unlink()
        db = sqlite3.connect(home / "corral.db")
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        stored = [row[0] for row in db.execute("SELECT request_id FROM results")]
        db.close()
        for path in cli_env.sessions():
            _lines(path)
        [lead] = [p for p in cli_env.sessions() if '"managed"' not in p.read_text().splitlines()[0]]
        lead_id = json.loads(lead.read_text().splitlines()[0])["id"]

        resumed = corral("run", "--session", lead_id, "--model", "scripted/after", "-p", "again")
        assert resumed.returncode == 0, resumed.stderr
        assert "Traceback" not in resumed.stderr

        delivered = [
            line
            for line in _lines(lead)
            if line["type"] == "custom_message" and line["customType"] == "corral-agent-result"
        ]
        assert sorted(str(line["details"]["request_id"]) for line in delivered) == sorted(stored)  # type: ignore[index]
        db = sqlite3.connect(home / "corral.db")
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("SELECT count(*) FROM results WHERE delivery != 'delivered'").fetchone() == (0,)
        stuck = db.execute(
            "SELECT label FROM generations WHERE phase IN ('starting', 'active') AND presence = 'live'"
        ).fetchall()
        db.close()
        assert stuck == []
        for path in cli_env.sessions():
            _lines(path)


def test_continuing_a_session_with_a_torn_last_line_warns_and_goes_on(
    corral: RunCorral, cli_env: Env
) -> None:
    cli_env.script("two", "steps:\n  - text: first answer\n  - text: second answer\n")
    assert corral("run", "--model", "scripted/two", "-p", "one").returncode == 0
    [path] = cli_env.sessions()
    with path.open("ab") as handle:
        handle.write(b'{"type":"message","id":"deadbeef","parentId":')
    done = corral("run", "--continue", "-p", "two")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "second answer\n"
    assert "torn line" in done.stderr and ".torn-1" in done.stderr
    sidecar = path.with_name(path.name + ".torn-1")
    assert sidecar.read_bytes() == b'{"type":"message","id":"deadbeef","parentId":'
    lines = _lines(path)
    messages = [line for line in lines if line["type"] == "message"]
    assert [m["message"]["role"] for m in messages] == ["user", "assistant", "user", "assistant"]  # type: ignore[index]
    # The new prompt follows the last valid entry.
    assert messages[2]["parentId"] == lines[lines.index(messages[2]) - 1]["id"]


_BIG_RESULT = "y" * 70_000  # over the inline limit (64 KiB): the result goes to an artifact file

_RESULT_LEAD = f"""
steps:
  - text: "Sending a scout."
    tool_calls:
      - {{name: agent, args: {{action: delegate, definition: scout, label: big, task: "Report at length."}}}}
  - text: "Waiting for the scout."
  - text: "Resumed."
on_exhausted: repeat_last
agents:
  big:
    - text: "{_BIG_RESULT}"
"""


def test_an_agent_whose_result_cannot_be_written_settles_as_failed_once_the_lead_resumes(
    corral: RunCorral, cli_env: Env
) -> None:
    """Only the results directory is full: the database still records the write error (`result_error`)."""
    cli_env.script("team", _RESULT_LEAD)
    with small_tmpfs(cli_env.home / "results", "256k") as results:
        filler = fill(results)
        done = corral("run", "--model", "scripted/team", "-p", "go")
        assert done.returncode == 1, done.stdout + done.stderr
        assert "agent big (scout) ended without a stored result (a write failed)" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr

        # Its host is gone: it is shown lost until the lead resumes, never settling.
        listed = corral("agents", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [r["state"] for r in json.loads(listed.stdout)] == ["lost"]

        filler.unlink()  # the disk is grown
        resumed = corral("run", "--continue", "-p", "again")
        assert resumed.returncode == 0, resumed.stderr
        assert "Traceback" not in resumed.stderr

        listed = corral("agents", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [r for r in json.loads(listed.stdout) if r["state"] in ("working", "settling")] == []
        db = sqlite3.connect(cli_env.home / "corral.db")
        [(phase, diagnostic)] = db.execute(
            "SELECT phase, diagnostic FROM generations WHERE label = 'big'"
        ).fetchall()
        [(status, code, message, delivery)] = db.execute(
            "SELECT status, error_code, error_message, delivery FROM results"
        ).fetchall()
        db.close()
        assert phase == "finalized"
        assert (status, code, delivery) == ("failed", "write_failure", "delivered")
        assert "No space left on device" in message and "No space left on device" in diagnostic
        [lead] = [p for p in cli_env.sessions() if '"managed"' not in p.read_text().splitlines()[0]]
        delivered = [
            line
            for line in _lines(lead)
            if line["type"] == "custom_message" and line["customType"] == "corral-agent-result"
        ]
        assert len(delivered) == 1 and "No space left on device" in str(delivered[0]["content"])
