"""A real store with teams members for the check, repair and verification tests."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.orchestration import NewGeneration, NewTeamMember, Repositories
from corral.orchestration.teams.reports._reports import report_id, task_id
from corral.orchestration.teams.roster.records import team_name

LEAD = "lead-checks"
"""The lead session (team) of every member made here."""


@dataclass(frozen=True)
class Member:
    """A teams member of `LEAD` with its report identity."""

    run_id: str
    name: str
    task_id: str
    report_id: str


def add_member(store: Repositories, name: str = "worker", **fields: Any) -> Member:
    """Create a live, acknowledged teams member (a write agent) and return its report identity."""
    generation, task, _ = store.teams.roster.create_team_generation(
        NewGeneration(
            definition="write-feature",
            owner_session_id=LEAD,
            cwd="/work/project",
            session_id=f"session-{name}-{len(store.teams.roster.team_members(LEAD, live_only=False))}",
            task="Fix the module.",
            label=name,
        ),
        NewTeamMember(
            lead_session_id=LEAD,
            name=name,
            tier="write-feature",
            requested_tier="write-feature",
            kind="write",
            model="scripted/echo",
            thinking="off",
            model_source="lead",
            sandbox="none",
            prompt="Fix the module.",
            **fields,
        ),
    )
    store.kernel.record_ack(generation.run_id, task.request_id, accepted=True)
    team = team_name(LEAD)
    return Member(
        generation.run_id,
        name,
        task_id(team, name, generation.run_id),
        report_id(team, name, generation.run_id),
    )


def raw(db_path: Path) -> sqlite3.Connection:
    """A raw autocommit connection (to forge rows or prove constraints)."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def failing_tracer(fragment: str) -> Callable[[str, tuple[object, ...]], None]:
    """A store tracer that fails (like a disk I/O error) before each statement containing `fragment`."""

    def tracer(sql: str, params: tuple[object, ...]) -> None:
        del params
        if fragment in sql:
            raise sqlite3.OperationalError(f"disk I/O error (injected before {fragment})")

    return tracer


def counter_lines(path: Path) -> list[str]:
    """The lines a check command appended to `path` (none when it never ran)."""
    return path.read_text().splitlines() if path.exists() else []


def mode(path: Path) -> int:
    """Permission bits of `path`."""
    return os.stat(path).st_mode & 0o777


def dead_pid() -> int:
    """The pid of a process that has exited (what a crashed corral leaves in the store)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def stuck_check(store: Repositories, tmp_path: Path, *, run_id: str, task: str, report: str) -> str:
    """Claim the run's `unit` check as a process that died while it ran would have left it; its id."""
    from corral.orchestration.teams.checks._checks import assign_checks, parse_check_policy
    from corral.orchestration.teams.checks.records import CheckStore

    checks = parse_check_policy([{"name": "unit", "command": "true", "timeoutSeconds": 10}])
    (assigned,) = assign_checks(checks, task_id=task, run_id=run_id, report_id=report, cwd=tmp_path)
    CheckStore(store.teams.checks, tmp_path / "logs").claim(assigned)
    return assigned.check_id
