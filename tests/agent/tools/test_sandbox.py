"""The read agents' bash sandbox (bubblewrap) with real processes: every channel a command could use.

Each attack is also tried without the sandbox where that is safe, so a test proves its channel
is real before proving the sandbox closes it. With `CI=true` these tests must run: a sandbox that
does not work there is a failure, not a skip. Elsewhere they skip, with the probe's reason, only
when the probe says the sandbox cannot work on this machine.
"""

from __future__ import annotations

import asyncio
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

from corral.agent import ToolError
from corral.agent.tools import (
    BashTool,
    ReadOnlySandbox,
    SandboxLimits,
    SandboxPolicy,
    SandboxStatus,
    create_builtin_tools,
    sandbox_environment,
)
from tests._ci import require, unavailable
from tests.sandbox_attacks import (
    IO_URING_CONNECT_C,
    compile_c,
    fork_flood,
    io_uring_probe,
    socketpair_datagram,
)

from .conftest import details_of, text_of

WAIT = 30.0
PYTHON = os.path.realpath(sys.executable)
"""The interpreter as the sandbox sees it (its install is bound read-only; a venv's is not needed)."""


def _require_sandbox(status: SandboxStatus) -> None:
    if not status.ok:
        unavailable(f"the read-only sandbox cannot work here: {status.reason}")


@pytest.fixture(scope="module")
def sandbox_status() -> SandboxStatus:
    return asyncio.run(ReadOnlySandbox().probe())


