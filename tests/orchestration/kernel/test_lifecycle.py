"""The lifecycle projection (§3): states, ownership attribution, `available_actions`, the stale advisory.

These build records directly (no database) because the projection is a pure
function of records and observations.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from corral.orchestration import (
    STALE_AFTER_MS,
    AgentView,
    AskRecord,
    ControllerScope,
    GenerationRecord,
    Observation,
    RequestRecord,
    ResultRecord,
    StoreSnapshot,
    control_state,
    display_state,
    effective_presence,
    project_agents,
    resolve_ownership,
)

NOW = 10**12
LEAD = ControllerScope("lead")
_ids = itertools.count(1)


def gen(label: str, *, session: str, owner: str = "lead", **changes: object) -> GenerationRecord:
    run_id = f"{next(_ids):08d}-0000-4000-8000-000000000000"
    record = GenerationRecord(
        run_id=run_id,
        label=label,
        definition="worker",
        owner_session_id=owner,
        parent_run_id=None,
        parent_label=None,
        delegating=False,
        cwd="/p",
        session_id=session,
        session_path=f"/s/{session}.jsonl",
        runtime_kind="inprocess",
        pid=None,
        host_id=None,
        pane_id=None,
        phase="active",
        presence="live",
        active_request_id=f"task-{run_id}",
        completed_request_id=None,
        created_at=0,
        started_at=0,
        finalized_at=None,
        last_activity_at=NOW,
        updated_at=0,
        tokens=None,
        cleanup_error=None,
        result_error=None,
        diagnostic=None,
    )
    return dataclasses.replace(record, **changes)  # type: ignore[arg-type]


def ask_for(g: GenerationRecord) -> AskRecord:
    assert g.active_request_id is not None
    return AskRecord(
        ask_id=f"ask-{g.run_id}",
        run_id=g.run_id,
        request_id=g.active_request_id,
        question="?",
        state="pending",
        reply=None,
        created_at=0,
        resolved_at=None,
        delivered_entry_id=None,
    )


def result_for(g: GenerationRecord) -> ResultRecord:
    return ResultRecord(
        request_id=f"task-{g.run_id}",
        run_id=g.run_id,
        owner_session_id=g.owner_session_id,
        status="completed",
        text="done",
        artifact_path=None,
        error_code=None,
        error_message=None,
        context_tokens=None,
        created_at=0,
        delivery="pending",
        delivered_entry_id=None,
        delivered_at=None,
    )


def unacked_for(g: GenerationRecord) -> RequestRecord:
    return RequestRecord(
        request_id=f"req-{g.run_id}",
        run_id=g.run_id,
        kind="task",
        ask_id=None,
        payload="x",
        created_at=0,
        delivered_at=None,
        acknowledged_at=None,
        accepted=None,
        ack_code=None,
        ack_message=None,
    )


def completed(g: GenerationRecord) -> GenerationRecord:
    return dataclasses.replace(
        g,
        phase="completed",
        active_request_id=None,
        completed_request_id=f"task-{g.run_id}",
        last_activity_at=None,
    )


def snap(
    *generations: GenerationRecord,
    asks: tuple[AskRecord, ...] = (),
    unacked: tuple[RequestRecord, ...] = (),
    results: tuple[ResultRecord, ...] = (),
) -> StoreSnapshot:
    return StoreSnapshot(
        generations=generations, pending_asks=asks, unacknowledged=unacked, undelivered=results, taken_at=NOW
    )


WORKING = Observation(presence="live", lifecycle="working", transcript_ready=True)
IDLE = Observation(presence="live", lifecycle="idle", transcript_ready=True)


def project(
    snapshot: StoreSnapshot,
    observations: dict[str, Observation] | None = None,
    controller: ControllerScope = LEAD,
    *,
    default: Observation = WORKING,
    now_ms: int = NOW,
) -> dict[str, AgentView]:
    obs = {g.run_id: default for g in snapshot.generations}
    obs.update(observations or {})
    return {v.generation.label: v for v in project_agents(snapshot, obs, controller, now_ms=now_ms)}


# --- §3.1 control state ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("active", "lifecycle", "waiting", "expected"),
    [
        (True, "working", False, "working"),
        (True, "working", True, "working"),
        (True, "idle", True, "blocked"),
        (True, "unknown", True, "unknown"),
        (True, "blocked", False, "blocked"),
        (True, "idle", False, "settling"),
        (True, "done", False, "settling"),
        (True, "unknown", False, "unknown"),
        (False, "idle", False, "settling"),
        (False, "done", False, "settling"),
        (False, "working", False, "unknown"),
        (False, "unknown", False, "unknown"),
    ],
)
def test_control_state_table(active: bool, lifecycle: str, waiting: bool, expected: str) -> None:
    state = control_state(
        active=active,
        lifecycle=lifecycle,  # type: ignore[arg-type]
        waiting_for_owner=waiting,
        completion_pending=False,
        handoff_pending=False,
        recovery_pending=False,
    )
    assert state == expected


@pytest.mark.parametrize("flag", ["completion_pending", "handoff_pending", "recovery_pending"])
def test_pending_completion_handoff_or_recovery_is_settling(flag: str) -> None:
    flags = {"completion_pending": False, "handoff_pending": False, "recovery_pending": False, flag: True}
    assert control_state(active=True, lifecycle="working", waiting_for_owner=False, **flags) == "settling"


@pytest.mark.parametrize(
    ("recorded", "observed", "expected"),
    [
        ("live", "live", "live"),
        ("live", "lost", "lost"),
        ("live", "unknown", "unknown"),
        ("lost", "live", "lost"),
        ("lost", "unknown", "lost"),
        ("unknown", "live", "unknown"),
        ("unknown", "lost", "unknown"),
    ],
)
def test_effective_presence_fails_closed(recorded: str, observed: str, expected: str) -> None:
    assert effective_presence(recorded, observed) == expected  # type: ignore[arg-type]


# --- states and actions --------------------------------------------------------------------------


def test_working_agent_lists_every_live_action() -> None:
    a = gen("alpha", session="sa")
    view = project(snap(a))["alpha"]
    assert view.state == "working"
    assert view.available_actions == ("inspect", "transcript", "steer", "interrupt", "close")


def test_transcript_is_listed_only_when_the_session_file_is_materialized() -> None:
    a = gen("alpha", session="sa")
    view = project(snap(a), {a.run_id: Observation(presence="live", lifecycle="working")})["alpha"]
    assert "transcript" not in view.available_actions


def test_pending_ask_blocks_and_offers_reply_not_steer() -> None:
    a = gen("alpha", session="sa")
    view = project(snap(a, asks=(ask_for(a),)), default=IDLE)["alpha"]
    assert view.state == "blocked" and view.pending_ask is not None
    assert view.available_actions == ("inspect", "transcript", "reply", "close")


def test_unacknowledged_task_is_settling_and_displayed_as_starting() -> None:
    a = gen("alpha", session="sa", phase="starting", active_request_id=None, last_activity_at=None)
    view = project(snap(a, unacked=(unacked_for(a),)))["alpha"]
    assert view.state == "settling" and display_state(view) == "starting"
    assert "steer" not in view.available_actions and "interrupt" not in view.available_actions


def test_undelivered_result_is_settling_and_not_closable_even_when_lost() -> None:
    a = completed(gen("alpha", session="sa"))
    views = project(snap(a, results=(result_for(a),)), default=IDLE)
    assert views["alpha"].state == "settling"
    assert views["alpha"].available_actions == ("inspect", "transcript")
    lost = project(
        snap(a, results=(result_for(a),)), {a.run_id: Observation(presence="lost", transcript_ready=True)}
    )
    assert lost["alpha"].state == "settling" and lost["alpha"].available_actions == ("transcript",)


def test_lost_offers_transcript_and_close_only() -> None:
    a = gen("alpha", session="sa")
    view = project(
        snap(a), {a.run_id: Observation(presence="lost", lifecycle="working", transcript_ready=True)}
    )
    assert view["alpha"].state == "lost" and view["alpha"].available_actions == ("transcript", "close")


def test_unknown_presence_offers_nothing() -> None:
    a = gen("alpha", session="sa", presence="unknown")
    view = project(snap(a))["alpha"]
    assert view.state == "unknown" and view.available_actions == ()


def test_result_error_is_settling_and_cleanup_safe() -> None:
    a = gen("alpha", session="sa", phase="result_error", active_request_id=None, result_error="disk full")
    view = project(snap(a))["alpha"]
    assert view.state == "settling" and view.available_actions == ("inspect", "transcript", "close")


def test_stale_advisory_after_ten_minutes_without_activity() -> None:
    a = gen("alpha", session="sa", last_activity_at=NOW - STALE_AFTER_MS)
    b = gen("beta", session="sb", last_activity_at=NOW - STALE_AFTER_MS + 1)
    views = project(snap(a, b))
    assert views["alpha"].stale and views["alpha"].inactive_ms == STALE_AFTER_MS
    assert views["alpha"].state == "working"  # advisory only
    assert not views["beta"].stale and views["beta"].inactive_ms is None
    blocked = project(snap(a, asks=(ask_for(a),)), default=IDLE)["alpha"]
    assert not blocked.stale


# --- ownership -----------------------------------------------------------------------------------


def _tree() -> tuple[GenerationRecord, GenerationRecord, GenerationRecord]:
    planner = gen("planner", session="sp", delegating=True)
    leaf = gen("leaf", session="sl", owner="sp", parent_run_id=planner.run_id)
    solo = gen("solo", session="ss")
    return planner, leaf, solo


def test_lead_sees_its_tree_and_acts_only_on_direct_agents() -> None:
    planner, leaf, solo = _tree()
    views = project(snap(planner, leaf, solo))
    assert set(views) == {"planner", "leaf", "solo"}
    assert views["leaf"].direct is False and views["leaf"].available_actions == ()
    assert views["leaf"].parent_label == "planner"
    assert views["planner"].children == (leaf.run_id,)


def test_delegating_agent_sees_only_its_direct_children() -> None:
    planner, leaf, solo = _tree()
    views = project(snap(planner, leaf, solo), controller=ControllerScope("sp", kind="managed-agent"))
    assert set(views) == {"leaf"}
    assert views["leaf"].direct and "steer" in views["leaf"].available_actions


def test_delegating_agent_waiting_on_children_is_blocked_and_steerable_not_interruptible() -> None:
    planner, leaf, _ = _tree()
    views = project(snap(planner, leaf), {planner.run_id: IDLE})
    assert views["planner"].state == "blocked" and views["planner"].children_gated
    assert "steer" in views["planner"].available_actions
    assert "interrupt" not in views["planner"].available_actions


def test_lead_cannot_close_a_parent_whose_descendant_is_unknown_or_undelivered() -> None:
    planner, leaf, _ = _tree()
    assert "close" in project(snap(planner, leaf))["planner"].available_actions
    unknown_leaf = dataclasses.replace(leaf, presence="unknown")
    assert "close" not in project(snap(planner, unknown_leaf))["planner"].available_actions
    done_leaf = completed(leaf)
    assert (
        "close"
        not in project(snap(planner, done_leaf, results=(result_for(done_leaf),)))[
            "planner"
        ].available_actions
    )


def test_ambiguous_ancestry_is_never_attributed() -> None:
    p1 = gen("p1", session="shared", delegating=True)
    p2 = gen("p2", session="shared", delegating=True, owner="other")
    child = gen("child", session="sc", owner="shared")
    ownership = resolve_ownership([p1, p2, child])
    assert child.run_id in ownership.unattributed
    views = project(snap(p1, p2, child))
    assert "child" not in views
    assert "close" not in views["p1"].available_actions  # the cascade plan cannot be proven


def test_cyclic_ancestry_is_never_attributed() -> None:
    a = gen("a", session="sa", owner="sb")
    b = gen("b", session="sb", owner="sa")
    ownership = resolve_ownership([a, b])
    assert ownership.unattributed == {a.run_id, b.run_id}
    assert project(snap(a, b), controller=ControllerScope("sa", kind="managed-agent")) == {}


def test_recorded_parent_that_disagrees_or_is_gone_is_unattributed() -> None:
    planner, leaf, _ = _tree()
    orphan = gen(
        "orphan", session="so", owner="vanished", parent_run_id="99999999-0000-4000-8000-000000000000"
    )
    wrong = dataclasses.replace(leaf, parent_run_id=orphan.run_id)
    ownership = resolve_ownership([planner, wrong, orphan])
    assert {orphan.run_id, wrong.run_id} <= ownership.unattributed
    assert ownership.parents == {planner.run_id: None}


def test_other_owners_agents_are_invisible() -> None:
    a = gen("alpha", session="sa", owner="someone-else")
    assert project(snap(a)) == {}
