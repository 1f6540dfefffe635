"""The report's `result` document, typed: stored JSON reads back and writes out byte for byte (key order too)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from corral.orchestration import Repositories
from corral.orchestration.store.jsjson import stringify
from corral.orchestration.teams.repair.records import RepairResult, ReportVerification
from corral.orchestration.teams.reports.records import (
    Artifact,
    Finding,
    ReportAcceptance,
    ReportClaims,
    ReportResult,
)
from tests.orchestration.teams.roster.test_store_teams import report, spawn

TASK, RUN, REPORT = "task:session-L:alpha:run-1", "run-1", "report:session-L:alpha:run-1"

# As the teams core stored them (a repaired, checkpointed isolated writer with a budget; a plain one;
# one accepted by the lead after its report failed verification).
STORED = [
    '{"version":1,"taskId":"task:session-L:alpha:run-1","runId":"run-1","reportId":"report:session-L:alpha:run-1",'
    '"outcome":"succeeded","changedPaths":["src/a.py"],"inspectedEvidence":["a.py:1-40"],'
    '"artifacts":[{"path":"out/log.txt","label":"log"},{"path":"b"}],'
    '"findings":[{"id":"F1","text":"t","evidence":["a.py:3"]},{"id":"F2","text":"u","evidence":[]}],'
    '"questions":["Auth?"],"verification":{"state":"passed","checkIds":["check:1","check:2"]},'
    '"acceptance":{"state":"pending"},"checkpointId":"checkpoint:x",'
    '"repair":{"controllerId":"repair:c","state":"repaired","attemptsUsed":1,"maxAttempts":2,'
    '"requestIds":["repair:r1"]},"branch":"corral/alpha","base":"abc123",'
    '"diffStat":{"files":["src/a.py"],"insertions":3,"deletions":1,"summary":"1 file, +3 -1"},'
    '"merge":"pending","budget":{"spent":12,"limit":100},"budget_exhausted":true}',
    '{"version":1,"taskId":"task:session-L:alpha:run-1","runId":"run-1","reportId":"report:session-L:alpha:run-1",'
    '"verification":{"state":"not-requested"},"acceptance":{"state":"pending"}}',
    '{"version":1,"taskId":"task:session-L:alpha:run-1","runId":"run-1","reportId":"report:session-L:alpha:run-1",'
    '"outcome":"blocked","verification":{"state":"failed","error":"The run ended without a report; no check ran."},'
    '"acceptance":{"state":"accepted","decidedAt":1700000000000,"reason":"known"},'
    '"repair":{"controllerId":"repair:c","state":"exhausted","attemptsUsed":1,"maxAttempts":1,'
    '"requestIds":["repair:r1"],"outcome":"blocked"}}',
]


def _read(raw: str) -> ReportResult:
    return ReportResult.from_json(json.loads(raw), task_id=TASK, run_id=RUN, report_id=REPORT)


@pytest.mark.parametrize("raw", STORED)
def test_a_stored_result_reads_typed_and_writes_back_byte_for_byte(raw: str) -> None:
    assert stringify(_read(raw).to_json()) == raw


def test_the_stored_fields_read_as_their_types() -> None:
    full, plain, accepted = (_read(raw) for raw in STORED)
    assert full.claims == ReportClaims(
        changed_paths=("src/a.py",),
        inspected_evidence=("a.py:1-40",),
        artifacts=(Artifact("out/log.txt", label="log"), Artifact("b")),
        findings=(Finding("F1", "t", evidence=("a.py:3",)), Finding("F2", "u")),
        questions=("Auth?",),
    )
    assert full.verification == ReportVerification("passed", ("check:1", "check:2"))
    assert full.repair == RepairResult(
        "repair:c", "repaired", attempts_used=1, max_attempts=2, request_ids=("repair:r1",)
    )
    assert (full.checkpoint_id, full.outcome, full.effective_outcome) == (
        "checkpoint:x",
        "succeeded",
        "succeeded",
    )
    assert list(full.extensions) == ["branch", "base", "diffStat", "merge", "budget", "budget_exhausted"]
    assert plain == ReportResult(TASK, RUN, REPORT)
    assert accepted.acceptance == ReportAcceptance("accepted", 1700000000000, "known")
    assert (accepted.outcome, accepted.effective_outcome) == ("blocked", "blocked")


def test_repair_that_blocks_makes_the_effective_outcome_blocked() -> None:
    blocked = ReportResult(
        TASK, RUN, REPORT, outcome="succeeded", repair=RepairResult("repair:c", "declined")
    )
    assert blocked.effective_outcome == "blocked"
    assert blocked.to_json()["repair"] == {
        "controllerId": "repair:c",
        "state": "declined",
        "outcome": "blocked",
    }


def test_unknown_keys_and_malformed_parts_read_the_fail_closed_way() -> None:
    data = json.loads(STORED[1]) | {"note": "kept"}
    data["verification"] = "garbage"
    data["repair"] = {"controllerId": "repair:c", "state": "unheard-of"}
    read = ReportResult.from_json(data, task_id=TASK, run_id=RUN, report_id=REPORT)
    assert read.verification == ReportVerification()
    assert read.repair is not None and read.repair.state == "pending"  # blocks rather than passes
    assert read.effective_outcome == "blocked"
    assert read.to_json()["note"] == "kept"  # a key this version does not know is not lost


def test_the_store_keeps_the_document_bytes_and_rewrites_only_the_acceptance(
    store: Repositories, db_path: Path
) -> None:
    generation, task, _member = spawn(store, "alpha")
    new = report("alpha", generation.run_id)
    result = ReportResult(
        new.task_id,
        generation.run_id,
        new.report_id,
        outcome="succeeded",
        claims=ReportClaims(changed_paths=("a.py",), questions=("why?",)),
        verification=ReportVerification("failed", ("check:1",)),
        checkpoint_id="checkpoint:x",
        extensions={"branch": "corral/alpha", "merge": "pending"},
    )
    stored = store.teams.reports.store_team_report(
        generation.run_id, task.request_id, dataclasses.replace(new, result=result)
    )

    def raw() -> str:
        with sqlite3.connect(db_path) as connection:
            (text,) = connection.execute(
                "SELECT result FROM team_reports WHERE report_id = ?", (stored.report_id,)
            ).fetchone()
        return str(text)

    head = (
        f'{{"version":1,"taskId":"{new.task_id}","runId":"{generation.run_id}","reportId":"{new.report_id}",'
    )
    tail = (
        '"outcome":"succeeded","changedPaths":["a.py"],"questions":["why?"],'
        '"verification":{"state":"failed","checkIds":["check:1"]},"acceptance":{ACCEPTANCE},'
        '"checkpointId":"checkpoint:x","branch":"corral/alpha","merge":"pending"}'
    )
    assert raw() == head + tail.replace("{ACCEPTANCE}", '{"state":"pending"}')
    assert stored.result == result
    accepted = store.teams.reports.record_report_acceptance(stored.report_id, "accepted", "fine")
    acceptance = f'{{"state":"accepted","decidedAt":{accepted.decided_at},"reason":"fine"}}'
    assert raw() == head + tail.replace("{ACCEPTANCE}", acceptance)
