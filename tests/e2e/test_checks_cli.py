"""`corral checks list|resolve` after a real SIGKILL left a check `claimed` (subprocesses, real store)."""

from __future__ import annotations

from corral.orchestration import Repositories

from .conftest import Env, RunCorral
from .test_teams_crash import CHECK_SCRIPT, _git_project, _lead_session, entries_session


def test_list_without_a_store_says_so_and_creates_nothing(cli_env: Env, corral: RunCorral) -> None:
    done = corral("checks", "list")
    assert (done.returncode, done.stdout, done.stderr) == (0, "No unresolved checks.\n", "")
    assert not (cli_env.home / "corral.db").exists()


def test_a_check_claimed_by_a_killed_host_is_listed_resolved_once_and_never_rerun(
    cli_env: Env, corral: RunCorral
) -> None:
    _git_project(cli_env.project)
    cli_env.script("lead", CHECK_SCRIPT)
    first = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "-p", "go",
        env={"CORRAL_FAULTS": "after_check_claim:1"},
    )  # fmt: skip
    assert first.returncode == -9, first.stderr
    listed = corral("checks", "list")
    assert listed.returncode == 0 and listed.stderr == ""
    [line] = listed.stdout.splitlines()
    check_id = line.split(" | ")[0]
    assert check_id.startswith("check:") and len(check_id) == 70
    assert "| agent fixer | unit (attempt 1) |" in line and " gone |" in line and line.endswith(".log")

    for bad, message in (
        ("nope", "'nope' is not a check id"),
        ("check:" + "0" * 64, "No check check:" + "0" * 64),
    ):
        refused = corral("checks", "resolve", bad)
        assert refused.returncode == 2 and refused.stdout == ""
        assert refused.stderr.count("\n") == 1 and message in refused.stderr, refused.stderr

    resolved = corral("checks", "resolve", check_id, "--reason", "host was killed in a test")
    assert resolved.returncode == 0, resolved.stderr
    assert resolved.stdout.startswith(f"Resolved {check_id} (unit of agent fixer) as error")
    assert "stop_teammate fixer" in resolved.stdout
    assert corral("checks", "list").stdout == "No unresolved checks.\n"
    again = corral("checks", "resolve", check_id)
    assert again.returncode == 2 and "already settled (error)" in again.stderr

    lead = _lead_session(cli_env)
    second = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "--session", str(lead), "-p", "continue"
    )
    assert second.returncode in (0, 1), second.stderr
    with Repositories.open(cli_env.home / "corral.db") as store:
        row = store.teams.checks.get_check(check_id)
        assert row is not None and row.state == "error"  # kept as resolved: never replayed
        assert row.error is not None and "host was killed in a test" in row.error
        [member] = store.teams.roster.team_members(lead_session_id=entries_session(lead), live_only=False)
        assert store.teams.checks.claimed_checks(member.run_id) == ()
