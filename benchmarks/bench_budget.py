"""Budget check overhead per model request (target ≤ 0.1 ms).

One real store under a temporary directory holds a lead's tree with limits (tokens, cost, wall
time) and one agent's budget row, as a running managed agent has them. Measured, `--requests`
times each, one call at a time:

* `check`: `BudgetGuard.before_request` — the check the agent loop makes before every model
  request: one read of the agent's and the tree's rows plus the comparison (no limit reached);
* `record`: `BudgetGuard.after_reply` — adding a reply's usage to the agent and its tree (one
  group-committed write);
* `check_and_record`: both, what one model request costs in all.

And the cap (`overshoot`, issue 27): `--overshoot-agents` agents (default 8 and 25) delegated at once
under `[budget] tree_tokens = --tree-tokens` (default 10,000), each a scripted scout whose six
steps call a tool and whose usage the scripted model reports from the request's and the reply's
size (chars / 4), as a provider would; a 20 ms step delay keeps them in flight together. Printed
per agent count: the tree's spend, `ratio` (spend / limit; the documented bound is ≤ 1.25), the
model requests, how many agents were stopped and whether every result arrived exactly once.

Prints one JSON object; figures in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, summary_ms
from _orch import data_root, fan_out, start_host

from corral.agent import RequestEstimate
from corral.llm import AssistantMessage, ModelInfo, usage_with_total
from corral.orchestration import Repositories
from corral.orchestration.budgets import BudgetGuard, BudgetLedger, Limits

TARGET_MS = 0.1
BOUND = 1.25
"""Tree spend / limit that docs/fleet.md promises for parallel agents."""


def _scout_script() -> dict[str, object]:
    work = [
        {
            "text": f"step {n}: " + "looked at the files and noted what they hold. " * 8,
            "tool_calls": [{"name": "ls", "args": {"path": "."}}],
            "delay_ms": 20,
        }
        for n in range(6)
    ]
    return {
        "steps": [{"text": "noted"}],
        "on_exhausted": "repeat_last",
        "agents": {"*": [*work, {"text": "Final report: what I found."}]},
    }


async def _overshoot(agents: int, tree_tokens: int) -> dict[str, object]:
    from corral.settings import BudgetSettings, Settings

    with data_root(_scout_script(), "bench-budget-cap-") as root:
        settings = Settings(budget=BudgetSettings(tree_tokens=tree_tokens))
        host, lead, caller = await start_host(root, settings=settings)
        try:
            fan = await fan_out(host, lead, caller, agents)
            ledger = BudgetLedger(host.kernel.db)
            tree = ledger.tree(caller.session_id)
            assert tree is not None
            stopped = sum(1 for a in ledger.agents(caller.session_id) if a.exhausted is not None)
            return {
                "agents": agents,
                "tree_tokens": tree_tokens,
                "spent_tokens": tree.spend.tokens,
                "ratio": round(tree.spend.tokens / tree_tokens, 3),
                "within_bound": tree.spend.tokens <= BOUND * tree_tokens,
                "requests": tree.spend.requests,
                "stopped_agents": stopped,
                "exactly_once": fan.exactly_once,
            }
        finally:
            await host.aclose()
            lead.session.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--overshoot-agents", type=int, nargs="*", default=[8, 25])
    parser.add_argument("--tree-tokens", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Repositories.open(Path(tmp) / "corral.db")
        try:
            ledger = BudgetLedger(store.db)
            lead, run_id = "bench-lead", str(uuid.uuid4())
            huge = Limits(tokens=10**12, cost_usd=10.0**9, ms=10**12)
            ledger.set_tree_limits(lead, huge)
            ledger.open_agent(run_id, tree_id=lead, session_id="bench-agent", label="bench", limits=huge)
            guard = BudgetGuard(ledger, run_id)
            model = ModelInfo(id="bench", provider="scripted", api="scripted")
            estimate = RequestEstimate(model=model, input_tokens=12_000, output_tokens=400)
            reply = AssistantMessage(
                api="scripted",
                provider="scripted",
                model="bench",
                usage=usage_with_total(input=12_000, output=400),
            )
            for _ in range(200):  # warm up (statement cache, price rates)
                guard.before_request(estimate)
            checks: list[float] = []
            records: list[float] = []
            both: list[float] = []
            for _ in range(args.requests):
                begin = time.perf_counter()
                verdict = guard.before_request(estimate)
                middle = time.perf_counter()
                guard.after_reply(reply, estimate)
                end = time.perf_counter()
                assert verdict.action == "go"
                checks.append(middle - begin)
                records.append(end - middle)
                both.append(end - begin)
            spent = ledger.agent(run_id)
            assert spent is not None and spent.spend.requests == args.requests
        finally:
            store.close()
    check = summary_ms(checks)
    overshoot = [asyncio.run(_overshoot(n, args.tree_tokens)) for n in args.overshoot_agents]
    print(
        json.dumps(
            {
                "environment": environment("bench_budget.py"),
                "requests": args.requests,
                "check": check,
                "record": summary_ms(records),
                "check_and_record": summary_ms(both),
                "target_check_ms": TARGET_MS,
                "check_p50_within_target": check["p50_ms"] <= TARGET_MS,
                "overshoot": overshoot,
                "overshoot_bound": BOUND,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
