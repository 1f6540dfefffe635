"""A swarm's admission: the members granted a slot are recorded in one transaction, each failing alone.

The crash side (a SIGKILL inside or right after that transaction) is
`tests/e2e/test_teams_crash.py::test_a_crash_during_a_swarms_admission_admits_every_member_or_none`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from corral.orchestration.errors import InvalidRequestError
from corral.orchestration.host._launch import LaunchDraft, Recorded
from corral.orchestration.store import Tx
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.orchestration.teams.roster import Roster
from corral.orchestration.teams.spawning import _launch as spawn_launch
from corral.settings import CapacitySettings, Settings, TeamsSettings

from ._teams_helpers import teams_env, write_script

pytestmark = pytest.mark.usefixtures("env")

REPORT = {"tool_calls": [{"name": "report_and_exit", "args": {"content": "done", "outcome": "succeeded"}}]}


def _swarm_script(tmp: Path, members: int) -> None:
    write_script(
        tmp,
        "lead",
        {
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_swarm_agents",
                            "args": {
                                "defaults": {"model_slot": "read-collect"},
                                "agents": [{"name": f"m{i}", "prompt": f"task {i}"} for i in range(members)],
                            },
                        }
                    ]
                },
                {"text": "Waiting."},
            ],
            "on_exhausted": "repeat_last",
            "agents": {"*": [REPORT]},
        },
    )


def _read_limit(read: int) -> Settings:
    return Settings(teams=TeamsSettings(read_agents=CapacitySettings(max_concurrent=read)))


async def test_the_members_granted_a_slot_are_recorded_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three of five members get a slot: their rows share one transaction; the two queued members
    are recorded later, each when its slot frees (in a transaction of its own)."""
    _swarm_script(tmp_path, 5)
    transactions: list[tuple[str, Tx]] = []
    recorded = Roster.create_team_generation_in

    def spy(self: Roster, tx: Tx, new: Any, member: Any) -> Any:
        transactions.append((member.name, tx))
        return recorded(self, tx, new, member)

    monkeypatch.setattr(Roster, "create_team_generation_in", spy)
    async with teams_env(tmp_path, "lead", settings=_read_limit(3)) as env:
        await env.lead.prompt("go")
        await env.quiet()
        [swarm] = env.tool_results("spawn_swarm_agents")
        assert [s["queued"] for s in swarm["details"]["spawned"]] == [False, False, False, True, True]
        reports = env.lead_custom(TEAM_REPORT_TYPE)
        assert sorted(r["details"]["name"] for r in reports) == [f"m{i}" for i in range(5)]
    assert [name for name, _tx in transactions] == [f"m{i}" for i in range(5)]
    first = transactions[0][1]
    assert [tx is first for _name, tx in transactions] == [True, True, True, False, False]
    assert transactions[3][1] is not transactions[4][1]


async def test_a_member_whose_rows_cannot_be_written_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One member's record step raises: the shared transaction rolls back, each member is recorded
    on its own, and only that member fails (its slot given back); the others run and report once."""
    _swarm_script(tmp_path, 3)
    record_in = spawn_launch.SpawnSteps.record_in

    def refuse_m1(self: Any, tx: Tx, draft: LaunchDraft) -> Recorded:
        if self.prepared.name == "m1":
            raise InvalidRequestError("m1 cannot be recorded")
        return record_in(self, tx, draft)

    monkeypatch.setattr(spawn_launch.SpawnSteps, "record_in", refuse_m1)
    async with teams_env(tmp_path, "lead", settings=_read_limit(3)) as env:
        await env.lead.prompt("go")
        await env.quiet()
        [swarm] = env.tool_results("spawn_swarm_agents")
        details = swarm["details"]
        assert [s["name"] for s in details["spawned"]] == ["m0", "m2"]
        assert [(f["name"], f["error"]) for f in details["failed"]] == [("m1", "m1 cannot be recorded")]
        reports = env.lead_custom(TEAM_REPORT_TYPE)
        assert sorted(r["details"]["name"] for r in reports) == ["m0", "m2"]
        assert [g.label for g in env.host.kernel.generations(include_finalized=True)] == ["m0", "m2"]
        snapshot = env.teams.capacity(env.caller.session_id).snapshot()
        assert snapshot.kinds["read"].active == 0
