"""What `make demo` installs, read from make's dry run (no venv is created)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _dry_run(target: str, venv: Path) -> list[str]:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # Run from `make test` too: no inherited MAKEFLAGS/MAKELEVEL, no "Entering directory" lines.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return done.stdout.splitlines()


def test_make_demo_installs_the_runtime_dependencies_only(tmp_path: Path) -> None:
    lines = _dry_run("demo", tmp_path / "venv")
    installs = [line for line in lines if " install " in line and "uv pip" in line]
    assert len(installs) == 1, lines
    assert installs[0].endswith(" -e ."), installs
    assert not any("[test" in line or "ray]" in line or "otel]" in line for line in lines), lines
    assert lines[-1].endswith("/bin/corral demo")


def test_make_test_adds_the_test_ray_and_otel_extras(tmp_path: Path) -> None:
    # The Ray and OpenTelemetry extras too: tests/ray/ and the traces' tests must run (not skip) under
    # `make test`.
    lines = _dry_run("lint", tmp_path / "venv")
    assert any(line.endswith("-e '.[test,ray,otel]'") for line in lines), lines
