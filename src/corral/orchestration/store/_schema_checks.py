"""Schema step v3 of the orchestration store: assigned checks, repair ledgers, spawn assignments.

* `team_members` gains nullable columns for what a spawn assigned: the check
  policy (`assigned_checks`, the normalized `CheckDefinition` array), the
  repair policy (`{"maxAttempts": n}`), the checkpoint policy, the checkpoint
  to continue from and the completion group slot (`group_id`, `slot_id`).
* `team_checks` holds one row per check id (§6.2 of the teams notes): the
  assignment and its binding, the state, the claim token, the times (Unix
  ms), the source identities before and after, the exit code, the log file
  and its size, and the error. CHECKs hold the record invariants SQLite can
  see (`claimed` ⇔ no completion time, a `passed` row has exit 0, no error
  and the same tested source before and after, the log is `<64 hex>.log`, the
  key columns agree with the assignment JSON); a trigger makes a settled row
  immutable. That the id is the hash of its assignment is checked on read.
* `team_repair_ledgers` + `team_repair_stages` hold the repair ledger of a
  report (§7.2): its assignments (attempt 1), `maxAttempts` 1..5, the final
  `cancelled` flag, and one stage row per attempt. Triggers enforce what
  crosses rows: stage N has attempt N, a stage follows only a `requested`
  one, at most `maxAttempts + 1` stages, one check id per assignment, no new
  stage once cancelled, only a `running` stage settles, a ledger's binding
  never changes and cancellation is final.

Statements run one by one: trigger bodies contain `;`, so the script cannot
be split on it the way `_migrations._run_script` does.
"""

from __future__ import annotations

import sqlite3

__all__ = ["migrate"]

CHECK_STATES = "('claimed', 'passed', 'failed', 'cancelled', 'timed-out', 'stale', 'unsupported', 'error')"
REPAIR_STATES = (
    "('running', 'not-needed', 'requested', 'repaired', 'exhausted', 'cancelled', 'declined', 'blocked')"
)


def _hex_id(column: str, prefix: str) -> str:
    """`<prefix><64 lowercase hex>`."""
    return (
        f"length({column}) = {len(prefix) + 64} AND substr({column}, 1, {len(prefix)}) = '{prefix}'"
        f" AND substr({column}, {len(prefix) + 1}) NOT GLOB '*[^0-9a-f]*'"
    )


def _same_source(a: str, b: str) -> str:
    return " AND ".join(
        f"json_extract({a}, '$.{key}') = json_extract({b}, '$.{key}')"
        for key in ("version", "cwd", "repositoryRoot", "fingerprint")
    )


_MEMBER_COLUMNS = (
    "assigned_checks TEXT CHECK (assigned_checks IS NULL OR json_type(assigned_checks) = 'array')",
    "repair_policy TEXT CHECK (repair_policy IS NULL OR json_type(repair_policy) = 'object')",
    "checkpoint_policy TEXT CHECK (checkpoint_policy IS NULL OR json_type(checkpoint_policy) = 'object')",
    "continue_from TEXT CHECK (continue_from IS NULL OR length(continue_from) > 0)",
    "group_id TEXT CHECK (group_id IS NULL OR length(group_id) > 0)",
    "slot_id TEXT CHECK (slot_id IS NULL OR length(slot_id) > 0)",
)

