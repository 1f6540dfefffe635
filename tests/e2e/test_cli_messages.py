"""Texts a shell user reads from `corral`: Ctrl-C, error prefixes, hints, `--help`, empty prompts."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from .conftest import CORRAL, Env, RunCorral, wait_until

TEAM = """\
steps:
  - text: "Delegating two agents."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: generalist, label: slow, task: "Run a long command."}}
      - {name: agent, args: {action: delegate, definition: generalist, label: asker, task: "Ask me."}}
  - text: "Both started."
on_exhausted: repeat_last
agents:
  slow:
    - {tool_calls: [{name: bash, args: {command: "touch slow.started; sleep 120"}}]}
    - {text: "done"}
  asker:
    - {tool_calls: [{name: bash, args: {command: "touch asker.started"}}]}
    - {tool_calls: [{name: ask_owner, args: {question: "Postgres or SQLite?"}}]}
    - {text: "thanks"}
"""


def test_ctrl_c_names_the_agents_it_made_lost_and_how_to_resume(cli_env: Env, corral: RunCorral) -> None:
    cli_env.script("team", TEAM)
    with subprocess.Popen(
        [CORRAL, "run", "--model", "scripted/team", "-p", "go"],
        cwd=cli_env.project,
        env=cli_env.vars,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A child of a non-interactive shell may inherit SIGINT ignored; a terminal's Ctrl-C is not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as proc:
        try:
            wait_until(
                lambda: all((cli_env.project / f"{name}.started").exists() for name in ("slow", "asker")),
                timeout=60,
                what="both agents running",
            )
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 130
    lines = err.splitlines()
    assert lines[0] == "corral: interrupted"
    [lead] = [path for path in cli_env.sessions() if '"managed"' not in path.read_text().splitlines()[0]]
    lead_id = json.loads(lead.read_text().splitlines()[0])["id"]
    for label, definition in (("slow", "generalist"), ("asker", "generalist")):
        [line] = [line for line in lines if line.startswith(f"corral: agent {label} ({definition})")]
        assert "was lost before it finished" in line
        assert f"`corral run --session {lead_id} -p ...`" in line
    listed = corral("agents", "list", "--session", lead_id)
    assert listed.returncode == 0, listed.stderr
    states = {row.split("\t")[0]: row.split("\t")[1] for row in listed.stdout.splitlines() if "\t" in row}
    assert states == {"slow": "lost", "asker": "lost"}


def _one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    [line] = done.stderr.splitlines()
    assert line.startswith("corral: error: ") and "Traceback" not in done.stderr
    return line


def test_help_lists_every_command_description_whole(corral: RunCorral) -> None:
    for args in (("--help",), ("agents", "--help"), ("checks", "--help")):
        done = corral(*args)
        assert done.returncode == 0, done.stderr
        cut = [line for line in done.stdout.splitlines() if line.endswith("...") and "Usage:" not in line]
        assert cut == [], done.stdout
    listed = " ".join(corral("--help").stdout.split())
    assert "Merge an isolated writer's branch into your working tree (exit 0 merged, 1 conflicts" in listed


def test_every_error_has_the_same_prefix_and_no_pydantic_wording(corral: RunCorral, cli_env: Env) -> None:
    for args in (
        ("merge", "nobody"),
        ("mcp", "--isolation", "sideways"),
        ("mcp", "--budget", "tree_tokens=abc"),
        ("mcp", "--cwd", str(cli_env.root / "missing")),
        ("run", "--thinking", "loud", "-p", "hi"),
        ("run", "--mode", "xml", "-p", "hi"),
    ):
        line = _one_line_error(corral(*args))
        assert "Value error" not in line, line
    assert "'loud' is not one of 'off'" in _one_line_error(corral("run", "--thinking", "loud", "-p", "hi"))


def test_a_shell_hint_names_the_shell_command(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("hi", "steps:\n  - text: hello\n")
    assert corral("run", "--model", "scripted/hi", "-p", "first").returncode == 0
    line = _one_line_error(corral("agents", "close", "nobody"))
    assert "`corral agents list`" in line and "refresh with `list`" not in line


def test_an_empty_prompt_is_an_error_like_empty_stdin(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("hi", "steps:\n  - text: hello\n")
    for prompt in ("", "   \n"):
        line = _one_line_error(corral("run", "--model", "scripted/hi", "-p", prompt))
        assert "prompt" in line and "empty" in line
    assert cli_env.sessions() == []  # nothing written
    assert _one_line_error(corral("run", "--model", "scripted/hi", input="")).endswith("give -p PROMPT")


def test_retry_lines_name_no_exception_class(corral: RunCorral, cli_env: Env) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    cli_env.settings(
        f'default_model = "local/small"\n[retry]\nbase_delay_ms = 10\n'
        f'[providers.local]\nbase_url = "{url}"\n[[providers.local.models]]\nid = "small"\n'
    )
    done = corral("run", "--surfaces", "", "-p", "hi")
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.startswith("corral: ")]
    retries = [line for line in lines if "retrying in" in line]
    assert len(retries) == 3, done.stderr
    for line in lines:
        assert "cannot reach" in line
        assert not any(word.endswith(("Error:", "Exception:")) for word in line.split()), line


def test_dir_corral_shows_the_public_api(cli_env: Env) -> None:
    code = "import corral; print(' '.join(n for n in dir(corral) if not n.startswith('_')))"
    done = cli_env.python(code)
    assert done.returncode == 0, done.stderr
    names = set(done.stdout.split())
    assert {"open_lead", "Lead", "LeadItem", "AgentHandle", "LeadCallError", "ToolOutcome"} <= names
    assert "importlib" not in names


def test_sessions_lists_leads_by_default_and_names_program_leads(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("team", TEAM.replace("sleep 120", "true").replace("touch slow.started; ", ""))
    program = (
        "import asyncio, corral\n"
        "async def main():\n"
        "    for front in ('api', 'mcp'):\n"
        "        async with corral.open_lead('.', _front=front):\n"
        "            pass\n"
        "asyncio.run(main())\n"
    )
    opened = cli_env.python(program)
    assert opened.returncode == 0, opened.stderr
    leads = corral("sessions")
    assert leads.returncode == 0, leads.stderr
    titles = sorted(line.split("  ")[-1] for line in leads.stdout.splitlines())
    assert titles == ["MCP lead", "Python API lead"]
    rows = json.loads(corral("sessions", "--json").stdout)
    assert sorted(row["lead"] for row in rows) == ["api", "mcp"]


def test_the_bundled_hello_script_documents_a_call_that_works(corral: RunCorral) -> None:
    import re
    import shlex

    import corral as package

    script = Path(package.__file__).parent / "llm" / "scripts" / "hello.yaml"
    [command] = re.findall(r"`(corral [^`]+)`", script.read_text().splitlines()[0])
    done = corral(*shlex.split(command)[1:])
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the scripted model.\n"
