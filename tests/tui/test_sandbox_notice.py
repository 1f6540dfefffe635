"""The terminal app tells the user, once, when a read agent runs without its sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from corral.tui.widgets import NoticeCard

from .conftest import SIZE, TuiEnv, wait_until

TWO_READERS = """\
steps:
  - text: "Spawning."
    tool_calls:
      - name: spawn_swarm_agents
        args:
          agents:
            - {name: one, model_slot: read-review, prompt: "Look."}
            - {name: two, model_slot: read-review, prompt: "Look."}
  - text: "Waiting."
on_exhausted: repeat_last
agents:
  "*":
    - tool_calls:
        - name: report_and_exit
          args: {content: "Looked.", summary: "done", outcome: succeeded}
"""


async def test_an_unconfined_read_agent_raises_one_warning_notice(
    tui_env: TuiEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: no namespaces here' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    app = tui_env.app(tui_env.script("team", TWO_READERS), surfaces=["teams"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.host is not None)
        app.editor.load_text("go")
        await pilot.press("enter")
        host, lead = app.host, app.launched.session.session_id  # type: ignore[union-attr]
        assert host is not None
        await wait_until(
            pilot, lambda: len(host.repositories.teams.reports.team_reports(lead)) == 2
        )  # both ran
        await wait_until(pilot, lambda: bool(_warnings(app)))
        warnings = _warnings(app)
        assert len(warnings) == 1, warnings
        assert "runs UNCONFINED" in warnings[0] and "bwrap: no namespaces here" in warnings[0]
        notice = next(n for n in app.chat.query(NoticeCard) if "UNCONFINED" in str(n.render()))
        assert notice.has_class("warning")


def _warnings(app: object) -> list[str]:
    return [str(n.render()) for n in app.chat.query(NoticeCard) if "UNCONFINED" in str(n.render())]  # type: ignore[attr-defined]
