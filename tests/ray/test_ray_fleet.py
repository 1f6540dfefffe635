"""Budgets and rate-limit waits of agents on the Ray runtime: the worker's guard decides from the
budget the host pushes, its spend and waits reach the host's store as facts."""

from __future__ import annotations

import re
from pathlib import Path

from corral.agent import GuardVerdict
from corral.llm import EndpointKey, ModelRegistry, current_rate_limiter
from corral.orchestration import RESULT_TYPE
from corral.orchestration.budgets import BudgetLedger
from corral.orchestration.ratelimits import stored_waits
from corral.orchestration.surfaces import CloseParams, DelegateParams, ListParams
from corral.settings import BudgetSettings, Settings
from tests._waits import eventually
from tests.llm.fake_server import FakeProviderServer, FakeReply
from tests.orchestration._host_helpers import team, write_script
from tests.ray.conftest import RayTestCluster
from tests.ray.test_ray_agents import LEAD, env, ray_settings

__all__ = ["env"]

WAITING = re.compile(r"waiting \(rate limit, (\d+)s\)")
USAGE = {"input": 3000, "output": 100, "cache_read": 0, "cache_write": 0}


async def test_a_ray_agent_stops_at_its_agent_budget_and_its_spend_is_in_the_store(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    step = {"text": "digging", "tool_calls": [{"name": "read", "args": {"path": "."}}], "usage": USAGE}
    agent = [
        step,
        step,
        {**step, "expect": {"last_user_contains": "Budget notice"}},  # past 80% of the agent's budget
        {
            "text": "Builder's final report.",
            "usage": USAGE,
            "expect": {"last_user_contains": "Budget exhausted"},
        },
        {"text": "never asked"},
    ]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    settings = ray_settings(ray_cluster).model_copy(update={"budget": BudgetSettings(agent_tokens=10_000)})
    async with team(env, "team", settings=settings) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="builder", task="dig"))
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.runtime_kind == "ray"
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
        assert "Builder's final report." in result["content"]
        assert "budget_exhausted: agent_tokens" in result["content"]
        assert result["details"]["budget_exhausted"] is True
        ledger = BudgetLedger(t.host.kernel.db)
        row = ledger.agent(started.run_id)
        assert row is not None and row.exhausted == "agent_tokens" and row.final_taken and row.noticed
        assert row.spend.requests == 4 and row.spend.tokens == 12_400
        tree = ledger.tree(t.caller.session_id)
        assert tree is not None and tree.spend.tokens == 12_400
        # The worker's agent got one wrap-up notice, then its final turn without tools (its streamed
        # session says so).
        assert generation.session_path is not None
        text = Path(generation.session_path).read_text()
        assert text.count("Budget notice: agent_tokens") == 1
        assert text.count("Budget exhausted: agent_tokens") == 1 and "never asked" not in text


def _fake_provider(env: Path, server: FakeProviderServer, settings: Settings) -> Settings:
    """`settings` with provider `fake` on `server`, and an agent definition `caller` on its model."""
    (env / "config" / "agents" / "caller.md").write_text(
        "---\nname: caller\ndescription: Calls a model.\nmodel: fake/m\n---\nAnswer.\n"
    )
    return settings.model_copy(
        update={
            "providers": Settings.model_validate(
                {
                    "providers": {
                        "fake": {
                            "base_url": server.base_url,
                            "api": "openai-chat",
                            "models": [{"id": "m", "context_window": 32768, "max_tokens": 512}],
                        }
                    }
                }
            ).providers
        }
    )


