"""A host SIGKILLed around a teams report's delivery: on restart each stored report reaches the lead once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.orchestration import Repositories
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE

from .conftest import Env, RunCorral

SCRIPT = """
steps:
  - tool_calls:
      - name: spawn_swarm_agents
        args:
          defaults: {model_slot: read-collect}
          agents:
            - {name: a, prompt: "task a"}
            - {name: b, prompt: "task b"}
            - {name: c, prompt: "task c"}
  - text: "Waiting for reports."
on_exhausted: repeat_last
agents:
  "*":
    - tool_calls:
        - name: report_and_exit
          args: {content: "report body", outcome: succeeded}
"""


def _lead_session(env: Env) -> Path:
    for path in env.sessions():
        header = json.loads(path.read_text().splitlines()[0])
        if not (header.get("corral") or {}).get("managed"):
            return path
    raise AssertionError("no lead session")


@pytest.mark.parametrize(
    "fault",
    [
        "after_result_row:1",
        "after_result_row:2",
        "after_owner_append:1",
        "after_owner_append:2",
        "before_cleanup:1",
    ],
)
def test_teams_reports_are_delivered_exactly_once_across_a_crash(
    cli_env: Env, corral: RunCorral, fault: str
) -> None:
    cli_env.script("lead", SCRIPT)
    first = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "-p", "go", env={"CORRAL_FAULTS": fault}
    )
    assert first.returncode == -9, (first.returncode, first.stderr)
    lead = _lead_session(cli_env)
    second = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "--session", str(lead), "-p", "continue"
    )
    assert second.returncode in (0, 1), second.stderr
    entries = [json.loads(line) for line in lead.read_text().splitlines()[1:]]
    delivered = [
        e["details"]["report_id"]
        for e in entries
        if e.get("type") == "custom_message" and e.get("customType") == TEAM_REPORT_TYPE
    ]
    with Repositories.open(cli_env.home / "corral.db") as store:
        reports = [r for r in store.teams.reports.team_reports(lead_session_id=entries_session(lead))]
        assert reports, "at least one report was stored before the crash"
        assert sorted(delivered) == sorted(r.report_id for r in reports)
        assert len(delivered) == len(set(delivered))
        assert all(r.delivery == "delivered" for r in reports)


def entries_session(lead: Path) -> str:
    return str(json.loads(lead.read_text().splitlines()[0])["id"])


GROUP_SCRIPT = SCRIPT.replace(
    "          defaults: {model_slot: read-collect}",
    "          completion_group: {delivery: all-settled}\n          defaults: {model_slot: read-collect}",
)


@pytest.mark.parametrize("fault", ["after_result_row:2", "after_owner_append:1", "before_cleanup:1"])
def test_a_grouped_swarm_settles_after_a_crash_without_inventing_success(
    cli_env: Env, corral: RunCorral, fault: str
) -> None:
    cli_env.script("lead", GROUP_SCRIPT)
    first = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "-p", "go", env={"CORRAL_FAULTS": fault}
    )
    assert first.returncode == -9, (first.returncode, first.stderr)
    lead = _lead_session(cli_env)
    second = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "--session", str(lead), "-p", "continue"
    )
    assert second.returncode in (0, 1), second.stderr
    entries = [json.loads(line) for line in lead.read_text().splitlines()[1:]]
    indexes = [
        e for e in entries if e.get("type") == "custom_message" and e.get("customType") == "corral-team-group"
    ]
    assert [e for e in entries if e.get("customType") == TEAM_REPORT_TYPE] == []
    settled = [e for e in indexes if e["details"]["kind"] == "settled"]
    assert len(settled) <= 1
    assert len({e["details"]["delivery_id"] for e in indexes}) == len(indexes)  # each index once
    if settled:
        text = settled[0]["content"]
        with Repositories.open(cli_env.home / "corral.db") as store:
            reported = {
                r.name for r in store.teams.reports.team_reports(lead_session_id=entries_session(lead))
            }
        for name in ("a", "b", "c"):
            # a member that never reported is interrupted, never shown as succeeded
            assert name in text
        assert text.count('"status": "reported"') + text.count('"status":"reported"') == len(reported)
    else:
        assert "warning" in second.stderr


CHECK_SCRIPT = """
steps:
  - tool_calls:
      - name: spawn_agent
        args:
          name: fixer
          prompt: "Make the check pass."
          model_slot: write-patch
          checks: [{name: unit, command: "grep -q fixed app.txt", timeoutSeconds: 30}]
          repair: {maxAttempts: 1}
  - text: "Waiting for the report."
on_exhausted: repeat_last
agents:
  fixer:
    - tool_calls: [{name: report_and_exit, args: {content: "first try", outcome: succeeded}}]
    - tool_calls: [{name: write, args: {path: app.txt, content: "fixed"}}]
    - tool_calls: [{name: report_and_exit, args: {content: "second try", outcome: succeeded}}]
