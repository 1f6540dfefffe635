"""Resolving a check left `claimed` by a dead process: the store step, the liveness proof, the freed name."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.orchestration import InvalidRequestError, ManagedAgentBusyError, Repositories, TargetNotFoundError
from corral.orchestration.surfaces.teams import parse_spawn
from corral.orchestration.surfaces.teams._render import render_stop, stop_details
from corral.orchestration.teams.checks._admin import abandon_check, unresolved_checks
from corral.orchestration.teams.checks.records import check_id
from corral.orchestration.teams.repair._repair import RepairController, repair_controller_id
from corral.orchestration.teams.reports._reports import report_id, task_id
from corral.orchestration.teams.roster.records import team_name
from tests.orchestration.teams._check_helpers import LEAD, Member, add_member, dead_pid, stuck_check
from tests.orchestration.teams._teams_helpers import prepare_env, teams_env, write_script


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Repositories]:
    with Repositories.open(tmp_path / "corral.db") as opened:
        yield opened


def _member_withstuck_check(store: Repositories, tmp_path: Path, *, pid: int) -> tuple[Member, str]:
    member = add_member(store)
    store.kernel.record_started(member.run_id, pid=pid)
    store.teams.repair.reserve_repair_stage(
        repair_controller_id(member.report_id),
        run_id=member.run_id,
        report_id=member.report_id,
        assignments=[{"name": "unit", "command": "true", "timeoutSeconds": 10}],
        max_attempts=1,
        submission_id="call-1",
        signature="repair:" + "1" * 64,
        decline=False,
        cancel_first=False,
        check_ids=lambda attempt: [check_id(member.report_id, "unit", attempt)],
    )
    stuck = stuck_check(store, tmp_path, run_id=member.run_id, task=member.task_id, report=member.report_id)
    return member, stuck


def test_a_claimed_check_of_a_dead_process_is_listed_then_settled_as_error_with_its_running_stage(
    store: Repositories, tmp_path: Path
) -> None:
    pid = dead_pid()
    member, stuck = _member_withstuck_check(store, tmp_path, pid=pid)
    assert RepairController(store.teams).unresolved(member.run_id) is not None
    [listed] = unresolved_checks(store.teams)
    assert (listed.check.check_id, listed.agent, listed.lead_session_id) == (stuck, member.name, LEAD)
    assert (listed.pid, listed.process_alive) == (pid, False)

    row = abandon_check(store.teams, stuck, reason="host crashed")

    assert row.state == "error" and row.completed_at is not None
    assert row.error is not None and "Abandoned by hand" in row.error and "(host crashed)" in row.error
    ledger = store.teams.repair.repair_ledger(repair_controller_id(member.report_id))
    assert ledger is not None and [stage.state for stage in ledger.stages] == ["cancelled"]  # final
    assert RepairController(store.teams).unresolved(member.run_id) is None  # the fence is gone
    assert unresolved_checks(store.teams) == [] and store.teams.checks.claimed_checks() == ()
    with pytest.raises(InvalidRequestError, match="already settled"):
        abandon_check(store.teams, stuck)
    with pytest.raises(TargetNotFoundError, match="corral checks list"):
        abandon_check(store.teams, "check:" + "0" * 64)


def test_a_check_whose_agent_process_exists_is_not_abandoned_unless_forced(
    store: Repositories, tmp_path: Path
) -> None:
    member, stuck = _member_withstuck_check(store, tmp_path, pid=os.getpid())
    [listed] = unresolved_checks(store.teams)
    assert listed.process_alive
    with pytest.raises(ManagedAgentBusyError, match=f"process {os.getpid()}"):
        abandon_check(store.teams, stuck)
    assert [row.check_id for row in store.teams.checks.claimed_checks(member.run_id)] == [
        stuck
    ]  # nothing changed
    ledger = store.teams.repair.repair_ledger(repair_controller_id(member.report_id))
    assert ledger is not None and not ledger.cancelled and ledger.stages[0].state == "running"
    assert abandon_check(store.teams, stuck, force=True).state == "error"


async def test_after_resolving_the_stuck_check_stop_frees_the_name_and_the_file_claims(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare_env(tmp_path, monkeypatch)
    write_script(
        tmp_path,
        "lead",
        {"steps": [{"text": "x"}], "agents": {"*": [{"delay_ms": 60000, "text": "working"}]}},
    )
    async with teams_env(tmp_path, "lead") as env:
        lead = env.caller.session_id
        spawned = await env.teams.spawning.spawn(
            env.caller,
            parse_spawn(
                {
                    "name": "fixer",
                    "prompt": "p",
                    "model_slot": "write-patch",
                    "checks": [{"name": "unit", "command": "true", "timeoutSeconds": 10}],
                }
            ),
        )
        run_id = spawned.run_id
        store = env.host.repositories
        store.teams.roster.claim_files(lead, run_id=run_id, agent="fixer", paths=["app.txt"])
        team = team_name(lead)
        stuck = stuck_check(
            store,
            tmp_path,
            run_id=run_id,
            task=task_id(team, "fixer", run_id),
            report=report_id(team, "fixer", run_id),
        )
        result = await env.teams.control.stop_teammate(env.caller, "fixer", None)
        text, details = render_stop(result), stop_details(result)
        assert details["quarantined"] is True and "still claimed" in text
        with pytest.raises(InvalidRequestError, match="cannot be restarted yet"):
            await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "fixer", "prompt": "again"}))

        abandon_check(store.teams, stuck, force=True)  # this test's process is the agent's host

        result = await env.teams.control.stop_teammate(env.caller, "fixer", None)

        text, details = render_stop(result), stop_details(result)
        assert details["stopped"] is True, text
        assert details["releasedClaims"] == ["app.txt"]
        member = store.teams.roster.team_member(run_id)
        assert member is not None and member.fence == "none" and not member.live
        again = await env.teams.spawning.spawn(env.caller, parse_spawn({"name": "fixer", "prompt": "again"}))
        assert again.run_id != run_id
        await env.teams.control.stop_teammate(env.caller, "fixer", None)
