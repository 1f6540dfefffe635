"""The teams package re-exports nothing and has no lazy `__getattr__` map (issue 15): a name is
imported from the module that defines it, so importing the package (which the repositories'
modules do) loads none of the teams core."""

from __future__ import annotations

import subprocess
import sys

CODE = """\
import sys
import corral.orchestration.teams as teams
core = ("_teams", "_control", "_member", "_extension", "checks._checks", "repair._verification")
print(hasattr(teams, "__getattr__"), getattr(teams, "__all__", None))
print(sorted(name for name in core if f"corral.orchestration.teams.{name}" in sys.modules))
"""


def test_the_package_exports_nothing_and_loads_no_teams_core() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["False None", "[]"]
