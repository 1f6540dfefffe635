"""Budget check overhead per model request (target ≤ 0.1 ms).

One real store under a temporary directory holds a lead's tree with limits (tokens, cost, wall
time) and one agent's budget row, as a running managed agent has them. Measured, `--requests`
times each, one call at a time:

* `check`: `BudgetGuard.before_request` — the check the agent loop makes before every model
  request: one read of the agent's and the tree's rows plus the comparison (no limit reached);
* `record`: `BudgetGuard.after_reply` — adding a reply's usage to the agent and its tree (one
  group-committed write);
* `check_and_record`: both, what one model request costs in all.

Prints one JSON object; figures in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, summary_ms

from corral.agent import RequestEstimate
from corral.llm import AssistantMessage, ModelInfo, usage_with_total
from corral.orchestration import Repositories
from corral.orchestration.budgets import BudgetGuard, BudgetLedger, Limits
from corral.orchestration.surfaces._budget_notices import BudgetNoticeText

TARGET_MS = 0.1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Repositories.open(Path(tmp) / "corral.db")
        try:
            ledger = BudgetLedger(store.db)
            lead, run_id = "bench-lead", str(uuid.uuid4())
            huge = Limits(tokens=10**12, cost_usd=10.0**9, ms=10**12)
            ledger.set_tree_limits(lead, huge)
            ledger.open_agent(run_id, tree_id=lead, session_id="bench-agent", label="bench", limits=huge)
            guard = BudgetGuard(ledger, run_id, notices=BudgetNoticeText())
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
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
