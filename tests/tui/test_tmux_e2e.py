"""End to end: the real `corral` command in a private tmux server, driven with `send-keys`, read with `capture-pane`.

A terminal has no events to wait on, so the screen is polled (every 50 ms, bounded).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.runtime._tmux_fixtures import tmux_socket  # noqa: F401 - fixture

CORRAL = str(Path(sys.executable).with_name("corral"))
WAIT_S = 30.0

SCRIPT = """\
steps:
  - text: "Delegating to a scout."
    tool_calls:
      - {name: agent, args: {action: delegate, definition: implementer, label: scout, task: "Find the README."}}
      - {name: bash, args: {command: "while [ ! -e ../lead-go ]; do sleep 0.01; done"}}
  - text: "Steered: I will also check the tests."
    expect: {context_contains: ["also the tests"]}  # the steer reached this request (after or before the hidden guidance)
  - text: "Got the scout's result."
on_exhausted: repeat_last
agents:
  scout:
    - {text: "Searching.", tool_calls: [{name: bash, args: {command: "while [ ! -e ../scout-go ]; do sleep 0.01; done; ls"}}]}
    - {text: "The README is README.md at the top."}
"""


def _tmux(socket: Path, *args: str) -> str:
    done = subprocess.run(
        ["tmux", "-S", str(socket), *args], capture_output=True, text=True, timeout=10, check=True
    )
    return done.stdout


async def _screen_shows(socket: Path, *texts: str) -> str:
    async def poll() -> str:
        while True:
            screen = _tmux(socket, "capture-pane", "-p", "-t", "tui")
            if all(text in screen for text in texts):
                return screen
            await asyncio.sleep(0.05)

    try:
        return await asyncio.wait_for(poll(), WAIT_S)
    except TimeoutError:
        raise AssertionError(
            f"screen never showed {texts}:\n" + _tmux(socket, "capture-pane", "-p", "-t", "tui")
        ) from None


async def test_delegation_steer_and_delivered_result_in_a_real_terminal(
    tmp_path: Path,
    tmux_socket: Path,  # noqa: F811
) -> None:
    project = tmp_path / "project"
    scripts = tmp_path / "scripts"
    for folder in (project, scripts):
        folder.mkdir()
    (project / "README.md").write_text("# sample\n")
    (scripts / "e2e.yaml").write_text(SCRIPT)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CORRAL_", "XDG_"))
    }
    env.update(
        CORRAL_HOME=str(tmp_path / "home"),
        CORRAL_SCRIPTS=str(scripts),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        HOME=str(tmp_path / "userhome"),
        TERM="xterm-256color",
    )
    # tmux hands its command to a shell: quote every word (the environment may hold `;`, `#`, spaces).
    command = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), CORRAL, "--model", "scripted/e2e"])
    _tmux(
        tmux_socket,
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "tui",
        "-x",
        "110",
        "-y",
        "40",
        "-c",
        str(project),
        command,
    )
    await _screen_shows(tmux_socket, "scripted/e2e", "idle")
    _tmux(tmux_socket, "send-keys", "-t", "tui", "-l", "split the work")
    _tmux(tmux_socket, "send-keys", "-t", "tui", "Enter")
    await _screen_shows(tmux_socket, "working")
    _tmux(tmux_socket, "send-keys", "-t", "tui", "-l", "also the tests")
    _tmux(tmux_socket, "send-keys", "-t", "tui", "Enter")
    await _screen_shows(tmux_socket, "steer queued")
    # Gates, not delays: the lead's tool batch ends only once the steer is queued, and the
    # scout finishes only after the steered turn, so the order on screen is fixed.
    (tmp_path / "lead-go").touch()
    await _screen_shows(tmux_socket, "Steered: I will also check the tests.")
    (tmp_path / "scout-go").touch()
    screen = await _screen_shows(tmux_socket, "scout · completed", "Got the scout's result.")
    assert "README.md at the top" in screen
    _tmux(tmux_socket, "send-keys", "-t", "tui", "C-c")
