"""Team cost accounting over real session files: per agent, combined, forks counted once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.llm import AssistantMessage, Cost, TextContent, Usage, UserMessage
from corral.orchestration.teams._costs import SessionCost, session_cost, team_costs
from corral.session import SessionManager, fork_from


def _usage(cost: float, *, tokens: int = 10) -> Usage:
    return Usage(
        input=tokens,
        output=tokens * 2,
        cache_read=tokens * 3,
        cache_write=tokens * 4,
        total_tokens=tokens * 10,
        cost=Cost(total=cost),
    )


def _reply(text: str, cost: float, *, tokens: int = 10) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)],
        api="scripted",
        provider="scripted",
        model="m",
        usage=_usage(cost, tokens=tokens),
    )


def _session(root: Path, cwd: Path, *costs: float) -> Path:
    with SessionManager.create(cwd, sessions_root=root) as session:
        for index, cost in enumerate(costs):
            session.append_message(UserMessage(content=f"turn {index}"))
            session.append_message(_reply(f"done {index}", cost))
        assert session.path is not None
        return session.path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


def test_session_cost_sums_every_assistant_message_and_token_kind(tmp_path: Path, root: Path) -> None:
    path = _session(root, tmp_path, 0.5, 0.25)

    cost = session_cost(path)

    header = json.loads(path.read_text().splitlines()[0])
    assert cost == SessionCost(
        session_id=header["id"],
        path=path,
        input_tokens=20,
        output_tokens=40,
        cache_read_tokens=60,
        cache_write_tokens=80,
        cost_usd=pytest.approx(0.75),  # type: ignore[arg-type]
        complete=True,
    )
    assert cost.total_tokens == 200


def test_compaction_summary_usage_is_counted(tmp_path: Path, root: Path) -> None:
    with SessionManager.create(tmp_path, sessions_root=root) as session:
        session.append_message(UserMessage(content="one"))
        kept = session.append_message(_reply("a", 1.0))
        session.append_compaction("summary", kept.id, 100, usage=_usage(0.125, tokens=1))
        path = session.path
    assert path is not None

    cost = session_cost(path)

    assert cost.cost_usd == pytest.approx(1.125)
    assert cost.input_tokens == 11
    assert cost.complete is True


def test_two_agents_and_the_lead_are_reported_and_combined(tmp_path: Path, root: Path) -> None:
    lead = _session(root, tmp_path, 1.0)
    first = _session(root, tmp_path / "a", 2.0)
    second = _session(root, tmp_path / "b", 4.0, 8.0)

    costs = team_costs(lead, [("alpha", first), ("beta", second)])

    assert costs.lead.cost_usd == pytest.approx(1.0)
    assert [(name, cost.cost_usd) for name, cost in costs.agents] == [
        ("alpha", pytest.approx(2.0)),
        ("beta", pytest.approx(12.0)),
    ]
    assert costs.combined.cost_usd == pytest.approx(15.0)
    assert costs.combined.input_tokens == 40
    assert costs.combined.session_id == costs.lead.session_id
    assert costs.combined.path is None
    assert costs.combined.complete is True


def test_a_fork_counts_shared_entries_once_in_the_combined_total(tmp_path: Path, root: Path) -> None:
    lead = _session(root, tmp_path, 1.0, 2.0)
    with fork_from(lead, tmp_path / "child", sessions_root=root) as forked:
        forked.append_message(UserMessage(content="go on"))
        forked.append_message(_reply("more", 4.0))
        child = forked.path
    assert child is not None

    costs = team_costs(lead, [("child", child)])

    # The fork holds the lead's two replies (3.0) too, but spent only 4.0 itself.
    assert costs.agents[0][1].cost_usd == pytest.approx(4.0)
    assert costs.combined.cost_usd == pytest.approx(7.0)
    assert costs.combined.input_tokens == 30


def test_a_session_file_named_twice_is_counted_once(tmp_path: Path, root: Path) -> None:
    lead = _session(root, tmp_path, 1.0)
    agent = _session(root, tmp_path / "a", 2.0)

    costs = team_costs(lead, [("first-run", agent), ("second-run", agent)])

    assert costs.combined.cost_usd == pytest.approx(3.0)


def test_a_missing_file_makes_the_cost_incomplete(tmp_path: Path, root: Path) -> None:
    lead = _session(root, tmp_path, 1.0)
    gone = root / "--x--" / "2026-01-01T00-00-00-000Z_0b5c7e9e-0000-4000-8000-000000000000.jsonl"

    costs = team_costs(lead, [("ok", _session(root, tmp_path / "a", 2.0)), ("gone", gone)])

    missing = costs.agents[1][1]
    assert missing.complete is False
    assert missing.cost_usd == 0.0
    assert missing.session_id == "0b5c7e9e-0000-4000-8000-000000000000"
    assert costs.combined.complete is False
    assert costs.combined.cost_usd == pytest.approx(3.0)


def test_an_unreadable_file_is_incomplete(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-session.jsonl"
    bad.write_text("this is not json\n")

    cost = session_cost(bad)

    assert cost.complete is False
    assert cost.cost_usd == 0.0


def test_an_assistant_message_without_usage_makes_the_cost_incomplete(tmp_path: Path, root: Path) -> None:
    path = _session(root, tmp_path, 1.0)
    lines = path.read_text().splitlines()
    entry = json.loads(lines[-1])
    del entry["message"]["usage"]
    entry["id"] = "ffff0001"
    lines.append(json.dumps(entry))
    path.write_text("\n".join(lines) + "\n")

    cost = session_cost(path)

    assert cost.cost_usd == pytest.approx(1.0)
    assert cost.complete is False
    assert team_costs(path, []).combined.complete is False
