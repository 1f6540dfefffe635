"""`corral agents list|show|close` with teams agents: a real `corral run --surfaces teams`, then the shell.

The lead (a scripted model) spawns agents with `spawn_agent`; one reports, one is stopped
with `stop_teammate`, and a crashed host leaves one lost and one whose report awaits
delivery. Agents running in another live process are seeded through the public store API
(their host is this test process, which is alive).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from corral.orchestration import NewGeneration, NewTeamMember, Repositories

from ._seed import lead_session, managed_agent
from .conftest import Env, RunCorral

REPORT_AND_STOP = """
steps:
  - text: "Spawning."
    tool_calls:
      - name: spawn_agent
        args: {name: slow, model_slot: read-collect, prompt: "Take your time."}
      - name: spawn_agent
        args: {name: style, model_slot: read-review, prompt: "Review the README."}
  - tool_calls:
      - name: stop_teammate
        args: {agent_name: slow, reason: "not needed"}
  - text: "Waiting."
on_exhausted: repeat_last
agents:
  slow:
    - delay_ms: 60000        # ended at once by the stop
      text: "never"
  style:
    - tool_calls:
        - name: report_and_exit
          args: {content: "The README is fine.", summary: "wording clear", outcome: succeeded}
"""

# `quick` reports while `slow` still waits; the host is SIGKILLed right after the report is stored.
CRASH = """
steps:
  - tool_calls:
      - name: spawn_agent
        args: {name: slow, model_slot: read-collect, prompt: "Take your time."}
      - name: spawn_agent
        args: {name: quick, model_slot: read-review, prompt: "Report at once."}
  - text: "Waiting."
on_exhausted: repeat_last
agents:
  slow:
    - delay_ms: 60000
      text: "never"
  quick:
    - tool_calls:
        - name: report_and_exit
          args: {content: "Could not finish.", summary: "blocked early", outcome: blocked}
