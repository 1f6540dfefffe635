"""Teams members get their lead's MCP servers; a read tier only the read-only tools; the spawn result
names what each got."""

from __future__ import annotations

from typing import Any

import corral

from .conftest import WAIT, McpEnv, tiny


def _report(content: str, expect: dict[str, Any]) -> dict[str, Any]:
    call = {"name": "report_and_exit", "args": {"content": content, "outcome": "succeeded"}}
    return {"expect": expect, "tool_calls": [call], "otherwise": {"text": "the wrong tools"}}


async def test_members_inherit_the_leads_servers_and_a_read_tier_gets_read_only_tools(
    mcp_env: McpEnv,
) -> None:
    mcp_env.settings({"tiny": tiny(env={"TINY_NOTES": str(mcp_env.notes)})})
    mcp_env.script(
        [{"text": "lead"}],
        agents={
            "reader": [
                _report(
                    "read-only", {"tools_include": ["mcp__tiny__add"], "tools_exclude": ["mcp__tiny__note"]}
                )
            ],
            "writer": [_report("all tools", {"tools_include": ["mcp__tiny__add", "mcp__tiny__note"]})],
        },
    )
    async with corral.open_lead(mcp_env.work, surfaces=("teams",)) as lead:
        reader = await lead.call(
            "spawn_agent", {"name": "reader", "prompt": "look", "model_slot": "read-collect"}
        )
        writer = await lead.call(
            "spawn_agent", {"name": "writer", "prompt": "write", "model_slot": "write-patch"}
        )
        assert reader.ok and writer.ok, (reader.text, writer.text)
        assert reader.details is not None and writer.details is not None
        read_mcp = reader.details["mcp"]
        assert read_mcp["readOnly"] and "mcp__tiny__note" in read_mcp["servers"]["tiny"]["withheld"]
        assert "MCP servers: tiny: 7 read-only tools" in reader.text
        assert "mcp__tiny__note" in writer.details["mcp"]["servers"]["tiny"]["tools"]
        reports = [await lead.next_item(timeout=WAIT), await lead.next_item(timeout=WAIT)]
        texts = sorted(item.text for item in reports if item is not None)
        assert any("read-only" in text for text in texts) and any("all tools" in text for text in texts)
        swarm = await lead.call(
            "spawn_swarm_agents",
            {"agents": [{"name": "reader", "prompt": "a"}], "defaults": {"model_slot": "read-collect"}},
        )
        assert swarm.ok, swarm.text
        assert "- reader: read, in-process, started; MCP: 7 tools (tiny)" in swarm.text
        assert await lead.next_item(timeout=WAIT) is not None
