"""Grouped swarms end to end in one process: compact indexes instead of full reports, one wake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.orchestration.teams.groups._groups import GROUP_MESSAGE_TYPE
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from tests._waits import eventually
from tests.orchestration.teams._teams_helpers import teams_env, write_script

pytestmark = pytest.mark.usefixtures("env")


def _report(content: str, outcome: str = "succeeded") -> dict[str, object]:
    return {
        "tool_calls": [
            {
                "name": "report_and_exit",
                "args": {"content": content, "outcome": outcome, "summary": content[:20]},
            }
        ]
    }


def _swarm(delivery: str, count: int) -> dict[str, object]:
    return {
        "name": "spawn_swarm_agents",
        "args": {
            "completion_group": {"delivery": delivery},
            "defaults": {"model_slot": "read-collect"},
            "agents": [{"name": f"m{i}", "prompt": f"task {i}"} for i in range(count)],
        },
    }


async def test_all_settled_group_wakes_the_lead_once_with_a_compact_index(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [
                {"tool_calls": [_swarm("all-settled", 10)]},
                {"text": "Waiting."},
                {"text": "Synthesized."},
            ],
            "agents": {"*": [_report("Full report body " + "x" * 500)]},
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        assert env.lead_custom(TEAM_REPORT_TYPE) == []
        [index] = env.lead_custom(GROUP_MESSAGE_TYPE)
        assert index["display"] is False and index["details"]["kind"] == "settled"
        assert len(index["details"]["slot_ids"]) == 10
        assert "x" * 500 not in index["content"]  # compact: references, not full reports
        [swarm] = env.tool_results("spawn_swarm_agents")
        assert swarm["details"]["completionGroup"]["delivery"] == "all-settled"
        # Every run finalized: the journal took over delivery.
        assert env.host.kernel.generations() == ()


async def test_immediate_group_sends_a_member_index_each_and_urgent_results_come_early(
    tmp_path: Path,
) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [{"tool_calls": [_swarm("immediate", 3)]}, {"text": "Waiting."}],
            "on_exhausted": "repeat_last",
            "agents": {"*": [_report("fine")]},
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        await env.quiet()
        kinds = [e["details"]["kind"] for e in env.lead_custom(GROUP_MESSAGE_TYPE)]
        assert kinds == ["member", "member", "member"]
        assert env.lead_custom(TEAM_REPORT_TYPE) == []


async def test_an_urgent_member_wakes_early_in_an_all_settled_group(tmp_path: Path) -> None:
    gate = tmp_path / "go"
    held = {
        "tool_calls": [{"name": "bash", "args": {"command": f"while [ ! -e {gate} ]; do sleep 0.01; done"}}]
    }
    swarm = _swarm("all-settled", 3)
    members = swarm["args"]["agents"]  # type: ignore[index]
    for member in members[1:]:
        member["model_slot"] = "write-feature"  # an unsandboxed bash sees the gate file
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [{"tool_calls": [swarm]}, {"text": "Waiting."}],
            "on_exhausted": "repeat_last",
            "agents": {
                "m0": [_report("cannot proceed", outcome="blocked")],
                "m1": [held, _report("ok")],
                "m2": [held, _report("ok")],
            },
        },
    )
    async with teams_env(tmp_path, "lead") as env:
        await env.lead.prompt("go")
        # m1 and m2 are held until the urgent wake reached the lead's session.
        await eventually(lambda: len(env.lead_custom(GROUP_MESSAGE_TYPE)) == 1, env.host)
        gate.touch()
        await env.quiet()
        entries = env.lead_custom(GROUP_MESSAGE_TYPE)
        kinds = [e["details"]["kind"] for e in entries]
        assert kinds == ["urgent", "settled"]
        first = json.dumps(entries[0]["content"])
        assert "blocked" in first
