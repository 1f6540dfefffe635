"""The teams surface end to end in one process: spawn, report, delivery, recovery prompt, tools by tier."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.orchestration.kernel._child import ManagedChild
from corral.orchestration.surfaces.teams import TEAMS_LEAD_TOOL_NAMES, parse_spawn
from corral.orchestration.surfaces.teams._render import render_stop, stop_details
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.orchestration.teams.texts import RECOVERY_PROMPT
from tests._waits import eventually

from ._teams_helpers import WAIT, session_entries, teams_env, write_script

pytestmark = pytest.mark.usefixtures("env")


def _assistant_count(path: Path) -> int:
    return sum(
        1
        for e in session_entries(path)
        if e.get("type") == "message" and (e.get("message") or {}).get("role") == "assistant"
    )


def _report_call(content: str, **extra: object) -> dict[str, object]:
    return {"name": "report_and_exit", "args": {"content": content, **extra}}


async def test_lead_gets_the_teams_tools_and_not_the_agent_tool(tmp_path: Path) -> None:
    write_script(tmp_path, "lead", {"steps": [{"text": "hi"}]})
    async with teams_env(tmp_path, "lead") as env:
        names = [tool.name for tool in env.lead.tools]
        assert names == list(TEAMS_LEAD_TOOL_NAMES)
        assert "agent" not in names


async def test_the_kernel_runs_a_plain_child_and_the_teams_side_is_found_by_run_id(tmp_path: Path) -> None:
    write_script(
        tmp_path, "lead", {"steps": [{"text": "x"}], "agents": {"*": [{"delay_ms": 60000, "text": "z"}]}}
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.teams.spawn(env.caller, parse_spawn({"name": "one", "prompt": "p"}))
        member = env.host.repositories.teams.roster.live_team_member(env.caller.session_id, "one")
        assert member is not None
        kernel_child = env.host.runs.child(member.run_id)
        assert type(kernel_child) is ManagedChild  # no teams subclass in the kernel's runtime
        run = env.teams.child(member.run_id)
        assert run is not None and run.child is kernel_child and run.member.name == "one"
        # The host's tools found it by run id: the member tools, not a managed agent's ask_owner.
        names = {tool.name for tool in kernel_child.agent.tools}
        assert {"report_and_exit", "send_message"} <= names and "ask_owner" not in names
        await env.teams.stop_teammate(env.caller, "one", None)
        assert env.teams.child(member.run_id) is None  # released with its generation


async def test_read_agent_reports_once_and_makes_no_request_after_its_report(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {"name": "rev", "prompt": "Review x.", "model_slot": "read-review"},
                        }
                    ]
                },
                {"text": "Waiting for the report."},
                {"text": "Integrated.", "expect": {"last_user_contains": "Full findings"}},
            ],
            "agents": {
                "rev": [
                    {
                        "expect": {
                            "tools_exclude": ["write", "edit"],
                            "tools_include": ["report_and_exit", "bash"],
                        },
                        "tool_calls": [
                            _report_call(
                                "Full findings: none.",
                                summary="clean",
                                outcome="succeeded",
                                findings=[{"id": "F1", "text": "ok", "evidence": ["a.py:1"]}],
                            )
                        ],
                    }
                ]
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        reports = env.lead_custom(TEAM_REPORT_TYPE)
        assert len(reports) == 1
        entry = reports[0]
        assert entry["display"] is False
        details = entry["details"]
        team = f"session-{env.caller.session_id}"
        assert details["name"] == "rev"
        assert details["report_id"] == f"report:{team}:rev:{details['run_id']}"
        assert details["task_id"] == f"task:{team}:rev:{details['run_id']}"
        assert details["outcome"] == "succeeded" and details["effective_outcome"] == "succeeded"
        assert details["verification"] == {"state": "not-requested"}
        assert details["acceptance"] == {"state": "pending"}
        assert isinstance(details["elapsed_ms"], int) and isinstance(details["tokens"], int)
        assert "Full findings: none." in entry["content"]
        # The child made exactly one model request: the accepted report ended its work.
        report = env.host.repositories.teams.reports.team_report(details["report_id"])
        assert report is not None and report.result.claims.findings[0].id == "F1"
        generation = env.host.kernel.get_generation(details["run_id"])
        assert generation is not None and generation.phase == "finalized"
        assert generation.session_path is not None
        assert _assistant_count(Path(generation.session_path)) == 1
        assert (
            report.markdown_path is not None
            and Path(report.markdown_path).read_text() == "Full findings: none."
        )
        # The lead's turn: spawn result (never waits), then the report woke it.
        spawn = env.tool_results("spawn_agent")[0]
        assert spawn["details"]["queued"] is False and spawn["details"]["modelSlot"] == "read-review"
        assert spawn["details"]["modelSource"] == "lead"


async def test_an_agent_that_ends_without_report_gets_one_recovery_prompt(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {"name": "a", "prompt": "Do it.", "model_slot": "read-collect"},
                        }
                    ]
                },
                {"text": "Waiting."},
                {"text": "Thanks."},
            ],
            "agents": {
                "a": [
                    {"text": "I looked around."},
                    {
                        "expect": {"last_user_contains": "without a final report"},
                        "tool_calls": [_report_call("Recovered deliverable.", outcome="succeeded")],
                    },
                ]
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        [entry] = env.lead_custom(TEAM_REPORT_TYPE)
        assert "Recovered deliverable." in entry["content"]
        report = env.host.repositories.teams.reports.team_report(entry["details"]["report_id"])
        assert report is not None and report.report_source == "report_and_exit"
        assert RECOVERY_PROMPT.startswith("Your work ended without a final report")


async def test_plain_text_after_recovery_becomes_the_report_and_empty_never_succeeds(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {"name": "talker", "prompt": "p", "model_slot": "read-collect"},
                        },
                        {
                            "name": "spawn_agent",
                            "args": {"name": "silent", "prompt": "p", "model_slot": "read-collect"},
                        },
                    ]
                },
                {"text": "Waiting."},
            ],
            "on_exhausted": "repeat_last",
            "agents": {
                "talker": [{"text": "First answer."}, {"text": "The answer is 42."}],
                "silent": [{"thinking": "hmm"}, {"thinking": "still nothing"}],
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        by_name = {e["details"]["name"]: e for e in env.lead_custom(TEAM_REPORT_TYPE)}
        assert set(by_name) == {"talker", "silent"}
        talker = env.host.repositories.teams.reports.team_report(by_name["talker"]["details"]["report_id"])
        assert talker is not None and talker.status == "completed" and talker.content == "The answer is 42."
        assert talker.report_source == "assistant-text"
        silent = env.host.repositories.teams.reports.team_report(by_name["silent"]["details"]["report_id"])
        assert silent is not None and silent.status == "failed" and silent.outcome == "failed"
        assert "without a report" in silent.content


async def test_write_tier_gets_claim_tools_and_full_edit_tools(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "args": {"name": "w", "prompt": "Edit.", "model_slot": "writing-basic"},
                        }
                    ]
                },
                {"text": "Waiting."},
                {"text": "ok"},
            ],
            "agents": {
                "w": [
                    {
                        "expect": {
                            "tools_include": [
                                "write",
                                "edit",
                                "claim_file",
                                "release_file",
                                "list_file_claims",
                            ]
                        },
                        "tool_calls": [{"name": "claim_file", "args": {"paths": ["./src/a.py", "b.txt"]}}],
                    },
                    {"tool_calls": [{"name": "write", "args": {"path": "b.txt", "content": "hello"}}]},
                    {
                        "tool_calls": [
                            _report_call("Wrote b.txt", changedPaths=["b.txt"], outcome="succeeded")
                        ]
                    },
                ]
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        [entry] = env.lead_custom(TEAM_REPORT_TYPE)
        assert (tmp_path / "work" / "b.txt").read_text() == "hello"
        spawn = env.tool_results("spawn_agent")[0]["details"]
        assert spawn["requestedModelSlot"] == "writing-basic" and spawn["modelSlot"] == "write-patch"
        assert spawn["role"] == "write"
        # Claims were released with the run's finalization.
        assert env.host.repositories.teams.roster.file_claims(env.caller.session_id) == ()
        report = env.host.repositories.teams.reports.team_report(entry["details"]["report_id"])
        assert report is not None and report.result.claims.changed_paths == ("b.txt",)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"prompt": "p", "model_slot": "read-review", "model": "x/y"}, "model_slot only"),
        ({"prompt": "p", "model_slot": "read-super"}, "Unknown model_slot"),
        ({"prompt": "p", "model_slot": "read-review", "name": "bad name"}, "Invalid name"),
        ({"prompt": "p", "session_context": "eager"}, "session_context must be none or lazy"),
    ],
)
async def test_bad_spawns_fail_and_start_nothing(
    tmp_path: Path, args: dict[str, object], needle: str
) -> None:
    write_script(
        tmp_path,
        "lead",
        {"steps": [{"tool_calls": [{"name": "spawn_agent", "args": args}]}, {"text": "done"}]},
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        [result] = env.tool_results("spawn_agent")
        assert result["isError"] is True
        assert needle in result["content"][0]["text"]
        assert env.host.kernel.generations() == ()


async def test_spawn_result_returns_before_the_work_is_done(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {"tool_calls": [{"name": "spawn_agent", "args": {"name": "slow", "prompt": "p"}}]},
                {"text": "Waiting."},
                {"text": "ok"},
            ],
            "agents": {"slow": [{"delay_ms": 60000, "text": "never"}]},
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        # The lead's turn ended while the agent still works.
        assert env.lead_custom(TEAM_REPORT_TYPE) == []
        member = env.host.repositories.teams.roster.live_team_member(env.caller.session_id, "slow")
        assert member is not None and member.tier == "read-review"
        result = await env.teams.stop_teammate(env.caller, "slow", None)
        text, details = render_stop(result), stop_details(result)
        assert details["stopped"] is True, text
        await eventually(
            lambda: (
                env.host.repositories.teams.roster.live_team_member(env.caller.session_id, "slow") is None
            ),
            env.host,
        )
        await env.quiet()
        assert env.lead_custom(TEAM_REPORT_TYPE) == []
        _ = WAIT
