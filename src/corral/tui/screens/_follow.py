"""The follow view: one agent's transcript, live, with its controls.

Opened with Down from an empty editor. Navigation follows the activity card's
row order; the app keeps the screen's rows current (`update_rows`), new agents
are appended and agents that left the card (finishing, stopped) stay
reachable. Reads and controls go through the lead's agents port (`LeadAgents`): controls on a
managed agent call the controller, which
checks ownership and state as it does for the `agent` tool; on a teams agent
they call the teams core as the lead's own tools do: `send_message` (`m`),
`interrupt_teammate` (`i`) and `stop_teammate` (`x`, after which the lead
gets a hidden notice with the teardown's outcome). `h` hands either kind off
to a tmux pane, or onto Ray when `runtime = "ray"` (`LeadAgents.handoff`); its row
goes on, the agent now running there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Static

from corral.agent import AgentEvent
from corral.errors import CorralError
from corral.tui._format import ActivityRow
from corral.tui._palette import DARK_DEFAULTS, ActivityPalette, tier_level
from corral.tui._teams import interrupt_note, message_note, stop_notice
from corral.tui.widgets import ChatLog

if TYPE_CHECKING:
    from corral.lead._agents import LeadAgents
    from corral.orchestration import HandoffResult

__all__ = ["FollowScreen", "handoff_line"]

INTERRUPT_MESSAGE = (
    "The owner interrupted your current operation from the terminal; continue your assignment."
)
"""The replacement prompt `i` sends (the controller's interrupt continues the assignment with it)."""

HINT = "↑↓ ←→ agents · PgUp/Dn Home/End · l logs · m message · i interrupt · x stop · h tmux · Esc back"


class FollowScreen(Screen[None]):
    """Follow one agent; Up/Down/Left/Right move between agents, Escape returns to the lead.

    Args:
        agents: The lead's agents (reads, and controls checked against the lead's caller).
        rows: The activity card's rows, in order.
        index: The selected agent.
        palette: The `activityColors` palette.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", priority=True),
        Binding("up", "move(-1)", "Previous", show=False),
        Binding("down", "move(1)", "Next", show=False),
        Binding("left", "cycle(-1)", "Cycle", show=False),
        Binding("right", "cycle(1)", "Cycle", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "home", "Top", show=False),
        Binding("end", "end", "Follow", show=False),
        Binding("l", "logs", "Logs", show=False),
        Binding("m", "compose", "Message", show=False),
        Binding("i", "interrupt", "Interrupt", show=False),
        Binding("x", "stop", "Stop", show=False),
        Binding("h", "handoff", "Hand off to a worker (tmux or Ray)", show=False),
        Binding("g", "merge", "Merge its branch", show=False),
    ]

    AUTO_FOCUS = None

    class AgentEventMessage(Message):
        """An event of the followed agent."""

        def __init__(self, label: str, event: AgentEvent) -> None:
            super().__init__()
            self.label = label
            self.event = event

    def __init__(
        self,
        agents: LeadAgents,
        rows: Sequence[ActivityRow],
        *,
        index: int = 0,
        palette: ActivityPalette = DARK_DEFAULTS,
    ) -> None:
        super().__init__()
        self.agents = agents
        self.rows = list(rows)
        """The agents to navigate, in activity-row order (departed ones stay)."""
        self.index = index
        self.palette = palette
        self._unsubscribe: Callable[[], None] | None = None
        self._shown_run: str | None = None
        self._show_lock = asyncio.Lock()
        self._ready = False
        self.last_error: str | None = None
        self.last_handoff: HandoffResult | None = None
        """The outcome of the latest `h`."""

    @property
    def labels(self) -> list[str]:
        """The agents' labels (teams names), in navigation order."""
        return [row.label for row in self.rows]

    @property
    def row(self) -> ActivityRow:
        """The followed agent's row."""
        return self.rows[self.index]

    @property
    def label(self) -> str:
        """The followed agent's label."""
        return self.row.label

    def update_rows(self, rows: Sequence[ActivityRow]) -> None:
        """Take the card's latest rows: update known agents, append new ones, keep departed ones."""
        fresh = {row.key: row for row in rows}
        known = {row.key for row in self.rows}
        self.rows = [fresh.get(row.key) or _departed(row) for row in self.rows]
        self.rows += [row for row in rows if row.key not in known]
        self._render_header()
        started = self.row.run_id is not None and self.row.run_id != self._shown_run
        if self._ready and self.is_current and started:
            self.run_worker(self._show(), group="follow-show", exclusive=True)

    def set_palette(self, palette: ActivityPalette) -> None:
        """Use another palette (the theme changed)."""
        self.palette = palette
        for log in self.query("#follow-log").results(ChatLog):
            log.palette = palette
        self._render_header()

    @property
    def transcript(self) -> ChatLog:
        """The transcript widget."""
        return self.query_one("#follow-log", ChatLog)

    @property
    def composer(self) -> Input:
        """The message (or reply) composer."""
        return self.query_one("#composer", Input)

    def compose(self) -> ComposeResult:
        yield Static("", id="follow-header")
        log = ChatLog(id="follow-log")
        log.can_focus = False
        yield log
        composer = Input(id="composer", disabled=True)
        composer.display = False
        yield composer
        yield Static(HINT, id="follow-hint")

    async def on_mount(self) -> None:
        self.transcript.palette = self.palette
        self._ready = True
        await self._show()

    async def on_unmount(self) -> None:
        self._detach()

    def _detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _run_id(self, row: ActivityRow) -> str | None:
        if row.run_id is not None or row.is_team:
            return row.run_id
        for generation in self.agents.tree():
            if generation.label == row.label:
                return generation.run_id
        return None

    def _render_header(self) -> None:
        headers = self.query("#follow-header").results(Static)
        header = next(headers, None)
        if header is None:  # not composed yet, or being removed
            return
        row, palette = self.row, self.palette
        text = Text()
        text.append(row.label, style=f"bold {palette.names}".strip())
        text.append(f" · {row.state}")
        if row.is_team:
            text.append(" · ")
            text.append(row.definition, style=palette.tier_color(tier_level(row.definition)))
            text.append(" · ")
            text.append(row.model, style=palette.model)
            text.append("/", style="dim")
            text.append(row.thinking, style=palette.thinking)
            text.append(f" · {row.elapsed} · {row.tokens}")
            if row.helpers:
                text.append(f" · +{row.helpers} helpers")
        text.append(f"   ({self.index + 1} of {len(self.rows)})")
        header.update(text)

    async def _show(self) -> None:
        # One at a time: navigation and a queued agent that starts may both ask to show.
        async with self._show_lock:
            await self._show_row(self.row)

    async def _show_row(self, row: ActivityRow) -> None:
        run_id = self._run_id(row)
        self._shown_run = run_id
        self._detach()
        log = self.transcript
        await log.reset()
        label, state = row.label, row.state
        self._render_header()
        session = self.agents.session(run_id) if run_id is not None else None
        if session is None:
            generation = self.agents.generation(run_id) if run_id is not None else None
            if generation is not None and generation.runs_in_pane:
                log.notice(
                    f"{label} runs in tmux pane {generation.pane_id or '?'} now (handed off); "
                    "watch it there. Its result or report still comes to the lead."
                )
            elif row.state == "queued":
                log.notice(f"{label} is queued: it starts when a slot frees ({row.progress}).")
            elif row.is_team and state == "finished":
                log.notice(
                    f"{label} has left the team: it reported or was stopped; "
                    "a report, if any, is in the lead's chat."
                )
            elif state == "finished":
                log.notice(
                    f"{label} has finished: it delivered its result (in the lead's chat) or was stopped; "
                    "`corral agents show` still reads it."
                )
            elif row.is_team:
                log.notice(f"{label} is {state}: {row.progress or 'its run is not in this process'}.")
            else:
                log.notice(
                    f"{label} is not running in this process ({state}); "
                    "`corral agents show` and the agent tool's transcript action still read it."
                )
            return
        await log.load(session.messages)
        log.anchor()

        def forward(event: AgentEvent) -> None:
            self.post_message(self.AgentEventMessage(label, event))

        self._unsubscribe = session.subscribe(forward)

    async def on_follow_screen_agent_event_message(self, message: AgentEventMessage) -> None:
        if message.label == self.label:
            await self.transcript.apply(message.event)

    # --- navigation ----------------------------------------------------------------------------

    async def action_move(self, step: int) -> None:
        """Up/Down: previous/next agent; Up from the first returns to the lead."""
        if self.composer.display:
            return
        target = self.index + step
        if target < 0:
            self.dismiss(None)
            return
        if target >= len(self.labels) or target == self.index:
            return
        self.index = target
        await self._show()

    async def action_cycle(self, step: int) -> None:
        """Left/Right: cycle through the agents."""
        if self.composer.display or len(self.labels) < 2:
            return
        self.index = (self.index + step) % len(self.labels)
        await self._show()

    def action_page(self, direction: int) -> None:
        """Page Up/Page Down: scroll the transcript."""
        if direction < 0:
            self.transcript.release_anchor()
            self.transcript.scroll_page_up(animate=False)
        else:
            self.transcript.scroll_page_down(animate=False)

    def action_home(self) -> None:
        """Home: the beginning of the transcript (stops following)."""
        self.transcript.release_anchor()
        self.transcript.scroll_home(animate=False)

    def action_end(self) -> None:
        """End: back to the bottom, following new output."""
        self.transcript.scroll_end(animate=False)

    def action_logs(self) -> None:
        """`l`: expand or collapse large tool logs."""
        if not self.composer.display:
            self.transcript.action_toggle_logs()

    def action_back(self) -> None:
        """Escape: cancel the composer, else return to the lead."""
        if self.composer.display:
            self._close_composer()
            return
        self.dismiss(None)

    def _close_composer(self) -> None:
        self.composer.display = False
        self.composer.disabled = True
        self.composer.value = ""
        self.set_focus(None)

    # --- controls -------------------------------------------------------------------------------

    def action_compose(self) -> None:
        """`m`: write a message (a reply, when the agent waits on a question)."""
        if self.composer.display:
            return
        blocked = not self.row.is_team and self.row.state == "blocked"
        self.composer.placeholder = (
            f"Reply to {self.label}'s question (Enter sends, Esc cancels)"
            if blocked
            else f"Message {self.label} (Enter sends as a steer, Esc cancels)"
        )
        self.composer.disabled = False
        self.composer.display = True
        self.composer.focus()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            return
        self.composer.value = ""
        self._send(self.row, text)

    @work(group="follow-control")
    async def _send(self, row: ActivityRow, draft: str) -> None:
        from corral.orchestration.surfaces import ReplyParams, SteerParams
        from corral.orchestration.surfaces.teams import SendMessageRequest

        agents = self.agents
        controller, caller = agents.controller, agents.caller
        label = row.label
        try:
            if row.is_team:
                sent = await agents.teams.messages.send_message(
                    caller, SendMessageRequest(recipient=label, content=draft, summary="From the user")
                )
                self.transcript.notice(message_note(label, sent.delivery))
            elif row.state == "blocked":
                await controller.reply(caller, ReplyParams(agent=label, message=draft))
                self.transcript.notice(f"replied to {label}")
            else:
                await controller.steer(caller, SteerParams(agent=label, message=draft))
                self.transcript.notice(f"steer sent to {label}")
        except CorralError as exc:
            self.last_error = str(exc)
            self.transcript.notice(f"message not sent: {exc}", kind="error")
            if self.composer.display and not self.composer.value:
                self.composer.value = draft
            return
        self._close_composer()

    @work(group="follow-control")
    async def action_interrupt(self) -> None:
        """`i`: interrupt the agent's running tool or model call; it continues its assignment."""
        if self.composer.display:
            return
        from corral.orchestration.surfaces import InterruptParams

        row = self.row
        label = row.label
        try:
            if row.is_team:
                interrupted = await self.agents.teams.control.interrupt_teammate(self.agents.caller, label)
                text = interrupt_note(interrupted)
                ok = interrupted.status in ("interrupted", "pending")
                self.last_error = None if ok else text
                self.transcript.notice(text, kind="info" if ok else "error")
                return
            await self.agents.controller.interrupt(
                self.agents.caller, InterruptParams(agent=label, message=INTERRUPT_MESSAGE)
            )
        except CorralError as exc:
            self.last_error = str(exc)
            self.transcript.notice(f"interrupt failed: {exc}", kind="error")
            return
        self.transcript.notice(f"interrupted {label}")

    @work(group="follow-control")
    async def action_stop(self) -> None:
        """`x`: stop (close) the whole agent."""
        if self.composer.display:
            return
        from corral.orchestration.surfaces import CloseParams

        row = self.row
        label = row.label
        try:
            if row.is_team:
                await self._stop_teammate(label)
                return
            await self.agents.controller.close(self.agents.caller, CloseParams(agent=label))
        except CorralError as exc:
            self.last_error = str(exc)
            self.transcript.notice(f"stop failed: {exc}", kind="error")
            return
        self.transcript.notice(f"stopped {label}")

    @work(group="follow-control")
    async def action_merge(self) -> None:
        """`g`: merge an isolated writer's branch into the working tree (like `corral merge`)."""
        if self.composer.display:
            return
        label = self.row.label
        try:
            outcome = await self.agents.merge(label)
        except CorralError as exc:
            self.last_error = str(exc)
            self.transcript.notice(f"merge failed: {exc}", kind="error")
            return
        self.last_error = None if outcome.ok else outcome.message
        paths = "".join(f"\n  {path}" for path in outcome.paths)
        self.transcript.notice(outcome.message + paths, kind="info" if outcome.ok else "error")

    @work(group="follow-control")
    async def action_handoff(self) -> None:
        """`h`: move the agent onto the handoff runtime (a tmux pane, or Ray when `runtime = "ray"`) at a
        safe point; the row goes on there."""
        if self.composer.display:
            return
        row = self.row
        run_id = self._run_id(row)
        if run_id is None:
            self.last_error = f"{row.label} has not started"
            self.transcript.notice(f"handoff: {self.last_error}; nothing to move.", kind="error")
            return
        target = self.agents.handoff_target()
        where = "a tmux pane" if target == "tmux" else f"the {target} runtime"
        self.transcript.notice(f"handing {row.label} off to {where} …")
        try:
            result = await self.agents.handoff(run_id)
        except CorralError as exc:
            self.last_error = str(exc)
            self.transcript.notice(f"handoff failed: {exc}", kind="error")
            return
        self.last_handoff = result
        moved = result.status == "moved"
        self.transcript.notice(handoff_line(result), kind="info" if moved else "error")
        if moved and self._shown_run == run_id:
            self._detach()  # its in-process run ended; the pane has it now
        self.last_error = None if moved else result.message

    async def _stop_teammate(self, name: str) -> None:
        """`x` on a teams agent: `stop_teammate`, then a hidden notice to the lead (teardown included)."""
        agents = self.agents
        from corral.orchestration.surfaces.teams._render import render_stop, stop_details

        result = await agents.teams.control.stop_teammate(
            agents.caller, name, "stopped by the user from the terminal"
        )
        text, details = render_stop(result), stop_details(result)
        stopped = bool(details.get("stopped"))
        self.last_error = None if stopped else text
        self.transcript.notice(text, kind="info" if stopped else "error")
        if stopped or "teardown" in details:
            agents.teams.messages.notify_lead(agents.caller.session_id, stop_notice(name, text, details))


def handoff_line(result: HandoffResult) -> str:
    """The outcome line of `h`: `moved`, `refused` (nothing changed) or `failed` (the agent is lost)."""
    if result.status == "moved":
        return f"handoff: {result.message}"
    if result.status == "refused":
        return f"handoff refused ({result.reason}): {result.message} Nothing changed."
    return f"handoff failed ({result.reason}): {result.message}"


def _departed(row: ActivityRow) -> ActivityRow:
    """An agent that left the card: `finished` (a managed agent delivered its result or was closed; a
    teams agent reported or was stopped), never the last state it was seen in."""
    return replace(row, state="finished", progress="")