"""


def _lead_id(env: Env) -> str:
    for path in env.sessions():
        header = json.loads(path.read_text().splitlines()[0])
        if not (header.get("corral") or {}).get("managed"):
            return str(header["id"])
    raise AssertionError("no lead session")


def _fields(stdout: str) -> dict[str, list[str]]:
    """The listing's rows by name (the tree's budget line that ends the listing left out)."""
    rows = [line.split("\t") for line in stdout.splitlines() if not line.startswith("tree budget: ")]
    return {row[0]: row for row in rows}


def _run_lead(env: Env, corral: RunCorral, script: str, *, faults: str | None = None) -> str:
    (env.project / "README.md").write_text("# Calc\n")
    env.script("lead", script)
    extra = {"CORRAL_FAULTS": faults} if faults else None
    done = corral("run", "--surfaces", "teams", "--model", "scripted/lead", "-p", "go", env=extra)
    assert done.returncode == (-9 if faults else 0), done.stderr
    return _lead_id(env)


def test_list_shows_reported_and_stopped_teams_agents_after_the_managed_ones(
    cli_env: Env, corral: RunCorral
) -> None:
    lead = _run_lead(cli_env, corral, REPORT_AND_STOP)

    only_teams = corral("agents", "list")
    assert only_teams.returncode == 0, only_teams.stderr
    listed = only_teams.stdout.splitlines()
    # No budget is set: no tree budget line (issue 28).
    assert not any(line.startswith("tree budget") for line in listed)
    rows = _fields("\n".join(listed))
    assert list(rows) == ["style", "slow"]  # the reported agent, then the one that left without a report
    style, slow = rows["style"], rows["slow"]
    assert style[1:3] == ["read-review", "completed"]
    assert style[3].startswith("finished ") and style[3].endswith(" ago")
    assert style[4] == "succeeded"
    assert slow[1:3] == ["read-collect", "stopped"] and slow[4] == "-"
    with Repositories.open(cli_env.home / "corral.db") as store:
        runs = {m.name: m.run_id for m in store.teams.roster.team_members(lead, live_only=False)}
    assert style[5] == runs["style"] and slow[5] == runs["slow"]

    # The managed agents' JSON stays the `list` action's array; teams agents are not mixed into it.
    assert json.loads(corral("agents", "list", "--json").stdout) == []
    managed_agent(cli_env, lead, "scout", lost=True)
    both = corral("agents", "list")
    lines = both.stdout.splitlines()
    assert lines[0].startswith("scout\tlost\tscout\t")
    assert [line.split("\t")[0] for line in lines[1:]] == ["style", "slow"]
    managed = json.loads(corral("agents", "list", "--json").stdout)
    assert isinstance(managed, list) and [r["agent"] for r in managed] == ["scout"]

    teams = json.loads(corral("agents", "list", "--json", "--teams").stdout)
    assert isinstance(teams, list)
    by_name = {s["name"]: s for s in teams}
    assert list(by_name) == ["style", "slow"]
    assert by_name["style"]["phase"] == "completed"
    assert by_name["style"]["modelSlot"] == "read-review" and by_name["style"]["outcome"] == "succeeded"
    assert by_name["style"]["summary"] == "wording clear" and by_name["style"]["runId"] == runs["style"]
    assert by_name["slow"]["phase"] == "stopped" and "reportId" not in by_name["slow"]
    text_teams = corral("agents", "list", "--teams").stdout.splitlines()
    assert [line.split("\t")[0] for line in text_teams] == ["style", "slow"]


def test_show_of_a_teams_agent_prints_its_status_and_report(cli_env: Env, corral: RunCorral) -> None:
    _run_lead(cli_env, corral, REPORT_AND_STOP)
    shown = corral("agents", "show", "style")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "kind: teams agent" in lines
    assert "state: completed" in lines and "outcome: succeeded" in lines
    assert "summary: wording clear" in lines
    assert lines[-1] == "The README is fine."  # the persisted report, as check_teammate shows it

    as_json = json.loads(corral("agents", "show", "style", "--json").stdout)
    assert as_json["name"] == "style" and as_json["phase"] == "completed"
    assert as_json["report"] == "The README is fine."
    assert Path(as_json["reportPath"]).read_text().count("The README is fine.") == 1

    stopped = corral("agents", "show", "slow")
    assert stopped.returncode == 0, stopped.stderr
    assert "state: stopped" in stopped.stdout.splitlines() and "Report" not in stopped.stdout


def test_close_of_a_teams_agent_is_refused_in_one_line(cli_env: Env, corral: RunCorral) -> None:
    _run_lead(cli_env, corral, REPORT_AND_STOP)
    for name in ("style", "slow"):
        done = corral("agents", "close", name)
        assert done.returncode == 2
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"corral: error: {name} is a teams agent") and "stop_teammate" in line
        assert done.stdout == ""
    assert list(_fields(corral("agents", "list").stdout)) == ["style", "slow"]  # nothing changed
    unknown = corral("agents", "close", "nobody")
    assert unknown.returncode == 2 and "teams agent" not in unknown.stderr


def test_a_crashed_hosts_agents_show_lost_and_finishing(cli_env: Env, corral: RunCorral) -> None:
    _run_lead(cli_env, corral, CRASH, faults="after_result_row:1")
    listed = corral("agents", "list")
    assert listed.returncode == 0, listed.stderr
    rows = _fields(listed.stdout)
    assert rows["quick"][2] == "finishing"  # reported; the report reaches the lead when it reopens
    assert rows["quick"][4] == "blocked"
    assert rows["slow"][2] == "lost" and rows["slow"][4] == "-"
    snapshot = json.loads(corral("agents", "show", "slow", "--json").stdout)
    assert snapshot["phase"] == "lost" and "is gone" in snapshot["error"]


def _running_elsewhere(env: Env, lead: str, name: str, *, minutes_ago: int) -> str:
    """A teams agent of a host that is alive (this test process), started `minutes_ago` minutes ago."""
    then = int(time.time() * 1000) - minutes_ago * 60_000
    with Repositories.open(env.home / "corral.db", clock=lambda: then) as store:
        generation, task, _member = store.teams.roster.create_team_generation(
            NewGeneration(
                definition="read-review",
                owner_session_id=lead,
                cwd=str(env.project),
                session_id=f"child-{name}",
                task="Review.",
                label=name,
            ),
            NewTeamMember(
                lead_session_id=lead,
                name=name,
                tier="read-review",
                requested_tier="read-review",
                kind="read",
                model="scripted/lead",
                thinking="medium",
                model_source="lead",
                sandbox="instruction",
                prompt="Review.",
            ),
        )
        store.kernel.record_started(generation.run_id, pid=os.getpid(), host_id="another-host")
        store.kernel.record_ack(generation.run_id, task.request_id, accepted=True)
        return generation.run_id


def test_agents_of_another_live_process_are_working_or_stalled(cli_env: Env, corral: RunCorral) -> None:
    lead = lead_session(cli_env)
    fresh = _running_elsewhere(cli_env, lead, "fresh", minutes_ago=0)
    _running_elsewhere(cli_env, lead, "old", minutes_ago=20)
    rows = _fields(corral("agents", "list").stdout)
    assert rows["fresh"][1:3] == ["read-review", "working"] and rows["fresh"][5] == fresh
    assert rows["old"][2] == "stalled"  # no activity for more than 15 minutes
    assert rows["old"][3].startswith("20m")
    shown = corral("agents", "show", "fresh").stdout.splitlines()
    assert f"progress: runs in corral process {os.getpid()}" in shown