@pytest.fixture
def sandbox(sandbox_status: SandboxStatus) -> ReadOnlySandbox:
    _require_sandbox(sandbox_status)
    return ReadOnlySandbox()


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short private directory (Unix socket paths must stay under 108 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="cs-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def user_home(short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake `$HOME` with credentials, and `$CORRAL_HOME` inside it (as the default layout has)."""
    home = short_tmp / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN FAKE PRIVATE KEY-----\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = FAKEAWSSECRET\n")
    (home / ".netrc").write_text("machine example.com password FAKENETRC\n")
    corral_home = home / ".local" / "share" / "corral"
    corral_home.mkdir(parents=True)
    (corral_home / "corral.db").write_text("FAKE-STORE-CONTENT\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CORRAL_HOME", str(corral_home))
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("hello from the project\n")
    return root


@pytest.fixture
def home_project(user_home: Path) -> Path:
    """A git project under the fake `$HOME` (so the credentials are inside a bound directory's reach)."""
    root = user_home / "project"
    root.mkdir()
    (root / "README.md").write_text("hello from the project\n")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    return root


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


class _UnixServer:
    """A Unix socket server on a thread that counts the connections it accepts."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.accepted = 0
        self._server = socket.socket(socket.AF_UNIX)
        self._server.bind(str(path))
        self._server.listen()
        self._server.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._server.close()


def _connect_command(port: int) -> str:
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5).close(); print('connected')"
    return f'{PYTHON} -c "{code}"'


def _unix_connect_command(path: Path) -> str:
    code = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); print('connected')"
    return f'{PYTHON} -c "{code}"'


async def _run(tool: BashTool, command: str, timeout: float | None = None) -> tuple[bool, str]:
    """(succeeded, text) of one bash call; a failing command is a `ToolError`."""
    params: dict[str, object] = {"command": command}
    if timeout is not None:
        params["timeout"] = timeout
    try:
        result = await asyncio.wait_for(tool.execute("c", params), WAIT + (timeout or 0))
    except ToolError as exc:
        return False, str(exc)
    return True, text_of(result)


async def _host_alive(tool: BashTool) -> None:
    ok, text = await _run(tool, "echo alive")
    assert ok and text == "alive\n", text


# --- probe and command line ---------------------------------------------------------------------


async def test_probe_reports_a_working_sandbox(sandbox: ReadOnlySandbox) -> None:
    status = await sandbox.probe()
    assert status.ok
    assert "read-only" in status.reason and "512 MiB" in status.reason
    assert sandbox.status == status


async def test_probe_without_bwrap_says_why_and_does_not_raise(tmp_path: Path) -> None:
    missing = ReadOnlySandbox(str(tmp_path / "no-such-bwrap"))
    status = await missing.probe()
    assert not status.ok
    assert "bubblewrap" in status.reason
    assert missing.status == status


async def test_probe_reports_a_bwrap_that_cannot_build_the_sandbox(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    status = await ReadOnlySandbox(str(fake)).probe()
    assert not status.ok
    assert "No permissions to creating new namespace" in status.reason


async def test_probe_catches_a_sandbox_that_does_not_enforce_read_only(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"  # runs the command unconfined: everything after `--`
    fake.write_text('#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift; exec "$@"\n')
    fake.chmod(0o755)
    status = await ReadOnlySandbox(str(fake)).probe()
    assert not status.ok


def test_wrap_builds_the_view_instead_of_binding_the_root(tmp_path: Path) -> None:
    argv = ReadOnlySandbox("/usr/bin/bwrap").wrap(["/bin/bash", "-c", "ls"], tmp_path)
    assert argv[0] == "/usr/bin/bwrap"
    assert argv[-3:] == ["/bin/bash", "-c", "ls"]
    assert argv[argv.index("--chdir") + 1] == str(tmp_path)
    for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"):
        assert flag in argv
    binds = [argv[i + 2] for i, flag in enumerate(argv) if flag in ("--ro-bind", "--bind")]
    assert "/" not in binds and "/tmp" not in binds and "/run" not in binds
    assert str(Path.home()) not in binds
    capped = [argv[i + 3] for i, flag in enumerate(argv) if flag == "--size" and argv[i + 2] == "--tmpfs"]
    assert capped == ["/dev/shm", "/tmp"]
    assert all(argv[i + 1] == str(512 * 1024 * 1024) for i, flag in enumerate(argv) if flag == "--size")


def test_wrap_refuses_a_working_directory_that_would_show_every_socket(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot show /"):
        ReadOnlySandbox("/usr/bin/bwrap").wrap(["ls"], Path("/"))


_UNLISTED_SECRETS = {
    "API_KEY": "k1",
    "TOKEN": "k2",
    "SECRET_KEY": "k3",
    "PGPASSWORD": "k4",
    "MYSQL_PWD": "k5",
    "DATABASE_URL": "postgres://u:k6@db/x",
    "GITHUB_PAT": "k7",
    "ANTHROPIC_API_KEY": "k8",
    "MY_SERVICE_API_KEY": "k9",
    "AWS_SECRET_ACCESS_KEY": "k10",
    "SSH_AUTH_SOCK": "/tmp/ssh-x/agent",
    "CORRAL_HOME": "/home/u/.local/share/corral",
    "SENTRY_DSN": "https://k11@sentry.example/1",
}
"""Names a denylist misses or catches alike: none is on the allowlist, so none reaches a command."""


def test_environment_keeps_only_the_allowlist_and_what_the_user_passes_through() -> None:
    environ = {
        **_UNLISTED_SECRETS,
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "xterm",
        "TZ": "UTC",
        "VIRTUAL_ENV": "/p/.venv",
        "NPM_TOKEN": "kept",
        "CUSTOM_PROVIDER_KEY": "g",
        "lang": "lower-case names are other names",
    }
    policy = SandboxPolicy(secret_env=("CUSTOM_PROVIDER_KEY",), env_passthrough=("NPM_TOKEN", "GITHUB_PAT"))
    env = sandbox_environment(policy, environ)
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "xterm",
        "TZ": "UTC",
        "VIRTUAL_ENV": "/p/.venv",
        "NPM_TOKEN": "kept",
        "GITHUB_PAT": "k7",
        "TMPDIR": "/tmp",
    }


def test_a_passed_through_provider_key_is_kept_because_the_user_named_it() -> None:
    policy = SandboxPolicy(secret_env=("OPENAI_API_KEY",), env_passthrough=("OPENAI_API_KEY",))
    assert sandbox_environment(policy, {"OPENAI_API_KEY": "k"})["OPENAI_API_KEY"] == "k"


# --- writes -------------------------------------------------------------------------------------


async def test_read_agent_bash_cannot_write_in_the_project(sandbox: ReadOnlySandbox, project: Path) -> None:
    tool = BashTool(project, sandbox=sandbox)
    ok, text = await _run(tool, "echo pwned > created.txt")
    assert not ok
    assert "Read-only file system" in text
    assert not (project / "created.txt").exists()
    ok, _ = await _run(tool, "rm README.md")
    assert not ok
    ok, _ = await _run(tool, f"{PYTHON} -c \"open('py.txt', 'w').write('x')\"")
    assert not ok
    assert not (project / "py.txt").exists()
    assert (project / "README.md").read_text() == "hello from the project\n"


async def test_read_agent_bash_cannot_commit(sandbox: ReadOnlySandbox, home_project: Path) -> None:
    head = subprocess.run(
        ["git", "-C", str(home_project), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout
    tool = BashTool(home_project, sandbox=sandbox)
    ok, text = await _run(tool, "git log --oneline | cat")
    assert ok and "first" in text, text  # git itself works: reading history is what read agents do
    ok, text = await _run(
        tool, "echo more >> README.md; git -c user.name=x -c user.email=x@x commit -q --allow-empty -m pwned"
    )
    assert not ok
    after = subprocess.run(
        ["git", "-C", str(home_project), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout
    assert after == head
    assert (home_project / "README.md").read_text() == "hello from the project\n"


async def test_read_agent_bash_cannot_write_in_home(
    sandbox: ReadOnlySandbox, project: Path, user_home: Path
) -> None:
    marker = user_home / "planted"
    tool = BashTool(project, sandbox=sandbox)
    ok, text = await _run(tool, f"echo x > {marker}")
    assert not ok, text
    assert not marker.exists()
    for elsewhere in ("/planted", "/dev/planted", "/usr/planted", "/etc/planted"):  # nor anywhere else
        ok, text = await _run(tool, f"echo x > {elsewhere}")
        assert not ok and "Read-only file system" in text, (elsewhere, text)


async def test_read_agent_bash_writes_to_tmp_stay_private(sandbox: ReadOnlySandbox, project: Path) -> None:
    host_tmp = Path(tempfile.gettempdir())
    before = set(host_tmp.glob("corral-sandbox-tmp-*"))
    marker = host_tmp / f"corral-sandbox-test-{os.getpid()}"
    ok, text = await _run(BashTool(project, sandbox=sandbox), f"echo x > {marker} && cat {marker}")
    try:
        assert ok and text == "x\n", text  # /tmp inside is the private tmpfs…
        assert not marker.exists()  # …and nothing reaches the host's
    finally:
        marker.unlink(missing_ok=True)
    assert set(host_tmp.glob("corral-sandbox-tmp-*")) <= before  # no scratch dirs made on the host


async def test_read_agent_bash_can_write_its_private_temp_dir(
    sandbox: ReadOnlySandbox, project: Path
) -> None:
    tool = BashTool(project, sandbox=sandbox)
    ok, text = await _run(tool, 'echo scratch > "$TMPDIR/note" && cat "$TMPDIR/note" && echo "$TMPDIR"')
    assert ok, text
    assert text == "scratch\n/tmp\n"
    ok, text = await _run(tool, 'test -e "$TMPDIR/note" && echo kept || echo gone')
    assert ok
    assert text == "gone\n"  # private to each command


async def test_read_agent_bash_can_read_the_project(sandbox: ReadOnlySandbox, project: Path) -> None:
    ok, text = await _run(BashTool(project, sandbox=sandbox), "pwd; cat README.md")
    assert ok, text
    assert text == f"{project}\nhello from the project\n"


async def test_a_writable_project_policy_opens_only_the_project(
    sandbox_status: SandboxStatus, home_project: Path, user_home: Path
) -> None:
    # The seam a later write sandbox uses: the same builder, the project bound writable.
    _require_sandbox(sandbox_status)
    tool = BashTool(home_project, sandbox=ReadOnlySandbox(policy=SandboxPolicy(writable_project=True)))
    ok, text = await _run(tool, "echo written > created.txt")
    assert ok, text
    assert (home_project / "created.txt").read_text() == "written\n"
    ok, text = await _run(tool, f"echo x > {user_home}/planted; cat {user_home}/.ssh/id_rsa")
    assert not ok
    assert not (user_home / "planted").exists() and "FAKE PRIVATE KEY" not in text


async def test_edit_agent_bash_can_write(project: Path) -> None:
    ok, text = await _run(BashTool(project), "echo written > created.txt")
    assert ok, text
    assert (project / "created.txt").read_text() == "written\n"


# --- sockets, network, processes ----------------------------------------------------------------


async def test_read_agent_bash_cannot_drive_a_tmux_server(
    sandbox: ReadOnlySandbox, home_project: Path, user_home: Path, short_tmp: Path
) -> None:
    require("tmux")
    # The user's own server (default socket directory) and corral's private one under $CORRAL_HOME.
    user_server = f"corral-sbx-{os.getpid()}"
    corral_socket = Path(os.environ["CORRAL_HOME"]) / "tmux" / "corral"
    corral_socket.parent.mkdir(mode=0o700)
    servers = [["tmux", "-L", user_server], ["tmux", "-S", str(corral_socket)]]
    for server in servers:
        subprocess.run([*server, "new-session", "-d", "sleep 600"], check=True)
    try:
        for i, server in enumerate(servers):
            marker = short_tmp / f"pwned-{i}"
            command = " ".join([*server, "new-window", f"'touch {marker}'"])
            ok, text = await _run(BashTool(home_project, sandbox=sandbox), command)
            assert not ok, text
            outside_ok, outside = await _run(BashTool(home_project), command)  # the channel is real
            assert outside_ok, outside
            assert await _wait_for(marker.exists), "the unconfined control never ran"
            marker.unlink()
            ok, text = await _run(BashTool(home_project, sandbox=sandbox), command)
            assert not ok
            assert not marker.exists()
    finally:
        for server in servers:
            subprocess.run([*server, "kill-server"], check=False, capture_output=True)


async def _wait_for(check: object, timeout: float = 10.0) -> bool:
    assert callable(check)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if check():
            return True
        await asyncio.sleep(0.05)
    return bool(check())


async def test_read_agent_bash_cannot_connect_to_unix_sockets(
    sandbox: ReadOnlySandbox, home_project: Path, short_tmp: Path
) -> None:
    # One server in the host's temp dir (not in the view) and one inside the project (in the view:
    # only the seccomp filter stops it).
    servers = [_UnixServer(short_tmp / "srv.sock"), _UnixServer(home_project / "in-project.sock")]
    try:
        for server in servers:
            outside_ok, outside = await _run(BashTool(home_project), _unix_connect_command(server.path))
            assert outside_ok and "connected" in outside, outside
            assert await _wait_for(lambda server=server: server.accepted == 1)
            ok, text = await _run(BashTool(home_project, sandbox=sandbox), _unix_connect_command(server.path))
            assert not ok
            assert "connected" not in text
            assert server.accepted == 1
    finally:
        for server in servers:
            server.close()


async def test_read_agent_bash_cannot_reach_a_project_socket_through_io_uring(
    sandbox: ReadOnlySandbox, home_project: Path
) -> None:
    # The reported escape: io_uring makes the AF_UNIX socket (IORING_OP_SOCKET), so the
    # socket() rule never sees it, and a plain connect() reaches a tmux server in the project.
    attack = compile_c(IO_URING_CONNECT_C, home_project / "io-uring-connect")
    server = _UnixServer(home_project / "u.sock")
    try:
        outside_ok, outside = await _run(BashTool(home_project), f"{attack} {server.path}")
        assert outside_ok and "connected" in outside, outside  # the channel is real on this kernel
        assert await _wait_for(lambda: server.accepted == 1)
        ok, text = await _run(BashTool(home_project, sandbox=sandbox), f"{attack} {server.path}")
        assert not ok
        assert "io_uring_setup: Function not implemented" in text, text
        assert server.accepted == 1
    finally:
        server.close()


async def test_read_agent_bash_gets_no_io_uring_system_call(sandbox: ReadOnlySandbox, project: Path) -> None:
    command = f'{PYTHON} -c "{io_uring_probe()}"'
    ok, outside = await _run(BashTool(project), command)
    assert ok and "io_uring_setup ok" in outside and "ENOSYS" not in outside, outside
    ok, text = await _run(BashTool(project, sandbox=sandbox), command)
    assert ok, text
    assert text.splitlines() == [
        "io_uring_setup ENOSYS",
        "io_uring_enter ENOSYS",
        "io_uring_register ENOSYS",
    ]


class _DatagramServer:
    """A Unix datagram socket; `received()` drains what reached it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(str(path))
        self._sock.setblocking(False)

    def received(self) -> list[bytes]:
        got: list[bytes] = []
        while True:
            try:
                got.append(self._sock.recv(100))
            except BlockingIOError:
                return got

    def close(self) -> None:
        self._sock.close()


async def test_read_agent_bash_cannot_reach_a_project_socket_through_a_datagram_socketpair(
    sandbox: ReadOnlySandbox, home_project: Path
) -> None:
    # A datagram socketpair needs no socket() call, yet may sendto (or connect to) any socket path.
    server = _DatagramServer(home_project / "d.sock")
    command = f'{PYTHON} -c "{socketpair_datagram(str(server.path))}"'
    try:
        outside_ok, outside = await _run(BashTool(home_project), command)
        assert outside_ok and outside == "sent\nsent\n", outside
        assert server.received() == [b"sendto", b"connect"]
        ok, text = await _run(BashTool(home_project, sandbox=sandbox), command)
        assert not ok
        assert "socketpair refused: [Errno 13] Permission denied" in text, text
        assert server.received() == []
    finally:
        server.close()


async def test_read_agent_bash_keeps_stream_socketpairs_for_asyncio(
    sandbox: ReadOnlySandbox, project: Path
) -> None:
    # A stream socketpair is connected for life (connect and sendto fail with EISCONN), so it
    # reaches nothing outside; asyncio's event loop needs one, and read agents run test suites.
    code = (
        "import asyncio, socket; asyncio.run(asyncio.sleep(0)); a, b = socket.socketpair(); "
        "a.send(b'x'); print(b.recv(1)); "
        "s = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET); print('seqpacket')"
    )
    ok, text = await _run(BashTool(project, sandbox=sandbox), f'{PYTHON} -c "{code}"')
    assert ok and text == "b'x'\nseqpacket\n", text


async def test_read_agent_bash_inherits_no_socket_of_the_host(
    sandbox: ReadOnlySandbox, home_project: Path
) -> None:
    # A socket corral holds (connected to a server in the project), even one marked inheritable,
    # never reaches the command: it could write to the server through it without any socket call.
    server = _UnixServer(home_project / "i.sock")
    held = socket.socket(socket.AF_UNIX)
    held.connect(str(server.path))
    held.set_inheritable(True)
    fd = held.fileno()
    command = f"ls -l /proc/self/fd/; echo pwned >&{fd} && echo wrote"
    try:
        assert await _wait_for(lambda: server.accepted == 1)
        ok, text = await _run(BashTool(home_project, sandbox=sandbox), command)
        assert not ok, text
        assert "socket:" not in text and "wrote" not in text, text
        assert "Bad file descriptor" in text, text
    finally:
        held.close()
        server.close()


async def test_read_agent_bash_cannot_reach_the_network(
    sandbox: ReadOnlySandbox, project: Path, listener: int
) -> None:
    command = _connect_command(listener)
    outside_ok, outside = await _run(BashTool(project), command)
    assert outside_ok, outside
    assert "connected" in outside
    inside_ok, inside = await _run(BashTool(project, sandbox=sandbox), command)
    assert not inside_ok
    assert "connected" not in inside
    assert "Connection refused" in inside or "unreachable" in inside


async def test_read_agent_bash_cannot_signal_host_processes(sandbox: ReadOnlySandbox, project: Path) -> None:
    victim = subprocess.Popen(["sleep", "60"])
    try:
        ok, _ = await _run(BashTool(project, sandbox=sandbox), f"kill -9 {victim.pid}")
        assert not ok
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


# --- secrets ------------------------------------------------------------------------------------


async def test_read_agent_bash_cannot_read_credentials_or_corral_data(
    sandbox: ReadOnlySandbox, home_project: Path, user_home: Path
) -> None:
    corral_home = Path(os.environ["CORRAL_HOME"])
    command = (
        f"cat {user_home}/.ssh/id_rsa {user_home}/.aws/credentials {user_home}/.netrc "
        f"{corral_home}/corral.db; ls -a {user_home} {user_home}/.ssh; cat ../.ssh/id_rsa"
    )
    _, outside = await _run(BashTool(home_project), command)
    assert "FAKE PRIVATE KEY" in outside and "FAKE-STORE-CONTENT" in outside  # the files are real
    _, text = await _run(BashTool(home_project, sandbox=sandbox), command)
    for secret in ("FAKE PRIVATE KEY", "FAKEAWSSECRET", "FAKENETRC", "FAKE-STORE-CONTENT", "id_rsa\n"):
        assert secret not in text, text


_AGENT_AND_SHELL_SECRETS = {
    ".claude/.credentials.json": "claude-oauth",
    ".claude.json": "claude-config",
    ".codex/auth.json": "codex-auth",
    ".gemini/oauth_creds.json": "gemini-oauth",
    ".local/share/opencode/auth.json": "opencode-auth",
    ".config/goose/secrets.yaml": "goose-secrets",
    ".pi/agent/auth.json": "pi-auth",
    ".config/github-copilot/apps.json": "copilot-token",
    ".bash_history": "bash-history",
    ".zsh_history": "zsh-history",
    ".python_history": "python-history",
    ".psql_history": "psql-history",
    ".mysql_history": "mysql-history",
    ".sqlite_history": "sqlite-history",
    ".node_repl_history": "node-history",
    ".local/share/fish/fish_history": "fish-history",
    ".netrc": "netrc",
    ".git-credentials": "git-credentials",
    ".docker/config.json": "docker-auth",
    ".kube/config": "kube-config",
    ".config/gh/hosts.yml": "gh-hosts",
}


async def test_agent_credentials_and_shell_history_are_hidden_when_the_project_is_home(
    sandbox: ReadOnlySandbox, user_home: Path
) -> None:
    # The lead started in $HOME: the whole home directory is the project, so each of these files
    # sits inside a bound directory, and only its mask keeps it out of a read agent's reach.
    for relative, marker in _AGENT_AND_SHELL_SECRETS.items():
        path = user_home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"SECRET-{marker}\n")
    (user_home / "notes.txt").write_text("VISIBLE-notes\n")
    paths = " ".join(["notes.txt", *_AGENT_AND_SHELL_SECRETS])
    command = f"cat {paths} 2>/dev/null; grep -rh SECRET- . 2>/dev/null; true"
    _, outside = await _run(BashTool(user_home), command)
    assert all(f"SECRET-{m}" in outside for m in _AGENT_AND_SHELL_SECRETS.values())  # the files are real
    ok, text = await _run(BashTool(user_home, sandbox=sandbox), command)
    assert ok and "VISIBLE-notes" in text, text
    leaked = [m for m in _AGENT_AND_SHELL_SECRETS.values() if f"SECRET-{m}" in text]
    assert leaked == []
    tools = {tool.name: tool for tool in create_builtin_tools(user_home, sandbox=sandbox)}
    for relative in _AGENT_AND_SHELL_SECRETS:
        with pytest.raises(ToolError, match="not available to read agents"):
            await tools["read"].execute("c", {"path": relative})
    found = text_of(await tools["grep"].execute("c", {"pattern": "SECRET-|VISIBLE-"}))
    assert "VISIBLE-notes" in found and "SECRET-" not in found


