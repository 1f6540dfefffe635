"""Every Python example in docs/python-api.md runs offline as written and prints the output shown under it.

Each runs as its own program in a fresh git repository, with a private data root and no settings at all
(no `default_model`, no `CORRAL_SCRIPTS`): what the page shows is all a reader needs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def _fenced(lines: list[str], start: int) -> tuple[str, int]:
    """The fenced block opening at `lines[start]` (dedented), and the index after its closing fence."""
    indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
    end = start + 1
    while lines[end].strip() != "```":
        end += 1
    body = [line.removeprefix(indent) for line in lines[start + 1 : end]]
    return textwrap.dedent("\n".join(body) + "\n"), end + 1


def _examples() -> list[tuple[str, str]]:
    """Each ```python block of the page with the ```text block that follows it."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    found: list[tuple[str, str]] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```python":
            index += 1
            continue
        code, index = _fenced(lines, index)
        while index < len(lines) and not lines[index].strip():
            index += 1
        assert lines[index].strip() == "```text", f"python-api.md: no ```text output after:\n{code}"
        expected, index = _fenced(lines, index)
        found.append((code, expected))
    return found


def test_the_page_has_examples() -> None:
    assert len(_examples()) >= 5


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.mark.parametrize(("code", "expected"), _examples(), ids=lambda v: v.strip().splitlines()[-1][:30])
def test_example_runs_offline_and_prints_what_the_page_shows(
    tmp_path: Path, code: str, expected: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("# A project\n")
    _git(work, "init", "-q", "-b", "main")
    _git(
        work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start", "--allow-empty"
    )
    _git(work, "add", "README.md")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "readme")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env |= {
        "HOME": str(tmp_path),
        "CORRAL_HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
