"""Handoff: a live in-process agent moves into a tmux pane and goes on there (real tmux, real workers)."""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from corral.agent import AgentSession, MessageStartEvent
from corral.llm import AssistantMessage
from corral.orchestration import RESULT_TYPE
from corral.orchestration.agents import _delegation as _delegate
from corral.orchestration.host import texts
from corral.orchestration.host._handoff import handoff_runtime
from corral.orchestration.host._worker import worker_env
from corral.orchestration.host.notices import HandedOff
from corral.orchestration.host.texts import HANDOFF_PROMPT
from corral.orchestration.kernel.records import NewGeneration
from corral.orchestration.surfaces import DelegateParams
from corral.orchestration.surfaces.teams import SendMessageRequest, parse_spawn
from corral.orchestration.surfaces.teams._render import (
    health_details,
    render_health,
    render_status,
    render_stop,
    status_details,
    stop_details,
)
from corral.orchestration.teams._teams import Teams
from corral.orchestration.teams.checks.records import AssignedCheck
from corral.orchestration.teams.reports._reports import TEAM_REPORT_TYPE
from corral.settings import Settings
from tests._waits import eventually
from tests.orchestration._host_helpers import Team, team, write_script
from tests.orchestration.teams._git_helpers import make_repo
from tests.runtime._tmux_fixtures import tmux_socket

__all__ = ["tmux_socket"]

LEAD = {"steps": [{"text": "noted"}], "on_exhausted": "repeat_last"}
SLOW = {"text": "working", "delay_ms": 60000}


@pytest.fixture
def model_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[object]]:
    """Every in-process agent's model calls by label (each starts an assistant message), from its start."""
    calls: dict[str, list[object]] = {}

    def watch(agent: AgentSession) -> AgentSession:
        corral = getattr(agent.session.header, "corral", None) or {}
        starts = calls.setdefault(str(corral.get("label")), [])

        def on_event(event: object) -> None:
            if isinstance(event, MessageStartEvent) and isinstance(event.message, AssistantMessage):
                starts.append(event)

        agent.subscribe(on_event)
        return agent

    build = _delegate.build_managed_agent
    monkeypatch.setattr(_delegate, "build_managed_agent", lambda *a, **k: watch(build(*a, **k)))
    build_team = Teams._build_agent
    monkeypatch.setattr(Teams, "_build_agent", lambda self, *a, **k: watch(build_team(self, *a, **k)))
    return calls