_CHECKS = f"""
CREATE TABLE team_checks (
    check_id      TEXT PRIMARY KEY CHECK ({_hex_id("check_id", "check:")}),
    run_id        TEXT NOT NULL REFERENCES team_members (run_id),
    report_id     TEXT NOT NULL CHECK (length(report_id) > 0),
    name          TEXT NOT NULL CHECK (length(trim(name)) > 0),
    attempt       INTEGER NOT NULL CHECK (attempt >= 1),
    assignment    TEXT NOT NULL CHECK (json_type(assignment) = 'object'),
    binding       TEXT NOT NULL CHECK (json_type(binding) = 'array'),
    claim_token   TEXT NOT NULL CHECK (length(claim_token) = 36),
    state         TEXT NOT NULL CHECK (state IN {CHECK_STATES}),
    started_at    INTEGER NOT NULL CHECK (started_at >= 0),
    completed_at  INTEGER CHECK (completed_at IS NULL OR completed_at >= started_at),
    source_before TEXT CHECK (source_before IS NULL OR json_type(source_before) = 'object'),
    source_after  TEXT CHECK (source_after IS NULL OR json_type(source_after) = 'object'),
    exit_code     INTEGER,
    log_path      TEXT NOT NULL,
    log_bytes     INTEGER NOT NULL DEFAULT 0 CHECK (log_bytes >= 0),
    error         TEXT CHECK (error IS NULL OR length(error) > 0),
    CHECK (json_extract(assignment, '$.runId') = run_id AND json_extract(assignment, '$.reportId') = report_id
           AND json_extract(assignment, '$.name') = name AND json_extract(assignment, '$.attempt') = attempt),
    CHECK ((state = 'claimed') = (completed_at IS NULL)),
    CHECK (state <> 'claimed' OR (source_before IS NULL AND source_after IS NULL AND exit_code IS NULL
                                  AND error IS NULL AND log_bytes = 0)),
    CHECK (state <> 'passed' OR (exit_code = 0 AND error IS NULL AND source_before IS NOT NULL
                                 AND source_after IS NOT NULL AND {_same_source("source_before", "source_after")})),
    CHECK (state <> 'stale' OR (exit_code = 0 AND source_before IS NOT NULL AND source_after IS NOT NULL)),
    CHECK (state <> 'failed' OR (exit_code IS NOT NULL AND exit_code <> 0)),
    CHECK (state NOT IN ('cancelled', 'timed-out', 'unsupported') OR exit_code IS NULL),
    CHECK (state IN ('claimed', 'passed', 'failed') OR error IS NOT NULL),
    CHECK (substr(log_path, -69) = '/' || substr(check_id, 7) || '.log')
)"""

_CHECKS_IMMUTABLE = """
CREATE TRIGGER team_checks_settle_once BEFORE UPDATE ON team_checks
WHEN OLD.state <> 'claimed'
    OR NEW.check_id IS NOT OLD.check_id OR NEW.run_id IS NOT OLD.run_id OR NEW.report_id IS NOT OLD.report_id
    OR NEW.name IS NOT OLD.name OR NEW.attempt IS NOT OLD.attempt OR NEW.assignment IS NOT OLD.assignment
    OR NEW.binding IS NOT OLD.binding OR NEW.claim_token IS NOT OLD.claim_token
    OR NEW.started_at IS NOT OLD.started_at OR NEW.log_path IS NOT OLD.log_path
BEGIN
    SELECT RAISE(ABORT, 'only a claimed check record settles, once, keeping its assignment and claim');
END"""

_LEDGERS = f"""
CREATE TABLE team_repair_ledgers (
    controller_id TEXT PRIMARY KEY CHECK ({_hex_id("controller_id", "repair:")}),
    run_id        TEXT NOT NULL REFERENCES team_members (run_id),
    report_id     TEXT NOT NULL UNIQUE CHECK (length(report_id) > 0),
    assignments   TEXT NOT NULL CHECK (json_type(assignments) = 'array' AND json_array_length(assignments) >= 1),
    max_attempts  INTEGER NOT NULL CHECK (max_attempts BETWEEN 1 AND 5),
    cancelled     INTEGER NOT NULL DEFAULT 0 CHECK (cancelled IN (0, 1)),
    created_at    INTEGER NOT NULL CHECK (created_at >= 0),
    updated_at    INTEGER NOT NULL CHECK (updated_at >= created_at)
)"""

_LEDGERS_IMMUTABLE = """
CREATE TRIGGER team_repair_ledgers_binding BEFORE UPDATE ON team_repair_ledgers
WHEN NEW.controller_id IS NOT OLD.controller_id OR NEW.run_id IS NOT OLD.run_id
    OR NEW.report_id IS NOT OLD.report_id OR NEW.assignments IS NOT OLD.assignments
    OR NEW.max_attempts IS NOT OLD.max_attempts OR NEW.cancelled < OLD.cancelled
BEGIN
    SELECT RAISE(ABORT, 'a repair ledger keeps its binding and policy, and its cancellation is final');
END"""

