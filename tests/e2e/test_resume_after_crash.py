"""Resuming a lead after a crash while its agent's result waits to be delivered (issue 27.7).

`corral run --continue -p …` reopens the *lead's* session — never the newer session of one of its
agents in the same directory — and answers the new prompt even when the recovered result woke the
lead first: the prompt waits for that turn and is answered after it, never refused.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.agent import AgentEvent
from corral.agent._events import ToolExecutionStartEvent
from corral.orchestration import Repositories
from tests.runtime._tmux_fixtures import kill_server, require_tmux

from .conftest import CORRAL, Env, RunCorral, wait_until


def _lead_sessions(env: Env) -> list[Path]:
    return [p for p in env.sessions() if '"managed"' not in p.read_text().splitlines()[0]]


def _texts(session: Path) -> list[str]:
    """Every user and assistant text of a session file, in order."""
    found: list[str] = []
    for line in session.read_text().splitlines()[1:]:
        message = json.loads(line).get("message") or {}
        content = message.get("content")
        if isinstance(content, str):
            found.append(content)
        elif isinstance(content, list):
            found.extend(b["text"] for b in content if b.get("type") == "text")
    return found


def _waiter(env: Env) -> None:
    """A user agent definition that runs only `bash` (and delegates nothing, so it may run on tmux)."""
    agents = env.config / "corral" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "waiter.md").write_text(
        "---\nname: waiter\ndescription: Waits at a gate.\ntools: [bash]\n---\nWait.\n"
    )


# --- the prompt after a recovered result that woke the lead first (deterministic) ---------------

RECOVER = """
steps:
  - text: "Delegating."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: waiter, label: quick, task: "Report back."}}
  - text: "Lead is waiting now."
  - text: "Holding the recovered result."
    expect: {last_user_contains: "Quick is done."}
    tool_calls:
      - {name: bash, args: {command: "while [ ! -e {{ env.GATE }} ]; do sleep 0.01; done"}}
  - text: "Noted quick's result."
  - text: "News: quick finished."
    expect: {last_user_contains: "any news?"}
    otherwise: {text: "the prompt was not the one answered"}
agents:
  quick:
    - tool_calls:
        - {name: bash, args: {command: "until grep -rqs 'Lead is waiting [n]ow' {{ env.CORRAL_HOME }}/sessions; do sleep 0.01; done"}}
    - text: "Quick is done."
"""


def test_a_prompt_given_while_a_recovered_result_keeps_the_lead_busy_is_answered_after_it(
    cli_env: Env, corral: RunCorral, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = cli_env.root / "gate"
    cli_env.script("lead", RECOVER)
    _waiter(cli_env)
    # The host dies right after the agent's result is stored, before it reaches the lead; the agent
    # answers only once the lead said "Lead is waiting now." (the lead's script is at its third step).
    crashed = corral("run", "--model", "scripted/lead", "-p", "go", env={"CORRAL_FAULTS": "after_result_row"})
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    [lead_session] = _lead_sessions(cli_env)
    assert "Lead is waiting now." in _texts(lead_session)

    for key, value in {**cli_env.vars, "GATE": str(gate)}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(cli_env.project)
    out, err = io.StringIO(), io.StringIO()
    code = asyncio.run(_continue_while_busy(cli_env.project, gate, out, err))

    assert code == 0, err.getvalue()
    assert out.getvalue() == "News: quick finished.\n"
    texts = _texts(lead_session)
    assert (
        texts.index("Noted quick's result.") < texts.index("any news?") < texts.index("News: quick finished.")
    )
    assert _lead_sessions(cli_env) == [lead_session]


async def _continue_while_busy(project: Path, gate: Path, out: io.StringIO, err: io.StringIO) -> int:
    from corral._cli._launch import launch_session
    from corral._cli._modes import run_print_mode
    from corral.lead._compose import LaunchOptions

    launched = launch_session(LaunchOptions(project, model="scripted/lead", continue_recent=True))
    busy = asyncio.Event()

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionStartEvent) and event.tool_name == "bash":
            busy.set()

    unsubscribe = launched.agent.subscribe(on_event)
    try:
        await launched.attach_host()  # recovery delivers the stored result: it wakes the lead
        await asyncio.wait_for(busy.wait(), 60)  # the lead's turn on it holds at the gate
        assert not launched.agent.is_idle
        run = asyncio.ensure_future(run_print_mode(launched, "any news?", out=out, err=err))
        await asyncio.sleep(0)  # the prompt is given now, while the lead is busy
        gate.touch()
        return await asyncio.wait_for(run, 60)
    finally:
        unsubscribe()
        await launched.aclose()
        launched.session.close()


# --- with the agent on tmux, alive after the host's death (the newcomer's recipe) --------------

TMUX_LEAD = """
steps:
  - text: "Delegating."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: waiter, label: slow, task: "Take your time."}}
  - text: "Lead is waiting now."
  - text: "Answered."
on_exhausted: repeat_last
agents:
  slow:
    - tool_calls:
        - {name: bash, args: {command: "touch {{ env.GATE }}.started; while [ ! -e {{ env.GATE }} ]; do sleep 0.01; done"}}
    - text: "Slow is done."
"""


@pytest.fixture
def tmux_env(cli_env: Env) -> Iterator[Env]:
    require_tmux()
    cli_env.settings('runtime = "tmux"\n')
    _waiter(cli_env)
    try:
        yield cli_env
    finally:
        kill_server(cli_env.home / "tmux" / "default")


def _slow_completed(home: Path) -> bool:
    store = Repositories.open(home / "corral.db")
    try:
        return any(g.label == "slow" and g.phase != "active" for g in store.kernel.generations())
    finally:
        store.close()


def test_continue_after_a_crash_with_a_tmux_agent_reopens_the_lead_and_answers(
    tmux_env: Env, corral: RunCorral
) -> None:
    env = tmux_env
    gate = env.root / "gate"
    env.vars["GATE"] = str(gate)
    env.script("lead", TMUX_LEAD)
    with subprocess.Popen(
        [CORRAL, "run", "--model", "scripted/lead", "-p", "go"],
        cwd=env.project,
        env=env.vars,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as host:
        # bounded waits on another process's files (no host in this process to signal)
        wait_until(lambda: Path(f"{gate}.started").exists(), 60, "the agent to start in its pane")
        wait_until(
            lambda: any("Lead is waiting now." in _texts(p) for p in _lead_sessions(env)),
            60,
            "the lead to settle",
        )
        host.send_signal(signal.SIGKILL)
        host.wait(timeout=30)
    [lead_session] = _lead_sessions(env)
    gate.touch()  # the agent, alive in its pane, finishes and stores its result
    wait_until(lambda: _slow_completed(env.home), 60, "the agent's result to be stored")
    [agent_session] = [p for p in env.sessions() if p != lead_session]
    os.utime(lead_session, (time.time() - 60, time.time() - 60))  # the agent's session is the newest
    assert agent_session.stat().st_mtime > lead_session.stat().st_mtime

    done = corral("run", "--continue", "-p", "any news?")

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Answered.\n"
    assert _lead_sessions(env) == [lead_session]
    texts = _texts(lead_session)
    assert "any news?" in texts and texts[-1] == "Answered."
    assert any("Slow is done." in t for t in _custom_texts(lead_session))


def _custom_texts(session: Path) -> list[str]:
    found = []
    for line in session.read_text().splitlines()[1:]:
        entry = json.loads(line)
        if entry.get("type") == "custom_message" and isinstance(entry.get("content"), str):
            found.append(entry["content"])
    return found
