"""Every Python example in docs/python-api.md runs as written and prints the output shown under it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ApiEnv

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"
EXAMPLE = re.compile(r"```python\n(.*?)```\n\n```text\n(.*?)```", re.DOTALL)


def _examples() -> list[tuple[str, str]]:
    return EXAMPLE.findall(DOC.read_text())


def test_the_page_has_examples() -> None:
    assert len(_examples()) >= 4


@pytest.mark.parametrize(("code", "expected"), _examples(), ids=lambda v: v.splitlines()[-1][:30])
def test_example_runs_and_prints_what_the_page_shows(api_env: ApiEnv, code: str, expected: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=api_env.work,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
