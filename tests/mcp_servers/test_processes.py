"""The servers' processes: one session per server per host process, started on first use, a crash
restarted once and then a clear error, timeouts, a server that fails to start named, stdio servers
that die with their host, both protocol eras, and no SDK."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from corral.agent import ToolError
from corral.lead import Launched
from corral.mcp_servers import INSTALL_HINT, McpGrant, McpServers
from corral.settings import McpServerSettings
from tests._waits import eventually

from .conftest import TINY, WAIT, McpEnv, tiny

SDK_SERVER = Path(__file__).with_name("sdk_server.py")


def _servers(tmp_path: Path, **tables: dict[str, object]) -> McpServers:
    return McpServers(
        {name: McpServerSettings.model_validate(table) for name, table in tables.items()},
        cwd=tmp_path,
        log_dir=tmp_path / "logs",
    )


async def _call(servers: McpServers, grant: McpGrant, name: str, **args: object) -> str:
    toolset = await servers.toolset(grant)
    tool = next(tool for tool in toolset.tools if tool.name == name)
    result = await tool.execute("call", dict(args))
    return "".join(getattr(block, "text", "") for block in result.content)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


async def test_the_agents_of_a_process_share_one_session_started_on_first_use(tmp_path: Path) -> None:
    servers = _servers(tmp_path, tiny=tiny())
    try:
        assert servers.started == {}  # nothing starts before an agent needs it
        first = await _call(servers, McpGrant(("tiny",)), "mcp__tiny__pid")
        second = await _call(servers, McpGrant(("tiny",), read_only=True), "mcp__tiny__pid")
        assert first == second and list(servers.started) == ["tiny"]
        assert servers.started["tiny"].protocol_version is not None
    finally:
        await servers.aclose()
    assert not _alive(int(first))


async def test_a_crashed_server_restarts_once_then_its_tools_say_why_they_fail(
    mcp_env: McpEnv, lead_of: list[Launched]
) -> None:
    mcp_env.settings({"tiny": tiny()})
    crash = {"name": "mcp__tiny__crash", "args": {}}
    add = {"name": "mcp__tiny__add", "args": {"a": 1, "b": 2}}
    mcp_env.script(
        [
            {"tool_calls": [crash]},
            {"tool_calls": [add]},
            {"tool_calls": [crash]},
            {"tool_calls": [add]},
            {"text": "end"},
        ]
    )
    launched = await mcp_env.lead(surfaces=[])
    lead_of.append(launched)
    await asyncio.wait_for(launched.agent.prompt("go"), WAIT)
    results = [m for m in launched.agent.messages if getattr(m, "role", None) == "toolResult"]
    texts = [(m.is_error, m.content[0].text) for m in results]
    assert texts[0] == (
        True,
        "the MCP server tiny exited during the call of crash, so its effect is unknown; corral restarted the "
        "server: check the effect, then call again if needed",
    )
    assert texts[1] == (False, "3")  # the restarted server answers
    assert texts[2][0] and texts[2][1].startswith("the MCP server tiny exited during the call of crash")
    assert "it exited 2 times (restarted once already), so corral does not start it again" in texts[2][1]
    assert texts[3][0] and texts[3][1].startswith("the MCP server tiny is not available: it exited 2 times")
    assert "its stderr ends: tiny: crashing on purpose" in texts[3][1]


async def test_a_server_that_fails_to_start_is_named_in_the_delegate_result_and_to_the_lead(
    mcp_env: McpEnv, lead_of: list[Launched], capsys: pytest.CaptureFixture[str]
) -> None:
    mcp_env.settings({"tiny": tiny(), "broken": tiny("exit-at-start")})
    mcp_env.definition("helper", "description: Any task.\ntools: [read, edit, write, bash]")
    delegate = {"action": "delegate", "definition": "helper", "task": "t", "label": "h"}
    mcp_env.script(
        [{"tool_calls": [{"name": "agent", "args": delegate}]}, {"text": "waiting"}],
        agents={"h": [{"expect": {"tools_include": ["mcp__tiny__add"]}, "text": "helped"}]},
    )
    launched = await mcp_env.lead()
    lead_of.append(launched)
    await asyncio.wait_for(launched.agent.prompt("go"), WAIT)
    assert "corral: warning: MCP server broken: failed to start: it exited" in capsys.readouterr().err
    started = next(m for m in launched.agent.messages if getattr(m, "tool_name", None) == "agent")
    broken = started.details["mcp"]["servers"]["broken"]
    assert broken["state"] == "failed" and broken["tools"] == []
    assert broken["problem"].endswith("its stderr ends: tiny: cannot open my database /nonexistent/db")
    assert "broken: not available (failed to start: it exited" in started.content[0].text
    assert "tiny: 8 tools (mcp__tiny__add" in started.content[0].text


async def test_a_server_that_does_not_start_in_time_and_a_slow_call_time_out(tmp_path: Path) -> None:
    servers = _servers(
        tmp_path,
        hang=tiny("hang-at-start", startup_timeout_s=1),
        tiny=tiny(tool_timeout_s=1),
        missing={"command": "no-such-mcp-server-program"},
    )
    try:
        toolset = await servers.toolset(McpGrant(("hang", "tiny", "missing")))
        outcomes = {outcome.name: outcome for outcome in toolset.report.servers}
        assert outcomes["hang"].problem == (
            "failed to start: it did not start and list its tools within 1 s (startup_timeout_s)"
        )
        assert outcomes["missing"].problem == (
            "failed to start: its command 'no-such-mcp-server-program' was not found on PATH"
        )
        with pytest.raises(ToolError) as raised:
            await _call(servers, McpGrant(("tiny",)), "mcp__tiny__slow", seconds=30)
        assert str(raised.value) == (
            "the MCP server tiny did not answer the call of slow within 1 s (tool_timeout_s); corral asked it "
            "to cancel the call, but it may still have done it: check its effect before calling again"
        )
    finally:
        await servers.aclose()


async def test_results_map_errors_images_and_structured_content(tmp_path: Path) -> None:
    servers = _servers(tmp_path, tiny=tiny())
    try:
        tools = {tool.name: tool for tool in (await servers.toolset(McpGrant(("tiny",)))).tools}
        added = await tools["mcp__tiny__add"].execute("1", {"a": 2, "b": 3})
        assert added.details == {"server": "tiny", "tool": "add", "structuredContent": {"sum": 5}}
        failed = await tools["mcp__tiny__fail"].execute("1", {})
        assert failed.is_error and failed.content[0].text == "the tool failed on purpose"  # type: ignore[union-attr]
        image = await tools["mcp__tiny__image"].execute("1", {})
        assert image.content[0].type == "image" and image.content[0].mime_type == "image/png"  # type: ignore[union-attr]
    finally:
        await servers.aclose()


def _server_of_a_killed_host(command: str, args: list[str], *, also: Path | None = None) -> list[int]:
    """Start a host process whose `tiny` server runs `command args`, read the server's pid (and the
    pid the server's launcher wrote to `also`), SIGKILL the host; those pids, alive before the kill."""
    host = textwrap.dedent(
        f"""
        import asyncio
        from corral.mcp_servers import McpGrant, McpServers
        from corral.settings import McpServerSettings

        async def main():
            config = McpServerSettings(command={command!r}, args={args!r})
            servers = McpServers({{"tiny": config}}, log_dir=None)
            toolset = await servers.toolset(McpGrant(("tiny",)))
            pid = next(t for t in toolset.tools if t.name == "mcp__tiny__pid")
            result = await pid.execute("1", {{}})
            print(result.content[0].text, flush=True)
            await asyncio.Event().wait()  # until the test kills this host

        asyncio.run(main())
        """
    )
    process = subprocess.Popen([sys.executable, "-c", host], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        pids = [int(process.stdout.readline())]
        if also is not None:
            pids.append(int(also.read_text()))
        assert all(_alive(pid) for pid in pids)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        if process.stdout is not None:
            process.stdout.close()
    return pids


def test_stdio_servers_die_with_their_host_process(tmp_path: Path) -> None:
    """A host killed with SIGKILL closes nothing: its servers still end (`setpriv --pdeathsig`, and
    their stdin closes)."""
    [server] = _server_of_a_killed_host(sys.executable, [str(TINY)])
    asyncio.run(eventually(lambda: not _alive(server), timeout=WAIT))


def test_a_stdio_server_s_own_children_die_with_its_host(tmp_path: Path) -> None:
    """A server started through a launcher (as `npx` and `uvx` start one) leaves a process of its own
    in its group: a SIGKILLed host ends that one too, not only the process it started."""
    helper_pid = tmp_path / "helper.pid"
    launcher = f"sleep 3600 </dev/null >/dev/null 2>&1 & echo $! > {helper_pid}; exec {sys.executable} {TINY}"
    server, helper = _server_of_a_killed_host("/bin/sh", ["-c", launcher], also=helper_pid)
    asyncio.run(eventually(lambda: not _alive(server) and not _alive(helper), timeout=WAIT))


async def test_a_2026_era_server_is_spoken_to_through_discover(tmp_path: Path) -> None:
    servers = _servers(
        tmp_path, sdk={"command": sys.executable, "args": [str(SDK_SERVER)], "startup_timeout_s": 60}
    )
    try:
        assert await _call(servers, McpGrant(("sdk",)), "mcp__sdk__shout", text="hi") == "HI"
        connection = servers.started["sdk"]
        assert connection.protocol_version == "2026-07-28" and connection.server_version is not None
    finally:
        await servers.aclose()


async def test_without_the_sdk_every_server_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` raises ImportError
    servers = _servers(tmp_path, tiny=tiny())
    toolset = await servers.toolset(McpGrant(("tiny",)))
    assert toolset.tools == ()
    assert toolset.report.servers[0].problem == f"failed to start: {INSTALL_HINT}"
