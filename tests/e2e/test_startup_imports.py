"""Start-up cost: a lead with only the `agent` surface never imports the teams core (`Teams` and the
teams tools; the store's teams repositories are not the core), and a scripted run never loads the
price catalogue."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from .conftest import Env

CODE = """\
import sys
from corral.cli import main
code = main(['run', '--model', 'scripted/hello', '--no-session', '-p', 'hi', *sys.argv[1:]])
core = ('corral.orchestration.teams._teams', 'corral.orchestration.surfaces.teams._tools')
print('teams core imported' if any(m in sys.modules for m in core) else 'teams core not imported')
raise SystemExit(code)
"""


@pytest.mark.parametrize(
    ("flags", "expected"),
    [((), "teams core not imported"), (("--surfaces", "agent,teams"), "teams core imported")],
    ids=["agent-surface", "teams-surface"],
)
def test_the_teams_core_loads_only_for_a_lead_that_uses_it(
    cli_env: Env, flags: tuple[str, ...], expected: str
) -> None:
    cli_env.script("hello", 'steps:\n  - text: "hello"\n')
    done = subprocess.run(
        [sys.executable, "-c", CODE, *flags],
        cwd=cli_env.project,
        env=cli_env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == expected


PRICES = """\
import sys
from corral.cli import main
code = main(['run', '--model', 'scripted/hello', '--no-session', '-p', 'hi'])
print('genai_prices imported' if 'genai_prices' in sys.modules else 'genai_prices not imported')
raise SystemExit(code)
"""


def test_a_scripted_run_never_loads_the_price_catalogue(cli_env: Env) -> None:
    # Scripted models have configured (zero) prices; the catalogue is for real providers only.
    cli_env.script("hello", 'steps:\n  - text: "hello"\n')
    done = subprocess.run(
        [sys.executable, "-c", PRICES],
        cwd=cli_env.project,
        env=cli_env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "genai_prices not imported"


RAY = """\
import sys
from corral.cli import main
code = main(['run', '--model', 'scripted/hello', '--no-session', '-p', 'hi', '--surfaces', 'agent,teams'])
print('ray imported' if 'ray' in sys.modules else 'ray not imported')
raise SystemExit(code)
"""


def test_a_run_that_does_not_use_the_ray_runtime_never_imports_ray(cli_env: Env) -> None:
    # `corral[ray]` is installed by `make test`; only `runtime = "ray"` may load it (~1 s of imports).
    if importlib.util.find_spec("ray") is None:
        missing = "the ray extra is not installed (make test installs it: '.[test,ray]')"
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing)
    cli_env.script("hello", 'steps:\n  - text: "hello"\n')
    done = subprocess.run(
        [sys.executable, "-c", RAY],
        cwd=cli_env.project,
        env=cli_env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "ray not imported"
