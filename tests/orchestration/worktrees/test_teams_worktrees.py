"""Isolated write tiers on the teams surface: the spawn gets a worktree, assigned checks and their
fingerprints run there, the report carries the branch, and `merge = "on-accept"` merges on acceptance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.orchestration.surfaces.teams._render import render_status, status_details
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.settings import Settings, TeamsSettings
from tests._waits import eventually
from tests.orchestration.teams._git_helpers import GIT_ENV, git, make_repo
from tests.orchestration.teams._teams_helpers import session_entries, teams_env, write_script


@pytest.fixture(autouse=True)
def _env(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    make_repo(env / "work", {"app.py": "value = 1\n"})


def _script(tmp: Path, *, checks: bool = False) -> None:
    spawn: dict[str, object] = {"name": "w1", "prompt": "Set value to 2.", "model_slot": "write-patch"}
    if checks:
        spawn["checks"] = [{"name": "value", "command": "grep -q 'value = 2' app.py", "timeoutSeconds": 30}]
    write_script(
        tmp,
        "lead",
        {
            "steps": [{"tool_calls": [{"name": "spawn_agent", "args": spawn}]}, {"text": "Waiting."}],
            "on_exhausted": "repeat_last",
            "agents": {
                "w1": [
                    {"tool_calls": [{"name": "write", "args": {"path": "app.py", "content": "value = 2\n"}}]},
                    {
                        "tool_calls": [
                            {
                                "name": "report_and_exit",
                                "args": {
                                    "content": "Value is 2.",
                                    "summary": "value set",
                                    "outcome": "succeeded",
                                },
                            }
                        ]
                    },
                ]
            },
        },
    )


async def test_an_isolated_write_tier_reports_its_branch_and_merges_when_accepted(tmp_path: Path) -> None:
    _script(tmp_path)
    work = tmp_path / "work"
    settings = Settings(isolation="worktree", merge="on-accept")
    async with teams_env(tmp_path, "lead", settings=settings) as env:
        await env.lead.prompt("go")
        await env.quiet()
        [report] = env.lead_custom(TEAM_REPORT_TYPE)
        details = report["details"]
        assert details["branch"].startswith("corral/w1-") and details["merge"] == "pending"
        assert details["diffStat"]["files"] == ["app.py"]
        assert details["branch"] in report["content"]
        assert (work / "app.py").read_text() == "value = 1\n"  # untouched until merged
        assert git(work, "log", "-1", "--format=%an|%s", details["branch"]).startswith("corral|w1: value set")

        env.teams.control.record_report_acceptance(details["report_id"], "accepted", "good")

        assert (work / "app.py").read_text() == "value = 2\n"
        assert env.host.repositories.worktrees.get_worktree(details["branch"]).state == "merged"
        assert git(work, "branch", "--list", "corral/*") == ""


async def test_manual_merge_leaves_an_accepted_branch_pending(tmp_path: Path) -> None:
    _script(tmp_path)
    work = tmp_path / "work"
    settings = Settings(teams=TeamsSettings(tier_isolation={"write-patch": "worktree"}))
    async with teams_env(tmp_path, "lead", settings=settings) as env:
        await env.lead.prompt("go")
        await env.quiet()
        [report] = env.lead_custom(TEAM_REPORT_TYPE)
        env.teams.control.record_report_acceptance(report["details"]["report_id"], "accepted", "good")
        assert (work / "app.py").read_text() == "value = 1\n"
        assert env.host.repositories.worktrees.get_worktree(report["details"]["branch"]).state == "pending"


async def test_assigned_checks_run_in_the_worktree(tmp_path: Path) -> None:
    _script(tmp_path, checks=True)
    async with teams_env(tmp_path, "lead", settings=Settings(isolation="worktree")) as env:
        await env.lead.prompt("go")
        await env.quiet()
        [report] = env.lead_custom(TEAM_REPORT_TYPE)
        details = report["details"]
        assert details["verification"]["state"] == "passed", details["verification"]
        # Observed later (fingerprints re-taken in the worktree, after corral's commit): still passed.
        result = await env.teams.control.status(env.caller, "w1")
        _, status = render_status(result), status_details(result)
        [snap] = status["agents"]
        assert snap["verification"]["state"] == "passed", snap
        # `value = 2` exists only in the worktree: the lead's tree still holds `value = 1`.
        assert (tmp_path / "work" / "app.py").read_text() == "value = 1\n"


async def test_shared_is_the_default(tmp_path: Path) -> None:
    _script(tmp_path)
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        [report] = env.lead_custom(TEAM_REPORT_TYPE)
        assert "branch" not in report["details"]
        assert (tmp_path / "work" / "app.py").read_text() == "value = 2\n"
        assert not env.host.repositories.worktrees.has_worktrees()


async def test_file_claims_conflict_across_worktrees(tmp_path: Path) -> None:
    claim = {"tool_calls": [{"name": "claim_file", "args": {"paths": ["app.py"]}}]}
    report = {"tool_calls": [{"name": "report_and_exit", "args": {"content": "ok", "outcome": "succeeded"}}]}
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {"name": "w1", "prompt": "p", "model_slot": "write-patch"},
                        }
                    ]
                },
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {"name": "w2", "prompt": "p", "model_slot": "write-patch"},
                        }
                    ]
                },
                {"text": "Waiting."},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "w1": [claim, {"text": "holding", "delay_ms": 60000}],
                "w2": [claim, report],
            },
        },
    )
    async with teams_env(tmp_path, "lead", settings=Settings(isolation="worktree")) as env:
        await env.lead.prompt("go")
        await eventually(lambda: len(env.lead_custom(TEAM_REPORT_TYPE)) == 1, env.host)
        trees = {r.name: r.path for r in env.host.repositories.worktrees.worktrees()}
        assert set(trees) == {"w1", "w2"} and trees["w1"] != trees["w2"]
        claims = []
        for path in (tmp_path / "sessions").rglob("*.jsonl"):
            claims += [
                json.dumps(e["message"])
                for e in session_entries(path)
                if e.get("type") == "message" and (e.get("message") or {}).get("toolName") == "claim_file"
            ]
        # Whichever claimed second was refused: the same repository path, although in another worktree.
        assert len(claims) == 2 and sum("held by w" in c for c in claims) == 1, claims
        await env.teams.control.stop_teammate(env.caller, "w1", "done")
