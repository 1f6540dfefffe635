"""A newcomer's first hour, through the real `corral` command (issue 13): help, stdin prompts,
SIGTERM during a tool, `make demo`, private data directories."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from corral.llm import DEFAULT_MODELS
from tests._ci import require
from tests.tmpfs import small_tmpfs

from .conftest import CORRAL, Env, RunCorral, wait_until

REPO = Path(__file__).resolve().parents[2]

# The built-in defaults, read from the registry (never a real id whose lifecycle can break the test).
ANTHROPIC_DEFAULT = f"anthropic/{DEFAULT_MODELS['anthropic']}"
OPENAI_DEFAULT = f"openai/{DEFAULT_MODELS['openai']}"


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


def test_default_model_per_provider_is_announced_once_and_marked_in_models(
    corral: RunCorral, cli_env: Env
) -> None:
    """Only an Anthropic key: the lead runs on the documented default, not the alphabetically first."""
    key = {"ANTHROPIC_API_KEY": "sk-ant-test"}
    state = '{"type": "get_state"}\n'

    def model_of(done: subprocess.CompletedProcess[str]) -> str:
        assert done.returncode == 0, done.stderr
        response = json.loads(done.stdout.splitlines()[0])
        return f"{response['data']['model']['provider']}/{response['data']['model']['id']}"

    ephemeral = corral("run", "--mode", "rpc", "--no-session", input=state, env=key)
    assert model_of(ephemeral) == ANTHROPIC_DEFAULT
    assert f"using the default model {ANTHROPIC_DEFAULT}" in ephemeral.stderr
    assert not cli_env.home.exists()  # --no-session remembers nothing
    first = corral("run", "--mode", "rpc", input=state, env=key)
    assert model_of(first) == ANTHROPIC_DEFAULT
    assert f"using the default model {ANTHROPIC_DEFAULT}" in first.stderr
    again = corral("run", "--mode", "rpc", input=state, env=key)
    assert model_of(again) == ANTHROPIC_DEFAULT
    assert "default model" not in again.stderr  # said once

    openai_only = corral("run", "--mode", "rpc", input=state, env={"OPENAI_API_KEY": "sk-test"})
    assert model_of(openai_only) == OPENAI_DEFAULT
    assert f"using the default model {OPENAI_DEFAULT}" in openai_only.stderr  # a new default is said again

    listed = corral("models", env=key)
    assert f"{ANTHROPIC_DEFAULT}  (default)" in listed.stdout.splitlines()
    assert sum("(default)" in line for line in listed.stdout.splitlines()) == 1
    rows = json.loads(corral("models", "--json", env=key).stdout)
    assert [row["ref"] for row in rows if row["default"]] == [ANTHROPIC_DEFAULT]

    cli_env.settings('default_model = "anthropic/claude-haiku-4-5"\n')
    listed = corral("models", env=key)
    assert "anthropic/claude-haiku-4-5  (default)" in listed.stdout.splitlines()
    chosen = corral("run", "--mode", "rpc", input=state, env=key)
    assert model_of(chosen) == "anthropic/claude-haiku-4-5"
    assert "default model" not in chosen.stderr  # a model the user chose is not announced


def _assistant_texts(stdout: str) -> list[str]:
    texts = []
    for line in stdout.splitlines():
        event = json.loads(line)
        if event.get("type") == "message_end" and event["message"]["role"] == "assistant":
            texts.append(
                "".join(b.get("text", "") for b in event["message"]["content"] if b["type"] == "text")
            )
    return texts


def _results(stdout: str) -> list[str]:
    """The delivered agent results the lead received (their text)."""
    found = []
    for line in stdout.splitlines():
        event = json.loads(line)
        message = event.get("message") or {}
        if event.get("type") == "message_end" and message.get("customType") == "corral-agent-result":
            found.append(
                message["content"] if isinstance(message["content"], str) else str(message["content"])
            )
    return found


def test_the_offline_tour_works_in_any_directory_and_every_hint_points_at_it(
    corral: RunCorral, cli_env: Env
) -> None:
    require("git", "the tour runs `git status`; its message below is git's own")
    no_model = corral("run", "-p", "hi")
    assert no_model.returncode == 2 and "--model scripted/tour" in no_model.stderr
    (cli_env.project / "NOTES.md").write_text("# Notes\nTODO: write the intro\n")
    done = corral("run", "--mode", "json", "--model", "scripted/tour", "-p", "show me around")
    assert done.returncode == 0, done.stderr
    texts = _assistant_texts(done.stdout)
    # not a git repository: the tour says so instead of claiming success
    assert "Not everything worked" in texts[1] and "not a git repository" in texts[1]
    assert texts[2].startswith("Both scouts are working")  # a quick scout's result may be here already
    results = _results(done.stdout)
    assert len(results) == 2
    docs = next(r for r in results if "agent=tour-docs" in r)
    todos = next(r for r in results if "agent=tour-todos" in r)
    assert "status=completed" in docs and "NOTES.md" in docs
    assert "NOTES.md:2: TODO: write the intro" in todos
    assert texts[-1].startswith("Both scouts delivered their results")
    assert not (cli_env.project / ".git").exists() and sorted(p.name for p in cli_env.project.iterdir()) == [
        "NOTES.md"
    ]  # it only read

    subprocess.run(["git", "init", "-q", str(cli_env.project)], check=True)
    in_git = corral("run", "--mode", "json", "--model", "scripted/tour", "-p", "show me around")
    assert in_git.returncode == 0, in_git.stderr
    assert _assistant_texts(in_git.stdout)[1].startswith("Both commands worked; git says:\n```text\n## ")

    plain = corral(
        "run", "--mode", "json", "--model", "scripted/tour", "--surfaces", "", "-p", "show me around"
    )
    assert plain.returncode == 0, plain.stderr
    plain_texts = _assistant_texts(plain.stdout)
    assert plain_texts[-1].startswith("I could not start the scouts")  # no claim of agents working
    assert _results(plain.stdout) == []


def test_the_demo_script_outside_the_demo_claims_no_fix(corral: RunCorral, cli_env: Env) -> None:
    """`scripted/demo` in a project without the sample's invoice.py: every tool fails, and it says so."""
    done = corral(
        "run", "--model", "scripted/demo", "-p", "fix it", env={"CORRAL_DEMO_PYTHON": sys.executable}
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Not fixed: the test run above still fails")
    assert "all 3 tests pass" not in done.stdout


def _one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def _bad_roots(root: Path, stack: contextlib.ExitStack) -> dict[str, Path]:
    a_file = root / "a-file"
    a_file.write_text("not a directory\n")
    db_dir = root / "db-dir"
    (db_dir / "corral.db").mkdir(parents=True)
    roots = {"a file": a_file, "uncreatable": a_file / "below-a-file", "corral.db a directory": db_dir}
    read_only = root / "read-only"
    if os.geteuid() == 0:  # root writes through mode bits: a read-only mount stops it
        stack.enter_context(small_tmpfs(read_only, read_only=True))
    else:
        read_only.mkdir(mode=0o500)
    roots["unwritable"] = read_only
    return roots


def test_bad_data_root_settings_and_scripts_are_one_line_errors(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("hi", "steps:\n  - text: hello\n")
    with contextlib.ExitStack() as stack:
        roots = _bad_roots(cli_env.root, stack)
        for what, root in roots.items():
            env = {"CORRAL_HOME": str(root)}
            _one_line_error(
                corral("run", "--model", "scripted/hi", "-p", "x", env=env), "data root", str(root)
            )
            _one_line_error(corral("agents", "list", env=env), "data root")
            # --no-session uses no data root at all, so a broken one does not matter
            ephemeral = corral("run", "--no-session", "--model", "scripted/hi", "-p", "x", env=env)
            assert (ephemeral.returncode, ephemeral.stdout, ephemeral.stderr) == (0, "hello\n", ""), what

    cli_env.script("deep", "steps: " + "[" * 3000 + "]" * 3000 + "\n")
    for args in (("-p", "x"), ("--no-session", "-p", "x")):
        _one_line_error(corral("run", "--model", "scripted/deep", *args), "deep.yaml", "nested")

    (cli_env.config / "corral").mkdir(parents=True)
    settings = cli_env.config / "corral" / "settings.toml"
    settings.write_bytes(b'default_model = "caf\xe9"\n')
    for args in (("-p", "x"), ("--no-session", "-p", "x")):
        _one_line_error(corral("run", "--model", "scripted/hi", *args), str(settings), "UTF-8")
    settings.write_text('surfaces = ["bogus"]\n')
    _one_line_error(corral("run", "--model", "scripted/hi", "-p", "x"), str(settings), "surfaces")


def test_no_session_writes_no_file_at_all(corral: RunCorral, cli_env: Env) -> None:
    """Not the session, not the store, not the managed agents' sessions: the data root stays absent."""
    scratch = cli_env.root / "tmp"
    scratch.mkdir()
    done = corral(
        "run",
        "--no-session",
        "--model",
        "scripted/tour",
        "-p",
        "show me around",
        env={"TMPDIR": str(scratch)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Both scouts delivered their results")  # the agents ran
    assert not cli_env.home.exists()
    assert list(scratch.iterdir()) == []  # the run's private store is gone too


def test_json_mode_into_a_closed_pipe_exits_quietly(cli_env: Env) -> None:
    cli_env.script(
        "chatty", "steps:\n  - text: one\n    tool_calls: [{name: ls, args: {path: .}}]\n  - text: two\n"
    )
    with subprocess.Popen(
        f"{CORRAL} run --mode json --model scripted/chatty -p hi | head -1",
        shell=True,
        cwd=cli_env.project,
        env=cli_env.vars,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        executable="/bin/bash",
    ) as proc:
        out, err = proc.communicate(timeout=60)
    assert json.loads(out)["type"] == "session"
    assert err == ""


def test_a_down_endpoint_fails_naming_the_url(corral: RunCorral, cli_env: Env) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    cli_env.settings("[retry]\nbase_delay_ms = 10\n")
    done = corral(
        "run",
        "--model",
        "openai/gpt-5",
        "-p",
        "hi",
        env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": url},
    )
    assert done.returncode == 1
    assert f"cannot reach {url}" in done.stderr and "Traceback" not in done.stderr


def test_sessions_lists_a_directory_and_every_directory(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("hi", "steps:\n  - text: hello\n")
    assert corral("run", "--model", "scripted/hi", "-p", "first prompt").returncode == 0
    assert corral("run", "--model", "scripted/tour", "-p", "show me around").returncode == 0
    leads = corral("sessions")
    assert leads.returncode == 0, leads.stderr
    assert len(leads.stdout.splitlines()) == 2  # the two leads; their scouts only with --agents
    assert "agent " not in leads.stdout
    listed = corral("sessions", "--agents")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 4  # two leads, two scouts
    ids = {json.loads(p.read_text().splitlines()[0])["id"] for p in cli_env.sessions()}
    assert {line.split()[0] for line in lines} == ids
    assert any(line.endswith('"first prompt"') for line in lines)
    assert sum("agent tour-docs (scout)" in line or "agent tour-todos (scout)" in line for line in lines) == 2
    assert all(" KB" in line or " B " in line for line in lines)  # the size
    rows = json.loads(corral("sessions", "--json", "--agents").stdout)
    assert {row["id"] for row in rows} == ids and all(row["size"] > 0 for row in rows)

    elsewhere = cli_env.root / "elsewhere"
    elsewhere.mkdir()
    assert corral("sessions", "--cwd", str(elsewhere)).stdout.startswith("No sessions for")
    every = corral("sessions", "--all", "--agents", "--cwd", str(elsewhere)).stdout.splitlines()
    assert len(every) == 4 and all(line.endswith(f"[{cli_env.project}]") for line in every)
    missing = corral("run", "--model", "scripted/hi", "--session", "0000dead", "-p", "x")
    _one_line_error(missing, "`corral sessions` lists")


ASK_SCRIPT = """
steps:
  - text: "Delegating."
    tool_calls:
      - name: agent
        args: {action: delegate, definition: scout, label: asker, task: "Ask me something."}
  - text: "Waiting."
  - text: "It asked; I will answer later."
  - expect: {last_user_contains: "reply now"}
    text: "Replying."
    tool_calls:
      - name: agent
        args: {action: reply, agent: asker, message: "yes"}
  - text: "{{ last_tool_output }}"
  - text: "Closing it."
    tool_calls:
      - name: agent
        args: {action: close, agent: asker}
  - text: "Continuing it with the answer."
    tool_calls:
      - name: agent
        args: {action: continue, session: "{{ env.ASKER_SESSION }}", task: "Yes, go ahead."}
  - text: "Waiting for the continued agent."
  - text: "The continued agent delivered."
on_exhausted: repeat_last
agents:
  asker:
    - text: "Question."
      tool_calls:
        - name: ask_owner
          args: {question: "Shall I go ahead?"}
    - expect: {last_user_contains: "Yes, go ahead."}
      text: "Went ahead as answered."
"""


def test_a_question_left_by_an_in_process_agent_says_what_really_happens(
    corral: RunCorral, cli_env: Env
) -> None:
    cli_env.script("ask", ASK_SCRIPT)
    first = corral("run", "--model", "scripted/ask", "-p", "go")
    assert first.returncode == 0, first.stderr
    assert "runs in this process, so it is lost when this run exits" in first.stderr
    assert "`continue` its session" in first.stderr and "resume with" not in first.stderr
    headers = {p: json.loads(p.read_text().splitlines()[0]) for p in cli_env.sessions()}
    lead = next(h["id"] for h in headers.values() if "corral" not in h)
    asker = next(h["id"] for h in headers.values() if "corral" in h)
    assert f"`continue` its session {asker}" in first.stderr

    env = {"ASKER_SESSION": asker}
    replied = corral("run", "--model", "scripted/ask", "--session", lead, "-p", "reply now", env=env)
    assert replied.returncode == 0, replied.stderr
    assert "was lost (the process it ran in ended), so a reply cannot reach it" in replied.stdout
    assert f"then `continue` with session={asker}" in replied.stdout

    continued = corral(
        "run", "--mode", "json", "--model", "scripted/ask", "--session", lead, "-p", "ok", env=env
    )
    assert continued.returncode == 0, continued.stderr
    [result] = _results(continued.stdout)
    assert "agent=asker" in result and "status=completed" in result and "Went ahead as answered." in result


def test_json_mode_ends_with_run_end_and_agents_adds_the_agents_events(
    corral: RunCorral, cli_env: Env
) -> None:
    done = corral("run", "--mode", "json", "--agents", "--model", "scripted/tour", "-p", "show me around")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[-1] == {"type": "run_end", "exitCode": 0}
    assert [line["type"] for line in lines].count("run_end") == 1
    lead = [line for line in lines[1:-1] if "agent" not in line]
    # the lead settles once per wake: after its turn and after the delivered results
    assert [e["type"] for e in lead].count("agent_settled") >= 2 and lead[-1]["type"] == "agent_settled"
    tagged = [line for line in lines if "agent" in line]
    labels = {line["agent"]["label"] for line in tagged}
    assert labels == {"tour-docs", "tour-todos"}
    assert {line["agent"]["kind"] for line in tagged} == {"managed"}
    docs_tools = [
        line["toolName"]
        for line in tagged
        if line["agent"]["label"] == "tour-docs" and line["type"] == "tool_execution_end"
    ]
    assert docs_tools == ["find"]
    assert all(line["type"] != "session" for line in tagged)
    without = corral("run", "--mode", "json", "--model", "scripted/tour", "-p", "show me around")
    assert not any("agent" in json.loads(line) for line in without.stdout.splitlines())

    cli_env.script("fails", "steps:\n  - text: boom\n    stop: error\n")
    failed = corral("run", "--mode", "json", "--model", "scripted/fails", "-p", "x")
    assert failed.returncode == 1
    assert json.loads(failed.stdout.splitlines()[-1]) == {"type": "run_end", "exitCode": 1, "error": "boom"}
    _one_line_error(corral("run", "--agents", "--model", "scripted/fails", "-p", "x"), "--agents")


def test_json_agents_tags_teams_agents_too(corral: RunCorral, cli_env: Env) -> None:
    for item in (REPO / "src" / "corral" / "_demo" / "sample_project").iterdir():
        if item.is_file():  # as `corral demo` copies it (a __pycache__ there is not the sample's)
            (cli_env.project / item.name).write_bytes(item.read_bytes())
    done = corral(
        "run",
        "--mode",
        "json",
        "--agents",
        "--surfaces",
        "teams",
        "--model",
        "scripted/demo-teams",
        "-p",
        "review",
        env={"CORRAL_DEMO_PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    tagged = {(line["agent"]["label"], line["agent"]["kind"]) for line in lines if "agent" in line}
    assert tagged == {("correctness", "teams"), ("tests", "teams"), ("write-patch", "teams")}
    assert lines[-1] == {"type": "run_end", "exitCode": 0}
