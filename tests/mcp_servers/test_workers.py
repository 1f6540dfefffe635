"""An agent on a tmux worker gets its MCP servers from its own sessions: the grant crosses in the
launch description, the worker starts the servers, the delegate result names them (a Ray worker's:
`tests/ray/test_ray_mcp_servers.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.mcp_servers import McpGrant
from corral.orchestration import RESULT_TYPE
from corral.orchestration.surfaces import DelegateParams
from corral.settings import McpServerSettings, Settings
from tests.orchestration._host_helpers import prepare_env, team, write_script
from tests.runtime._tmux_fixtures import tmux_socket

from .conftest import tiny

__all__ = ["tmux_socket"]


async def test_a_tmux_agent_opens_its_own_sessions_of_its_granted_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmux_socket: Path
) -> None:
    prepare_env(tmp_path, monkeypatch)
    settings = Settings(runtime="tmux", mcp_servers={"tiny": McpServerSettings.model_validate(tiny())})
    worker_steps = [
        {
            "expect": {
                "tools_include": ["mcp__tiny__pid", "mcp__tiny__add"],
                "tools_exclude": ["mcp__tiny__note"],
            },
            "tool_calls": [{"name": "mcp__tiny__pid", "args": {}}],
        },
        {"expect": {"tools_ok": True}, "text": "server pid {{ last_tool_output }}"},
    ]
    write_script(
        tmp_path,
        "team",
        {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": {"*": worker_steps}},
    )
    async with team(tmp_path, "team", settings=settings, tmux_socket=tmux_socket) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Look"))
        details = started.to_details()["mcp"]
        assert details["openedBy"] == "worker" and details["readOnly"]
        assert "mcp__tiny__note" in details["servers"]["tiny"]["withheld"]
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
        worker_pid = int(result["content"].rsplit("server pid ", 1)[1].split()[0])
        servers = t.host.mcp_servers
        assert servers is not None
        toolset = await servers.toolset(McpGrant(("tiny",)))
        own = next(tool for tool in toolset.tools if tool.name == "mcp__tiny__pid")
        host_pid = int((await own.execute("1", {})).content[0].text)  # type: ignore[union-attr]
        assert worker_pid != host_pid  # one session per server per process