_STAGES = f"""
CREATE TABLE team_repair_stages (
    controller_id TEXT NOT NULL REFERENCES team_repair_ledgers (controller_id),
    attempt       INTEGER NOT NULL CHECK (attempt BETWEEN 1 AND 6),
    submission_id TEXT NOT NULL CHECK (length(submission_id) > 0),
    signature     TEXT NOT NULL CHECK ({_hex_id("signature", "repair:")}),
    token         TEXT NOT NULL UNIQUE CHECK (length(token) = 36),
    state         TEXT NOT NULL CHECK (state IN {REPAIR_STATES}),
    check_ids     TEXT NOT NULL CHECK (json_type(check_ids) = 'array'),
    created_at    INTEGER NOT NULL CHECK (created_at >= 0),
    updated_at    INTEGER NOT NULL CHECK (updated_at >= created_at),
    PRIMARY KEY (controller_id, attempt),
    UNIQUE (controller_id, submission_id),
    CHECK (state <> 'not-needed' OR attempt = 1),
    CHECK (state <> 'repaired' OR attempt > 1)
)"""

_STAGES_APPEND = """
CREATE TRIGGER team_repair_stages_append BEFORE INSERT ON team_repair_stages
BEGIN
    SELECT RAISE(ABORT, 'repair stage N must have attempt N')
        WHERE NEW.attempt <> 1 + (SELECT count(*) FROM team_repair_stages WHERE controller_id = NEW.controller_id);
    SELECT RAISE(ABORT, 'a repair stage can follow only a requested stage')
        WHERE NEW.attempt > 1 AND NOT EXISTS (
            SELECT 1 FROM team_repair_stages
            WHERE controller_id = NEW.controller_id AND attempt = NEW.attempt - 1 AND state = 'requested');
    SELECT RAISE(ABORT, 'a repair ledger holds at most maxAttempts + 1 stages')
        WHERE NEW.attempt > 1 + (SELECT max_attempts FROM team_repair_ledgers WHERE controller_id = NEW.controller_id);
    SELECT RAISE(ABORT, 'a repair stage names one check per assignment')
        WHERE json_array_length(NEW.check_ids) <> (
            SELECT json_array_length(assignments) FROM team_repair_ledgers WHERE controller_id = NEW.controller_id);
    SELECT RAISE(ABORT, 'a cancelled repair ledger takes no new stage')
        WHERE (SELECT cancelled FROM team_repair_ledgers WHERE controller_id = NEW.controller_id) = 1;
    SELECT RAISE(ABORT, 'a new repair stage is running or declined')
        WHERE NEW.state NOT IN ('running', 'declined');
END"""

_STAGES_SETTLE = """
CREATE TRIGGER team_repair_stages_settle BEFORE UPDATE ON team_repair_stages
WHEN OLD.state <> 'running'
    OR NEW.controller_id IS NOT OLD.controller_id OR NEW.attempt IS NOT OLD.attempt
    OR NEW.submission_id IS NOT OLD.submission_id OR NEW.signature IS NOT OLD.signature
    OR NEW.token IS NOT OLD.token OR NEW.created_at IS NOT OLD.created_at
    OR json_array_length(NEW.check_ids) <> json_array_length(OLD.check_ids)
BEGIN
    SELECT RAISE(ABORT, 'only a running repair stage settles, keeping its identity and check count');
END"""

_INDEXES = (
    "CREATE INDEX team_checks_run ON team_checks (run_id)",
    "CREATE INDEX team_checks_claimed ON team_checks (run_id) WHERE state = 'claimed'",
    "CREATE INDEX team_repair_ledgers_run ON team_repair_ledgers (run_id)",
)


def migrate(conn: sqlite3.Connection) -> None:
    """Add the spawn assignment columns and the check and repair tables (inside the step's transaction)."""
    for column in _MEMBER_COLUMNS:
        conn.execute(f"ALTER TABLE team_members ADD COLUMN {column}")
    for statement in (
        _CHECKS,
        _CHECKS_IMMUTABLE,
        _LEDGERS,
        _LEDGERS_IMMUTABLE,
        _STAGES,
        _STAGES_APPEND,
        _STAGES_SETTLE,
        *_INDEXES,
    ):
        conn.execute(statement)
