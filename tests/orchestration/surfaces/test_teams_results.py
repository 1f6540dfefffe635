"""Whole-value snapshots of what every teams tool answers the model: text and details, as today.

The teams core's results and the texts rendered from them may move between modules (issue 15); what
the model receives must not change. Each call goes through the real tool (`TeamsTool.execute`) over a
real host, store and scripted agents, in states that do not race (a queued agent, a stopped one, a
completed one after the host is quiet). Volatile values (ids, times, durations, temporary paths) are
replaced by placeholders before the comparison.

To refresh after an intended change: `CORRAL_UPDATE_SNAPSHOTS=1 pytest <this file>`, then read the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from corral.agent import ToolResult
from corral.orchestration.surfaces.teams import teams_lead_tools
from corral.settings import CapacitySettings, Settings, TeamsSettings
from tests._waits import eventually
from tests.orchestration.teams._teams_helpers import session_entries, teams_env, write_script

SNAPSHOT = Path(__file__).parent / "snapshots" / "teams_tool_results.json"

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HEX = re.compile(r"\b[0-9a-f]{16,}\b")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
_DURATION = re.compile(r"\b\d+(\.\d+)?\s?(ms|s|m|min|h)\b")
_VOLATILE_KEYS = ("At", "Ms", "ms", "elapsed", "Seconds", "age", "pid", "Pid")


pytestmark = pytest.mark.usefixtures("env")


def _normalize(value: Any, tmp: str, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _normalize(v, tmp, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize(v, tmp, key) for v in value]
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and any(k in key for k in _VOLATILE_KEYS)
    ):
        return "<n>"
    if key == "sandbox":  # the read-only sandbox's probe says what this machine offers
        return "<sandbox>"
    if isinstance(value, str):
        text = value.replace(tmp, "<tmp>")
        text = _UUID.sub("<uuid>", text)
        text = _TIME.sub("<time>", text)
        text = _HEX.sub("<hex>", text)
        return _DURATION.sub("<duration>", text)
    return value


def _shape(result: ToolResult, tmp: str) -> Any:
    text = "".join(getattr(part, "text", "") for part in result.content)
    return _normalize({"text": text, "details": result.details, "isError": result.is_error}, tmp)


def _settings() -> Settings:
    return Settings(teams=TeamsSettings(read_agents=CapacitySettings(max_concurrent=1)))


def _report(content: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "report_and_exit", "args": {"content": content, "outcome": "succeeded"}}]}


async def test_every_teams_tool_answers_as_pinned(tmp_path: Path) -> None:
    write_script(
        tmp_path,
        "lead",
        {
            "steps": [{"text": "x"}],
            "agents": {
                "one": [_report("Full findings: the cache key ignores the locale.")],
                "*": [{"delay_ms": 60000, "text": "z"}],
            },
        },
    )
    tmp = str(tmp_path)
    got: dict[str, Any] = {}
    async with teams_env(tmp_path, "lead", settings=_settings()) as env:
        tools = {tool.name: tool for tool in teams_lead_tools(env.host.teams, env.caller)}

        async def call(key: str, tool: str, params: dict[str, Any]) -> Any:
            got[key] = _shape(await tools[tool].execute(f"call-{key}", params), tmp)
            return got[key]

        await call(
            "spawn_agent",
            "spawn_agent",
            {"name": "one", "prompt": "Review the cache.", "model_slot": "read-review"},
        )
        await env.quiet()
        await call("get_agent_status (completed)", "get_agent_status", {})
        await call("check_teammate (left)", "check_teammate", {"agent_name": "one"})
        await call("spawn_agent (started)", "spawn_agent", {"name": "slow", "prompt": "Wait."})
        await call("spawn_agent (queued)", "spawn_agent", {"name": "two", "prompt": "Wait too."})
        await call("get_agent_status (queued)", "get_agent_status", {"agent_name": "two"})
        await call("stop_teammate (queued)", "stop_teammate", {"agent_name": "two"})
        slow = env.host.repositories.teams.roster.live_team_member(env.caller.session_id, "slow")
        assert slow is not None

        def slow_listens() -> bool:
            child = env.teams.context.child(slow.run_id)
            return child is not None and child.messages_open and not child.ended

        await eventually(slow_listens, env.host)
        await call("send_message", "send_message", {"recipient": "slow", "content": "Also check the TTL."})
        await call("read_inbox", "read_inbox", {})
        await call("list_file_claims", "list_file_claims", {})
        await call("report_and_exit (lead)", "report_and_exit", {"content": "x"})
        await call("claim_file (lead)", "claim_file", {"paths": ["a.py"]})
        await call("spawn_agent (invalid)", "spawn_agent", {"prompt": "p", "model": "x"})
        await call("check_teammate (unknown)", "check_teammate", {"agent_name": "ghost"})
        await call(
            "stop_teammate (running)", "stop_teammate", {"agent_name": "slow", "reason": "Not needed."}
        )
        await call("stop_teammate (not active)", "stop_teammate", {"agent_name": "slow"})
        await env.quiet()
        await call(
            "spawn_swarm_agents",
            "spawn_swarm_agents",
            {
                "defaults": {"model_slot": "read-collect"},
                "agents": [{"name": "s1", "prompt": "a"}, {"name": "s2", "prompt": "b"}],
            },
        )
        await call("interrupt_teammate (queued)", "interrupt_teammate", {"agent_name": "s2"})
        await call("stop_teammate (s2)", "stop_teammate", {"agent_name": "s2"})
        await call("stop_teammate (s1)", "stop_teammate", {"agent_name": "s1"})
        await env.quiet()
        generation = next(g for g in env.host.kernel.generations(include_finalized=True) if g.label == "one")
        assert generation.session_path
        [receipt] = [
            e["message"]
            for e in session_entries(Path(generation.session_path))
            if e.get("type") == "message" and (e.get("message") or {}).get("toolName") == "report_and_exit"
        ]
        got["report_and_exit (agent)"] = _normalize(
            {
                "text": receipt["content"][0]["text"],
                "details": receipt.get("details"),
                "isError": receipt.get("isError", False),
            },
            tmp,
        )
    if os.environ.get("CORRAL_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n")
    assert got == json.loads(SNAPSHOT.read_text())