async def test_a_ray_agents_rate_limit_wait_shows_in_status(env: Path, ray_cluster: RayTestCluster) -> None:
    write_script(env, "team", LEAD)
    with FakeProviderServer() as server:
        server.queue(FakeReply(status=429, error_message="Rate limit reached", headers={"retry-after": "60"}))
        server.default_reply = FakeReply(text="done")
        settings = _fake_provider(env, server, ray_settings(ray_cluster))
        registry = ModelRegistry(settings, cwd=env / "work")
        async with team(env, "team", settings=settings, registry=registry) as t:
            started = await t.controller.delegate(t.caller, DelegateParams(definition="caller", task="go"))
            generation = t.host.kernel.get_generation(started.run_id)
            assert generation is not None and generation.runtime_kind == "ray"

            # The worker's wait reaches the store as a fact; every status view shows it.
            await eventually(lambda: bool(stored_waits(t.host.kernel.db, [started.run_id])), t.host)
            listed = (await t.controller.list(t.caller, ListParams())).to_details()
            [record] = listed["agents"]
            match = WAITING.search(str(record.get("rate_limit")))
            assert match is not None and 50 <= int(match.group(1)) <= 70, record
            assert len(server.requests) == 1  # the worker waits out the window instead of retrying
            await t.controller.close(t.caller, CloseParams(agent=generation.label))


async def test_a_429_in_one_worker_makes_every_worker_and_the_host_wait(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    write_script(env, "team", LEAD)
    with FakeProviderServer() as server:
        server.queue(FakeReply(status=429, error_message="Rate limit reached", headers={"retry-after": "60"}))
        server.default_reply = FakeReply(text="done")
        settings = _fake_provider(env, server, ray_settings(ray_cluster, agents_per_worker=1))
        registry = ModelRegistry(settings, cwd=env / "work")
        async with team(env, "team", settings=settings, registry=registry) as t:
            first = await t.controller.delegate(t.caller, DelegateParams(definition="caller", task="one"))
            await eventually(lambda: bool(stored_waits(t.host.kernel.db, [first.run_id])), t.host)
            # The host learnt the first worker's window: its own limiter keeps the endpoint closed.
            key = EndpointKey.of(server.base_url, None)
            await eventually(lambda: current_rate_limiter().blocked_for(key) > 30, t.host)
            second = await t.controller.delegate(t.caller, DelegateParams(definition="caller", task="two"))
            places = {t.host.kernel.get_generation(r.run_id).pane_id for r in (first, second)}  # type: ignore[union-attr]
            assert len(places) == 2  # two workers: two processes, two limiters
            # The second worker got the window with its launch or first pull: its request waits too.
            await eventually(lambda: bool(stored_waits(t.host.kernel.db, [second.run_id])), t.host)
            [wait] = stored_waits(t.host.kernel.db, [second.run_id]).values()
            assert wait.reason == "retry_after" and wait.until_ms is not None
            assert len(server.requests) == 1  # only the first agent's refused request reached the endpoint
            for started in (first, second):
                label = t.host.kernel.get_generation(started.run_id).label  # type: ignore[union-attr]
                await t.controller.close(t.caller, CloseParams(agent=label))


async def test_a_ray_agent_reaching_the_tree_limit_tells_the_lead_once(
    env: Path, ray_cluster: RayTestCluster
) -> None:
    step = {"text": "digging", "tool_calls": [{"name": "read", "args": {"path": "."}}], "usage": USAGE}
    final = {"text": "Final.", "usage": USAGE, "expect": {"last_user_contains": "Budget exhausted"}}
    write_script(env, "team", {**LEAD, "agents": {"*": [step, step, final, {"text": "never asked"}]}})
    settings = ray_settings(ray_cluster).model_copy(update={"budget": BudgetSettings(tree_tokens=8_000)})
    async with team(env, "team", settings=settings) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="builder", task="dig"))
        await t.quiet()
        [result] = t.lead_entries(RESULT_TYPE)
        assert "budget_exhausted: tree_tokens" in result["content"]
        tree = BudgetLedger(t.host.kernel.db).tree(t.caller.session_id)
        assert tree is not None and tree.exhausted == "tree_tokens" and tree.spend.tokens == 9_300
        assert len(t.lead_entries(GuardVerdict.NOTICE_TYPE)) == 1
        row = BudgetLedger(t.host.kernel.db).agent(started.run_id)
        assert row is not None and row.exhausted == "tree_tokens"
