"""Teams reports: runtime-assigned ids, the versioned `result`, the Markdown copy, the lead's message.

A report's identity comes from the team, the agent's name and its run, never
from the agent: `task:<team>:<agent>:<run>` and `report:<team>:<agent>:<run>`,
each component percent-encoded like JavaScript's `encodeURIComponent`. So a run
has exactly one report, and resending it changes nothing (the store keeps the
first).

Four facts stay separate (`spec/teams-detail.md` §5.1): the lifecycle (`status`
of the report: the run completed or failed), the agent's claimed `outcome`,
`verification` (assigned checks; `not-requested` without any) and the lead's
`acceptance` (`pending` until `record_report_acceptance`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote

from corral._paths import ensure_private_dir
from corral.orchestration.teams.roster.records import TEAM_REPORT_TYPE, team_name

if TYPE_CHECKING:
    pass

__all__ = [
    "TEAM_REPORT_TYPE",
    "ReportOutcome",
    "report_id",
    "task_id",
    "team_name",
    "write_report_markdown",
]


ReportOutcome = Literal["succeeded", "blocked", "failed", "cancelled"]


def _enc(value: str) -> str:
    return quote(value, safe="-_.!~*'()")


def task_id(team: str, agent: str, run_id: str) -> str:
    """`task:<team>:<agent>:<run>` (components percent-encoded)."""
    return f"task:{_enc(team)}:{_enc(agent)}:{_enc(run_id)}"


def report_id(team: str, agent: str, run_id: str) -> str:
    """`report:<team>:<agent>:<run>` (components percent-encoded)."""
    return f"report:{_enc(team)}:{_enc(agent)}:{_enc(run_id)}"


def write_report_markdown(directory: Path, agent: str, content: str) -> Path:
    """Write the full report to `<directory>/<agent>.md`, then `-v2.md`, … never overwriting (0600).

    A convenience copy, written without an fsync: the store's row, committed right after, is
    the durable report (a copy cut short by a power loss is not what delivery reads).
    """
    ensure_private_dir(directory)
    data = content.encode("utf-8")
    version = 1
    while True:
        path = directory / (f"{agent}.md" if version == 1 else f"{agent}-v{version}.md")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            version += 1
            continue
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return path
