"""The slash-command table: `/help`, completion and dispatch all come from `COMMANDS`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from corral.tui import COMMANDS, CorralApp
from corral.tui._commands import CHECKPOINTS_USAGE, FOLLOW_KEYS, KEYS, help_text, run_command
from corral.tui._onboard import ONBOARD_USAGE

from .conftest import TuiEnv


@dataclass
class FakeApp:
    """Just what dispatch reads; any other attribute (what a handler would use) fails the test."""

    launched: object | None = None
    settings_broken: bool = False
    setup_error: str | None = None
    notices: list[tuple[str, str]] = field(default_factory=list)

    def notice(self, text: str, *, kind: str = "info") -> None:
        self.notices.append((text, kind))

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the handler ran: it used app.{name}")


async def _run(app: FakeApp, line: str) -> list[tuple[str, str]]:
    await run_command(cast(CorralApp, app), line)
    return app.notices


def test_help_lists_every_command_of_the_table_with_its_summary_and_every_key() -> None:
    shown = help_text().splitlines()
    for command in COMMANDS.values():
        assert f"  {command.name}  {command.summary}" in shown
    assert all(any(line.startswith(f"  {key}  ") for line in shown) for key in [*KEYS, *FOLLOW_KEYS])
    assert set(COMMANDS) == {
        "/agents",
        "/agents-favorite-models",
        "/agents-checkpoints",
        "/agents-extensions",
        "/onboard",
        "/model",
        "/thinking",
        "/compact",
        "/resume",
        "/new",
        "/trust",
        "/help",
        "/quit",
    }


async def test_an_unknown_command_is_named_and_points_to_help() -> None:
    app = FakeApp(launched=object())
    assert await _run(app, "/nope with words") == [("unknown command /nope: /help lists them", "error")]


@pytest.mark.parametrize("name", [name for name, c in COMMANDS.items() if c.arguments == "none"])
async def test_a_command_without_arguments_refuses_one_with_its_usage_and_does_nothing(name: str) -> None:
    command = COMMANDS[name]
    assert await _run(FakeApp(launched=object()), f"{name} extra") == [(command.usage_text, "error")]
    assert command.usage_text.startswith(f"{name} ")


async def test_onboard_and_checkpoints_show_their_own_usage_for_a_malformed_argument() -> None:
    assert await _run(FakeApp(launched=object()), "/onboard please") == [(ONBOARD_USAGE, "error")]
    for line in ("/agents-checkpoints delete", "/agents-checkpoints purge all", "/agents-checkpoints list x"):
        # Refused before the host is asked (the fake app has no `agent_commands`).
        assert await _run(FakeApp(launched=object()), line) == [(CHECKPOINTS_USAGE, "error")]


async def test_a_command_that_needs_the_lead_is_refused_before_it_started() -> None:
    assert await _run(FakeApp(setup_error="no model configured"), "/thinking high") == [
        ("/thinking needs a model first: no model configured", "error")
    ]
    broken = FakeApp(settings_broken=True, setup_error="settings.toml: line 2")
    assert await _run(broken, "/agents") == [
        ("/agents: fix the settings file and restart (settings.toml: line 2)", "error")
    ]


def test_the_editor_completes_every_command_of_the_table(tui_env: TuiEnv) -> None:
    assert tui_env.app(None).editor.commands == list(COMMANDS)
