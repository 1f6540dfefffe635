"""What `make demo` installs, read from make's dry run (no venv is created)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests._ci import unavailable

ROOT = Path(__file__).parents[1]


def _dry_run(target: str, venv: Path) -> list[str]:
    if shutil.which("make") is None:
        unavailable("make is not installed")
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


def test_make_demo_installs_the_runtime_dependencies_only_from_the_lock(tmp_path: Path) -> None:
    lines = _dry_run("demo", tmp_path / "venv")
    installs = [
        line for line in lines if not line.startswith("echo") and (" sync " in line or " install " in line)
    ]
    assert len(installs) == 1, lines
    assert "uv sync" in installs[0] and "--locked" in installs[0], installs
    assert "--extra" not in installs[0], installs
    assert any(line.endswith("/bin/corral demo") for line in lines), lines
    # The demo's last lines say how to put `corral` on PATH.
    assert any("make install" in line for line in lines), lines


def test_make_test_adds_the_test_ray_otel_and_mcp_extras_from_the_lock(tmp_path: Path) -> None:
    # The Ray and OpenTelemetry extras too: tests/ray/ and the traces' tests must run (not skip) under
    # `make test`.
    lines = _dry_run("lint", tmp_path / "venv")
    syncs = [line for line in lines if " sync " in line]
    assert len(syncs) == 1, lines
    for extra in ("test", "ray", "otel", "mcp"):
        assert f"--extra {extra}" in syncs[0], syncs
    assert "--locked" in syncs[0], syncs


def test_no_make_target_resolves_anew(tmp_path: Path) -> None:
    # Every install goes through the lock: no `uv pip install` or plain `pip install` of corral's dependencies.
    for target in ("demo", "lint", "typecheck", "unit", "bench"):
        for line in _dry_run(target, tmp_path / "venv"):
            assert "uv pip install" not in line, (target, line)
            if " sync " in line:
                assert "--locked" in line, (target, line)


def test_the_lock_matches_pyproject() -> None:
    # `uv lock --check` fails when pyproject.toml changed without the lock (CI's `uv sync --locked` would too).
    uv = ROOT / ".uv" / "bin" / "uv"
    if not uv.exists():
        found = shutil.which("uv")
        if found is None:
            unavailable("uv is not installed (make creates .uv/)")
        uv = Path(found)
    done = subprocess.run(
        [str(uv), "lock", "--check", "--offline"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
