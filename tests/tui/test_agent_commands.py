"""`/agents` with teams agents, `/agents-checkpoints`, `/agents-extensions`, `/onboard`, and `h` (handoff)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from textual.widgets import DataTable

from corral.lead._host import ComposedHost
from corral.llm import UserMessage
from corral.orchestration import HandoffResult
from corral.tui import CorralApp
from corral.tui._commands import CHECKPOINTS_USAGE
from corral.tui._format import ActivityRow
from corral.tui._onboard import ONBOARD_USAGE
from corral.tui.screens import AgentsScreen, FollowScreen
from corral.tui.widgets import NoticeCard

from .conftest import SIZE, TuiEnv, wait_until

TEAM = """\
steps:
  - text: "Spawning."
    tool_calls:
      - name: spawn_swarm_agents
        args:
          agents:
            - {name: scan, model_slot: read-review, prompt: "Scan the code."}
            - {name: quick, model_slot: write-patch, prompt: "Fix the typo."}
  - text: "Waiting."
on_exhausted: repeat_last
agents:
  scan:
    - {text: "Scanning.", delay_ms: 60000}
  quick:
    - tool_calls:
        - name: report_and_exit
          args: {content: "Fixed the typo.", summary: "typo fixed", outcome: succeeded}
"""


def _idle(app: CorralApp) -> bool:
    return app.launched is not None and app.launched.agent.is_idle


def _notices(app: CorralApp) -> list[str]:
    return [str(n.render()) for n in app.chat.query(NoticeCard)]


def _row(app: CorralApp, name: str) -> ActivityRow | None:
    return next((r for r in app.rows if r.label == name), None)


async def _command(pilot: object, text: str) -> None:
    pilot.app.editor.load_text(text)  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]


def _reported(app: CorralApp, name: str) -> bool:
    host, launched = app.host, app.launched
    return (
        host is not None
        and launched is not None
        and any(
            r.name == name for r in host.repositories.teams.reports.team_reports(launched.session.session_id)
        )
    )


async def _team(app: CorralApp, pilot: object) -> None:
    await _command(pilot, "go")
    await wait_until(
        pilot,  # type: ignore[arg-type]
        lambda: (
            _idle(app)
            and _reported(app, "quick")
            and (scan := _row(app, "scan")) is not None
            and scan.state == "thinking"
        ),
    )


async def test_agents_lists_teams_agents_with_tier_phase_and_recent_outcomes(tui_env: TuiEnv) -> None:
    app = tui_env.app(tui_env.script("team", TEAM), surfaces=["teams"])
    async with app.run_test(size=SIZE) as pilot:
        await _team(app, pilot)
        await _command(pilot, "/agents")
        await wait_until(pilot, lambda: isinstance(app.screen, AgentsScreen))
        table = app.screen.query_one("#teams-table", DataTable)
        rows = {table.get_row_at(i)[0]: table.get_row_at(i) for i in range(table.row_count)}
        assert rows["scan"][:3] == ["scan", "read-review", "thinking"]
        assert rows["scan"][3:6] == ["-", "-", "-"]
        assert rows["quick"][1:] == [
            "write-patch",
            "completed",
            "succeeded",
            "not-requested",
            "pending",
            "typo fixed",
        ]
        assert not app.screen.query("#agents-table")  # no managed agents: only the teams table
        await pilot.press("escape")
        assert not isinstance(app.screen, AgentsScreen)


def _git_project(project: Path) -> None:
    for args in (
        ["init", "-q"],
        ["add", "README.md"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True, timeout=30)


CHECKPOINTED = """\
steps:
  - text: "Spawning."
    tool_calls:
      - name: spawn_agent
        args: {name: rev, model_slot: read-review, prompt: "Review the README.", checkpoint: {inputs: [README.md]}}
  - text: "Noted."
on_exhausted: repeat_last
agents:
  rev:
    - tool_calls:
        - name: report_and_exit
          args:
            content: "README reviewed."
            outcome: succeeded
            findings: [{id: F1, text: "one line", evidence: ["README.md:1"]}]
