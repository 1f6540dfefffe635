"""The user's rules bind a program that leads through the Python API: `Lead.call` asks the lead's tool
gate as the lead's model's calls are asked, so a denied delegation starts nothing."""

from __future__ import annotations

import corral

from .conftest import ApiEnv


async def test_a_denied_call_through_lead_call_is_not_run(api_env: ApiEnv) -> None:
    settings = api_env.root / "config" / "corral" / "settings.toml"
    settings.write_text(settings.read_text() + '[permissions]\ndeny = ["Task(writer)"]\n')
    async with corral.open_lead(api_env.work) as lead:
        denied = await lead.call("agent_delegate", {"definition": "writer", "task": "t"})
        assert not denied.ok
        assert denied.text == "agent_delegate was not run: the permission rule `Task(writer)` denies it"
        listed = await lead.call("agent_list", {})
        assert listed.ok and listed.details is not None and listed.details["agents"] == []  # nothing started
        allowed = await lead.call("agent_delegate", {"definition": "scout", "task": "t"})
        assert allowed.ok, allowed.text
