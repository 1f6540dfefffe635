"""`corral run` with a read agent that attacks its sandbox: every channel tried, none open, the host alive.

A scripted lead spawns a read-tier agent of the teams surface; the agent's script runs the
attacks through its real `bash` tool (bubblewrap, seccomp, limits) and its `read` tool, then reports. The test
checks the world afterwards — markers never written, servers never reached, secrets never
in the transcript — and that `corral run` ended normally. With `CI=true` these tests run:
missing bubblewrap or tmux is a failure there, not a skip.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.agent.tools import ReadOnlySandbox
from tests._ci import unavailable
from tests.sandbox_attacks import IO_URING_CONNECT_C, compile_c, fork_flood, socketpair_datagram

from .conftest import Env, RunCorral, wait_until

PYTHON = os.path.realpath(sys.executable)
SECRET_KEY = "sk-e2e-fake-service-key"
SSH_KEY = "-----BEGIN E2E FAKE KEY-----"
BARE_SECRETS = {
    name: f"e2e-bare-{name.lower()}"
    for name in ("API_KEY", "TOKEN", "SECRET_KEY", "PGPASSWORD", "MYSQL_PWD", "DATABASE_URL", "GITHUB_PAT")
}


def _require_tools() -> None:
    status = asyncio.run(ReadOnlySandbox().probe())
    missing = [] if status.ok else [f"a working sandbox ({status.reason})"]
    if shutil.which("tmux") is None:
        missing.append("tmux")
    if missing:
        unavailable(f"needs {', '.join(missing)}")


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cs-"))  # Unix socket paths must stay short
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class _Servers:
    """The channels the agent tries: two tmux servers, a Unix socket server outside the project and one
    inside it, a datagram socket inside it, a TCP server."""

    def __init__(self, root: Path, corral_home: Path, project: Path) -> None:
        self.user_tmux = ["tmux", "-L", f"corral-e2e-{os.getpid()}"]
        corral_socket = corral_home / "tmux" / "default"
        corral_socket.parent.mkdir(parents=True, mode=0o700)
        self.corral_tmux = ["tmux", "-S", str(corral_socket)]
        for server in (self.user_tmux, self.corral_tmux):
            subprocess.run([*server, "new-session", "-d", "sleep 600"], check=True)
        self.accepted: list[str] = []
        self.unix_path = root / "srv.sock"
        self._unix = socket.socket(socket.AF_UNIX)
        self._unix.bind(str(self.unix_path))
        self._tcp = socket.create_server(("127.0.0.1", 0))
        self.tcp_port = self._tcp.getsockname()[1]
        # Inside the project (named relative to it: the commands run there): the view shows them.
        self._in_project = socket.socket(socket.AF_UNIX)
        self._in_project.bind(str(project / "in.sock"))
        self.datagram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.datagram.bind(str(project / "dgram.sock"))
        self.datagram.setblocking(False)
        self._threads = [
            threading.Thread(target=self._serve, args=(sock, name), daemon=True)
            for sock, name in ((self._unix, "unix"), (self._tcp, "tcp"), (self._in_project, "in-project"))
        ]
        self._unix.listen()
        self._in_project.listen()
        for thread in self._threads:
            thread.start()

    def _serve(self, server: socket.socket, name: str) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            self.accepted.append(name)
            conn.close()

    def close(self) -> None:
        for server in (self.user_tmux, self.corral_tmux):
            subprocess.run([*server, "kill-server"], check=False, capture_output=True)
        for sock in (self._unix, self._tcp, self._in_project):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
            sock.close()
        self.datagram.close()

    def datagrams(self) -> list[bytes]:
        got: list[bytes] = []
        while True:
            try:
                got.append(self.datagram.recv(100))
            except (BlockingIOError, OSError):
                return got


def _attacks(servers: _Servers, markers: Path, home: Path, io_uring: Path) -> list[tuple[str, bool]]:
    """(command, fails) for each attack, in the order the agent runs them."""
    unix = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{servers.unix_path}')"
    tcp = f"import socket; socket.create_connection(('127.0.0.1', {servers.tcp_port}), timeout=5)"
    flood = fork_flood("flood stopped")
    return [
        (" ".join([*servers.user_tmux, "new-window", f"'touch {markers}/user-tmux'"]), True),
        (" ".join([*servers.corral_tmux, "new-window", f"'touch {markers}/corral-tmux'"]), True),
        (f'{PYTHON} -c "{unix}"', True),
        (f"{io_uring} in.sock", True),
        (f'{PYTHON} -c "{socketpair_datagram("dgram.sock")}"', True),
        (f'{PYTHON} -c "{tcp}"', True),
        ("echo pwned > pwned-project.txt", True),
        (f"echo pwned > {home}/pwned-home.txt", True),
        (f"{PYTHON} -c \"open('pwned-python.txt', 'w').write('x')\"", True),
        ("git -c user.name=x -c user.email=x@x commit -q --allow-empty -m pwned", True),
        (f"cat {home}/.ssh/id_rsa", True),
        (f"echo pwned > {tempfile.gettempdir()}/corral-e2e-pwned-{os.getpid()}", False),  # private /tmp
        ("env", False),
        ("dd if=/dev/zero of=$TMPDIR/fill bs=1M count=64", True),
        (f"{PYTHON} -c '{flood}'", True),
    ]


def _reads(home: Path, corral_home: Path) -> list[str]:
    """Paths the agent tries to open with its `read` tool (in corral's own process)."""
    return [f"{home}/.ssh/id_rsa", f"{corral_home}/corral.db", "/proc/self/environ"]


def _attack_script(attacks: list[tuple[str, bool]], reads: list[str]) -> str:
    calls = [{"name": "bash", "args": {"command": command, "timeout": 60}} for command, _ in attacks]
    calls += [{"name": "read", "args": {"path": path}} for path in reads]
    steps = "\n".join("    - tool_calls: [" + json.dumps(call) + "]" for call in calls)
    return f"""
steps:
  - text: "Sending a reader."
    tool_calls:
      - name: spawn_agent
        args: {{name: prober, model_slot: read-review, prompt: "Look around."}}
  - text: "Waiting."
  - text: "Got the report."
    expect: {{last_user_contains: "Report from agent prober"}}
on_exhausted: repeat_last
agents:
  prober:
{steps}
    - tool_calls:
        - name: report_and_exit
          args: {{content: "Tried everything.", summary: "done", outcome: succeeded}}
"""


def _tool_results(corral_home: Path) -> list[tuple[str, bool]]:
    """(text, is_error) of every tool result in the managed agent's session, in order."""
    results = []
    for path in sorted((corral_home / "sessions").rglob("*.jsonl")):
        lines = path.read_text().splitlines()
        if '"managed"' not in lines[0]:
            continue
        for line in lines[1:]:
            entry = json.loads(line)
            message = entry.get("message") or {}
            if entry["type"] == "message" and message.get("role") == "toolResult":
                text = "".join(part.get("text", "") for part in message["content"])
                results.append((text, bool(message.get("isError"))))
    return results


def test_a_read_agents_attacks_through_every_channel_fail_and_the_host_survives(
    corral: RunCorral, cli_env: Env, short_tmp: Path
) -> None:
    _require_tools()
    home = Path(cli_env.vars["HOME"])
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SSH_KEY + "\n")
    corral_home = short_tmp / "ch"
    markers = short_tmp / "markers"
    markers.mkdir()
    project = cli_env.project
    (project / "README.md").write_text("# Target\n")
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    head = subprocess.run([*git[:3], "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    cli_env.settings("[teams]\nsandbox_tmp_mib = 8\nsandbox_max_processes = 32\n")
    io_uring = compile_c(IO_URING_CONNECT_C, project / "io-uring-connect")
    servers = _Servers(short_tmp, corral_home, project)
    attacks = _attacks(servers, markers, home, io_uring)
    try:
        reads = _reads(home, corral_home)
        cli_env.script("lead", _attack_script(attacks, reads))
        done = corral(
            "run",
            "--surfaces",
            "teams",
            "--model",
            "scripted/lead",
            "-p",
            "probe",
            env={"CORRAL_HOME": str(corral_home), "MY_SERVICE_API_KEY": SECRET_KEY, **BARE_SECRETS},
            timeout=240,
        )
        # The channels are real: the same tmux command from outside does run.
        subprocess.run([*servers.user_tmux, "new-window", f"touch {markers}/control"], check=True)
        control = markers / "control"
        wait_until(control.exists, 60, "the unconfined tmux control to run")
    finally:
        servers.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Got the report.\n"
    assert sorted(p.name for p in markers.iterdir()) == ["control"]  # neither tmux server obeyed
    assert servers.accepted == []
    assert servers.datagrams() == []
    assert not list(project.glob("pwned*")) and not (home / "pwned-home.txt").exists()
    assert not Path(tempfile.gettempdir(), f"corral-e2e-pwned-{os.getpid()}").exists()
    assert subprocess.run([*git[:3], "rev-parse", "HEAD"], capture_output=True, text=True).stdout == head

    results = _tool_results(corral_home)
    assert len(results) == len(attacks) + len(reads) + 1, results  # + report_and_exit
    for path, (text, is_error) in zip(reads, results[len(attacks) :], strict=False):
        assert is_error and "not available to read agents" in text, (path, text)
    for (command, fails), (text, is_error) in zip(attacks, results, strict=False):
        assert is_error == fails, (command, text)
    by_command = dict(zip((command for command, _ in attacks), (text for text, _ in results), strict=False))
    env_dump = by_command["env"]
    assert "PATH=" in env_dump and "MY_SERVICE_API_KEY" not in env_dump
    assert all(f"{name}=" not in env_dump for name in BARE_SECRETS), env_dump
    assert "io_uring_setup: Function not implemented" in by_command[f"{io_uring} in.sock"]
    assert (
        "the private temp dir is full (8 MiB" in by_command["dd if=/dev/zero of=$TMPDIR/fill bs=1M count=64"]
    )
    flood = results[len(attacks) - 1][0]
    assert "flood stopped after" in flood and "at most 32 processes" in flood
    everything = json.dumps(results)
    assert SSH_KEY not in everything and SECRET_KEY not in everything
    assert all(value not in everything for value in BARE_SECRETS.values())
    assert "UNCONFINED" not in done.stderr  # the sandbox worked: no warning


FAKE_BWRAP = "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n"

TWO_READERS = """
steps:
  - text: "Sending two readers."
    tool_calls:
      - name: spawn_agent
        args: {name: one, model_slot: read-review, prompt: "Look."}
      - name: spawn_agent
        args: {name: two, model_slot: read-review, prompt: "Look."}
  - text: "Waiting."
  - text: "Reports in."
on_exhausted: repeat_last
agents:
  "*":
    - tool_calls:
        - name: report_and_exit
          args: {content: "Looked.", summary: "done", outcome: succeeded}
"""

REFUSED = """
steps:
  - text: "Sending a reader."
    tool_calls:
      - name: spawn_agent
        args: {name: one, model_slot: read-review, prompt: "Look."}
  - text: "It was refused."
    expect: {context_contains: ["the read-only sandbox is required", "No permissions to create a new namespace"]}
agents:
  "*":
    - tool_calls: [{name: bash, args: {command: "touch ran-unconfined"}}]
    - text: "done"
"""


def _broken_bwrap(env: Env) -> dict[str, str]:
    fake = env.root / "fakebin"
    fake.mkdir()
    (fake / "bwrap").write_text(FAKE_BWRAP)
    (fake / "bwrap").chmod(0o755)
    return {"PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}


def test_an_unconfined_read_agent_is_announced_once_on_stderr(corral: RunCorral, cli_env: Env) -> None:
    cli_env.script("lead", TWO_READERS)
    done = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "-p", "go", env=_broken_bwrap(cli_env)
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "UNCONFINED" in line]
    assert len(warnings) == 1, done.stderr
    assert warnings[0].startswith("corral: warning: read agent ")
    assert "No permissions to create a new namespace" in warnings[0]
    assert 'teams.read_sandbox = "required"' in warnings[0]


def test_required_sandbox_refuses_the_read_spawn(corral: RunCorral, cli_env: Env) -> None:
    cli_env.settings('[teams]\nread_sandbox = "required"\n')
    cli_env.script("lead", REFUSED)
    done = corral(
        "run", "--surfaces", "teams", "--model", "scripted/lead", "-p", "go", env=_broken_bwrap(cli_env)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "It was refused.\n"
    assert not (cli_env.project / "ran-unconfined").exists()
    assert [p for p in cli_env.sessions() if '"managed"' in p.read_text().splitlines()[0]] == []
    assert "UNCONFINED" not in done.stderr


LAZY_CONTEXT = """
steps:
  - text: "Sending a reader with my context."
    tool_calls:
      - name: spawn_agent
        args: {name: ctx, model_slot: read-review, prompt: "Check the brief.", session_context: lazy}
  - text: "Waiting."
  - text: "Done."
on_exhausted: repeat_last
agents:
  ctx:
    - tool_calls: [{name: bash, args: {command: "cat HOME_DIR/teams/*/session-context/*"}}]
    - tool_calls: [{name: bash, args: {command: "ls -a HOME_DIR; cat HOME_DIR/corral.db"}}]
    - tool_calls:
        - name: report_and_exit
          args: {content: "Read it.", summary: "done", outcome: succeeded}
"""


def test_a_read_agent_sees_its_session_context_snapshot_and_nothing_else_of_corrals_data(
    corral: RunCorral, cli_env: Env
) -> None:
    _require_tools()
    cli_env.script("lead", LAZY_CONTEXT.replace("HOME_DIR", str(cli_env.home)))
    done = corral("run", "--surfaces", "teams", "--model", "scripted/lead", "-p", "the brief is MARKER-7731")
    assert done.returncode == 0, done.stderr
    (snapshot, snapshot_error), (listing, _), _report = _tool_results(cli_env.home)
    assert not snapshot_error and "MARKER-7731" in snapshot  # the lead's words, through the snapshot
    assert "corral.db" not in listing.split("cat:")[0] and "sessions" not in listing
    assert "No such file or directory" in listing  # corral.db itself is not there