"""


async def test_agents_checkpoints_lists_deletes_warns_and_explains_its_usage(tui_env: TuiEnv) -> None:
    _git_project(tui_env.project)
    app = tui_env.app(tui_env.script("ckpt", CHECKPOINTED), surfaces=["teams"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.host is not None)
        await _command(pilot, "/agents-checkpoints")
        await wait_until(pilot, lambda: "No specialist checkpoints saved." in _notices(app))
        await _command(pilot, "go")
        await wait_until(pilot, lambda: _idle(app) and _reported(app, "rev"))
        await _command(pilot, "/agents-checkpoints list")
        await wait_until(
            pilot, lambda: any("| rev | read-review | ready | expires " in t for t in _notices(app))
        )
        line = next(t for t in _notices(app) if "| rev |" in t)
        checkpoint_id = line.split(" | ")[0]
        assert checkpoint_id.startswith("checkpoint:")
        await _command(pilot, f"/agents-checkpoints delete {checkpoint_id}")
        await wait_until(
            pilot, lambda: any(t.startswith(f"{checkpoint_id} is deleted.") for t in _notices(app))
        )
        await _command(pilot, "/agents-checkpoints")
        await wait_until(pilot, lambda: f"{checkpoint_id} | deleted" in _notices(app))
        # A corrupt record is a warning; the usage message answers other input.
        host = app.host
        assert host is not None
        import sqlite3

        with sqlite3.connect(host.kernel.db.path) as conn:
            conn.execute("UPDATE checkpoints SET record = '{' WHERE checkpoint_id = ?", (checkpoint_id,))
        conn.close()
        await _command(pilot, "/agents-checkpoints")
        await wait_until(
            pilot, lambda: any(t.startswith(f"Checkpoint {checkpoint_id} is corrupt") for t in _notices(app))
        )
        await _command(pilot, "/agents-checkpoints delete")
        await wait_until(pilot, lambda: _notices(app)[-1] == CHECKPOINTS_USAGE)
        await _command(pilot, "/agents-checkpoints delete checkpoint:1")
        await wait_until(pilot, lambda: _notices(app)[-1].startswith("/agents-checkpoints: "))


async def test_agents_checkpoints_needs_the_orchestration_host(tui_env: TuiEnv) -> None:
    app = tui_env.app(tui_env.script("plain", 'steps:\n  - text: "hi"\n'), surfaces=[])
    async with app.run_test(size=SIZE) as pilot:
        await _command(pilot, "/agents-checkpoints")
        await wait_until(
            pilot, lambda: any("needs the lead's orchestration host" in t for t in _notices(app))
        )


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_agents_extensions_says_there_are_none_and_lists_each_kinds_tools(
    tui_env: TuiEnv, sandbox: str
) -> None:
    from corral.agent.tools import ReadOnlySandbox

    if sandbox == "off":
        tui_env.project.joinpath(".corral").mkdir()
        tui_env.project.joinpath(".corral", "settings.toml").write_text('[teams]\nread_sandbox = "off"\n')
        from corral.trust import trust_project

        trust_project(tui_env.project)
    app = tui_env.app(tui_env.script("plain", 'steps:\n  - text: "hi"\n'), surfaces=["teams"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.host is not None)
        await _command(pilot, "/agents-extensions")
        await wait_until(pilot, lambda: any(t.startswith("/agents-extensions:") for t in _notices(app)))
        text = next(t for t in _notices(app) if t.startswith("/agents-extensions:"))
        assert "corral has no extension system" in text
        assert "read agents (read-*): read, bash (" in text and "grep, find, ls" in text
        assert "write agents (write-*): read, bash, edit, write, grep, find, ls" in text
        assert "claim_file, release_file, list_file_claims" in text
        assert "eligible writers (write-feature, write-critical" in text
        assert "spawn_agent, spawn_swarm_agents, get_agent_status" in text
        if sandbox == "off":
            assert "NOT sandboxed: teams.read_sandbox = off" in text
        elif (await ReadOnlySandbox().probe()).ok:
            assert "bash (sandboxed: read-only file system" in text
        else:
            assert "bash (NOT sandboxed: " in text
        await _command(pilot, "/agents-extensions none")
        await wait_until(
            pilot, lambda: _notices(app)[-1].startswith("/agents-extensions none: corral has no")
        )


ONBOARD = """\
steps:
  - text: "Here is my recommendation."
