"""The JSON details and text of `get_agent_status` and `check_teammate`, rendered from typed snapshots.

`test_teams_results.py` pins what the tools answer over a real host in states that do not race
(queued, completed, left). The states in between — a live member mid-tool with a report on its way
and a budget, a member handed off to a tmux pane, a run in another process that was interrupted, a
queued spawn that failed to start, a live agent's health — are pinned here, on the renderer alone:
whole values, key order included (the model sees the JSON as serialized).
"""

from __future__ import annotations

import json
from typing import Any

from corral.orchestration.surfaces.teams._render import (
    health_details,
    render_health,
    render_status,
    status_details,
)
from corral.orchestration.teams.repair.records import RepairResult, ReportVerification
from corral.orchestration.teams.results import (
    FailedSnapshot,
    MemberSnapshot,
    ReportFacts,
    StatusSnapshot,
    TeammateHealth,
)

FACTS = ReportFacts(
    "task-1",
    "report-1",
    "blocked",
    "blocked",
    ReportVerification("failed", ("check:1",), error="exit 1"),
    "rejected",
    "needs tests",
    "tests fail",
    "completed",
    repair=RepairResult("repair:1", "exhausted", attempts_used=1, max_attempts=1, request_ids=("repair:r1",)),
)


def _ordered(details: Any) -> str:
    return json.dumps(details, ensure_ascii=False)


def test_a_live_member_shows_its_live_facts_then_its_phase_report_and_extension_fields() -> None:
    member = MemberSnapshot(
        "scan",
        "read",
        "read-review",
        "scripted/x",
        "run-1",
        "working",
        live=True,
        activity_age_ms=4200,
        active_tool="grep",
        rate_limit="waiting (rate limit, 3s)",
        report=FACTS,
        fields={"budget": {"spent": 1.5, "limit": 2.0}},
    )
    snapshot = StatusSnapshot("team-1", (member,))
    expected = {
        "session": "team-1",
        "agents": [
            {
                "name": "scan",
                "role": "read",
                "modelSlot": "read-review",
                "model": "scripted/x",
                "runId": "run-1",
                "activityAgeMs": 4200,
                "activeTool": "grep",
                "rateLimit": "waiting (rate limit, 3s)",
                "phase": "working",
                "taskId": "task-1",
                "reportId": "report-1",
                "outcome": "blocked",
                "effectiveOutcome": "blocked",
                "verification": {"state": "failed", "checkIds": ["check:1"], "error": "exit 1"},
                "acceptance": {"state": "rejected", "reason": "needs tests"},
                "summary": "tests fail",
                "reportStatus": "completed",
                "repair": {
                    "controllerId": "repair:1",
                    "state": "exhausted",
                    "attemptsUsed": 1,
                    "maxAttempts": 1,
                    "requestIds": ["repair:r1"],
                    "outcome": "blocked",
                },
                "budget": {"spent": 1.5, "limit": 2.0},
            }
        ],
    }
    assert _ordered(status_details(snapshot)) == _ordered(expected)
    assert render_status(snapshot).split("\n\n")[0] == (
        "scan: working (read)\n"
        "  tool: grep\n"
        "  waiting (rate limit, 3s)\n"
        "  last activity: 4s ago\n"
        "  task: blocked; verification: failed; acceptance: rejected\n"
        "  summary: tests fail"
    )


def test_members_elsewhere_show_their_pane_loss_or_interruption_and_a_failed_start_its_error() -> None:
    in_pane = MemberSnapshot(
        "edit", "write", "write-patch", "m", "run-2", "working", in_pane=True, pane_id=None
    )
    lost = MemberSnapshot("gone", "write", "write-patch", "m", "run-3", "stalled", error="host died")
    paused = MemberSnapshot(
        "pause",
        "read",
        "read-review",
        "m",
        "run-4",
        "stalled",
        rate_limit="waiting (rate limit, 9s)",
        awaiting_message=True,
    )
    failed = FailedSnapshot("late", "read", "no endpoint", 700)
    snapshot = StatusSnapshot("team-1", (in_pane, lost, paused, failed))
    agents = status_details(snapshot)["agents"]
    base = {"role": "write", "modelSlot": "write-patch", "model": "m"}
    assert _ordered(agents) == _ordered(
        [
            {"name": "edit", **base, "runId": "run-2", "paneId": None, "phase": "working"},
            {"name": "gone", **base, "runId": "run-3", "error": "host died", "phase": "stalled"},
            {
                "name": "pause",
                "role": "read",
                "modelSlot": "read-review",
                "model": "m",
                "runId": "run-4",
                "rateLimit": "waiting (rate limit, 9s)",
                "progress": "interrupted; waiting for a message",
                "phase": "stalled",
            },
            {
                "name": "late",
                "role": "read",
                "phase": "failed",
                "error": "no endpoint",
                "completedAgeMs": 700,
            },
        ]
    )
    assert render_status(snapshot).split("\n\n")[:4] == [
        "edit: working (write)",
        "gone: stalled (write)\n  error: host died",
        "pause: stalled (read)\n  progress: interrupted; waiting for a message\n  waiting (rate limit, 9s)",
        "late: failed (read)\n  error: no endpoint",
    ]


def test_a_live_agents_health_names_its_run_phase_and_diagnostic() -> None:
    health = TeammateHealth(
        "scan",
        "dead",
        alive=False,
        unread=2,
        loop_ready=True,
        run_id="run-1",
        phase="active",
        error="worker exited",
    )
    assert _ordered(health_details(health)) == _ordered(
        {
            "agentName": "scan",
            "alive": False,
            "unreadCount": 2,
            "health": "dead",
            "agentLoopReady": True,
            "runId": "run-1",
            "phase": "active",
            "error": "worker exited",
        }
    )
    assert render_health(health) == "Agent scan: dead (worker exited)."
    starting = TeammateHealth("new", "starting", alive=True, run_id="run-2", phase=None)
    assert "error" not in health_details(starting)
    assert render_health(starting) == "Agent new: starting."
