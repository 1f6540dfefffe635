"""An agent on a Ray worker gets its MCP servers from the worker's own sessions (the grant crosses in
the launch description; `tests/mcp_servers/test_workers.py` has the tmux worker's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.orchestration import RESULT_TYPE
from corral.orchestration.surfaces import DelegateParams
from corral.settings import McpServerSettings
from tests.mcp_servers.conftest import tiny
from tests.orchestration._host_helpers import prepare_env, team, write_script
from tests.ray.conftest import RayTestCluster
from tests.ray.test_ray_agents import ray_settings


async def test_a_ray_agent_opens_its_own_sessions_of_its_granted_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_cluster: RayTestCluster
) -> None:
    prepare_env(tmp_path, monkeypatch)
    agents = tmp_path / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "builder.md").write_text(
        "---\nname: builder\ndescription: Writes.\ntools: [read, bash]\n---\nGo.\n"
    )
    settings = ray_settings(ray_cluster).model_copy(
        update={"mcp_servers": {"tiny": McpServerSettings.model_validate(tiny())}}
    )
    worker_steps = [
        {
            "expect": {"tools_include": ["mcp__tiny__note", "mcp__tiny__pid"]},
            "tool_calls": [{"name": "mcp__tiny__pid", "args": {}}],
        },
        {"expect": {"tools_ok": True}, "text": "server pid {{ last_tool_output }} from ray"},
    ]
    write_script(
        tmp_path,
        "team",
        {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last", "agents": {"*": worker_steps}},
    )
    async with team(tmp_path, "team", settings=settings) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="builder", task="Go"))
        details = started.to_details()["mcp"]
        assert details["openedBy"] == "worker" and not details["readOnly"]
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
        assert "from ray" in str(result["content"]) and "server pid " in str(result["content"])
