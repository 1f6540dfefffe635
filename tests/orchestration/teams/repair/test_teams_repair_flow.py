"""Assigned checks and bounded repair through the teams surface, with real git repos and commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.orchestration.surfaces.teams import handle_request, parse_spawn
from corral.orchestration.surfaces.teams._render import (
    health_details,
    render_health,
    render_status,
    render_stop,
    status_details,
    stop_details,
)
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from tests._waits import eventually
from tests.orchestration.teams._git_helpers import make_repo
from tests.orchestration.teams._teams_helpers import teams_env, write_script


@pytest.fixture(autouse=True)
def _env(env: Path) -> None:
    make_repo(env / "work", {"app.py": "VALUE = 1\n"})


CHECK = [{"name": "fixed", "command": "grep -q 'VALUE = 2' app.py", "timeoutSeconds": 20}]


def _report(content: str, outcome: str = "succeeded") -> dict[str, object]:
    return {"tool_calls": [{"name": "report_and_exit", "args": {"content": content, "outcome": outcome}}]}


async def test_a_failed_check_gets_one_repair_attempt_and_then_passes(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [{"text": "x"}],
            "on_exhausted": "repeat_last",
            "agents": {
                "fixer": [
                    _report("Done (not really)."),
                    {
                        "expect": {"context_contains": ["repair attempt is available", "fixed"]},
                        "tool_calls": [
                            {"name": "write", "args": {"path": "app.py", "content": "VALUE = 2\n"}}
                        ],
                    },
                    _report("Fixed: VALUE is 2."),
                ]
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.teams.spawning.spawn(
            env.caller,
            parse_spawn(
                {
                    "name": "fixer",
                    "prompt": "Set VALUE to 2.",
                    "model_slot": "write-patch",
                    "checks": CHECK,
                    "repair": {"maxAttempts": 1},
                }
            ),
        )
        await env.quiet()
        [entry] = env.lead_custom(TEAM_REPORT_TYPE)
        details = entry["details"]
        assert details["verification"]["state"] == "passed"
        assert details["outcome"] == "succeeded" and details["effective_outcome"] == "succeeded"
        report = env.host.repositories.teams.reports.team_report(details["report_id"])
        assert report is not None and report.content == "Fixed: VALUE is 2."
        repair = report.result.repair
        assert repair is not None and repair.state == "repaired" and repair.attempts_used == 1


async def test_exhausted_repair_keeps_the_outcome_and_adds_an_effective_blocker(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [{"text": "x"}],
            "on_exhausted": "repeat_last",
            "agents": {"stubborn": [_report("Attempt one."), _report("Attempt two.")]},
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.teams.spawning.spawn(
            env.caller,
            parse_spawn(
                {
                    "name": "stubborn",
                    "prompt": "p",
                    "model_slot": "write-patch",
                    "checks": CHECK,
                    "repair": {"maxAttempts": 1},
                }
            ),
        )
        await env.quiet()
        [entry] = env.lead_custom(TEAM_REPORT_TYPE)
        details = entry["details"]
        assert details["verification"]["state"] == "failed"
        assert details["outcome"] == "succeeded" and details["effective_outcome"] == "blocked"
        report = env.host.repositories.teams.reports.team_report(details["report_id"])
        assert (
            report is not None
            and report.result.repair is not None
            and report.result.repair.state == "exhausted"
        )
        result = await env.teams.control.status(env.caller, "stubborn")
        _, status = render_status(result), status_details(result)
        assert status["agents"][0]["effectiveOutcome"] == "blocked"
        result = await env.teams.control.check_teammate(env.caller, "stubborn")
        _, checked = render_health(result), health_details(result)
        assert checked["checks"] and all(Path(c["logPath"]).is_file() for c in checked["checks"])


async def test_without_repair_a_failed_check_does_not_block_the_report_and_passes_go_stale(
    tmp_path: Path,
) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [{"text": "x"}],
            "on_exhausted": "repeat_last",
            "agents": {"reader": [_report("Read it.")], "writer": [_report("w")]},
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.teams.spawning.spawn(
            env.caller, parse_spawn({"name": "reader", "prompt": "p", "checks": CHECK})
        )
        passing = [{"name": "exists", "command": "test -f app.py", "timeoutSeconds": 20}]
        await env.teams.spawning.spawn(
            env.caller, parse_spawn({"name": "writer", "prompt": "p", "checks": passing})
        )
        await env.quiet()
        by_name = {e["details"]["name"]: e["details"] for e in env.lead_custom(TEAM_REPORT_TYPE)}
        assert by_name["reader"]["verification"]["state"] == "failed"
        assert by_name["reader"]["effective_outcome"] == "succeeded"
        assert by_name["writer"]["verification"]["state"] == "passed"
        (tmp_path / "work" / "app.py").write_text("VALUE = 3\n")  # the source changes after the check passed
        result = await env.teams.control.status(env.caller, "writer")
        _, status = render_status(result), status_details(result)
        assert status["agents"][0]["verification"]["state"] == "stale"
        stored = env.host.repositories.teams.reports.team_report(by_name["writer"]["report_id"])
        assert stored is not None and stored.result.verification.state == "passed"  # history kept


async def test_checks_are_validated_and_repair_needs_checks(tmp_path: Path) -> None:
    write_script(tmp_path, "lead", {"steps": [{"text": "x"}]})
    async with teams_env(tmp_path, "lead") as env:
        with pytest.raises(Exception, match="Repair policy requires explicitly assigned checks"):
            await env.teams.spawning.spawn(
                env.caller, parse_spawn({"prompt": "p", "repair": {"maxAttempts": 1}})
            )
        with pytest.raises(Exception, match="Invalid assigned check policy"):
            await env.teams.spawning.spawn(
                env.caller,
                parse_spawn(
                    {"prompt": "p", "checks": [{"name": "a", "command": "true", "timeoutSeconds": 0}]}
                ),
            )
        assert env.host.kernel.generations(include_finalized=True) == ()


async def test_a_trusted_integration_binds_checks_through_the_programmatic_launch(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {"steps": [{"text": "x"}], "on_exhausted": "repeat_last", "agents": {"*": [_report("done")]}},
    )
    async with teams_env(tmp_path, "lead") as env:
        response = await handle_request(
            env.teams,
            env.caller.session_id,
            {
                "requestId": "r1",
                "type": "spawn_agent",
                "params": {"name": "api", "prompt": "p", "checks": CHECK},
            },
        )
        assert response is not None and response.ok, response
        await env.quiet()
        [entry] = env.lead_custom(TEAM_REPORT_TYPE)
        assert entry["details"]["verification"]["state"] == "failed"
        bad = await handle_request(
            env.teams,
            env.caller.session_id,
            {
                "requestId": "r2",
                "type": "spawn_agent",
                "params": {"prompt": "p", "continueFrom": "checkpoint:nope"},
            },
        )
        assert bad is not None and not bad.ok


async def test_stop_cancels_a_running_check_and_the_run_finalizes(tmp_path: Path) -> None:
    slow = [{"name": "slow", "command": "sleep 30", "timeoutSeconds": 60}]
    write_script(
        tmp_path,
        "lead",
        {"steps": [{"text": "x"}], "on_exhausted": "repeat_last", "agents": {"*": [_report("done")]}},
    )
    async with teams_env(tmp_path, "lead") as env:
        spawned = await env.teams.spawning.spawn(
            env.caller,
            parse_spawn({"name": "waiter", "prompt": "p", "checks": slow, "repair": {"maxAttempts": 1}}),
        )
        run_id = spawned.run_id

        def checking() -> bool:
            return bool(env.host.repositories.teams.checks.claimed_checks(run_id))

        await eventually(checking, env.host)  # the claim signals the host's change event
        result = await env.teams.control.stop_teammate(env.caller, "waiter", None)
        text, details = render_stop(result), stop_details(result)
        assert details["stopped"] is True, text
        assert env.host.repositories.teams.checks.claimed_checks(run_id) == ()
        assert env.lead_custom(TEAM_REPORT_TYPE) == []
        generation = env.host.kernel.get_generation(run_id)
        assert generation is not None and generation.phase == "finalized"


async def test_the_lead_sees_the_effective_blocker_and_why_a_policy_is_invalid(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {
                                "prompt": "p",
                                "checks": [{"name": "x", "command": "true", "timeoutSeconds": -1}],
                            },
                        }
                    ]
                },
                {"text": "ok"},
            ],
            "on_exhausted": "repeat_last",
            "agents": {"stubborn": [_report("Attempt one."), _report("Attempt two.")]},
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        [bad] = env.tool_results("spawn_agent")
        text = bad["content"][0]["text"]
        assert "Invalid assigned check policy." in text and "reason:" in text
        await env.teams.spawning.spawn(
            env.caller,
            parse_spawn(
                {
                    "name": "stubborn",
                    "prompt": "p",
                    "model_slot": "write-patch",
                    "checks": CHECK,
                    "repair": {"maxAttempts": 1},
                }
            ),
        )
        await env.quiet()
        [entry] = env.lead_custom(TEAM_REPORT_TYPE)
        assert "outcome=succeeded (effective: blocked)" in entry["content"]
        result = await env.teams.control.status(env.caller, "stubborn")
        status_text, _ = render_status(result), status_details(result)
        assert "succeeded (effective: blocked)" in status_text