def _entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _panes(socket: Path) -> list[str]:
    out = subprocess.run(
        ["tmux", "-S", str(socket), "list-panes", "-a", "-F", "#{pane_id}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=10,
    ).stdout
    return out.split()


def _snapshot(t: Team, run_id: str) -> tuple[object, ...]:
    generation = t.host.kernel.get_generation(run_id)
    assert generation is not None
    child = t.host.runs.child(run_id)
    return (
        generation.runtime_kind,
        generation.phase,
        generation.presence,
        generation.pid,
        generation.host_id,
        generation.pane_id,
        child.finished.is_set(),
        child.handing_off,
    )


async def test_a_managed_agent_moved_mid_work_continues_its_session_in_a_pane_and_delivers_once(
    env: Path, tmux_socket: Path, model_calls: dict[str, list[object]]
) -> None:
    agent = [SLOW, {"text": "Finished in the pane.", "expect": {"last_user_contains": HANDOFF_PROMPT}}]
    write_script(env, "team", {**LEAD, "agents": {"*": agent}})
    async with team(env, "team", tmux_socket=tmux_socket) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Survey"))
        await eventually(lambda: len(model_calls.get("scout", [])) >= 1)  # in its slow model call
        assert started.session_path is not None
        session_path = Path(started.session_path)
        before = _entries(session_path)

        moved = await t.host.handoff(started.run_id)

        assert (moved.status, moved.reason) == ("moved", "moved"), moved.message
        assert moved.pane_id is not None and moved.pane_id.startswith("%")
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.runtime_kind == "tmux"
        assert generation.pane_id == moved.pane_id and generation.pid not in (None, t.host.pid)
        assert t.host.runs.child(started.run_id) is None  # the in-process run is gone
        await t.quiet()
        results = t.lead_entries(RESULT_TYPE)
        assert len(results) == 1 and "Finished in the pane." in results[0]["content"]
        await eventually(lambda: moved.pane_id not in _panes(tmux_socket))  # the worker exited when finalized
        assert len(t.lead_entries(RESULT_TYPE)) == 1
        # The same session file: what was written before the move is unchanged, and every later
        # entry (the aborted reply, the handoff prompt, the worker's answer) chains onto it.
        after = _entries(session_path)
        assert after[: len(before)] == before
        later = after[len(before) - 1 :]
        assert all(entry["parentId"] == prev["id"] for prev, entry in itertools.pairwise(later))
        texts = [json.dumps(entry) for entry in after[len(before) :]]
        assert any(HANDOFF_PROMPT in text for text in texts)
        assert any("Finished in the pane." in text for text in texts)
        assert sum("Survey" in json.dumps(entry) for entry in after) == 1  # the task was not re-sent
        task = next(r for r in t.host.kernel.requests(started.run_id) if r.kind == "task")
        assert task.acknowledged


async def test_a_teams_agent_moved_with_a_file_claim_keeps_it_and_reports_once(
    env: Path, tmux_socket: Path, model_calls: dict[str, list[object]]
) -> None:
    report = {"content": "Patched a.txt", "summary": "patched", "outcome": "succeeded"}
    agent = [
        {"tool_calls": [{"name": "claim_file", "args": {"paths": ["a.txt"]}}]},
        SLOW,
        {
            "tool_calls": [
                {"name": "list_file_claims", "args": {}},
                {"name": "report_and_exit", "args": report},
            ],
            "expect": {
                "last_user_contains": HANDOFF_PROMPT,
                "tools_include": ["claim_file", "report_and_exit"],
            },
        },
        {"text": "bye"},
    ]
    write_script(env, "team", {**LEAD, "agents": {"w1": agent}})
    async with team(env, "team", surfaces=("teams",), tmux_socket=tmux_socket) as t:
        spawned = await t.host.teams.spawn(
            t.caller, parse_spawn({"name": "w1", "prompt": "Patch a.txt", "model_slot": "write-patch"})
        )
        run_id = spawned.run_id
        store = t.host.repositories
        await eventually(
            lambda: len(model_calls.get("w1", [])) >= 2
        )  # claimed, and now in its slow model call

        moved = await t.host.handoff(run_id)

        assert moved.status == "moved", moved.message
        claims = [(c.path, c.run_id) for c in store.teams.roster.file_claims(t.caller.session_id)]
        now = store.kernel.get_generation(run_id)
        assert now is not None
        # Still held — unless the worker already reported and the run was finalized meanwhile.
        assert claims == [("a.txt", run_id)] or (now.phase == "finalized" and claims == []), (claims, now)
        await t.quiet()
        reports = t.lead_entries(TEAM_REPORT_TYPE)
        assert len(reports) == 1 and "Patched a.txt" in reports[0]["content"]
        await eventually(lambda: moved.pane_id not in _panes(tmux_socket))
        assert len(t.lead_entries(TEAM_REPORT_TYPE)) == 1
        assert (
            store.teams.roster.file_claims(t.caller.session_id) == ()
        )  # released when the run was finalized
        # The worker's list_file_claims saw the claim it kept.
        generation = store.kernel.get_generation(run_id)
        assert generation is not None and generation.session_path is not None
        tool_results = [
            e["message"]
            for e in _entries(Path(generation.session_path))
            if e.get("type") == "message" and e["message"].get("toolName") == "list_file_claims"
        ]
        assert len(tool_results) == 1 and "a.txt: w1" in json.dumps(tool_results[0])


async def test_a_checkpointed_teams_agent_moves_and_its_host_saves_the_checkpoint_before_the_report(
    env: Path, tmux_socket: Path, model_calls: dict[str, list[object]]
) -> None:
    make_repo(env / "work", {"auth/token.py": "CHECK = True\n"})
    finding = {"id": "F1", "text": "tokens are checked", "evidence": ["auth/token.py:1"]}
    report = {"content": "Auth reviewed.", "outcome": "succeeded", "findings": [finding]}
    agent = [
        SLOW,
        {
            "tool_calls": [{"name": "report_and_exit", "args": report}],
            "expect": {"last_user_contains": HANDOFF_PROMPT},
        },
        {"text": "bye"},
    ]
    write_script(env, "team", {**LEAD, "agents": {"auth": agent}})
    async with team(env, "team", surfaces=("teams",), tmux_socket=tmux_socket) as t:
        spawned = await t.host.teams.spawn(
            t.caller,
            parse_spawn({"name": "auth", "prompt": "Review auth.", "checkpoint": {"inputs": ["auth"]}}),
        )
        run_id = spawned.run_id
        await eventually(lambda: len(model_calls.get("auth", [])) >= 1)

        moved = await t.host.handoff(run_id)

        assert moved.status == "moved", moved.message
        await t.quiet()
        [delivered] = t.lead_entries(TEAM_REPORT_TYPE)
        stored = t.host.repositories.teams.reports.team_report(delivered["details"]["report_id"])
        assert stored is not None and stored.run_id == run_id
        record = t.host.teams.checkpoints.load(stored.result.checkpoint_id)
        assert record.author.run_id == run_id and [f.id for f in record.findings] == ["F1"]
        # Saved by the owner's host before the report reached the lead (never after it).
        saved = t.host.repositories.teams.checkpoints.get_checkpoint(stored.result.checkpoint_id)
        assert saved is not None
        delivered_at = datetime.fromisoformat(delivered["timestamp"].replace("Z", "+00:00"))
        assert saved.created_at <= delivered_at.timestamp() * 1000
        assert len(t.lead_entries(TEAM_REPORT_TYPE)) == 1


async def test_a_moved_teams_agent_shows_working_takes_messages_from_the_store_and_stop_teammate_stops_it(
    env: Path, tmux_socket: Path, model_calls: dict[str, list[object]]
) -> None:
    write_script(env, "team", {**LEAD, "agents": {"r1": [SLOW, SLOW]}})
    async with team(env, "team", surfaces=("teams",), tmux_socket=tmux_socket) as t:
        spawned = await t.host.teams.spawn(t.caller, parse_spawn({"name": "r1", "prompt": "Look"}))
        run_id = spawned.run_id
        await eventually(lambda: len(model_calls.get("r1", [])) >= 1)
        moved = await t.host.handoff(run_id)
        assert moved.status == "moved", moved.message
        teams = t.host.teams
        result = await teams.status(t.caller, "r1")
        _text, status = render_status(result), status_details(result)
        assert status["agents"][0]["phase"] == "working" and status["agents"][0]["paneId"] == moved.pane_id
        result = await teams.check_teammate(t.caller, "r1")
        _text, health = render_health(result), health_details(result)
        assert health["alive"] is True and health["health"] == "healthy"
        # A message to the moved agent goes to its store inbox; its worker takes it in (marks it read).
        sent = await teams.send_message(t.caller, SendMessageRequest("r1", "Also check b.txt"))
        assert sent.delivery == "inbox"
        lead = t.caller.session_id

        def taken() -> bool:
            inbox = t.host.repositories.teams.roster.read_team_inbox(
                lead, "r1", unread_only=False, mark_as_read=False
            )
            return [(m.content, m.read_at is not None) for m in inbox] == [("Also check b.txt", True)]

        await eventually(taken, t.host)  # the worker's commit signals the host
        result = await teams.stop_teammate(t.caller, "r1", "enough")
        text, details = render_stop(result), stop_details(result)
        assert details["stopped"] is True, text
        assert moved.pane_id not in _panes(tmux_socket)
        generation = t.host.kernel.get_generation(run_id)
        assert generation is not None and generation.phase == "finalized"


async def test_handoff_is_refused_without_changes_for_a_pending_ask_a_running_check_a_tmux_run_and_no_tmux(
    env: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch, model_calls: dict[str, list[object]]
) -> None:
    agents = {
        "scout": [{"tool_calls": [{"name": "ask_owner", "args": {"question": "A or B?"}}]}],
        "w1": [SLOW],
    }
    write_script(env, "team", {**LEAD, "agents": agents})
    async with team(env, "team", surfaces=("teams",), tmux_socket=tmux_socket) as t:
        store = t.host.repositories
        # A pending question to the owner.
        asking = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Decide"))
        await eventually(lambda: store.kernel.pending_ask(asking.run_id) is not None, t.host)
        before = _snapshot(t, asking.run_id)
        refused = await t.host.handoff(asking.run_id)
        assert (refused.status, refused.reason) == ("refused", "ask_pending")
        assert _snapshot(t, asking.run_id) == before
        # A runtime that is not there.
        refused = await t.host.handoff(asking.run_id, runtime="podman")
        assert (refused.status, refused.reason, refused.runtime) == (
            "refused",
            "runtime_unavailable",
            "podman",
        )
        assert _snapshot(t, asking.run_id) == before
        # A teams agent whose assigned check is running (a claimed check row).
        spawned = await t.host.teams.spawn(
            t.caller, parse_spawn({"name": "w1", "prompt": "p", "model_slot": "write-patch"})
        )
        run_id = spawned.run_id
        await eventually(lambda: len(model_calls.get("w1", [])) >= 1)
        check = AssignedCheck("task-1", run_id, "report-1", "unit", "true", str(env / "work"), 5, 1)
        store.teams.checks.claim_check(
            check.check_id,
            assignment=check.to_json(),
            binding=check.binding(),
            log_path=str(env / "checks" / f"{check.check_id.removeprefix('check:')}.log"),
        )
        before = _snapshot(t, run_id)
        refused = await t.host.handoff(run_id)
        assert (refused.status, refused.reason) == ("refused", "check_running")
        assert _snapshot(t, run_id) == before
        # A generation that does not run in-process here.
        elsewhere, _task = store.kernel.create_generation(
            NewGeneration(
                definition="scout",
                owner_session_id=t.caller.session_id,
                cwd=str(env / "work"),
                session_id="6f1c1a4e-0000-4000-8000-000000000001",
                task="t",
                label="paned",
                runtime_kind="tmux",
            )
        )
        refused = await t.host.handoff(elsewhere.run_id)
        assert (refused.status, refused.reason) == ("refused", "not_inprocess")
        assert store.kernel.get_generation(elsewhere.run_id) == elsewhere
        # No tmux at all.
        monkeypatch.setattr(t.host.runtime.tmux, "tmux", "corral-no-such-tmux")
        before = _snapshot(t, asking.run_id)
        refused = await t.host.handoff(asking.run_id)
        assert (refused.status, refused.reason) == ("refused", "tmux_unavailable")
        assert _snapshot(t, asking.run_id) == before
        assert _panes(tmux_socket) == []
        with contextlib.suppress(Exception):
            store.kernel.finalize_generation(elsewhere.run_id, owner_session_id=t.caller.session_id)


async def test_a_worker_that_cannot_start_leaves_the_agent_lost_with_a_diagnostic_and_no_pane(
    env: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch, model_calls: dict[str, list[object]]
) -> None:
    write_script(env, "unbundled-team", {**LEAD, "agents": {"*": [SLOW]}})
    empty = env / "no-scripts"
    empty.mkdir()
    # The worker (only) looks for scripts in an empty directory: it cannot load its model (a name no
    # bundled script has, so the bundled scripts cannot stand in).
    monkeypatch.setattr(
        "corral.orchestration.host._launch.worker_env",
        lambda: {**worker_env(), "CORRAL_SCRIPTS": str(empty)},
    )
    async with team(env, "unbundled-team", tmux_socket=tmux_socket) as t:
        started = await t.controller.delegate(t.caller, DelegateParams(definition="scout", task="Survey"))
        await eventually(lambda: len(model_calls.get("scout", [])) >= 1)

        failed = await t.host.handoff(started.run_id)

        assert (failed.status, failed.reason) == ("failed", "pane_not_ready"), failed.message
        generation = t.host.kernel.get_generation(started.run_id)
        assert generation is not None and generation.presence == "lost"
        assert generation.diagnostic is not None and "handoff to tmux failed" in generation.diagnostic
        assert t.host.runs.child(started.run_id) is None and not t.host.runs.on_worker(started.run_id)
        assert _panes(tmux_socket) == []
        await t.quiet()  # a lost agent keeps nobody waiting
        assert t.lead_entries(RESULT_TYPE) == []


def test_a_handoff_targets_the_runtime_asked_for_else_the_worker_runtime_setting_else_tmux() -> None:
    assert handoff_runtime(Settings(runtime="ray")) == "ray"
    assert handoff_runtime(Settings(runtime="tmux")) == "tmux"
    assert handoff_runtime(Settings()) == "tmux"  # in-process is no handoff target
    assert handoff_runtime(Settings(runtime="ray"), "tmux") == "tmux"


def test_the_default_handoff_prompts_are_pinned() -> None:
    assert texts.handed_off(HandedOff("tmux", ())) == (
        "You were moved to a terminal pane by your owner; continue the same assignment where you left off."
    )
    assert texts.handed_off(HandedOff("ray", ("first", "second"))) == (
        "You were moved to another worker by your owner; continue the same assignment where you left off."
        "\n\nMessages that arrived while you were being moved:\n\nfirst\n\nsecond"
    )
