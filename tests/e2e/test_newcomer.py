"""A newcomer's first hour, through the real `corral` command (issue 13): help, stdin prompts,
SIGTERM during a tool, `make demo`, private data directories."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from .conftest import CORRAL, Env, RunCorral, wait_until

REPO = Path(__file__).resolve().parents[2]


def test_short_help_works_and_says_bare_corral_opens_the_app(corral: RunCorral) -> None:
    short, long = corral("-h"), corral("--help")
    assert short.returncode == 0 and long.returncode == 0, short.stderr
    assert short.stdout == long.stdout
    assert "Bare `corral` (no command) opens the terminal app" in " ".join(long.stdout.split())
    run_help = corral("run", "-h")
    assert run_help.returncode == 0 and "reads it from stdin" in " ".join(run_help.stdout.split())


def test_prompt_from_stdin_with_dash_and_when_piped(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script(
        "echo", 'steps:\n  - text: "got: {{ env.X }}"\n    expect: {last_user_contains: "from stdin"}\n'
    )
    dashed = corral(
        "run", "--model", "scripted/echo", "-p", "-", input="a prompt from stdin\n", env={"X": "1"}
    )
    assert dashed.returncode == 0, dashed.stderr
    assert dashed.stdout == "got: 1\n"
    piped = corral("run", "--model", "scripted/echo", input="another prompt from stdin", env={"X": "2"})
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == "got: 2\n"
    [first, second] = [p.read_text() for p in cli_env.sessions()]
    assert "a prompt from stdin" in first + second and "another prompt from stdin" in first + second
    empty = corral("run", "--model", "scripted/echo", input="  \n")
    assert empty.returncode == 2 and "empty" in empty.stderr and "Traceback" not in empty.stderr


def test_sigterm_during_a_tool_call_exits_1_without_an_answer(cli_env: Env) -> None:
    cli_env.script(
        "longtool",
        "steps:\n"
        "  - text: 'Starting the long job.'\n"
        "    tool_calls:\n"
        "      - name: bash\n"
        "        args: {command: 'touch started && sleep 60'}\n"
        "  - text: 'The job finished.'\n",
    )
    with subprocess.Popen(
        [CORRAL, "run", "--model", "scripted/longtool", "-p", "run the job"],
        cwd=cli_env.project,
        env=cli_env.vars,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        wait_until(lambda: (cli_env.project / "started").exists(), what="the tool call to start")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, (out, err)
    assert out == ""  # the pre-tool text is not the answer
    assert "aborted" in err and "Traceback" not in err


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_installs_only_the_runtime_and_make_test_adds_the_test_extras() -> None:
    def planned(target: str) -> str:
        done = subprocess.run(
            ["make", "-n", "-B", "-C", str(REPO), target], capture_output=True, text=True, check=True
        )
        return done.stdout

    demo = planned("demo")
    assert "pip install --quiet -e .\n" in demo
    assert "[test]" not in demo
    assert "corral demo" in demo
    assert "pip install --quiet -e '.[test]'" in planned("unit")


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_demo_ends_with_what_to_try_next_and_every_data_directory_is_private(
    cli_env: Env, umask: int
) -> None:
    """`corral demo --keep` fills a data root with sessions, the store, reports/ and teams/."""
    old = os.umask(umask)
    try:
        done = subprocess.run(
            [CORRAL, "demo", "--keep"],
            cwd=cli_env.project,
            env={**cli_env.vars, "TMPDIR": str(cli_env.root)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stdout + done.stderr
    tail = done.stdout.split("What to try next:")[1]
    assert "corral run --model scripted/tour" in tail
    [kept] = [p for p in cli_env.root.iterdir() if p.name.startswith("corral-demo-")]
    assert f"cd {kept} && CORRAL_HOME={kept / '.corral-home'} corral --continue" in tail
    home = kept / ".corral-home"
    directories = [home, *(p for p in home.rglob("*") if p.is_dir())]
    assert {"reports", "teams", "sessions"} <= {p.name for p in directories}
    loose = {str(p): oct(p.stat().st_mode & 0o777) for p in directories if p.stat().st_mode & 0o777 != 0o700}
    assert loose == {}
