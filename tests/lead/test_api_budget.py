"""The Python API's `budget` option: limits for the lead's tree and agents, validated."""

from __future__ import annotations

import pytest

import corral
from corral.errors import CorralError
from corral.lead import LeadCallError

from .conftest import WAIT, ApiEnv

USAGE = {"input": 3000, "output": 100, "cache_read": 0, "cache_write": 0}


async def test_open_lead_budget_stops_the_agent_and_refuses_more(api_env: ApiEnv) -> None:
    step = {"text": "looking", "tool_calls": [{"name": "ls", "args": {"path": "."}}], "usage": USAGE}
    api_env.script({"scout": [step, step, {"text": "What I found so far.", "usage": USAGE}]})
    async with corral.open_lead(api_env.work, budget={"tree_tokens": 8_000}) as lead:
        handle = await lead.delegate("scout", "Look around.")
        result = await handle.result(timeout=WAIT)
        assert "What I found so far." in result.text and "budget_exhausted: tree_tokens" in result.text
        assert result.details["budget_exhausted"] is True
        with pytest.raises(LeadCallError, match="tree_tokens") as refused:
            await lead.delegate("scout", "Look again.")
        assert refused.value.category == "invalid_request"


@pytest.mark.parametrize(
    ("budget", "problem"),
    [
        ({"tree_tokenz": 5}, "unknown key 'tree_tokenz'"),
        ({"agent_tokens": 0}, "invalid value for 'agent_tokens'"),
        ({"soft_threshold": 2}, "invalid value for 'soft_threshold'"),
    ],
)
async def test_open_lead_refuses_a_bad_budget(
    api_env: ApiEnv, budget: dict[str, float], problem: str
) -> None:
    with pytest.raises(CorralError, match=problem):
        async with corral.open_lead(api_env.work, budget=budget):
            pass
