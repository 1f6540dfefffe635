"""Regenerate the README screenshot (`docs/screenshot.svg`): the app with a scripted team.

Run from the repository root: `.venv/bin/python tests/tui/screenshot.py [OUT.svg]`.
Offline (scripted models), in private temporary data and config roots; elapsed times are shifted
by 83 s so the rows show some.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

LEAD = """\
steps:
  - thinking: "Three parts: review, fix, and a look at the tests."
    text: "I'll split this: **review** reads the auth code, **fix** changes it, **tests** collects the failing cases."
    tool_calls:
      - name: spawn_swarm_agents
        args:
          agents:
            - {name: review, model_slot: read-review, prompt: "Review auth/token.py."}
            - {name: fix, model_slot: write-feature, allow_nested_read_agents: true, prompt: "Fix the token check."}
            - {name: tests, model_slot: read-collect, prompt: "List the failing auth tests."}
            - {name: audit, model_slot: read-analyze, prompt: "Trace where tokens are issued."}
  - text: "The team is working; I will report when they are done."
  - text: "**review** found two problems in `auth/token.py`; **fix** is working on both."
on_exhausted: repeat_last
agents:
  review:
    - tool_calls:
        - {name: bash, args: {command: "grep -n token README.md"}}
    - tool_calls:
        - name: report_and_exit
          args:
            content: "F1 token.py:12 compares the signature with ==.\\nF2 token.py:40 never checks expiry."
            summary: "two findings in auth/token.py"
            outcome: succeeded
  fix:
    - tool_calls:
        - {name: spawn_agent, args: {name: helper, model_slot: read-collect, prompt: "Find the callers."}}
    - tool_calls:
        - {name: bash, args: {command: "sed -n 1,40p README.md"}}
    - {text: "Patching the expiry check.", delay_ms: 600000}
  helper:
    - {text: "Looking for callers.", delay_ms: 600000}
  tests:
    - tool_calls:
        - {name: bash, args: {command: "seq 1 30"}}
    - {text: "Collecting.", delay_ms: 600000}
  audit:
    - tool_calls:
        - {name: bash, args: {command: "sleep 30"}}
"""


async def main(out: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="corral-shot-"))
    project, scripts = root / "project", root / "scripts"
    for folder in (project, scripts):
        folder.mkdir()
    (project / "README.md").write_text("# sample\n")
    (scripts / "lead.yaml").write_text(LEAD)
    (root / "config" / "corral").mkdir(parents=True)
    (root / "config" / "corral" / "settings.toml").write_text("")  # no /onboard hint: not a new installation
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        os.environ.pop(name, None)
    os.environ.update(
        CORRAL_HOME=str(root / "home"),
        CORRAL_SCRIPTS=str(scripts),
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_DATA_HOME=str(root / "data"),
        HOME=str(root / "userhome"),
    )
    from corral._cli._launch import LaunchOptions
    from corral.tui import CorralApp
    from corral.tui.widgets import TeamReportCard

    app = CorralApp(
        LaunchOptions(project, model="scripted/lead", surfaces=["teams"]),
        clock=lambda: time.time() + 83,  # as if the team had been at it for a while
    )

    def ready() -> bool:
        rows = {row.label: row for row in app.rows}
        launched = app.launched
        return (
            launched is not None
            and launched.agent.is_idle
            and bool(app.chat.query(TeamReportCard))
            and len(launched.agent.messages) >= 6
            and rows.get("fix") is not None
            and rows["fix"].helpers == 1
            and rows.get("tests") is not None
            and rows["tests"].state == "thinking"
            and rows.get("audit") is not None
            and rows["audit"].state == "working"
        )

    async with app.run_test(size=(120, 36)) as pilot:
        app.editor.cursor_blink = False
        app.editor.load_text("Review the auth module and fix the token check.")
        await pilot.press("enter")

        async def wait() -> None:
            while not ready():
                await pilot.pause()

        await asyncio.wait_for(wait(), 60)
        await pilot.pause()
        app.chat.scroll_end(animate=False)
        await pilot.pause()
        app.save_screenshot(out.name, str(out.parent))


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshot.svg").resolve()
    asyncio.run(main(target))
    print(f"wrote {target}")
