"""`corral agents reap` and `corral doctor` on an agent process group a killed host left running."""

from __future__ import annotations

import signal
import subprocess

from corral._held import HeldProcesses
from tests._held_records import group, orphan_record

from .conftest import Env, RunCorral

__all__ = ["group"]


def test_corral_agents_reap_reports_and_ends_an_orphan_group(
    cli_env: Env, corral: RunCorral, group: subprocess.Popen[bytes]
) -> None:
    orphan_record(HeldProcesses(cli_env.home / "held"), group.pid)

    shown = corral("agents", "reap", "--dry-run")

    assert shown.returncode == 0, shown.stderr
    assert f"orphan ACP agent fake (process group {group.pid})" in shown.stdout, shown.stdout
    assert group.poll() is None  # a dry run ends nothing

    reaped = corral("agents", "reap")

    assert reaped.returncode == 0, reaped.stderr
    assert f"ended ACP agent fake (process group {group.pid})" in reaped.stdout, reaped.stdout
    assert group.wait(timeout=30) == -signal.SIGKILL
    assert list((cli_env.home / "held").glob("*.json")) == []  # and its record is forgotten


def test_doctor_reports_an_orphan_group_and_leaves_it_running(
    cli_env: Env, corral: RunCorral, group: subprocess.Popen[bytes]
) -> None:
    orphan_record(HeldProcesses(cli_env.home / "held"), group.pid)

    done = corral("doctor")

    line = next(line for line in done.stdout.splitlines() if "agent_processes:" in line)
    assert line.startswith("warn  agent_processes: 1 agent process group(s) left running by a host that died")
    assert f"ACP agent fake (process group {group.pid}" in line and "corral agents reap" in line
    assert group.poll() is None  # doctor reports, never kills


def test_doctor_without_orphans_says_so(cli_env: Env, corral: RunCorral) -> None:
    done = corral("doctor")

    lines = [line for line in done.stdout.splitlines() if "agent_processes:" in line]
    assert lines == ["ok    agent_processes: no agent process is left running by a host that died"]
