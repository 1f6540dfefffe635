"""The offline paths a newcomer takes after the docs (issue 28): continuing the tour, the bundled
scripts' own usage lines, and when a session file is written (docs/sessions.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from corral.llm._script_format import BUNDLED_SCRIPTS_DIR

from .conftest import Env, RunCorral, kill_json_run


def test_continuing_the_tour_says_it_is_over_and_how_to_go_on_with_a_real_model(
    corral: RunCorral, cli_env: Env
) -> None:
    tour = corral("run", "--model", "scripted/tour", "-p", "show me around")
    assert tour.returncode == 0, tour.stderr
    last = tour.stdout
    assert last.startswith("Both scouts delivered their results")

    again = corral("run", "--continue", "-p", "Fix it.")
    assert again.returncode == 0, again.stderr
    assert again.stdout != last  # not the tour's closing message once more
    assert again.stdout.startswith("The tour is over")
    assert "corral run --continue --model" in again.stdout and "corral models" in again.stdout
    # every further prompt gets the same answer, not an error or a replay of the tour
    third = corral("run", "--continue", "-p", "And now?")
    assert third.returncode == 0 and third.stdout == again.stdout

    # what it recommends works: the same session goes on with another model
    switched = corral("run", "--continue", "--model", "scripted/hello", "-p", "hi")
    assert switched.returncode == 0, switched.stderr
    assert switched.stdout == "Hello from the scripted model.\n"
    leads = [p for p in cli_env.sessions() if "tour-" not in p.read_text().splitlines()[0]]
    prompts = [
        json.loads(line)["message"]["content"][0]["text"]
        for p in cli_env.sessions()
        for line in p.read_text().splitlines()[1:]
        if json.loads(line).get("message", {}).get("role") == "user"
    ]
    assert {"show me around", "Fix it.", "And now?", "hi"} <= set(prompts)
    assert leads


def test_the_tour_without_agents_can_be_continued_too(corral: RunCorral) -> None:
    """`--surfaces ''`: no scout ever reports; a continued prompt still gets the closing answer."""
    plain = corral("run", "--model", "scripted/tour", "--surfaces", "", "-p", "show me around")
    assert plain.returncode == 0, plain.stderr
    again = corral("run", "--continue", "--surfaces", "", "-p", "Fix it.")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("The tour is over")


def test_each_bundled_script_s_usage_comment_is_a_call_that_works(corral: RunCorral) -> None:
    """A `corral …` line in a bundled script's header comment runs as written (hello.yaml's did not)."""
    commands = []
    for path in sorted(BUNDLED_SCRIPTS_DIR.glob("*.yaml")):
        header = [line for line in path.read_text().splitlines() if line.startswith("#")]
        commands += [(path.name, c) for line in header for c in re.findall(r"`?(corral run [^`\n]*)`?", line)]
    assert {name for name, _ in commands} >= {"hello.yaml", "tour.yaml"}
    for name, command in commands:
        args = [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', command.strip())][1:]
        done = corral(*args)
        assert done.returncode == 0, (name, command, done.stderr)
        assert done.stdout.strip(), (name, command)


def test_a_first_request_that_fails_leaves_a_session_file_with_the_prompt(
    corral: RunCorral, cli_env: Env
) -> None:
    """docs/sessions.md: the file exists once the first request ended, even in an error; --continue finds it."""
    cli_env.script("flaky", 'steps:\n  - {text: "boom", stop: error}\n  - {text: "recovered"}\n')
    failed = corral("run", "--model", "scripted/flaky", "-p", "the first prompt")
    assert failed.returncode == 1 and "boom" in failed.stderr
    [path] = cli_env.sessions()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    messages = [line["message"] for line in lines if line["type"] == "message"]
    assert messages[0]["content"][0]["text"] == "the first prompt"
    assert messages[-1]["stopReason"] == "error" and messages[-1]["errorMessage"] == "boom"
    resumed = corral("run", "--continue", "-p", "try again")
    assert resumed.returncode == 0 and resumed.stdout == "recovered\n"
    assert cli_env.sessions() == [path]


def test_a_run_refused_before_it_asks_the_model_leaves_no_file(corral: RunCorral, cli_env: Env) -> None:
    refused = [
        corral("run", "-p", "no model configured"),
        corral("run", "--model", "anthropic/claude-sonnet-4-5", "-p", "no key"),
        corral("run", "--model", "scripted/nonexistent", "-p", "no script"),
    ]
    assert [done.returncode for done in refused] == [2, 2, 2], [d.stderr for d in refused]
    assert cli_env.sessions() == []


def test_a_run_killed_during_its_first_request_leaves_no_file(cli_env: Env) -> None:
    cli_env.script("slow", 'steps:\n  - {text: "late", delay_ms: 60000}\n')
    kill_json_run(  # the request is under way once the assistant message starts
        cli_env,
        *("--model", "scripted/slow", "-p", "lost prompt"),
        at=lambda event: event.get("type") == "message_start" and event["message"]["role"] == "assistant",
    )
    assert cli_env.sessions() == []
    home: Path = cli_env.home
    assert not list(home.rglob("*.jsonl"))


AGENTS_ON_TEAM = """
import asyncio

import corral


async def main() -> None:
    async with corral.open_lead(cwd=".") as lead:
        handle = await lead.delegate("scout", "What is here?", label="s1")
        item = await handle.result(timeout=60)
        print(item.kind, item.agent, item.details["status"])
        print("The directory holds:" in item.text and "notes.txt" in item.text)
    async with corral.open_lead(cwd=".", surfaces=("teams",)) as lead:
        await lead.spawn("lister", "List this directory.", model_slot="read-collect")
        report = await lead.next_item(timeout=60)
        print(report.kind, report.agent)
        print(report.text)


asyncio.run(main())
"""


def test_scripted_team_answers_for_any_agent_a_program_starts(cli_env: Env) -> None:
    """docs/scripted-model.md: with `default_model = "scripted/team"` (the bundled script) every agent
    has an offline model; a managed agent answers with a listing, a teams agent reports it."""
    del cli_env.vars["CORRAL_SCRIPTS"]  # the bundled script, not a test's own `team`
    cli_env.settings('default_model = "scripted/team"\n')
    (cli_env.project / "notes.txt").write_text("x\n")
    done = cli_env.python(AGENTS_ON_TEAM, timeout=180)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "result s1 completed"
    assert lines[1] == "True"
    assert lines[2] == "report lister"
    report = "\n".join(lines[3:])
    assert (
        "outcome=succeeded" in report and "Summary: listed the directory" in report and "notes.txt" in report
    )