"""


def _inventory(app: CorralApp) -> dict[str, object] | None:
    assert app.launched is not None
    for message in app.launched.agent.messages:
        if isinstance(message, UserMessage) and "untrusted" in str(message.content):
            text = message.content if isinstance(message.content, str) else message.content[0].text  # type: ignore[union-attr]
            body = text.split("instructions):\n\n", 1)[1].split("\n\nWrite a short report", 1)[0]
            return json.loads("\n".join(line.removeprefix("    ") for line in body.splitlines()))  # type: ignore[no-any-return]
    return None


async def test_onboard_sends_one_prompt_with_the_inventory(tui_env: TuiEnv) -> None:
    tui_env.settings('[favorite_models.read-review]\nmodel = "scripted/onboard"\nthinking = "off"\n')
    app = tui_env.app(tui_env.script("onboard", ONBOARD), surfaces=["teams"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.host is not None)
        await _command(pilot, "/onboard please")
        await wait_until(pilot, lambda: ONBOARD_USAGE in _notices(app))
        await _command(pilot, "/onboard")
        await wait_until(
            pilot,
            lambda: _idle(app) and _inventory(app) is not None and len(app.launched.agent.messages) == 2,
        )  # type: ignore[union-attr]
        inventory = _inventory(app)
        assert inventory is not None
        assert inventory["lead"] == {"model": "scripted/onboard", "thinking": "medium", "reasoning": True}
        tiers = inventory["tiers"]
        assert isinstance(tiers, dict) and len(tiers) == 8
        assert tiers["read-review"]["favorite"] == {"model": "scripted/onboard", "thinking": "off"}
        assert tiers["write-patch"]["favorite"] is None
        models = {m["model"]: m for m in inventory["availableModels"]}  # type: ignore[attr-defined]
        assert models["scripted/onboard"]["reasoning"] is True
        assert models["scripted/onboard"]["thinkingLevels"] == ["off", "minimal", "low", "medium", "high"]
        assert inventory["surfaces"] == ["teams"]
        assert inventory["readSandbox"]["setting"] == "auto"  # type: ignore[index]
        assert inventory["settingsFiles"]["user"]["exists"] is True  # type: ignore[index]
        prompt = str(app.launched.agent.messages[0].content)  # type: ignore[union-attr]
        assert "/agents-favorite-models set <tier> <provider/model> <thinking>" in prompt
        assert "Nothing changes until I run the commands" in prompt


SLOW = """\
steps:
  - {text: "Thinking hard.", delay_ms: 60000}