async def test_read_agent_bash_does_not_get_secret_variables(
    sandbox_status: SandboxStatus, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _require_sandbox(sandbox_status)
    for name, value in _UNLISTED_SECRETS.items():
        monkeypatch.setenv(name, f"{value}-real")
    monkeypatch.setenv("KEPT_TOKEN", "fake-kept-token")
    monkeypatch.setenv("LC_TIME", "C")
    policy = SandboxPolicy(secret_env=("API_KEY",), env_passthrough=("KEPT_TOKEN",))
    ok, text = await _run(BashTool(project, sandbox=ReadOnlySandbox(policy=policy)), "env")
    assert ok, text
    names = {line.split("=", 1)[0] for line in text.splitlines()}
    assert names.isdisjoint(_UNLISTED_SECRETS), names & set(_UNLISTED_SECRETS)
    assert all(f"{value}-real" not in text for value in _UNLISTED_SECRETS.values())
    assert "KEPT_TOKEN=fake-kept-token" in text and "LC_TIME=C" in text and "TMPDIR=/tmp" in text
    _, outside = await _run(BashTool(project), "env")
    assert "GITHUB_PAT=k7-real" in outside  # the unconfined bash (write agents, the lead) keeps them


# --- limits -------------------------------------------------------------------------------------


async def test_filling_the_temp_dir_past_its_cap_is_a_clear_error(
    sandbox_status: SandboxStatus, project: Path
) -> None:
    _require_sandbox(sandbox_status)
    sandbox = ReadOnlySandbox(policy=SandboxPolicy(limits=SandboxLimits(tmp_mib=8)))
    tool = BashTool(project, sandbox=sandbox)
    ok, text = await _run(tool, "dd if=/dev/zero of=/tmp/fill bs=1M count=64")
    assert not ok
    assert "the private temp dir is full (8 MiB" in text
    await _host_alive(tool)


async def test_a_process_flood_stops_at_the_limit(sandbox_status: SandboxStatus, project: Path) -> None:
    _require_sandbox(sandbox_status)
    sandbox = ReadOnlySandbox(policy=SandboxPolicy(limits=SandboxLimits(max_processes=32)))
    tool = BashTool(project, sandbox=sandbox)
    flood = fork_flood("stopped")
    ok, text = await _run(tool, f"{PYTHON} -c '{flood}'", timeout=20)
    assert not ok
    assert "stopped after" in text and "Resource temporarily unavailable" in text
    started = int(text.split("stopped after ")[1].split(":")[0])
    assert started < 32
    assert "at most 32 processes" in text
    assert tool.running_processes() == []
    await _host_alive(tool)  # and the flood died with its command


async def test_memory_over_the_limit_is_a_clear_error(sandbox_status: SandboxStatus, project: Path) -> None:
    _require_sandbox(sandbox_status)
    sandbox = ReadOnlySandbox(policy=SandboxPolicy(limits=SandboxLimits(memory_mib=256)))
    tool = BashTool(project, sandbox=sandbox)
    ok, text = await _run(tool, f"{PYTHON} -c 'bytearray(1024 * 1024 * 1024)'")
    assert not ok
    assert "MemoryError" in text and "256 MiB of memory per process" in text


async def test_sandboxed_timeout_kills_the_whole_sandbox(sandbox: ReadOnlySandbox, project: Path) -> None:
    tool = BashTool(project, sandbox=sandbox)
    with pytest.raises(ToolError, match="timed out"):
        await asyncio.wait_for(tool.execute("c", {"command": "sleep 30", "timeout": 0.5}), WAIT)
    assert tool.running_processes() == []


async def test_create_builtin_tools_passes_the_sandbox_to_bash(
    sandbox: ReadOnlySandbox, project: Path
) -> None:
    tools = {tool.name: tool for tool in create_builtin_tools(project, sandbox=sandbox)}
    bash = tools["bash"]
    assert isinstance(bash, BashTool)
    assert bash.sandbox is sandbox
    assert "read-only sandbox" in bash.description
    result = await bash.execute("c", {"command": "touch x || echo denied"})
    assert "denied" in text_of(result)
    assert details_of(result)["exitCode"] == 0
    assert not (project / "x").exists()
    plain = {tool.name: tool for tool in create_builtin_tools(project)}["bash"]
    assert isinstance(plain, BashTool)
    assert plain.sandbox is None
    assert "sandbox" not in plain.description


# --- leftovers of killed hosts ------------------------------------------------------------------


async def test_probe_removes_scratch_dirs_earlier_versions_left_in_the_hosts_temp_dir(
    sandbox: ReadOnlySandbox,
) -> None:
    leftover = Path(tempfile.mkdtemp(prefix="corral-sandbox-tmp-"))  # what a killed host left behind
    try:
        assert (await sandbox.probe()).ok
        assert not leftover.exists()
    finally:
        shutil.rmtree(leftover, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="pids cgroups are made only when corral runs as root")
async def test_as_root_stale_pids_cgroups_are_removed_and_ours_end_with_their_command(
    sandbox_status: SandboxStatus, project: Path
) -> None:
    _require_sandbox(sandbox_status)
    parents = [Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")]
    parent = next((p for p in parents if (p / "cgroup.procs").exists() and os.access(p, os.W_OK)), None)
    if parent is None:
        unavailable("no writable pids cgroup hierarchy")
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs: the "killed host"
    stale = parent / f"corral-sandbox-{dead.pid}-0"
    stale.mkdir(exist_ok=True)
    live = parent / f"corral-sandbox-{os.getppid()}-0"  # a live host's cgroup is left alone
    live.mkdir(exist_ok=True)
    try:
        sandbox = ReadOnlySandbox(policy=SandboxPolicy(limits=SandboxLimits(max_processes=40)))
        assert not stale.exists()
        assert live.exists()
        # (test_a_process_flood_stops_at_the_limit proves the limit holds: as root only the cgroup can.)
        before = set(parent.glob(f"corral-sandbox-{os.getpid()}-*"))
        tool = BashTool(project, sandbox=sandbox)
        ok, text = await _run(tool, "sleep 30 & sleep 30 & echo started", timeout=2)
        assert ok, text
        await _wait_for(lambda: sandbox.sweep() == 0)
        assert set(parent.glob(f"corral-sandbox-{os.getpid()}-*")) <= before  # its cgroup went with it
    finally:
        live.rmdir()
        stale.rmdir() if stale.exists() else None


# --- the in-process read tools see what bash sees -----------------------------------------------


async def test_read_agents_read_tools_cannot_open_what_the_sandbox_hides(
    sandbox: ReadOnlySandbox, user_home: Path
) -> None:
    # The agent works in $HOME itself, the worst case: every credential path is under its project.
    (user_home / "README.md").write_text("home readme FAKE-VISIBLE\n")
    (user_home / "link-to-key").symlink_to(user_home / ".ssh" / "id_rsa")
    corral_db = Path(os.environ["CORRAL_HOME"]) / "corral.db"
    tools = {tool.name: tool for tool in create_builtin_tools(user_home, sandbox=sandbox)}
    ok = await tools["read"].execute("c", {"path": "README.md"})
    assert "FAKE-VISIBLE" in text_of(ok)
    for path in (".ssh/id_rsa", "link-to-key", str(corral_db), "/proc/self/environ", "/etc/shadow", ".netrc"):
        with pytest.raises(ToolError, match="not available to read agents"):
            await tools["read"].execute("c", {"path": path})
    for name, params in (("ls", {"path": ".ssh"}), ("find", {"pattern": "*", "path": ".aws"})):
        with pytest.raises(ToolError, match="not available to read agents"):
            await tools[name].execute("c", params)
    found = text_of(await tools["grep"].execute("c", {"pattern": "FAKE"}))
    assert "FAKE-VISIBLE" in found
    assert "PRIVATE KEY" not in found and "FAKEAWSSECRET" not in found and "FAKENETRC" not in found
    assert "FAKE-STORE-CONTENT" not in found
    listed = text_of(await tools["find"].execute("c", {"pattern": "**/*"}))
    assert "README.md" in listed and "id_rsa" not in listed and "corral.db" not in listed
    # The same tools without a sandbox (write agents, the lead) open anything the user can.
    plain = {tool.name: tool for tool in create_builtin_tools(user_home)}
    assert "FAKE PRIVATE KEY" in text_of(await plain["read"].execute("c", {"path": ".ssh/id_rsa"}))


async def test_read_agents_read_tools_cannot_leave_the_project(
    sandbox: ReadOnlySandbox, home_project: Path, user_home: Path, short_tmp: Path
) -> None:
    outside = short_tmp / "outside.txt"
    outside.write_text("outside\n")
    tools = {tool.name: tool for tool in create_builtin_tools(home_project, sandbox=sandbox)}
    for path in (str(outside), str(user_home / ".aws" / "credentials"), "../.netrc"):
        with pytest.raises(ToolError, match="not available to read agents"):
            await tools["read"].execute("c", {"path": path})
    with pytest.raises(ToolError, match="not available to read agents"):
        await tools["grep"].execute("c", {"pattern": "x", "path": str(user_home)})
    assert text_of(await tools["read"].execute("c", {"path": "/etc/os-release"}))  # the system is readable


async def test_a_file_the_policy_shows_is_readable_inside_a_hidden_directory(
    sandbox: ReadOnlySandbox, home_project: Path
) -> None:
    corral_home = Path(os.environ["CORRAL_HOME"])
    snapshot = corral_home / "teams" / "session-x" / "session-context" / "agent.md"
    snapshot.parent.mkdir(parents=True)
    snapshot.write_text("snapshot MARKER\n")
    shown = sandbox.with_policy(SandboxPolicy(read_files=(snapshot,)))
    tools = {tool.name: tool for tool in create_builtin_tools(home_project, sandbox=shown)}
    assert "MARKER" in text_of(await tools["read"].execute("c", {"path": str(snapshot)}))
    ok, text = await _run(BashTool(home_project, sandbox=shown), f"cat {snapshot}")
    assert ok and "MARKER" in text, text
    with pytest.raises(ToolError, match="not available to read agents"):
        await tools["read"].execute("c", {"path": str(corral_home / "corral.db")})
    ok, text = await _run(BashTool(home_project, sandbox=shown), f"cat {corral_home}/corral.db")
    assert not ok and "FAKE-STORE-CONTENT" not in text