"""


def _git_project(project: Path) -> None:
    import subprocess

    (project / "app.txt").write_text("broken\\n")
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)


@pytest.mark.parametrize(
    "fault",
    [
        "after_check_claim:1",
        "before_check_finish:1",
        "after_check_claim:2",
        "before_check_finish:2",
        "after_result_row:1",
    ],
)
def test_a_crash_during_a_check_never_reruns_it_or_consumes_an_attempt_twice(
    cli_env: Env, corral: RunCorral, fault: str
) -> None:
    _git_project(cli_env.project)
    cli_env.script("lead", CHECK_SCRIPT)
    first = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "-p", "go", env={"CORRAL_FAULTS": fault}
    )
    assert first.returncode == -9, (first.returncode, first.stderr)
    with Repositories.open(cli_env.home / "corral.db") as store:
        [member] = store.teams.roster.team_members(
            lead_session_id=entries_session(_lead_session(cli_env)), live_only=False
        )
        checks_before = {c.check_id: c.state for c in store.teams.checks.claimed_checks(member.run_id)}
        ledgers_before = [
            (len(ledger.stages), [s.state for s in ledger.stages])
            for ledger in store.teams.repair.repair_ledgers(member.run_id)
        ]
    lead = _lead_session(cli_env)
    second = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "--session", str(lead), "-p", "continue"
    )
    assert second.returncode in (0, 1), second.stderr
    with Repositories.open(cli_env.home / "corral.db") as store:
        # A claimed check is never replayed; the ledger gains no stage after the restart.
        assert {
            c.check_id: c.state for c in store.teams.checks.claimed_checks(member.run_id)
        } == checks_before
        assert [
            (len(ledger.stages), [s.state for s in ledger.stages])
            for ledger in store.teams.repair.repair_ledgers(member.run_id)
        ] == ledgers_before
        reports = store.teams.reports.team_reports(lead_session_id=member.lead_session_id)
    entries = [json.loads(line) for line in lead.read_text().splitlines()[1:]]
    delivered = [e["details"]["report_id"] for e in entries if e.get("customType") == TEAM_REPORT_TYPE]
    assert sorted(delivered) == sorted(r.report_id for r in reports)  # stored reports reach the lead once


CHECKPOINT_SCRIPT = """
steps:
  - tool_calls:
      - name: spawn_agent
        args:
          name: auth-review
          prompt: "Review app.txt."
          checkpoint: {inputs: ["app.txt"]}
  - text: "Waiting for the report."
on_exhausted: repeat_last
agents:
  auth-review:
    - tool_calls:
        - name: report_and_exit
          args: {content: "Reviewed.", outcome: succeeded, findings: [{id: F1, text: "ok", evidence: ["app.txt:1"]}]}
"""


def test_a_checkpoint_is_still_saved_when_the_host_dies_right_after_the_report(
    cli_env: Env, corral: RunCorral
) -> None:
    _git_project(cli_env.project)
    cli_env.script("lead", CHECKPOINT_SCRIPT)
    first = corral(
        "run",
        "--surfaces",
        "teams",
        "--model",
        "scripted/lead",
        "-p",
        "go",
        env={"CORRAL_FAULTS": "after_result_row:1"},
    )
    assert first.returncode == -9, (first.returncode, first.stderr)
    with Repositories.open(cli_env.home / "corral.db") as store:
        [report] = store.teams.reports.team_reports(lead_session_id=entries_session(_lead_session(cli_env)))
        checkpoint_id = report.result.checkpoint_id
        assert (
            store.teams.checkpoints.get_checkpoint(checkpoint_id) is None
        )  # the crash came before it was saved
    lead = _lead_session(cli_env)
    second = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "--session", str(lead), "-p", "continue"
    )
    assert second.returncode in (0, 1), second.stderr
    listed = corral("checkpoints", "list")
    assert listed.returncode == 0 and checkpoint_id in listed.stdout and "ready" in listed.stdout


@pytest.mark.parametrize(
    ("fault", "admitted"),
    [
        ("swarm_admission:1", False),
        ("swarm_admission:3", False),
        ("after_swarm_admission:1", True),
    ],
)
def test_a_crash_during_a_swarms_admission_admits_every_member_or_none(
    cli_env: Env, corral: RunCorral, fault: str, admitted: bool
) -> None:
    """The swarm's member rows are one transaction: killed inside it (after the first or the last
    member's rows), no member is admitted; killed right after it, all three are. On resume the lead
    is told about every admitted member (lost with its host) or about none, and nothing reports."""
    cli_env.script("lead", SCRIPT)
    first = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "-p", "go", env={"CORRAL_FAULTS": fault}
    )
    assert first.returncode == -9, (first.returncode, first.stderr)
    lead = _lead_session(cli_env)
    lead_id = entries_session(lead)
    with Repositories.open(cli_env.home / "corral.db") as store:
        members = store.teams.roster.team_members(lead_id, live_only=False)
        assert sorted(m.name for m in members) == (["a", "b", "c"] if admitted else [])
        assert len(store.kernel.generations(include_finalized=True)) == (3 if admitted else 0)
    second = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "--session", str(lead), "-p", "continue"
    )
    assert second.returncode in (0, 1), second.stderr
    for name in ("a", "b", "c"):  # all three named lost, or none
        assert (f"agent {name} (read-collect) was lost" in second.stderr) is admitted, second.stderr
    entries = [json.loads(line) for line in lead.read_text().splitlines()[1:]]
    assert not [e for e in entries if e.get("customType") == TEAM_REPORT_TYPE]
    with Repositories.open(cli_env.home / "corral.db") as store:
        assert store.teams.reports.team_reports(lead_session_id=lead_id) == ()
        for member in store.teams.roster.team_members(lead_id, live_only=False):
            generation = store.kernel.get_generation(member.run_id)
            assert generation is not None and generation.presence == "lost", generation
