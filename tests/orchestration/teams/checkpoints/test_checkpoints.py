"""Specialist checkpoints (§9): policy, id, record rules, creation, continuation, retention.

Creation and continuation run against real git repositories in tmp_path and a
real store; the draft-merging and record-rule tests build records in memory
(the same `build_draft` the creation path uses) so each bound can be hit exactly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral.orchestration import InvalidRequestError, Repositories
from corral.orchestration.teams import texts
from corral.orchestration.teams.checkpoints._checkpoints import Checkpoints
from corral.orchestration.teams.checkpoints._repository import CheckpointRow
from corral.orchestration.teams.checkpoints.records import (
    MAX_CHECKPOINT_BYTES,
    CheckpointError,
    CheckpointPolicy,
    CheckpointPolicyError,
    CheckpointRecord,
    CheckpointRecordError,
    check_report_fields,
    checkpoint_id,
    parse_checkpoint_policy,
    parse_checkpoint_ref,
)
from corral.orchestration.teams.checks._fingerprint import capture_fingerprint
from tests.orchestration.teams._checkpoint_helpers import (
    CREATED,
    TEAM,
    Clock,
    fingerprint,
    make_record,
    record_text,
    report_record,
    save,
)
from tests.orchestration.teams._git_helpers import git, make_repo

DAY = 86_400_000
RESUBMIT = "Correct the report fields and resubmit report_and_exit."


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Repositories]:
    with Repositories.open(tmp_path / "home" / "corral.db") as opened:
        yield opened


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def checkpoints(store: Repositories, clock: Clock) -> Checkpoints:
    return Checkpoints(store.teams.checkpoints, clock=clock)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path / "repo",
        {"src/auth.py": "def login(): ...\n", "src/config.py": "TTL = 5\n", "docs/readme.md": "docs\n"},
    )


# --- policy and id -------------------------------------------------------------------------------


def test_policy_is_normalized_with_defaults() -> None:
    policy = parse_checkpoint_policy({"inputs": ["src/b", "src/a", "src/b"], "decisions": ["Keep the API."]})
    assert policy == CheckpointPolicy(("src/a", "src/b"), retention_days=30, decisions=("Keep the API.",))
    assert policy.to_json() == {
        "inputs": ["src/a", "src/b"],
        "retentionDays": 30,
        "decisions": ["Keep the API."],
    }
    assert parse_checkpoint_policy({"inputs": ["."], "retentionDays": 1}).retention_days == 1
    assert parse_checkpoint_policy({"inputs": ["src"], "retentionDays": 365}).retention_days == 365
    assert parse_checkpoint_policy({"inputs": ["src"], "retentionDays": 7.0}).retention_days == 7


@pytest.mark.parametrize(
    "value",
    [
        None,
        False,
        "src",
        {},
        {"inputs": []},
        {"inputs": "src"},
        {"inputs": [""]},
        {"inputs": ["  "]},
        {"inputs": [7]},
        {"inputs": ["../secret"]},
        {"inputs": ["src/../secret"]},
        {"inputs": ["src\\..\\secret"]},
        {"inputs": ["/tmp/source"]},
        {"inputs": ["C:\\source"]},
        {"inputs": ["c:source"]},
        {"inputs": ["src\0secret"]},
        {"inputs": ["x" * 2049]},
        {"inputs": [f"file-{i}" for i in range(65)]},
        {"inputs": ["src"], "retentionDays": 0},
        {"inputs": ["src"], "retentionDays": 366},
        {"inputs": ["src"], "retentionDays": 1.5},
        {"inputs": ["src"], "retentionDays": True},
        {"inputs": ["src"], "retentionDays": "30"},
        {"inputs": ["src"], "retentionDays": None},
        {"inputs": ["src"], "decisions": [""]},
        {"inputs": ["src"], "decisions": ["d"] * 33},
        {"inputs": ["src"], "decisions": ["x" * 4097]},
        {"inputs": ["src"], "decisions": None},
        {"inputs": ["src"], "execute": "make test"},
    ],
)
def test_invalid_policies_are_refused(value: object) -> None:
    with pytest.raises(CheckpointPolicyError, match=r"^Invalid checkpoint policy\.$") as raised:
        parse_checkpoint_policy(value)
    assert isinstance(raised.value, InvalidRequestError)
    assert raised.value.details["reason"]


def test_policy_bounds_are_inclusive() -> None:
    policy = parse_checkpoint_policy({"inputs": [f"f{i}" for i in range(64)], "decisions": ["x" * 4096] * 32})
    assert len(policy.inputs) == 64
    assert len(policy.decisions) == 32
    assert parse_checkpoint_policy({"inputs": ["x" * 2048]}).inputs == ("x" * 2048,)


def test_checkpoint_id_hashes_team_agent_and_run() -> None:
    expected = hashlib.sha256('["session-lé","auth","run-1"]'.encode()).hexdigest()
    assert checkpoint_id("session-lé", "auth", "run-1") == f"checkpoint:{expected}"
    assert checkpoint_id("session-lé", "auth", "run-2") != checkpoint_id("session-lé", "auth", "run-1")


@pytest.mark.parametrize(
    "value",
    [
        "checkpoint:" + "A" * 64,
        "checkpoint:" + "a" * 63,
        "checkpoint:" + "a" * 65,
        " checkpoint:" + "a" * 64,
        "checkpoint:" + "a" * 64 + "\n",
        "a" * 64,
        "checkpoint:" + "g" * 64,
        7,
        None,
    ],
)
def test_only_exact_checkpoint_ids_are_accepted(value: object) -> None:
    with pytest.raises(CheckpointError, match="exact checkpoint:<64 hex> id"):
        parse_checkpoint_ref(value)


def test_exact_checkpoint_id_passes() -> None:
    ref = "checkpoint:" + "0123456789abcdef" * 4
    assert parse_checkpoint_ref(ref) == ref


# --- record rules --------------------------------------------------------------------------------


def _mutations() -> list[tuple[str, Any]]:
    def set_path(data: dict[str, Any], path: str, value: Any) -> None:
        *parents, last = path.split("/")
        target: Any = data
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    def change(path: str, value: Any) -> Any:
        return lambda data: set_path(data, path, value)

    def drop(path: str) -> Any:
        *parents, last = path.split("/")

        def apply(data: dict[str, Any]) -> None:
            target: Any = data
            for part in parents:
                target = target[int(part)] if isinstance(target, list) else target[part]
            del target[last]

        return apply

    other = fingerprint(cwd="/w/elsewhere", root="/w/elsewhere")

    def outside(data: dict[str, Any]) -> None:
        for side in ("before", "after"):
            data["reports"][0]["source"][side].update(cwd="/w/other", inputs=["../other/src"])

    return [
        ("version", change("version", 2)),
        ("state", change("state", "deleted")),
        ("extra key", change("execute", "rm -rf /")),
        ("missing questions", drop("questions")),
        ("id of another run", change("id", checkpoint_id(TEAM, "auth-review", "run-9"))),
        ("id format", change("id", "checkpoint:" + "A" * 64)),
        ("parent is itself", lambda d: d.__setitem__("parentId", d["id"])),
        ("report id of another run", change("reportId", "report:session-lead:auth-review:run-9")),
        ("expiry arithmetic", change("expiresAt", CREATED + 30 * DAY - 1)),
        ("alias tier", change("author/modelSlot", "reading-default")),
        ("policy not normalized", change("policy/inputs", ["src", "docs"])),
        ("policy missing default", drop("policy/decisions")),
        ("policy retention as a float", change("policy/retentionDays", 30.0)),
        ("assignment too long", change("assignment/current", "x" * 16_385)),
        ("duplicate report ids", lambda d: d["reports"].append(dict(d["reports"][0]))),
        ("finding of unknown report", change("findings/0/reportId", "report:session-lead:x:run-9")),
        ("evidence of unknown report", change("inspectedEvidence/0/reportId", "report:session-lead:x:run-9")),
        ("duplicate finding ids", lambda d: d["findings"].append(dict(d["findings"][0]))),
        ("before inputs differ from policy", change("reports/0/source/before/inputs", ["docs"])),
        ("after cwd differs", change("reports/0/source/after", other.to_json())),
        ("relative report path", change("reports/0/path", "reports/x.md")),
        ("cwd outside root", outside),
        ("bad verification", change("reports/0/verification", "accepted")),
        ("bad fingerprint", change("reports/0/source/after/fingerprint", "xyz")),
        ("createdAt negative", change("createdAt", -1)),
        ("too many questions", change("questions", [f"q{i}" for i in range(33)])),
    ]


@pytest.mark.parametrize(("name", "mutate"), _mutations(), ids=[name for name, _ in _mutations()])
def test_record_rules_reject_each_broken_record(name: str, mutate: Any) -> None:
    record = make_record(
        details={"findings": [{"id": "F1", "text": "t", "evidence": []}], "inspectedEvidence": ["a.py"]}
    )
    data = json.loads(record_text(record))
    assert CheckpointRecord.from_json(data) == record
    mutate(data)
    with pytest.raises(CheckpointRecordError):
        CheckpointRecord.from_json(data)


def _measure(data: Any) -> int:
    return len(json.dumps(data, indent=2, ensure_ascii=False).encode())


def _padded(size: int) -> dict[str, Any]:
    """A valid record whose 2-space pretty JSON is exactly `size` bytes."""
    data: dict[str, Any] = json.loads(record_text(make_record()))
    questions: list[str] = data["questions"]
    while (missing := size - _measure(data)) > 0:
        if not questions or len(questions[-1]) == 4096:
            questions.append("q")
            continue
        questions[-1] += "q" * min(missing, 4096 - len(questions[-1]))
    assert _measure(data) == size
    return data


def test_the_64_kib_bound_is_exact() -> None:
    fits = _padded(MAX_CHECKPOINT_BYTES)
    assert CheckpointRecord.from_json(fits).pretty_bytes() == MAX_CHECKPOINT_BYTES
    over = json.loads(json.dumps(fits))
    over["questions"][-1] += "q"
    with pytest.raises(CheckpointRecordError, match="65537 bytes"):
        CheckpointRecord.from_json(over)


# --- creation on report --------------------------------------------------------------------------


async def _create(
    checkpoints: Checkpoints,
    repo: Path,
    tmp_path: Path,
    *,
    run_id: str = "run-1",
    agent: str = "auth-review",
    prompt: str = "Review auth.",
    policy: CheckpointPolicy | None = None,
    parent: CheckpointRecord | None = None,
    details: dict[str, Any] | None = None,
    created_at: int = CREATED,
    between: Any = None,
) -> CheckpointRecord:
    policy = policy or parse_checkpoint_policy({"inputs": ["src"], "decisions": ["Tokens stay signed."]})
    before = await checkpoints.capture_before(repo, policy)
    if between is not None:
        between()
    markdown = tmp_path / "reports" / f"{agent}-{run_id}.md"
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text("Full report.\n")
    return await checkpoints.record(
        team=TEAM,
        agent=agent,
        run_id=run_id,
        model_slot="reading-default",
        cwd=repo,
        prompt=prompt,
        policy=policy,
        parent=parent,
        report=report_record(
            agent=agent, run_id=run_id, markdown=markdown, created_at=created_at, details=details
        ),
        source_before=before,
    )


async def test_record_saves_a_ready_checkpoint(
    checkpoints: Checkpoints, store: Repositories, repo: Path, tmp_path: Path
) -> None:
    details = {
        "findings": [{"id": "F1", "text": "Tokens are not checked.", "evidence": ["src/auth.py:1"]}],
        "inspectedEvidence": ["src/auth.py", "src/auth.py", "src/config.py"],
        "questions": ["Rotate keys?", "Rotate keys?"],
    }
    record = await _create(checkpoints, repo, tmp_path, details=details)
    own = "report:session-lead:auth-review:run-1"
    assert record.id == checkpoint_id(TEAM, "auth-review", "run-1")
    assert record.author.model_slot == "read-review"
    assert (record.created_at, record.expires_at) == (CREATED, CREATED + 30 * DAY)
    assert (record.assignment_original, record.assignment_current, record.parent_id) == (
        "Review auth.",
        "Review auth.",
        None,
    )
    assert [r.id for r in record.reports] == [own]
    report = record.reports[0]
    assert report.before.inputs == report.after.inputs == ("src",)
    assert report.before.fingerprint == report.after.fingerprint
    assert report.lead_decisions == ("Tokens stay signed.",)
    assert [item.reference for item in record.inspected_evidence] == ["src/auth.py", "src/config.py"]
    assert record.questions == ("Rotate keys?",)
    assert list(record.to_json()) == [
        "version",
        "state",
        "id",
        "author",
        "createdAt",
        "expiresAt",
        "assignment",
        "policy",
        "reportId",
        "reports",
        "findings",
        "inspectedEvidence",
        "questions",
    ]
    row = store.teams.checkpoints.get_checkpoint(record.id)
    assert row is not None and row.state == "ready"
    assert json.loads(row.record) == record.to_json()
    assert checkpoints.load(record.id) == record


async def test_a_retry_returns_the_saved_checkpoint_without_capturing_again(
    checkpoints: Checkpoints, repo: Path, tmp_path: Path
) -> None:
    policy = parse_checkpoint_policy({"inputs": ["src"]})
    before = await checkpoints.capture_before(repo, policy)
    markdown = tmp_path / "auth-review.md"
    markdown.write_text("Full report.\n")
    arguments: dict[str, Any] = {
        "team": TEAM,
        "agent": "auth-review",
        "run_id": "run-1",
        "model_slot": "read-review",
        "cwd": repo,
        "prompt": "Review auth.",
        "policy": policy,
        "parent": None,
        "report": report_record(markdown=markdown),
        "source_before": before,
    }
    first = await checkpoints.record(**arguments)
    (repo / "src" / "auth.py").write_text("def login(): return True\n")
    again = await checkpoints.record(**arguments)
    assert again == first
    assert again.reports[0].after == before  # the stored observation, not a new capture


async def test_a_different_record_under_the_same_id_is_immutable(
    checkpoints: Checkpoints, repo: Path, tmp_path: Path
) -> None:
    first = await _create(checkpoints, repo, tmp_path)
    with pytest.raises(CheckpointError, match=rf"^Checkpoint {first.id} is immutable\.$"):
        await _create(checkpoints, repo, tmp_path, prompt="Review something else.")


async def test_save_compares_with_a_row_written_meanwhile(
    checkpoints: Checkpoints, store: Repositories, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await _create(checkpoints, repo, tmp_path)
    monkeypatch.setattr(
        store.teams.checkpoints, "get_checkpoint", lambda cid: None
    )  # as if another process saved first
    assert await _create(checkpoints, repo, tmp_path) == first  # identical replay is fine
    (repo / "src" / "auth.py").write_text("changed\n")
    with pytest.raises(CheckpointError, match="is immutable"):
        await _create(checkpoints, repo, tmp_path)


@pytest.mark.parametrize(
    ("details", "where"),
    [
        ({"findings": [{"id": f"F{i}", "text": "t", "evidence": []} for i in range(101)]}, "/findings"),
        ({"findings": [{"id": "F" * 257, "text": "t", "evidence": []}]}, "/findings/0/id"),
        ({"findings": [{"id": "F1", "text": "t" * 4097, "evidence": []}]}, "/findings/0/text"),
        ({"findings": [{"id": "F1", "text": "t", "evidence": ["e"] * 33}]}, "/findings/0/evidence"),
        ({"findings": [{"id": "F1", "text": "t", "evidence": ["e" * 2049]}]}, "/findings/0/evidence/0"),
        ({"findings": [{"id": "F1", "text": "t", "evidence": []}] * 2}, "/findings"),
        ({"inspectedEvidence": [f"e{i}" for i in range(129)]}, "/inspectedEvidence"),
        ({"inspectedEvidence": ["e" * 2049]}, "/inspectedEvidence/0"),
        ({"questions": [f"q{i}" for i in range(33)]}, "/questions"),
        ({"questions": ["q" * 4097]}, "/questions/0"),
    ],
)
async def test_report_fields_beyond_the_bounds_ask_for_a_resubmission(
    checkpoints: Checkpoints,
    store: Repositories,
    repo: Path,
    tmp_path: Path,
    details: dict[str, Any],
    where: str,
) -> None:
    with pytest.raises(CheckpointError, match=rf"^Checkpoint report {where}: .*{RESUBMIT}$"):
        check_report_fields(details)
    with pytest.raises(CheckpointError, match=RESUBMIT):
        await _create(checkpoints, repo, tmp_path, details=details)
    assert store.teams.checkpoints.checkpoint_rows() == ()


def test_duplicates_are_removed_before_the_bounds_apply() -> None:
    check_report_fields({"inspectedEvidence": [f"e{i % 128}" for i in range(300)], "questions": ["q"] * 40})


async def test_a_report_too_large_for_any_checkpoint_is_refused(
    checkpoints: Checkpoints, store: Repositories, repo: Path, tmp_path: Path
) -> None:
    details = {"findings": [{"id": f"F{i}", "text": "t" * 4096, "evidence": []} for i in range(20)]}
    with pytest.raises(CheckpointError, match="was not saved: even without older history"):
        await _create(checkpoints, repo, tmp_path, details=details)
    assert store.teams.checkpoints.checkpoint_rows() == ()


async def test_a_report_without_its_markdown_copy_saves_nothing(
    checkpoints: Checkpoints, store: Repositories, repo: Path
) -> None:
    policy = parse_checkpoint_policy({"inputs": ["src"]})
    with pytest.raises(CheckpointError, match="provenance is unavailable"):
        await checkpoints.record(
            team=TEAM,
            agent="auth-review",
            run_id="run-1",
            model_slot="read-review",
            cwd=repo,
            prompt="p",
            policy=policy,
            parent=None,
            report=report_record(markdown=None),
            source_before=await checkpoints.capture_before(repo, policy),
        )
    assert store.teams.checkpoints.checkpoint_rows() == ()


async def test_a_report_of_another_run_is_refused(checkpoints: Checkpoints, repo: Path) -> None:
    policy = parse_checkpoint_policy({"inputs": ["src"]})
    with pytest.raises(CheckpointError, match="binding changed"):
        await checkpoints.record(
            team=TEAM,
            agent="auth-review",
            run_id="run-2",
            model_slot="read-review",
            cwd=repo,
            prompt="p",
            policy=policy,
            parent=None,
            report=report_record(run_id="run-1"),
            source_before=await checkpoints.capture_before(repo, policy),
        )


# --- continuation drafts -------------------------------------------------------------------------


def _chain(length: int, **kwargs: Any) -> CheckpointRecord:
    """A record with `length` retained reports (each continuation adds one)."""
    record = make_record(run_id="run-0", **kwargs)
    for index in range(1, length):
        record = make_record(run_id=f"run-{index}", parent=record, **kwargs)
    return record


def test_a_continuation_keeps_the_first_report_and_14_recent_ones() -> None:
    parent = _chain(16)
    assert len(parent.reports) == 16
    child = make_record(run_id="run-16", parent=parent, prompt="Recheck.")
    ids = [r.id.rsplit(":", 1)[1] for r in child.reports]
    assert ids == ["run-0", *(f"run-{i}" for i in range(2, 17))]
    assert child.parent_id == parent.id
    assert (child.assignment_original, child.assignment_current) == ("Review auth.", "Recheck.")
    CheckpointRecord.from_json(json.loads(record_text(child)))


def test_the_parents_own_report_inherits_its_decisions_when_it_had_none() -> None:
    policy = CheckpointPolicy(("src",), decisions=("Anonymous stays denied.",))
    parent = make_record(run_id="run-0", policy=policy)
    bare = dataclasses.replace(
        parent, reports=tuple(dataclasses.replace(r, lead_decisions=None) for r in parent.reports)
    )
    child = make_record(run_id="run-1", parent=bare)
    assert child.reports[0].lead_decisions == ("Anonymous stays denied.",)
    assert child.reports[1].lead_decisions == ()  # the child's own policy has no decisions


def test_findings_evidence_and_questions_merge_new_first_within_caps() -> None:
    parent = make_record(
        run_id="run-0",
        details={
            "findings": [{"id": f"F{i}", "text": "old", "evidence": []} for i in range(60)],
            "inspectedEvidence": [f"old-{i}" for i in range(100)],
            "questions": [f"q{i}" for i in range(20)],
        },
    )
    child = make_record(
        run_id="run-1",
        parent=parent,
        details={
            "findings": [{"id": f"F{i}", "text": "new", "evidence": []} for i in range(50, 100)],
            "inspectedEvidence": [f"new-{i}" for i in range(50)],
            "questions": ["q5", "new question"] + [f"n{i}" for i in range(18)],
        },
    )
    assert [f.text for f in child.findings[:50]] == ["new"] * 50
    assert [f.id for f in child.findings[50:]] == [f"F{i}" for i in range(50)]  # F50..F59 were updated
    assert len(child.inspected_evidence) == 128
    assert [e.reference for e in child.inspected_evidence[:50]] == [f"new-{i}" for i in range(50)]
    assert [e.reference for e in child.inspected_evidence[50:]] == [f"old-{i}" for i in range(78)]
    assert len(child.questions) == 32
    assert child.questions[:20] == ("q5", "new question", *(f"n{i}" for i in range(18)))
    assert child.questions[20:] == tuple(q for q in (f"q{i}" for i in range(20)) if q != "q5")[:12]


def test_oversized_history_drops_second_oldest_reports_then_inherited_questions() -> None:
    record = make_record(
        run_id="run-0", details={"findings": [{"id": "F0", "text": "first", "evidence": []}]}
    )
    for index in range(1, 15):
        finding = {"id": f"B{index}", "text": "t" * 3000, "evidence": []}
        record = make_record(run_id=f"run-{index}", parent=record, details={"findings": [finding]})
    assert len(record.reports) == 15 and record.pretty_bytes() <= MAX_CHECKPOINT_BYTES
    new = [{"id": f"N{i}", "text": "n" * 4000, "evidence": []} for i in range(3)]
    child = make_record(run_id="run-15", parent=record, details={"findings": new})
    kept = [r.id.rsplit(":", 1)[1] for r in child.reports]
    assert 2 < len(kept) < 16
    assert kept == ["run-0", *(f"run-{i}" for i in range(17 - len(kept), 15)), "run-15"]
    assert child.pretty_bytes() <= MAX_CHECKPOINT_BYTES
    assert {f.id for f in child.findings} == {
        "N0",
        "N1",
        "N2",
        "F0",
        *(f"B{i}" for i in range(17 - len(kept), 15)),
    }
    CheckpointRecord.from_json(json.loads(record_text(child)))

    inherited = [f"p{i}" + "q" * 3990 for i in range(7)]
    parent = make_record(run_id="run-0", details={"questions": inherited})
    fresh = [f"n{i}" + "r" * 3990 for i in range(9)]
    second = make_record(run_id="run-1", parent=parent, details={"questions": fresh})
    assert len(second.reports) == 2
    assert second.questions[:9] == tuple(fresh)  # the report's own questions all stay
    assert 9 <= len(second.questions) < 16
    assert second.questions[9:] == tuple(inherited[: len(second.questions) - 9])
    assert second.pretty_bytes() <= MAX_CHECKPOINT_BYTES
    bigger = dataclasses.replace(second, questions=(*second.questions, inherited[len(second.questions) - 9]))
    assert bigger.pretty_bytes() > MAX_CHECKPOINT_BYTES  # no more was dropped than needed


# --- loading, retirement, expiry -----------------------------------------------------------------


def test_load_fails_visibly(checkpoints: Checkpoints, store: Repositories, clock: Clock) -> None:
    missing = "checkpoint:" + "0" * 64
    with pytest.raises(
        CheckpointError, match=rf"^Checkpoint unavailable: {missing}\. Request a new checkpoint\.$"
    ):
        checkpoints.load(missing)
    record = make_record()
    save(store, record)
    assert checkpoints.load(record.id) == record
    checkpoints.delete(record.id)
    with pytest.raises(
        CheckpointError, match=rf"^Checkpoint {record.id} was deleted\. Request a new checkpoint\.$"
    ):
        checkpoints.load(record.id)


def test_expiry_is_exact(checkpoints: Checkpoints, store: Repositories, clock: Clock) -> None:
    record = make_record(policy=CheckpointPolicy(("src",), retention_days=1))
    save(store, record)
    assert record.expires_at == CREATED + DAY
    clock.ms = record.expires_at - 1
    assert checkpoints.load(record.id) == record
    assert checkpoints.list_lines() == [
        f"{record.id} | auth-review | read-review | ready | expires 2023-11-15T22:13:20.000Z"
    ]
    assert checkpoints.retire_expired() == []
    assert store.teams.checkpoints.get_checkpoint(record.id).state == "ready"  # type: ignore[union-attr]
    clock.ms = record.expires_at
    with pytest.raises(
        CheckpointError, match=rf"^Checkpoint {record.id} has expired\. Request a new checkpoint\.$"
    ):
        checkpoints.load(record.id)
    assert checkpoints.list_lines()[0].endswith("| expired | expires 2023-11-15T22:13:20.000Z")
    assert checkpoints.retire_expired() == []
    row = store.teams.checkpoints.get_checkpoint(record.id)
    assert row is not None and (row.state, row.retired_at) == ("expired", record.expires_at)
    assert json.loads(row.record) == {
        "version": 1,
        "id": record.id,
        "state": "expired",
        "retiredAt": record.expires_at,
    }
    with pytest.raises(CheckpointError, match="was expired"):
        checkpoints.load(record.id)
    assert checkpoints.list_lines() == [f"{record.id} | expired"]


def test_delete_retires_for_good_and_drops_the_payload(
    checkpoints: Checkpoints, store: Repositories, clock: Clock
) -> None:
    record = make_record(details={"findings": [{"id": "F1", "text": "secret detail", "evidence": []}]})
    save(store, record)
    confirmation = checkpoints.delete(record.id)
    assert confirmation == (
        f"{record.id} is deleted. Future continuations cannot load it. Independent reports and previously "
        "delivered context are unchanged."
    )
    row = store.teams.checkpoints.get_checkpoint(record.id)
    assert row is not None and row.state == "deleted" and "secret detail" not in row.record
    clock.ms += 5
    assert checkpoints.delete(record.id) == confirmation  # a no-op retry confirms the same state
    assert store.teams.checkpoints.get_checkpoint(record.id) == row
    store.teams.checkpoints.insert_checkpoint(
        record.id, record_text(record), created_at=record.created_at, expires_at=record.expires_at
    )
    assert store.teams.checkpoints.get_checkpoint(record.id) == row  # a replayed save cannot revive it
    assert checkpoints.list_lines() == [f"{record.id} | deleted"]


async def test_a_deleted_checkpoint_is_never_saved_again(
    checkpoints: Checkpoints, repo: Path, tmp_path: Path
) -> None:
    record = await _create(checkpoints, repo, tmp_path)
    checkpoints.delete(record.id)
    with pytest.raises(CheckpointError, match="was deleted"):
        await _create(checkpoints, repo, tmp_path)


def test_delete_unknown_or_inexact_ids(checkpoints: Checkpoints) -> None:
    with pytest.raises(CheckpointError, match="Checkpoint unavailable"):
        checkpoints.delete("checkpoint:" + "1" * 64)
    with pytest.raises(CheckpointError, match="exact checkpoint"):
        checkpoints.delete("checkpoint:1")


def _corrupt(store: Repositories, cid: str, text: str) -> None:
    with sqlite3.connect(store.db.path) as conn:
        conn.execute("UPDATE checkpoints SET record = ? WHERE checkpoint_id = ?", (text, cid))
    conn.close()


def test_corrupt_rows_are_reported_and_healthy_siblings_untouched(
    checkpoints: Checkpoints, store: Repositories, clock: Clock
) -> None:
    healthy = make_record(run_id="run-1")
    due = make_record(run_id="run-2", policy=CheckpointPolicy(("src",), retention_days=1))
    broken = make_record(run_id="run-3", policy=CheckpointPolicy(("src",), retention_days=1))
    for record in (healthy, due, broken):
        save(store, record)
    tampered = (
        record_text(broken)
        .replace('"Review auth."', '"Do something else."', 1)
        .replace('"retentionDays":1', '"retentionDays":2')
    )
    _corrupt(store, broken.id, tampered)
    clock.ms = CREATED + DAY
    warnings = checkpoints.retire_expired()
    assert len(warnings) == 1 and warnings[0].startswith(
        f"Checkpoint {broken.id} is corrupt or incompatible ("
    )
    assert store.teams.checkpoints.get_checkpoint(due.id).state == "expired"  # type: ignore[union-attr]
    assert store.teams.checkpoints.get_checkpoint(healthy.id).state == "ready"  # type: ignore[union-attr]
    row = store.teams.checkpoints.get_checkpoint(broken.id)
    assert row is not None and (row.state, row.record) == ("ready", tampered)  # never auto-expired
    lines, list_warnings = checkpoints.list_entries()
    assert {line.split(" | ")[0] for line in lines} == {healthy.id, due.id}
    assert list_warnings == warnings
    assert checkpoints.list_lines()[-1] == warnings[0]
    with pytest.raises(CheckpointError, match=rf"^Checkpoint {broken.id} is corrupt or incompatible"):
        checkpoints.load(broken.id)
    assert "deleted" in checkpoints.delete(broken.id)  # corrupt data may be deleted explicitly
    with pytest.raises(CheckpointError, match="was deleted"):
        checkpoints.load(broken.id)


def test_unparsable_rows_are_corrupt(checkpoints: Checkpoints, store: Repositories) -> None:
    record = make_record()
    save(store, record)
    _corrupt(store, record.id, "{not json")
    with pytest.raises(CheckpointError, match=r"corrupt or incompatible \(record is not JSON\)"):
        checkpoints.load(record.id)
    assert checkpoints.list_lines()[0] == "No specialist checkpoints saved."


def test_an_empty_store_lists_nothing(checkpoints: Checkpoints) -> None:
    assert checkpoints.list_lines() == ["No specialist checkpoints saved."]
    assert checkpoints.list_entries() == ([], [])


def test_retirement_is_compare_and_set(store: Repositories) -> None:
    record = make_record()
    save(store, record)
    text = record_text(record)
    retired = json.dumps({"version": 1, "id": record.id, "state": "deleted", "retiredAt": 5})
    common: dict[str, Any] = {"state": "deleted", "record": retired, "retired_at": 5}
    assert not store.teams.checkpoints.retire_checkpoint(
        record.id, expected_state="ready", expected_record=text + " ", **common
    )
    assert store.teams.checkpoints.retire_checkpoint(
        record.id, expected_state="ready", expected_record=text, **common
    )
    assert not store.teams.checkpoints.retire_checkpoint(
        record.id, expected_state="ready", expected_record=text, **common
    )
    assert store.teams.checkpoints.get_checkpoint(record.id) == CheckpointRow(
        record.id, "deleted", retired, CREATED, record.expires_at, 5
    )


def test_the_table_refuses_inconsistent_rows(store: Repositories) -> None:
    with sqlite3.connect(store.db.path) as conn:
        for sql in (
            "INSERT INTO checkpoints VALUES ('checkpoint:x', 'ready', '{}', 1, 2, NULL)",
            f"INSERT INTO checkpoints VALUES ('checkpoint:{'a' * 64}', 'ready', '{{}}', 1, 2, 3)",
            f"INSERT INTO checkpoints VALUES ('checkpoint:{'a' * 64}', 'deleted', '{{}}', 1, 2, NULL)",
            f"INSERT INTO checkpoints VALUES ('checkpoint:{'a' * 64}', 'ready', '{{}}', NULL, 2, NULL)",
            f"INSERT INTO checkpoints VALUES ('checkpoint:{'a' * 64}', 'gone', '{{}}', 1, 2, 3)",
        ):
            with pytest.raises(sqlite3.IntegrityError):
                conn.execute(sql)
    conn.close()


# --- continuation ----------------------------------------------------------------------------


async def test_continuation_prompt_and_revalidation(
    checkpoints: Checkpoints, repo: Path, tmp_path: Path
) -> None:
    parent = await _create(checkpoints, repo, tmp_path, run_id="run-1")
    policy = checkpoints.inherited_policy(parent, None)
    assert policy == CheckpointPolicy(("src",), retention_days=30)  # decisions are not re-authorized
    prompt = texts.continuation_prompt(await checkpoints.continuation(parent, cwd=repo, prompt="Recheck F1."))
    parts = prompt.split("\n\n")
    assert parts[0] == texts.CONTINUATION_PREAMBLE
    assert json.loads(parts[1]) == parent.to_json()
    assert parts[1] == record_text(parent)
    assert parts[2] == "Source applicability:"
    assert json.loads(parts[3]) == [
        {
            "reportId": parent.report_id,
            "required": False,
            "reason": "Observed scope unchanged; findings remain reported claims.",
        }
    ]
    assert parts[4] == texts.REVALIDATION_INSTRUCTION
    assert parts[5] == "Current assignment (authoritative):\nRecheck F1."

    (repo / "docs" / "readme.md").write_text("outside the scope\n")
    entries = await checkpoints.revalidation(parent, cwd=repo)
    assert [e.required for e in entries] == [False]
    (repo / "src" / "config.py").write_text("TTL = 50\n")
    entries = await checkpoints.revalidation(parent, cwd=repo)
    assert [(e.required, e.reason) for e in entries] == [(True, "Dependency scope or workspace changed.")]

    git(repo, "rm", "-rqf", "src")
    entries = await checkpoints.revalidation(parent, cwd=repo)
    assert entries[0].required
    assert entries[0].reason.startswith(
        "Source comparison unavailable: No tracked or nonignored source inputs"
    )


async def test_source_changed_during_the_earlier_investigation(
    checkpoints: Checkpoints, repo: Path, tmp_path: Path
) -> None:
    record = await _create(
        checkpoints, repo, tmp_path, between=lambda: (repo / "src" / "auth.py").write_text("edited\n")
    )
    assert record.reports[0].before.fingerprint != record.reports[0].after.fingerprint
    entries = await checkpoints.revalidation(record, cwd=repo)
    assert [(e.required, e.reason) for e in entries] == [
        (True, "Source changed during the earlier investigation.")
    ]


async def test_a_continuation_checkpoint_chains_and_compares_each_retained_scope(
    checkpoints: Checkpoints, repo: Path, tmp_path: Path, clock: Clock
) -> None:
    parent = await _create(
        checkpoints,
        repo,
        tmp_path,
        run_id="run-1",
        details={"findings": [{"id": "F1", "text": "a", "evidence": []}]},
    )
    policy = checkpoints.inherited_policy(parent, parse_checkpoint_policy({"inputs": ["docs"]}))
    assert policy.inputs == ("docs",)
    child = await _create(
        checkpoints,
        repo,
        tmp_path,
        run_id="run-2",
        agent="auth-followup",
        prompt="Recheck.",
        policy=policy,
        parent=checkpoints.load(parent.id),
        created_at=CREATED + 1,
    )
    assert child.parent_id == parent.id
    assert child.assignment_original == "Review auth."
    assert [r.before.inputs for r in child.reports] == [("src",), ("docs",)]
    assert [f.id for f in child.findings] == ["F1"]
    (repo / "docs" / "readme.md").write_text("changed docs\n")
    before = await capture_fingerprint(repo, ["docs"])
    entries = await checkpoints.revalidation(child, cwd=repo, source_before=before)
    assert [(e.report_id, e.required) for e in entries] == [
        (parent.report_id, False),
        (child.report_id, True),
    ]


async def test_continuation_rereads_the_checkpoint_at_launch(
    checkpoints: Checkpoints, store: Repositories, repo: Path, tmp_path: Path
) -> None:
    record = await _create(checkpoints, repo, tmp_path)
    loaded = checkpoints.load(record.id)
    checkpoints.delete(record.id)
    with pytest.raises(CheckpointError, match="was deleted"):
        await checkpoints.continuation(loaded, cwd=repo, prompt="Go.")


async def test_revalidation_outside_a_repository_is_unavailable(
    checkpoints: Checkpoints, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    entries = await checkpoints.revalidation(make_record(), cwd=plain)
    assert entries[0].required and entries[0].reason.startswith("Source comparison unavailable: ")
    assert "not inside a Git repository" in entries[0].reason
