"""The Textual app: the lead chat, the editor, the activity card and the footer.

How data flows:

* The lead's `AgentSession` events arrive through `subscribe` and are posted
  to the app as `LeadEvent` messages; handlers only render them.
* Host changes arrive the same way: one worker awaits the host's change
  notification and posts `HostChanged`. The app's model of its agents
  (`AgentActivity`, one `TrackedAgent` per run) refreshes on it, and the
  activity rows are set from the model into the reactive `rows`, whose watcher
  updates the activity card and the follow view; the footer's combined cost is
  redrawn with them. Agents' own events (their latest tool call or reply)
  arrive as `AgentProgress` messages. No timer polls the store; a one-second
  `set_interval` clock only recomputes the rows (elapsed times). The activity
  card animates its progress phrases (fade, dots) on the app's `clock` with its
  own light timer (see `corral.tui.widgets._status`).
* Slash commands go through one table (`corral.tui._commands.COMMANDS`).
* Everything that waits on the host or the model runs in a `@work` worker.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import var
from textual.widgets import Button, Static

from corral._cli._launch import Launched, LaunchOptions, launch_session
from corral.agent import AgentEvent, MessageEndEvent
from corral.errors import CorralError
from corral.settings import ActivityColorsSettings, SettingsError
from corral.tui._activity import AgentActivity
from corral.tui._app_commands import AgentCommands
from corral.tui._app_favorites import FavoriteModels
from corral.tui._commands import COMMANDS, run_command
from corral.tui._first_run import DEMO_MODEL, ONBOARD_HINT, is_new_installation
from corral.tui._format import ActivityRow, CostSummary, Progress
from corral.tui._palette import ActivityPalette, resolve_palette
from corral.tui.screens import FollowScreen, TierPickerScreen
from corral.tui.widgets import (
    ActivityCard,
    BashCard,
    ChatLog,
    Editor,
    NoticeCard,
    StatusFooter,
    UserCard,
)

if TYPE_CHECKING:
    from corral.lead._agents import LeadAgents
    from corral.lead._host import ComposedHost as Host
    from corral.orchestration import ListResult

__all__ = [
    "DEMO_MODEL",
    "AgentProgress",
    "CorralApp",
    "HostChanged",
    "LeadEvent",
    "run_app",
]

REFRESH_S = 0.15
"""At most one activity-card refresh per this many seconds (bursts of changes coalesce)."""


class LeadEvent(Message):
    """An event of the lead's `AgentSession`."""

    def __init__(self, event: AgentEvent) -> None:
        super().__init__()
        self.event = event


class HostChanged(Message):
    """The host's state changed (a generation started, settled, asked, delivered …)."""


class AgentProgress(Message):
    """A managed or teams agent did something worth a progress line."""

    def __init__(self, run_id: str, text: str, kind: str = "tool") -> None:
        super().__init__()
        self.run_id = run_id
        self.text = text
        self.kind = kind
        """`tool` (a tool call started) or `reply` (the last line of a reply)."""


class SetupCard(Vertical):
    """Shown when the lead cannot start: no model configured (what to set, and the offline demo
    model), or a settings file that does not load (which file and line to fix; the demo model needs
    the settings too, so it is not offered)."""

    def __init__(self, message: str, *, settings_broken: bool = False) -> None:
        super().__init__(id="setup")
        self.message = message
        self.settings_broken = settings_broken
        """The settings did not load (`SettingsError`), rather than no model being configured."""

    def compose(self) -> ComposeResult:
        if self.settings_broken:
            yield Static("A settings file is broken, so the lead cannot start:", id="setup-title")
            yield Static(self.message, id="setup-message")
            yield Static(
                "Fix the file at the place named above and restart corral (corral doctor shows the "
                "same error). Nothing else was read or changed.",
                id="setup-hint",
            )
            return
        yield Static(self.message, id="setup-message")
        yield Static(
            f"Set one of those and restart, or take the offline tour with {DEMO_MODEL}: a scripted "
            f"lead that looks around this directory with real tools and delegates two agents "
            f"(also: /model {DEMO_MODEL}).",
            id="setup-hint",
        )
        yield Button(f"Use {DEMO_MODEL}", id="use-demo", variant="primary")


