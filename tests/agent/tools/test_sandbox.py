"""The read-only bash sandbox (bubblewrap) with real processes: what a read agent's bash can and cannot do.

With `CI=true` these tests must run: a sandbox that does not work there is a failure,
not a skip. Elsewhere they skip, with the probe's reason, only when the probe says the
sandbox cannot work on this machine.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.agent import ToolError
from corral.agent.tools import BashTool, ReadOnlySandbox, SandboxStatus, create_builtin_tools

from .conftest import details_of, text_of

WAIT = 10.0


@pytest.fixture(scope="module")
def sandbox_status() -> SandboxStatus:
    return asyncio.run(ReadOnlySandbox().probe())


@pytest.fixture
def sandbox(sandbox_status: SandboxStatus) -> ReadOnlySandbox:
    if not sandbox_status.ok:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the read-only sandbox does not work here: {sandbox_status.reason}")
        pytest.skip(f"the read-only sandbox cannot work here: {sandbox_status.reason}")
    return ReadOnlySandbox()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("hello from the project\n")
    return root


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 that accepts in the background; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def _connect_command(port: int) -> str:
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5).close(); print('connected')"
    return f'{sys.executable} -c "{code}"'


async def _run(tool: BashTool, command: str) -> tuple[bool, str]:
    """(succeeded, text) of one bash call; a failing command is a `ToolError`."""
    try:
        result = await asyncio.wait_for(tool.execute("c", {"command": command}), WAIT)
    except ToolError as exc:
        return False, str(exc)
    return True, text_of(result)


async def test_probe_reports_a_working_sandbox(sandbox: ReadOnlySandbox) -> None:
    status = await sandbox.probe()
    assert status.ok
    assert "read-only" in status.reason
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


def test_wrap_keeps_the_cwd_path_and_ends_with_the_command(tmp_path: Path) -> None:
    argv = ReadOnlySandbox("/usr/bin/bwrap").wrap(["/bin/bash", "-c", "ls"], tmp_path)
    assert argv[0] == "/usr/bin/bwrap"
    assert argv[-4:] == ["--", "/bin/bash", "-c", "ls"]
    chdir = argv.index("--chdir")
    assert argv[chdir + 1] == str(tmp_path)
    for flag in ("--unshare-net", "--die-with-parent", "--new-session"):
        assert flag in argv


async def test_read_agent_bash_cannot_write_in_the_project(sandbox: ReadOnlySandbox, project: Path) -> None:
    tool = BashTool(project, sandbox=sandbox)
    ok, text = await _run(tool, "echo pwned > created.txt")
    assert not ok
    assert "Read-only file system" in text
    assert not (project / "created.txt").exists()
    ok, _ = await _run(tool, "rm README.md")
    assert not ok
    assert (project / "README.md").read_text() == "hello from the project\n"


async def test_read_agent_bash_cannot_write_in_home(sandbox: ReadOnlySandbox, project: Path) -> None:
    home = Path.home()
    marker = home / f".corral-sandbox-test-{os.getpid()}"
    ok, _ = await _run(BashTool(project, sandbox=sandbox), f"echo x > {marker}")
    try:
        assert not ok
        assert not marker.exists()
    finally:
        marker.unlink(missing_ok=True)


async def test_read_agent_bash_cannot_write_the_hosts_tmp(sandbox: ReadOnlySandbox, project: Path) -> None:
    marker = Path(tempfile.gettempdir()) / f"corral-sandbox-test-{os.getpid()}"
    ok, _ = await _run(BashTool(project, sandbox=sandbox), f"echo x > {marker}")
    try:
        assert not ok
        assert not marker.exists()
    finally:
        marker.unlink(missing_ok=True)


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


async def test_read_agent_bash_can_read_the_project(sandbox: ReadOnlySandbox, project: Path) -> None:
    ok, text = await _run(BashTool(project, sandbox=sandbox), "pwd; cat README.md")
    assert ok, text
    assert text == f"{project}\nhello from the project\n"


async def test_read_agent_bash_can_write_its_private_temp_dir(
    sandbox: ReadOnlySandbox, project: Path
) -> None:
    tool = BashTool(project, sandbox=sandbox)
    name = f"corral-sandbox-note-{os.getpid()}-{id(tool)}"
    ok, text = await _run(tool, f'echo scratch > "$TMPDIR/{name}" && cat "$TMPDIR/{name}" && echo "$TMPDIR"')
    assert ok, text
    scratch = text.splitlines()[1]
    assert text.splitlines()[0] == "scratch" and scratch.startswith("/")
    # Private: nothing reaches the host, and the next command starts from an empty one.
    assert not (Path(scratch) / name).exists()
    ok, text = await _run(tool, f'test -e "$TMPDIR/{name}" && echo kept || echo gone')
    assert ok
    assert text == "gone\n"


async def test_edit_agent_bash_can_write(project: Path) -> None:
    ok, text = await _run(BashTool(project), "echo written > created.txt")
    assert ok, text
    assert (project / "created.txt").read_text() == "written\n"


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