"""


async def test_onboard_refuses_while_the_lead_works_and_sends_nothing_when_the_inventory_fails(
    tui_env: TuiEnv,
) -> None:
    app = tui_env.app(tui_env.script("slow", SLOW), surfaces=["teams"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.host is not None)
        await _command(pilot, "go")
        await wait_until(pilot, lambda: app.launched is not None and not app.launched.agent.is_idle)
        await _command(pilot, "/onboard")
        await wait_until(pilot, lambda: any("the lead is working" in t for t in _notices(app)))
        await pilot.press("escape")
        await wait_until(pilot, lambda: _idle(app))
        count = len(app.launched.agent.messages)  # type: ignore[union-attr]
        tui_env.settings("this is [not toml\n")  # the user file broke after start-up
        await _command(pilot, "/onboard")
        await wait_until(pilot, lambda: any("could not gather the inventory" in t for t in _notices(app)))
        assert "nothing was sent" in _notices(app)[-1]
        assert len(app.launched.agent.messages) == count  # type: ignore[union-attr]


async def _follow(app: CorralApp, pilot: object, name: str) -> FollowScreen:
    await pilot.press("down")  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: isinstance(app.screen, FollowScreen))  # type: ignore[arg-type]
    screen = app.screen
    assert isinstance(screen, FollowScreen)
    while screen.label != name:
        await pilot.press("right")  # type: ignore[attr-defined]
    return screen


def _follow_notices(screen: FollowScreen) -> list[str]:
    return [str(n.render()) for n in screen.transcript.query(NoticeCard)]


async def test_h_hands_the_selected_agent_off_and_shows_the_outcome(
    tui_env: TuiEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    outcomes = iter(
        [
            HandoffResult("refused", "ask_pending", "Agent scan waits on a question; answer it first.", "r"),
            HandoffResult("moved", "moved", "Agent scan now runs in tmux pane %7; same session.", "r", "%7"),
        ]
    )

    async def fake_handoff(self: ComposedHost, run_id: str, *, runtime: str | None = None) -> HandoffResult:
        assert runtime is None  # the host picks the target from the settings (`handoff_target`)
        calls.append(run_id)
        return next(outcomes)

    monkeypatch.setattr(ComposedHost, "handoff", fake_handoff)
    app = tui_env.app(tui_env.script("team", TEAM), surfaces=["teams"])
    async with app.run_test(size=SIZE) as pilot:
        await _team(app, pilot)
        screen = await _follow(app, pilot, "scan")
        scan = _row(app, "scan")
        assert scan is not None and scan.run_id is not None
        await pilot.press("h")
        await wait_until(pilot, lambda: any(t.startswith("handoff refused") for t in _follow_notices(screen)))
        assert (
            "handoff refused (ask_pending): Agent scan waits on a question; answer it first. Nothing changed."
            in _follow_notices(screen)
        )
        assert screen.last_error == "Agent scan waits on a question; answer it first."
        await pilot.press("h")
        await wait_until(
            pilot, lambda: screen.last_handoff is not None and screen.last_handoff.status == "moved"
        )
        assert "handoff: Agent scan now runs in tmux pane %7; same session." in _follow_notices(screen)
        assert calls == [scan.run_id, scan.run_id]
        assert screen.label == "scan" and "scan" in screen.labels  # the row goes on
        assert screen.last_error is None


async def test_h_on_a_queued_agent_moves_nothing(tui_env: TuiEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    async def fail(self: ComposedHost, run_id: str) -> HandoffResult:
        raise AssertionError("a queued agent has no run to move")

    monkeypatch.setattr(ComposedHost, "handoff", fail)
    tui_env.settings("[teams.read_agents]\nmax_concurrent = 1\n")
    script = TEAM.replace("{name: quick, model_slot: write-patch", "{name: later, model_slot: read-collect")
    app = tui_env.app(tui_env.script("queued", script), surfaces=["teams"])
    async with app.run_test(size=SIZE) as pilot:
        await _command(pilot, "go")
        await wait_until(
            pilot,
            lambda: _idle(app) and (later := _row(app, "later")) is not None and later.state == "queued",
        )
        screen = await _follow(app, pilot, "later")
        await pilot.press("h")
        await wait_until(
            pilot,
            lambda: any(t.startswith("handoff: later has not started") for t in _follow_notices(screen)),
        )


async def test_a_handed_off_teams_agent_stays_a_working_row_in_its_pane(tui_env: TuiEnv) -> None:
    from dataclasses import replace

    from corral.orchestration.teams._status import member_status
    from corral.tui._teams import team_detail

    app = tui_env.app(tui_env.script("team", TEAM), surfaces=["teams"])
    async with app.run_test(size=SIZE) as pilot:
        await _team(app, pilot)
        host, launched = app.host, app.launched
        assert host is not None and launched is not None
        [member] = [
            m
            for m in host.repositories.teams.roster.team_members(launched.session.session_id)
            if m.name == "scan"
        ]
        generation = host.kernel.get_generation(member.run_id)
        assert generation is not None and not generation.runs_in_pane
        moved = replace(generation, runtime_kind="tmux", pane_id="%7", pid=None)
        assert moved.runs_in_pane and not replace(moved, presence="lost").runs_in_pane
        # As after the move: no in-process run.
        status = member_status(member, moved, None, now_ms=0)
        assert (status.phase, status.pane_id, status.in_process) == ("working", "%7", False)
        assert team_detail(status, generation=moved) == "in tmux pane %7 (handed off)"