class CorralApp(App[int]):
    """The corral terminal app.

    Args:
        options: The same session and model choices as `corral run`.
        launcher: Builds the lead session (tests may wrap it).
        clock: Unix time in seconds, for elapsed times and the activity card's animation.
    """

    CSS_PATH = "app.tcss"
    TITLE = "corral"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "interrupt", "Interrupt the lead", show=False),
        Binding("ctrl+o", "toggle_logs", "Expand logs", show=False),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    rows: var[tuple[ActivityRow, ...]] = var((), init=False)
    """The activity card's rows: managed agents, then teams agents, then queued teams spawns
    (computed from `activity`; the watcher shows them in the card and the follow view)."""

    def __init__(
        self,
        options: LaunchOptions,
        *,
        launcher: Callable[[LaunchOptions], Launched] = launch_session,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__()
        self.options = options
        self.launcher = launcher
        self.clock = clock
        self.launched: Launched | None = None
        self.setup_error: str | None = None
        self.settings_broken = False
        """The lead could not start because a settings file does not load (see `SetupCard`)."""
        self.starting = True
        """The lead is still being opened (the app paints first); submissions wait for it."""
        self._pending_submissions: list[Editor.Submitted] = []
        self._unsubscribe: Callable[[], None] | None = None
        self.activity = AgentActivity(
            on_progress=lambda run_id, progress: self.post_message(
                AgentProgress(run_id, progress.text, progress.kind)
            ),
            on_change=lambda: self.post_message(HostChanged()),
        )
        """The agents the app follows (one `TrackedAgent` per run); `rows` is computed from it."""
        self.palette: ActivityPalette = resolve_palette(ActivityColorsSettings())
        """The `activityColors` palette (settings and theme)."""
        self._refresh_pending = False
        # The main screen's widgets, held directly: `query_one` searches the
        # *active* screen, which may be the follow view or a dialog.
        self._chat = ChatLog()
        self._editor = Editor(commands=list(COMMANDS), cwd=options.cwd)
        self._activity = ActivityCard(clock=clock)
        self._footer = StatusFooter()
        self.agent_commands = AgentCommands(self)
        """`/agents`, `/agents-checkpoints`, `/agents-extensions` and `/onboard`."""
        self.favorite_models = FavoriteModels(self)
        """`/agents-favorite-models` and its picker."""

    # --- layout --------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield self._chat
        yield self._editor
        yield self._activity
        yield self._footer

    @property
    def chat(self) -> ChatLog:
        """The lead's transcript widget."""
        return self._chat

    @property
    def editor(self) -> Editor:
        """The prompt editor."""
        return self._editor

    async def on_mount(self) -> None:
        self.editor.focus()
        self.set_interval(1.0, self._tick)
        self.theme_changed_signal.subscribe(self, lambda _theme: self._apply_palette())
        new_installation = is_new_installation()  # before the lead's session can be written
        self._footer.update("starting …")
        # The first frame is painted before the lead starts: opening the session and the store, and
        # the provider SDK's import (pydantic-ai, openai/anthropic: seconds of CPU), come after it.
        self.call_after_refresh(lambda: self.run_worker(self._start(new_installation), group="start"))

    async def _start(self, new_installation: bool) -> None:
        """Open the lead (after the first paint), then send what was submitted while it started."""
        try:
            await self._first_open(new_installation)
        finally:
            self.starting = False
            pending, self._pending_submissions = self._pending_submissions, []
            for message in pending:
                await self.on_editor_submitted(message)

    async def _first_open(self, new_installation: bool) -> None:
        await self._open(self.options)
        launched = self.launched
        if (
            new_installation
            and launched is not None
            and not launched.session.is_persisted
            and launched.model_info.ref != DEMO_MODEL  # the tour would only replay itself
        ):
            self.notice(ONBOARD_HINT)  # skipped without a model: the setup card comes first

    def _apply_palette(self) -> None:
        """Resolve the `activityColors` palette for the settings and the current theme."""
        settings = self.launched.settings.activity_colors if self.launched is not None else None
        theme = self.current_theme
        self.palette = resolve_palette(
            settings or ActivityColorsSettings(), dark=theme.dark, warning=theme.warning, error=theme.error
        )
        self._activity.palette = self.palette
        self._chat.palette = self.palette
        if isinstance(self.screen, FollowScreen):
            self.screen.set_palette(self.palette)
        self._activity.show_rows(self.rows)  # the same rows, in the new colours

    async def on_unmount(self) -> None:
        await self._close()

    # --- launching ----------------------------------------------------------------------------

    async def _open(self, options: LaunchOptions) -> None:
        try:
            launched = self.launcher(options)
        except CorralError as exc:
            self.setup_error = str(exc)
            self.settings_broken = isinstance(exc, SettingsError)
            await self.chat.mount(SetupCard(str(exc), settings_broken=self.settings_broken))
            self.render_footer()
            return
        self.setup_error = None
        self.options = options
        self.launched = launched
        for warning in launched.settings_warnings:  # e.g. an untrusted project's ignored keys
            self.notice(warning, kind="warning")
        launched.mcp_notice = lambda line: self.notice(f"warning: {line}", kind="warning")

        def forward(event: AgentEvent) -> None:
            self.post_message(LeadEvent(event))

        self._unsubscribe = launched.agent.subscribe(forward)
        self._apply_palette()
        await self.chat.load(launched.agent.messages)
        self.render_footer()
        self._attach_host()

    async def _close(self) -> None:
        launched, self.launched = self.launched, None
        if launched is None:
            return
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.activity.close()
        self.workers.cancel_group(self, "host")
        try:
            await launched.agent.abort()
            await launched.aclose()
        finally:
            launched.session.close()

    async def reopen(self, options: LaunchOptions) -> None:
        """Close the lead's session (its agents in this process stop) and open `options`' one."""
        await self._close()
        await self.chat.reset()
        self.rows = ()
        await self._open(options)

    @work(group="host", exclusive=True)
    async def _attach_host(self) -> None:
        launched = self.launched
        if launched is None:
            return
        try:
            await launched.attach_host()
        except CorralError as exc:
            self.notice(f"agents unavailable: {exc}", kind="error")
            return
        host = launched.host
        if host is None:
            return
        for warning in host.warnings:  # e.g. a read agent running unconfined, recovery notes
            self.notice(warning, kind="warning")
        host.on_warning = lambda warning: self.notice(warning, kind="warning")
        self.post_message(HostChanged())
        while True:
            await host.wait_for_change()
            self.post_message(HostChanged())

    # --- lead events ---------------------------------------------------------------------------

    def notice(self, text: str, *, kind: str = "info") -> None:
        """Add a note to the chat."""
        self.chat.notice(text, kind=kind)

    async def on_lead_event(self, message: LeadEvent) -> None:
        event = message.event
        if event.type == "agent_start" and self.launched is not None:
            warning = self.launched.agent.overhead_warning_once()
            if warning is not None:
                self.notice(f"warning: {warning}", kind="warning")
        await self.chat.apply(event)
        if isinstance(event, MessageEndEvent) or event.type in (
            "agent_start",
            "agent_settled",
            "compaction_end",
        ):
            self.render_footer()

    # --- editor and keys ---------------------------------------------------------------------

    def on_editor_completions_shown(self, message: Editor.CompletionsShown) -> None:
        shown = message.candidates[:20]
        more = f" … and {len(message.candidates) - len(shown)} more" if len(message.candidates) > 20 else ""
        self.notice("  ".join(shown) + more)

    async def on_editor_submitted(self, message: Editor.Submitted) -> None:
        if self.starting:  # sent as soon as the lead has started, in order
            self._pending_submissions.append(message)
            return
        text = message.text
        if text.startswith("/"):
            await run_command(self, text)
            return
        launched = self.launched
        if launched is None:
            if self.settings_broken:
                self.notice(
                    f"Nothing was sent: fix the settings file and restart ({self.setup_error})", kind="error"
                )
            else:
                self.notice("No model yet: " + (self.setup_error or "choose one with /model"), kind="error")
            return
        if text.startswith("!"):
            self._shell(text)
            return
        try:
            text = self._attach_files(text)
        except CorralError as exc:
            self.notice(f"{exc} (nothing was sent; the text is back in the prompt)", kind="error")
            self.editor.load_text(message.text)
            return
        agent = launched.agent
        if agent.is_idle:
            self._prompt(text)
            return
        label = "steer" if message.kind == "send" else "follow-up"
        card = UserCard(text, queued=f"{label} queued")
        card.add_class("queued")
        self.chat.queued[text] = card
        self.chat.add(card)
        if message.kind == "send":
            agent.steer(text)
        else:
            agent.follow_up(text)

    def on_editor_navigate_requested(self, _message: Editor.NavigateRequested) -> None:
        """Down with an empty editor: follow the first agent of the activity card."""
        agents = self.agents
        if agents is None or not self.rows:
            return
        self.push_screen(FollowScreen(agents, self.rows, palette=self.palette), self._back_to_lead)

    def _back_to_lead(self, _result: None) -> None:
        self.editor.focus()

    def prompt_lead(self, text: str) -> object:
        """Send the lead `text` as a prompt (a worker of the `lead` group)."""
        return self._prompt(text)

    @work(group="lead")
    async def _prompt(self, text: str) -> None:
        launched = self.launched
        if launched is None:
            return
        try:
            await launched.agent.prompt(text, streaming_behavior="steer")
        except CorralError as exc:
            self.notice(str(exc), kind="error")
        self.render_footer()

    def _attach_files(self, text: str) -> str:
        """The message with each `@path` naming a file attached (Pi's `@file`): the files first,
        then the text. Words starting with `@` that name no file stay as they are.

        Raises:
            CorralError: a named file cannot be read, or the message is too large.
        """
        from corral.orchestration import prepare_files

        cwd = self.options.cwd.expanduser()
        paths = [word[1:] for word in text.split() if word.startswith("@") and len(word) > 1]
        found = [path for path in dict.fromkeys(paths) if (cwd / Path(path).expanduser()).is_file()]
        if not found:
            return text
        prepared = prepare_files(found, cwd=cwd)
        rendered = prepared.render("Message", text)
        self.notice("attached " + ", ".join(found))
        return rendered.text

    @work(group="shell")
    async def _shell(self, line: str) -> None:
        """`!cmd`: run `cmd` in the project's shell; the command and its output join the lead's
        context (added after the current run, if one is going). `!!cmd` keeps it out of the context."""
        from corral.agent.tools import BashTool, run_user_command
        from corral.llm import BashExecutionMessage

        launched = self.launched
        excluded = line.startswith("!!")
        command = line[2 if excluded else 1 :].strip()
        if launched is None:
            return
        if not command:
            self.notice("usage: !command runs it and adds the output to the context; !!command does not")
            return
        card = BashCard(command, excluded=excluded)
        self.chat.add(card)
        tool = BashTool(launched.cwd, shell_path=launched.settings.shell_path)
        result = await run_user_command(tool, command)
        message = BashExecutionMessage(
            command=command,
            output=result.output,
            exit_code=result.exit_code,
            cancelled=result.cancelled,
            truncated=result.truncated,
            full_output_path=result.full_output_path,
            exclude_from_context=True if excluded else None,
        )
        launched.agent.record_bash_execution(message)
        card.set_result(message)
        self.render_footer()

    def action_interrupt(self) -> None:
        """Escape: interrupt the lead's current model request or tool.

        Messages queued for the lead (steers, follow-ups) are taken back into the prompt rather
        than delivered after the interrupt; the notice says when the lead has stopped."""
        launched = self.launched
        if launched is None or launched.agent.is_idle:
            return
        steering, follow_up = launched.agent.clear_queue()
        returned = [*steering, *follow_up]
        for text in returned:
            card = self.chat.queued.pop(text, None)
            if card is not None:
                card.remove()
        if returned:
            draft = self.editor.text.strip()
            self.editor.load_text("\n".join([*returned, *([draft] if draft else [])]))
        note = self.chat.notice("interrupting the lead …")
        self._abort(note, len(returned))

    @work(group="abort")
    async def _abort(self, note: NoticeCard, returned: int) -> None:
        if self.launched is not None:
            await self.launched.agent.abort()
        back = f"; {returned} queued message(s) are back in the prompt" if returned else ""
        note.update(f"lead interrupted{back}")

    def action_toggle_logs(self) -> None:
        """Expand or collapse every large tool log."""
        self.chat.action_toggle_logs()

    @on(Button.Pressed, "#use-demo")
    async def _use_demo(self) -> None:
        await self.switch_to_demo()

    async def switch_to_demo(self) -> None:
        """Start the lead on the offline tour model (`DEMO_MODEL`), keeping the other choices."""
        for card in self._chat.query(SetupCard):
            await card.remove()
        options = LaunchOptions(
            self.options.cwd,
            model=DEMO_MODEL,
            thinking=self.options.thinking,
            session=self.options.session,
            continue_recent=self.options.continue_recent,
            no_session=self.options.no_session,
            tools=self.options.tools,
            surfaces=self.options.surfaces,
        )
        await self.reopen(options)
        if self.launched is not None:
            self.notice(f"using {DEMO_MODEL}: an offline scripted model; send any message to start the tour")
        self.editor.focus()

    async def new_session(self) -> None:
        """`/new`: a fresh session in this directory with the same model, thinking level, tools and surfaces."""
        launched, options = self.launched, self.options
        await self.reopen(
            LaunchOptions(
                options.cwd,
                model=launched.model_info.ref if launched is not None else options.model,
                thinking=launched.agent.thinking_level if launched is not None else options.thinking,
                tools=options.tools,
                surfaces=options.surfaces,
            )
        )
        if self.launched is not None:
            self.notice("new session: the previous one is saved (/resume reopens it)")

    async def resume_session(self, path: str) -> None:
        """`/resume`'s choice: open the saved session at `path` (same model choice, tools and surfaces)."""
        options = self.options
        await self.reopen(
            LaunchOptions(
                options.cwd.expanduser().resolve(),
                model=options.model,
                session=path,
                tools=options.tools,
                surfaces=options.surfaces,
            )
        )
        self.notice(f"resumed {Path(path).name}")

    def trust_project(self) -> None:
        """`/trust`: trust this project (the nearest directory holding `.corral/`), like `corral trust`."""
        from corral._cli._trust import trust_summary
        from corral.trust import find_project_dir, pinned_files, trust_project, trust_state

        cwd = self.options.cwd.expanduser().resolve()
        project = find_project_dir(cwd) or cwd
        try:
            before = pinned_files(project)
            summary = trust_summary(project, trust_state(project))
            real = trust_project(project, expected=before)
        except CorralError as exc:
            self.notice(str(exc), kind="error")
            return
        self.notice(
            f"trusted {real}: its .corral/agents/ definitions and scripts take effect now, its settings "
            f"from the next start; editing a pinned file untrusts it again\n{summary.rstrip()}"
        )

    async def reopen_with_model(self, ref: str) -> None:
        """Start the lead on model `ref` (it had none), keeping the other choices."""
        options = LaunchOptions(
            self.options.cwd,
            model=ref,
            session=self.options.session,
            continue_recent=self.options.continue_recent,
            no_session=self.options.no_session,
            tools=self.options.tools,
            surfaces=self.options.surfaces,
        )
        for card in self._chat.query(SetupCard):
            await card.remove()
        await self.reopen(options)

    # --- host: activity card and cost -------------------------------------------------------

    @property
    def host(self) -> Host | None:
        """The orchestration host, once attached."""
        return None if self.launched is None else self.launched.host

    @property
    def agents(self) -> LeadAgents | None:
        """The lead's agents (rows and controls), once the host is attached."""
        return None if self.launched is None else self.launched.agents

    async def list_result(self) -> ListResult | None:
        """The lead's `list` (agents, definitions, invalid definition files); `None` without a host."""
        agents = self.agents
        return None if agents is None else await agents.list_agents()

    def on_tier_picker_screen_favorite_chosen(self, message: TierPickerScreen.FavoriteChosen) -> None:
        self.favorite_models.chosen(message)

    def on_tier_picker_screen_favorite_cleared(self, message: TierPickerScreen.FavoriteCleared) -> None:
        self.favorite_models.cleared(message)

    def on_host_changed(self, _message: HostChanged) -> None:
        self._schedule_refresh()

    def _schedule_refresh(self) -> None:
        """Coalesce bursts of host changes and agent progress into one refresh per `REFRESH_S`."""
        if self._refresh_pending:
            return
        self._refresh_pending = True
        self.set_timer(REFRESH_S, self._refresh_activity)

    @work(group="activity", exclusive=True)
    async def _refresh_activity(self) -> None:
        self._refresh_pending = False
        agents = self.agents
        if agents is None:
            return
        self.activity.refresh(agents)
        self._render_activity()
        self.render_footer()

    def on_agent_progress(self, message: AgentProgress) -> None:
        if self.activity.note_progress(message.run_id, Progress(message.kind, message.text)):
            self._schedule_refresh()

    def _tick(self) -> None:
        if self.rows:
            self._render_activity()

    def _render_activity(self) -> None:
        """Set `rows` from the model at the clock's time (the watcher shows them)."""
        agents, launched = self.agents, self.launched
        if agents is None or launched is None:
            self.rows = ()
            return
        now = int(self.clock() * 1000)
        self.rows = self.activity.rows(agents, teams="teams" in launched.surfaces, now_ms=now)

    def watch_rows(self, rows: tuple[ActivityRow, ...]) -> None:
        self._activity.show_rows(rows)
        for screen in self.screen_stack:
            if isinstance(screen, FollowScreen):
                screen.update_rows(rows)

    def cost_summary(self) -> CostSummary:
        """The combined cost of the lead and its agents (incomplete while usage is missing)."""
        launched = self.launched
        if launched is None:
            return CostSummary(0.0)
        return self.activity.cost_summary(launched.agent, self.agents, self.rows)

    def render_footer(self) -> None:
        """Redraw the footer: the lead's state, model, thinking level, context, cost and budget."""
        footer = self._footer
        launched = self.launched
        if launched is None:
            if self.settings_broken:
                footer.update("settings error · fix the file named above and restart")
            else:
                footer.update("no model configured · /model " + DEMO_MODEL + " for the offline tour")
            return
        usage = launched.agent.context_usage()
        footer.show(
            model_ref=launched.model_info.ref + (" (default)" if launched.model_source == "default" else ""),
            thinking=launched.agent.thinking_level,
            percent=None if usage is None else usage.percent,
            window=None if usage is None else usage.context_window,
            cost=self.cost_summary(),
            busy=not launched.agent.is_idle,
            tree_budget=None if self.agents is None else self.agents.tree_budget(launched.agent.stats()),
        )


def run_app(options: LaunchOptions) -> int:
    """Open the app in this terminal; returns the exit code."""
    app = CorralApp(options)
    result = app.run()
    return result if isinstance(result, int) else 0
