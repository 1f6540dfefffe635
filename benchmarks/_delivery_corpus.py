"""The fixed corpus of `bench_delivery.py`: ten read-review reports, one finding/control pair each.

Each report is Markdown of about 1.5–1.7 KB: summary, method, one finding `F<i>`
with evidence, its control `C<i>` (the pair `F<i>/C<i>`), a suggested fix, the
inspected files, limits and pending acceptance. F9's limits are the
interrupted-assignment detail (`F9_DETAIL`), which appears only in the report
body, never in its summary or finding, so a compact index does not carry it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["F9_DETAIL", "PAIRS", "REPORTS", "pair", "report_markdown", "report_step"]

F9_DETAIL = (
    "Interrupted assignment: the lease review stopped after 3 of 5 files when a host restart "
    "interrupted the reader at 14:02:11Z; scheduler/cron.py and scheduler/backoff.py were not "
    "inspected and no work was restarted."
)

REPORTS: list[dict[str, Any]] = [
    {
        "area": "Token refresh",
        "files": ["auth/refresh.py", "auth/store.py", "tests/auth/test_refresh.py"],
        "summary": "Rotated refresh tokens stay valid for one more exchange.",
        "severity": "high",
        "finding": (
            "`rotate()` issues the new refresh token before it revokes the old one, and the revocation "
            "runs in a separate transaction. A client that replays the old token inside that window gets "
            "a second, independent token family, so a stolen token survives rotation once."
        ),
        "evidence": ["auth/refresh.py:88-112 (issue, then revoke)", "auth/store.py:41 (autocommit write)"],
        "control": (
            "Replay the pre-rotation token right after `rotate()` in the same test client: today the "
            "replay returns 200 and a new pair; it must return 401 `token_reused` and revoke the family."
        ),
        "fix": (
            "Revoke the old token and issue the new one in one transaction, and treat any later use of a "
            "revoked token as reuse: revoke the whole family and log `token_reused`."
        ),
        "limits": "Only the password grant was exercised; device-code refresh shares the code path.",
    },
    {
        "area": "Rate limiter",
        "files": ["api/ratelimit.py", "api/middleware.py", "tests/api/test_ratelimit.py"],
        "summary": "The sliding window admits one extra request at the boundary.",
        "severity": "medium",
        "finding": (
            "`allow()` compares the bucket count with `<=` against the limit after it has already added "
            "the current request, so a client gets limit+1 requests per window; with 60-second windows "
            "and the default of 100 this is a 1% over-admission that the quota dashboards do not show."
        ),
        "evidence": ["api/ratelimit.py:57 (count <= limit)", "api/middleware.py:23 (calls allow first)"],
        "control": (
            "Send limit+1 requests within one window from a fixed clock: the last one must be answered "
            "429 with `Retry-After`; it is currently answered 200."
        ),
        "fix": (
            "Check the count against the limit before recording the request (`count < limit`), and add a "
            "boundary test with a frozen clock so the off-by-one cannot return."
        ),
        "limits": "Per-tenant overrides were read but not exercised.",
    },
    {
        "area": "Configuration loader",
        "files": ["config/loader.py", "config/schema.py", "tests/config/test_env.py"],
        "summary": "Environment overrides for nested keys are silently dropped.",
        "severity": "medium",
        "finding": (
            "`apply_env()` splits variable names on a single underscore, so `APP_DB__POOL_SIZE` becomes "
            "the path `db`, `pool`, `size`; the lookup misses and the override is ignored without a "
            "warning. Operators believe the pool is resized when it is not."
        ),
        "evidence": ["config/loader.py:131 (split('_'))", "config/schema.py:12 (pool_size field)"],
        "control": (
            "Set `APP_DB__POOL_SIZE=7` and load the config: `db.pool_size` must be 7, and an unknown "
            "override must raise `ConfigError`; today the value stays 20 and nothing is logged."
        ),
        "fix": (
            "Split on the documented double underscore only, validate the resulting path against the "
            "schema, and fail loudly (`ConfigError`) on an unknown override."
        ),
        "limits": "File-based overrides (YAML) follow another path and were not reviewed.",
    },
    {
        "area": "Schema migrations",
        "files": ["migrations/0042_orders.py", "migrations/runner.py", "tests/migrations/test_roundtrip.py"],
        "summary": "Migration 0042's downgrade drops an index its upgrade never created.",
        "severity": "medium",
        "finding": (
            "The downgrade of 0042 drops `ix_orders_customer_created`, which was created by 0039, not "
            "0042. Rolling back 0042 alone therefore removes an index that 0039 still owns, and the next "
            "upgrade of 0039's dependants fails on a missing index."
        ),
        "evidence": ["migrations/0042_orders.py:30-44", "migrations/0039_orders_index.py:18"],
        "control": (
            "Run upgrade head → downgrade -1 → upgrade head on an empty database: the round trip must "
            "end with the same schema dump; today the index is missing after the downgrade."
        ),
        "fix": (
            "Move the index drop to 0039's downgrade, leave 0042's downgrade to undo only what 0042 "
            "creates, and add the round trip to the migration CI job."
        ),
        "limits": "Only migrations 0035–0045 were read; older ones predate the runner change.",
    },
    {
        "area": "Tenant cache",
        "files": ["billing/plans.py", "cache/tenant.py", "tests/billing/test_plan_change.py"],
        "summary": "A plan change leaves a stale tenant cache entry for up to an hour.",
        "severity": "high",
        "finding": (
            "`change_plan()` writes the new plan and publishes `plan.changed`, but `TenantCache` keys "
            "entries by tenant slug while the event carries the tenant id, so the invalidation misses and "
            "downgraded tenants keep paid features until the one-hour TTL expires."
        ),
        "evidence": ["billing/plans.py:77 (publishes tenant_id)", "cache/tenant.py:29 (keyed by slug)"],
        "control": (
            "Downgrade a tenant and read its features immediately through the cache: the paid feature "
            "must be gone at once; today it is still enabled until the TTL passes."
        ),
        "fix": (
            "Key the cache by tenant id (or publish both id and slug) and invalidate synchronously in "
            "`change_plan()`; keep the TTL only as a safety net."
        ),
        "limits": "The Redis-backed cache variant was assumed to behave like the in-memory one.",
    },
    {
        "area": "CSV export",
        "files": ["exports/csv.py", "exports/views.py", "tests/exports/test_csv.py"],
        "summary": "Exported cells starting with = + - @ are not neutralized.",
        "severity": "medium",
        "finding": (
            "`write_row()` quotes separators but does not prefix cells that start with `=`, `+`, `-` or "
            "`@`, so a customer name such as `=HYPERLINK(...)` runs as a formula when an administrator "
            "opens the export in a spreadsheet (CSV injection)."
        ),
        "evidence": ["exports/csv.py:52-70 (quoting only)", "exports/views.py:18 (user-controlled names)"],
        "control": (
            "Export a row whose name is `=1+1`: the cell must be written as `'=1+1`; today it is written "
            "verbatim and evaluates to 2."
        ),
        "fix": (
            "Prefix cells that start with `=`, `+`, `-`, `@`, tab or carriage return with a single quote in"
            " `write_row()`, as the OWASP CSV-injection guidance recommends."
        ),
        "limits": "The XLSX exporter uses a library that escapes formulas and was not re-checked.",
    },
    {
        "area": "Webhook retries",
        "files": ["webhooks/dispatch.py", "webhooks/schedule.py", "tests/webhooks/test_retry.py"],
        "summary": "Retries ignore Retry-After and fire in lockstep.",
        "severity": "low",
        "finding": (
            "The retry schedule is a fixed 1, 2, 4, 8 minutes with no jitter, and `dispatch()` ignores a "
            "`Retry-After` header on 429 and 503 answers. After a receiver outage every queued delivery "
            "retries in the same second, which re-triggers the receiver's rate limit."
        ),
        "evidence": ["webhooks/schedule.py:9 (fixed backoff)", "webhooks/dispatch.py:64 (header unread)"],
        "control": (
            "Answer a delivery with 503 and `Retry-After: 120`: the next attempt must be scheduled at "
            "least 120 s later; today it is scheduled after 60 s."
        ),
        "fix": (
            "Honour `Retry-After` when present, add full jitter to the backoff, and cap concurrent retries "
            "per receiver so a recovered endpoint is not flooded."
        ),
        "limits": "Delivery signing and the dead-letter queue were out of scope.",
    },
    {
        "area": "Session cleanup",
        "files": ["sessions/store.py", "sessions/jobs.py", "tests/sessions/test_expiry.py"],
        "summary": "Expired sessions are deleted only when their user logs in again.",
        "severity": "low",
        "finding": (
            "The periodic `purge_expired` job is registered but its cron expression has six fields, which "
            "the scheduler rejects at load with a warning, so the only deletion path left is the login "
            "handler. Expired sessions of inactive users accumulate indefinitely."
        ),
        "evidence": ["sessions/jobs.py:14 (six-field cron)", "sessions/store.py:90 (delete on login)"],
        "control": (
            "Create a session that expired yesterday and run the scheduler for one tick: the row must be "
            "gone; today it stays until that user logs in."
        ),
        "fix": (
            "Fix the cron expression to five fields, make the scheduler fail at startup on an invalid "
            "expression, and add a purge test to the jobs suite."
        ),
        "limits": "Row counts in production were not queried; the growth rate is an estimate.",
    },
    {
        "area": "Job scheduler leases",
        "files": ["scheduler/lease.py", "scheduler/worker.py", "tests/scheduler/test_lease.py"],
        "summary": "Lease renewal races with expiry; two workers can run one job.",
        "severity": "high",
        "finding": (
            "`renew()` reads the lease row, checks `expires_at` in Python and then writes, without a "
            "compare-and-set on the owner, so a worker whose lease just expired can renew it after "
            "another worker took it over; both then run the job until the next renewal."
        ),
        "evidence": ["scheduler/lease.py:61-79 (read, check, write)", "scheduler/worker.py:40 (renew loop)"],
        "control": (
            "Let worker A's lease expire, let worker B acquire it, then call A's `renew()`: it must fail "
            "with `LeaseLost`; today it succeeds and both workers hold the job."
        ),
        "fix": (
            "Renew with a conditional update (`WHERE owner = :me AND expires_at > now()`) and stop the job "
            "when the update matches no row."
        ),
        "limits": F9_DETAIL,
    },
    {
        "area": "Log redaction",
        "files": ["logging/redact.py", "http/client.py", "tests/logging/test_redact.py"],
        "summary": "The Authorization header is logged in clear at debug level.",
        "severity": "medium",
        "finding": (
            "`redact_headers()` matches header names case-sensitively against a lower-case list, while "
            "the HTTP client logs them as sent (`Authorization`), so bearer tokens appear in debug logs "
            "that are shipped to the shared log cluster."
        ),
        "evidence": ["logging/redact.py:12 (case-sensitive match)", "http/client.py:103 (debug log)"],
        "control": (
            "Log a request with `Authorization: Bearer abc` at debug level: the record must show "
            "`Authorization: [redacted]`; today it shows the token."
        ),
        "fix": (
            "Compare header names case-insensitively and add `Proxy-Authorization` and `Cookie` to the "
            "redaction list; test with mixed-case names."
        ),
        "limits": "Structured (JSON) log formatting was not exercised.",
    },
]


def pair(index: int) -> str:
    """The finding/control pair id of report `index` (1-based): `F<i>/C<i>`."""
    return f"F{index}/C{index}"


PAIRS = [pair(i) for i in range(1, len(REPORTS) + 1)]


def report_markdown(index: int) -> str:
    """The full Markdown report of agent `r<index>` (1-based)."""
    spec = REPORTS[index - 1]
    files = spec["files"]
    evidence = "\n".join(f"- `{ref}`" for ref in spec["evidence"])
    inspected = "\n".join(f"- `{path}` (read in full)" for path in files)
    return (
        f"# {spec['area']} review (r{index})\n\n"
        f"**Scope:** `{files[0]}` and its callers · **Tier:** read-review · **Outcome:** succeeded\n\n"
        f"## Summary\n\n{spec['summary']} One finding, F{index}, with its control C{index}; no edits "
        "were made.\n\n"
        f"## Method\n\nRead `{files[0]}` and `{files[1]}` end to end, followed each call site the "
        f"assignment named, and read the existing tests in `{files[2]}`; nothing was edited. Line "
        "numbers refer to the working tree at the time of the review.\n\n"
        f"## Finding F{index} ({spec['severity']})\n\n{spec['finding']}\n\nEvidence:\n\n{evidence}\n\n"
        f"## Control C{index} (pair {pair(index)})\n\n{spec['control']}\n\n"
        f"## Suggested fix\n\n{spec['fix']}\n\n"
        f"## Inspected\n\n{inspected}\n\n"
        f"## Limits\n\n{spec['limits']}\n\n"
        "## Acceptance\n\nPending: these are my claims from reading the source; recheck the evidence "
        "before accepting the finding.\n"
    )


def report_step(index: int) -> dict[str, Any]:
    """Agent `r<index>`'s one step: `report_and_exit` with its report and its finding."""
    spec = REPORTS[index - 1]
    return {
        "tool_calls": [
            {
                "name": "report_and_exit",
                "args": {
                    "content": report_markdown(index),
                    "summary": spec["summary"],
                    "outcome": "succeeded",
                    "findings": [
                        {
                            "id": f"F{index}",
                            "text": f"{pair(index)}: {spec['summary']}",
                            "evidence": spec["evidence"],
                        }
                    ],
                    "inspectedEvidence": spec["files"],
                },
            }
        ]
    }
