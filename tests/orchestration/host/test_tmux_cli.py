"""`corral agents reap`: orphan panes of the private tmux server are reported, then reaped (real command)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runtime._tmux_fixtures import kill_server, require_tmux


def _corral(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "corral.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_agents_reap_reports_then_kills_an_orphan_pane(tmp_path: Path) -> None:
    require_tmux()
    home = tmp_path / "home"
    socket = home / "tmux" / "default"
    if len(str(socket)) > 100:
        pytest.skip("the temporary directory's path is too long for a tmux socket")
    (home / "tmux").mkdir(parents=True, mode=0o700)
    env = {**os.environ, "CORRAL_HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    try:
        subprocess.run(
            [
                "tmux",
                "-f",
                "/dev/null",
                "-S",
                str(socket),
                "new-session",
                "-d",
                "-s",
                "w",
                "-n",
                "stray",
                "sleep 60",
            ],
            check=True,
            timeout=10,
        )
        report = _corral("agents", "reap", "--dry-run", env=env)
        assert report.returncode == 0, report.stderr
        assert "'stray': unknown" in report.stdout and "1 orphan pane(s)" in report.stdout
        reaped = _corral("agents", "reap", env=env)
        assert reaped.returncode == 0, reaped.stderr
        assert "reaped %0" in reaped.stdout and "1 orphan pane(s) reaped" in reaped.stdout
        again = _corral("agents", "reap", "--dry-run", env=env)
        assert "0 orphan pane(s)" in again.stdout
    finally:
        kill_server(socket)


def test_corral_worker_with_a_missing_launch_file_is_a_one_line_error(tmp_path: Path) -> None:
    env = {**os.environ, "CORRAL_HOME": str(tmp_path / "home")}
    missing = tmp_path / "launch.json"
    done = _corral(
        "worker", "--run-id", "r1", "--store", str(tmp_path / "c.db"), "--launch", str(missing), env=env
    )
    assert done.returncode == 2
    assert done.stderr.strip() == f"corral worker: cannot read launch file {missing}: " + (
        f"[Errno 2] No such file or directory: '{missing}'"
    )
