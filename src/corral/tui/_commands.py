"""The slash commands: one table, `COMMANDS`, and `run_command`, which dispatches through it.

Each `SlashCommand` names its handler, its one-line summary, whether it takes an argument, the
usage shown when the argument is malformed, and whether it needs the lead to have started. `/help`
(`help_text`), Tab completion (the editor gets the names) and the unknown-command message all come
from the table, so a command added here is listed everywhere.

A handler gets the app and the argument (the text after the name, stripped). A command that takes
no argument never sees one: `run_command` answers with its usage instead. A handler that finds its
argument malformed raises `CommandUsageError`, and `run_command` shows the command's usage.

The lead's commands (`/model`, `/thinking`, `/compact`, the `/resume` picker) are handled here;
opening sessions (`/new`, `/resume`'s choice, `/model` without a lead) and `/trust` are the app's
(`CommandsApp` in `_app_commands.py` lists what a handler may use); the agent commands are
`AgentCommands` (`_app_commands.py`) and the favorites command is `FavoriteModels`
(`_app_favorites.py`), both composed into the app.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Literal

from corral.errors import CorralError
from corral.llm import ThinkingLevel, available_thinking_levels, parse_model_ref
from corral.tui._first_run import DEMO_MODEL
from corral.tui._format import one_line
from corral.tui._onboard import ONBOARD_USAGE
from corral.tui.screens import PickerScreen

if TYPE_CHECKING:
    from corral.tui._app_commands import CommandsApp

__all__ = [
    "CHECKPOINTS_USAGE",
    "COMMANDS",
    "FOLLOW_KEYS",
    "KEYS",
    "CommandUsageError",
    "SlashCommand",
    "help_text",
    "run_command",
]


Handler = Callable[["CommandsApp", str], Awaitable[None]]
"""Runs one command: the app and the argument (`""` when none was given)."""


class CommandUsageError(Exception):
    """A command's argument is malformed; `run_command` shows the command's usage."""


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """One slash command: its name, what it does, how it is called, and its handler."""

    name: str
    """`/model`, with the slash."""
    summary: str
    """What it does, on one line (`/help` lists it)."""
    handler: Handler
    """Runs it."""
    _: KW_ONLY
    arguments: Literal["none", "optional"] = "none"
    """`none`: an argument is refused with the usage; `optional`: the handler reads it (and may
    raise `CommandUsageError`)."""
    usage: str = ""
    """Shown when the argument is malformed; `""`: `<name> takes no arguments: <summary>`."""
    needs_lead: bool = True
    """Refused until the lead has started (no model configured, or a settings file is broken)."""

    @property
    def usage_text(self) -> str:
        """The usage shown for a malformed argument."""
        return self.usage or f"{self.name} takes no arguments: {self.summary}"


CHECKPOINTS_USAGE = "usage: /agents-checkpoints [list] | /agents-checkpoints delete <checkpoint id>"

# --- handlers ------------------------------------------------------------------------------------


async def _help(app: CommandsApp, _arg: str) -> None:
    app.notice(help_text())


async def _quit(app: CommandsApp, _arg: str) -> None:
    await app.action_quit()


async def _agents(app: CommandsApp, _arg: str) -> None:
    app.agent_commands.show_agents()


async def _favorite_models(app: CommandsApp, arg: str) -> None:
    app.favorite_models.command(arg)


async def _checkpoints(app: CommandsApp, arg: str) -> None:
    words = arg.split()
    if words in ([], ["list"]):
        app.agent_commands.list_checkpoints()
    elif len(words) == 2 and words[0] == "delete":
        app.agent_commands.delete_checkpoint(words[1])
    else:
        raise CommandUsageError(arg)


async def _extensions(app: CommandsApp, arg: str) -> None:
    app.agent_commands.extensions(arg)


async def _onboard(app: CommandsApp, _arg: str) -> None:
    app.agent_commands.onboard()


async def _trust(app: CommandsApp, _arg: str) -> None:
    app.trust_project()


async def _model(app: CommandsApp, arg: str) -> None:
    launched = app.launched
    if launched is None:
        if arg == DEMO_MODEL or not arg:
            await app.switch_to_demo()
        else:
            await app.reopen_with_model(arg)
        return
    if arg:
        _set_model(app, arg)
        return
    refs = [info.ref for info in launched.registry.available_models()]
    if launched.model_info.ref not in refs:
        refs.insert(0, launched.model_info.ref)
    app.push_screen(
        PickerScreen("Model", [(ref, ref) for ref in refs], current=launched.model_info.ref),
        lambda ref: _set_model(app, ref) if ref else None,
    )


def _set_model(app: CommandsApp, ref: str) -> None:
    launched = app.launched
    if launched is None:
        return
    try:
        parsed = parse_model_ref(ref)
        launched.switch_model(launched.registry.resolve(parsed))
    except CorralError as exc:
        app.notice(f"/model: {exc}", kind="error")
        return
    if parsed.thinking is not None:
        launched.agent.set_thinking_level(parsed.thinking)
    app.notice(f"model: {launched.model_info.ref} (thinking {launched.agent.thinking_level})")
    app.render_footer()


async def _thinking(app: CommandsApp, arg: str) -> None:
    launched = app.launched
    assert launched is not None
    levels = available_thinking_levels(launched.model_info)
    if arg:
        if arg not in levels:
            app.notice(
                f"/thinking: {arg!r} is not a level of {launched.model_info.ref}; choose from "
                + ", ".join(levels),
                kind="error",
            )
            return
        _set_thinking(app, arg)  # type: ignore[arg-type]
        return
    app.push_screen(
        PickerScreen("Thinking level", [(lv, lv) for lv in levels], current=launched.agent.thinking_level),
        lambda level: _set_thinking(app, level) if level else None,  # type: ignore[arg-type]
    )


def _set_thinking(app: CommandsApp, level: ThinkingLevel) -> None:
    launched = app.launched
    if launched is None:
        return
    launched.agent.set_thinking_level(level)
    app.notice(f"thinking: {launched.agent.thinking_level}")
    app.render_footer()


async def _compact(app: CommandsApp, arg: str) -> None:
    app.run_worker(_compaction(app, arg or None), group="lead")


async def _compaction(app: CommandsApp, instructions: str | None) -> None:
    launched = app.launched
    if launched is None:
        return
    app.notice("compacting …")
    try:
        entry = await launched.agent.compact(instructions)
    except CorralError as exc:
        app.notice(f"/compact: {exc}", kind="error")
        return
    app.notice(f"compacted: {entry.tokens_before} tokens summarised")
    app.render_footer()


async def _new(app: CommandsApp, _arg: str) -> None:
    await app.new_session()


async def _resume(app: CommandsApp, _arg: str) -> None:
    from corral.session import list_sessions

    cwd = app.options.cwd.expanduser().resolve()
    current = app.launched.session.session_id if app.launched is not None else None
    choices = [
        (
            str(info.path),
            f"{info.modified:%Y-%m-%d %H:%M}  {one_line(info.name or info.first_message) or '(empty)'}"
            f"  [{info.id[:8]}]",
        )
        for info in list_sessions(cwd)
        if info.id != current
    ]
    if not choices:
        app.notice("/resume: no other session in this directory")
        return

    async def chosen(path: str | None) -> None:
        if path is not None:
            await app.resume_session(path)

    app.push_screen(PickerScreen("Resume a session", choices), chosen)


# --- the table -----------------------------------------------------------------------------------

COMMANDS: Mapping[str, SlashCommand] = {
    command.name: command
    for command in (
        SlashCommand("/agents", "status tables of the managed and teams agents", _agents),
        SlashCommand(
            "/agents-favorite-models",
            "tier picker; or set <tier> <provider/model> [thinking], clear <tier>, clear",
            _favorite_models,
            arguments="optional",
        ),
        SlashCommand(
            "/agents-checkpoints",
            "list specialist checkpoints; delete <checkpoint id> retires one",
            _checkpoints,
            arguments="optional",
            usage=CHECKPOINTS_USAGE,
        ),
        SlashCommand(
            "/agents-extensions",
            "the tools spawned agents get (corral has no extensions)",
            _extensions,
            arguments="optional",
        ),
        SlashCommand(
            "/onboard",
            "ask the lead to recommend tier models for your set-up (changes only when you approve)",
            _onboard,
            usage=ONBOARD_USAGE,
        ),
        SlashCommand(
            "/model",
            "switch the lead's model (/model provider/model, or pick from a list)",
            _model,
            arguments="optional",
            needs_lead=False,
        ),
        SlashCommand(
            "/thinking", "set the thinking level (/thinking high, or pick)", _thinking, arguments="optional"
        ),
        SlashCommand(
            "/compact", "compact the lead's context (optional instructions)", _compact, arguments="optional"
        ),
        SlashCommand("/resume", "open another session of this directory", _resume, needs_lead=False),
        SlashCommand(
            "/new",
            "start a fresh session here (the current one stays saved; /resume reopens it)",
            _new,
            needs_lead=False,
        ),
        SlashCommand(
            "/trust",
            "trust this project (its definitions and settings take effect)",
            _trust,
            needs_lead=False,
        ),
        SlashCommand("/help", "list the commands and keys", _help, needs_lead=False),
        SlashCommand("/quit", "leave the app (Ctrl+C too); the session stays saved", _quit, needs_lead=False),
    )
}
"""Every slash command, in the order `/help` lists them."""

KEYS: Mapping[str, str] = {
    "Enter": "send (while the lead works: steer it)",
    "Alt+Enter / Ctrl+S": "send as a follow-up (delivered when the lead would stop)",
    "Shift+Enter / Ctrl+J": "new line",
    "Tab": "complete a /command or an @path",
    "Up / Down": "walk the prompt history",
    "Down (empty prompt)": "open the agents view (its keys below)",
    "Escape": "interrupt the lead (queued messages come back to the prompt)",
    "l": "expand long tool logs and result ids (in the chat)",
    "Ctrl+O": "expand or collapse every long log",
    "Ctrl+C": "quit",
    "@path": "attach a file to the message (its text is sent with it)",
    "!cmd / !!cmd": "run a shell command; its output joins the lead's context (!! keeps it out)",
}
"""Every key and prompt prefix of the main screen (`/help` lists them)."""

FOLLOW_KEYS: Mapping[str, str] = {
    "Up / Down": "previous / next agent (Up from the first: back to the lead)",
    "Left / Right": "cycle through the agents",
    "PgUp / PgDn, Home / End": "scroll the transcript; End follows new output again",
    "m": "message the agent (steer it; answers its question when it is blocked)",
    "i": "interrupt its running tool or model call",
    "x": "stop it (and the agents it started)",
    "h": 'hand it off to a tmux pane (or Ray, with runtime = "ray")',
    "g": "merge its branch (an isolated writer), like corral merge",
    "l": "expand long tool logs",
    "Escape": "close the composer, else back to the lead",
}
"""Every key of the agents view (the follow view; `/help` lists them)."""


def help_text() -> str:
    """What `/help` shows: every command of `COMMANDS`, then `KEYS` and `FOLLOW_KEYS`."""
    lines = ["Commands (Tab completes them):"]
    lines += [f"  {command.name}  {command.summary}" for command in COMMANDS.values()]
    lines += ["Keys:"]
    lines += [f"  {key}  {desc}" for key, desc in KEYS.items()]
    lines += ["Keys in the agents view:"]
    lines += [f"  {key}  {desc}" for key, desc in FOLLOW_KEYS.items()]
    return "\n".join(lines)


async def run_command(app: CommandsApp, line: str) -> None:
    """Run the slash command `line` (`/name` and an optional argument) through `COMMANDS`.

    An unknown name, a command that needs the lead before it started, and a malformed argument
    each get one error notice and change nothing.
    """
    name, _, arg = line.partition(" ")
    arg = arg.strip()
    command = COMMANDS.get(name)
    if command is None:
        app.notice(f"unknown command {name}: /help lists them", kind="error")
        return
    if command.needs_lead and app.launched is None:
        if app.settings_broken:
            app.notice(f"{name}: fix the settings file and restart ({app.setup_error})", kind="error")
        else:
            app.notice(f"{name} needs a model first: " + (app.setup_error or ""), kind="error")
        return
    if arg and command.arguments == "none":
        app.notice(command.usage_text, kind="error")
        return
    try:
        await command.handler(app, arg)
    except CommandUsageError:
        app.notice(command.usage_text, kind="error")
