"""The follow view: one managed agent's transcript, live, with its controls.

Opened with Down from an empty editor. Navigation follows the activity card's
row order (agents still finishing stay reachable while they have a row). The
screen renders and posts; the controls call the host's controller, which
checks ownership and state as it does for the `agent` tool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Static

from corral.agent import AgentEvent
from corral.errors import CorralError
from corral.tui.widgets import ChatLog

if TYPE_CHECKING:
    from corral.orchestration import Caller, Host

__all__ = ["FollowScreen"]

INTERRUPT_MESSAGE = (
    "The owner interrupted your current operation from the terminal; continue your assignment."
)
"""The replacement prompt `i` sends (the controller's interrupt continues the assignment with it)."""

HINT = "↑↓ agent · ←→ cycle · PgUp PgDn Home End · l logs · m message · i interrupt · x stop · Esc back"


class FollowScreen(Screen[None]):
    """Follow one agent; Up/Down/Left/Right move between agents, Escape returns to the lead.

    Args:
        host: The orchestration host.
        caller: The lead's caller (controls are checked against it).
        labels: Agent labels in activity-row order.
        index: The selected agent.
        states: Each label's state word, for the header and the reply box.
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
        host: Host,
        caller: Caller,
        labels: Sequence[str],
        *,
        index: int = 0,
        states: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.host = host
        self.caller = caller
        self.labels = list(labels)
        self.index = index
        self.states = dict(states or {})
        self._unsubscribe: Callable[[], None] | None = None
        self.last_error: str | None = None

    @property
    def label(self) -> str:
        """The followed agent's label."""
        return self.labels[self.index]

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
        await self._show()

    async def on_unmount(self) -> None:
        self._detach()

    def _detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _run_id(self, label: str) -> str | None:
        for generation in self.host.tree(self.caller.session_id):
            if generation.label == label:
                return generation.run_id
        return None

    async def _show(self) -> None:
        self._detach()
        log = self.transcript
        await log.reset()
        label = self.label
        state = self.states.get(label, "unknown")
        self.query_one("#follow-header", Static).update(
            f"{label} · {state}   ({self.index + 1} of {len(self.labels)})"
        )
        run_id = self._run_id(label)
        child = self.host.children.get(run_id) if run_id is not None else None
        if child is None:
            log.notice(
                f"{label} is not running in this process ({state}); "
                "`corral agents show` and the agent tool's transcript action still read it."
            )
            return
        await log.load(child.agent.messages)
        log.anchor()

        def forward(event: AgentEvent) -> None:
            self.post_message(self.AgentEventMessage(label, event))

        self._unsubscribe = child.agent.subscribe(forward)

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
        blocked = self.states.get(self.label) == "blocked"
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
        self._send(self.label, text)

    @work(group="follow-control")
    async def _send(self, label: str, draft: str) -> None:
        from corral.orchestration.surfaces import ReplyParams, SteerParams

        controller = self.host.controller
        try:
            if self.states.get(label) == "blocked":
                await controller.reply(self.caller, ReplyParams(agent=label, message=draft))
                self.transcript.notice(f"replied to {label}")
            else:
                await controller.steer(self.caller, SteerParams(agent=label, message=draft))
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

        label = self.label
        try:
            await self.host.controller.interrupt(
                self.caller, InterruptParams(agent=label, message=INTERRUPT_MESSAGE)
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

        label = self.label
        try:
            await self.host.controller.close(self.caller, CloseParams(agent=label))
        except CorralError as exc:
            self.last_error = str(exc)
            self.transcript.notice(f"stop failed: {exc}", kind="error")
            return
        self.transcript.notice(f"stopped {label}")
