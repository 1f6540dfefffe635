"""The app's agent model (`AgentActivity`): one `TrackedAgent` per run, rows built from it, and the
app's reactive `rows` that the activity card follows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

from corral.agent import AgentEvent, MessageEndEvent, ToolExecutionStartEvent
from corral.llm import AssistantMessage, Cost, TextContent, Usage
from corral.tui._activity import AgentActivity
from corral.tui._format import ActivityRow, Progress
from corral.tui.widgets import ActivityCard

from .conftest import SIZE, TuiEnv, started


@dataclass
class FakeSession:
    """An agent session running in this process, as the model reads it."""

    cost: float = 0.0
    is_streaming: bool = False
    messages: list[Any] = field(default_factory=list)
    listeners: list[Callable[[AgentEvent], None]] = field(default_factory=list)

    def stats(self) -> SimpleNamespace:
        return SimpleNamespace(cost=self.cost)

    def context_usage(self) -> None:
        return None

    def subscribe(self, listener: Callable[[AgentEvent], None]) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def emit(self, event: AgentEvent) -> None:
        for listener in list(self.listeners):
            listener(event)


@dataclass
class FakeAgents:
    """The lead's agents port: managed views and the sessions running here."""

    views_: list[SimpleNamespace] = field(default_factory=list)
    sessions_: dict[str, FakeSession] = field(default_factory=dict)

    def views(self) -> tuple[SimpleNamespace, ...]:
        return tuple(self.views_)

    def sessions(self) -> list[tuple[str, FakeSession]]:
        return list(self.sessions_.items())

    def session(self, run_id: str) -> FakeSession | None:
        return self.sessions_.get(run_id)

    def budget(self, run_id: str) -> None:
        return None

    def rate_limit_waits(self, views: Any) -> dict[str, str]:
        return {}


def _view(label: str, run_id: str, state: str = "working") -> SimpleNamespace:
    generation = SimpleNamespace(
        label=label, definition="scout", run_id=run_id, tokens=None, started_at=1_000, created_at=500
    )
    return SimpleNamespace(generation=generation, state=state, stale=False)


def _model() -> tuple[AgentActivity, list[tuple[str, Progress]]]:
    posted: list[tuple[str, Progress]] = []
    return AgentActivity(
        on_progress=lambda run_id, p: posted.append((run_id, p)), on_change=lambda: None
    ), posted


def _rows(activity: AgentActivity, agents: FakeAgents) -> tuple[ActivityRow, ...]:
    return activity.rows(cast(Any, agents), teams=False, now_ms=61_000)


def _reply(text: str, cost: float) -> MessageEndEvent:
    message = AssistantMessage(content=[TextContent(text=text)], usage=Usage(cost=Cost(total=cost)))
    return MessageEndEvent(message=message)


def test_an_agents_events_reach_its_row_and_its_cost_the_total() -> None:
    activity, posted = _model()
    session = FakeSession(cost=0.25)
    agents = FakeAgents([_view("scout", "run-1")], {"run-1": session})
    activity.refresh(cast(Any, agents))
    assert list(activity.agents) == ["run-1"] and len(session.listeners) == 1
    (row,) = _rows(activity, agents)
    assert (row.label, row.state, row.elapsed, row.progress) == ("scout", "working", "1m00s", "")

    session.emit(ToolExecutionStartEvent(tool_call_id="c1", tool_name="grep", args={"pattern": "tax"}))
    assert posted == [("run-1", Progress("tool", "grep pattern=tax"))]
    assert activity.note_progress(*posted[-1])  # the app's message handler
    assert _rows(activity, agents)[0].progress == "grep pattern=tax"

    session.emit(_reply("Looking.\nFound it in README.md.", 0.5))
    assert posted[-1] == ("run-1", Progress("reply", "Found it in README.md."))
    lead = FakeSession(cost=1.0)
    summary = activity.cost_summary(cast(Any, lead), cast(Any, agents), _rows(activity, agents))
    assert (summary.total, summary.incomplete) == (1.75, False)


def test_a_departed_agent_leaves_no_entry_and_keeps_its_cost() -> None:
    activity, _ = _model()
    session = FakeSession(cost=0.5)
    agents = FakeAgents([_view("scout", "run-1"), _view("other", "run-2")], {"run-1": session})
    activity.refresh(cast(Any, agents))
    assert [row.label for row in _rows(activity, agents)] == ["scout", "other"]
    lead = FakeSession()
    # run-2 is listed but not observable here: the total is incomplete while it is shown.
    assert activity.cost_summary(cast(Any, lead), cast(Any, agents), _rows(activity, agents)).incomplete

    agents.views_, agents.sessions_ = [], {}  # both delivered their results; scout's session ended
    activity.refresh(cast(Any, agents))
    assert _rows(activity, agents) == ()
    assert activity.agents == {} and session.listeners == []  # no entry, no subscription left
    summary = activity.cost_summary(cast(Any, lead), cast(Any, agents), ())
    assert (summary.total, summary.incomplete) == (0.5, False)
    # A progress message posted before it left and handled after adds nothing back.
    assert not activity.note_progress("run-1", Progress("reply", "late"))
    assert activity.agents == {}


def test_a_session_keeps_its_entry_while_it_runs_here_after_the_list_drops_it() -> None:
    activity, _ = _model()
    session = FakeSession()
    agents = FakeAgents([_view("scout", "run-1")], {"run-1": session})
    activity.refresh(cast(Any, agents))
    agents.views_ = []  # settled and delivered, but its session has not ended yet
    activity.refresh(cast(Any, agents))
    assert _rows(activity, agents) == () and list(activity.agents) == ["run-1"]
    assert activity.agents["run-1"].managed is None and session.listeners


def test_close_ends_every_subscription_and_forgets_every_run() -> None:
    activity, _ = _model()
    session = FakeSession(cost=0.5)
    agents = FakeAgents([_view("scout", "run-1")], {"run-1": session})
    activity.refresh(cast(Any, agents))
    activity.close()
    assert activity.agents == {} and session.listeners == [] and activity.departed_cost == 0.0


async def test_setting_the_apps_rows_updates_the_activity_card(tui_env: TuiEnv) -> None:
    app = tui_env.app(tui_env.script("plain", 'steps:\n  - text: "hi"\n'))
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        card = app.query_one(ActivityCard)
        assert not card.display
        row = ActivityRow("scout", "scout", "working", progress="grep pattern=tax")
        app.rows = (row,)  # the watcher runs as the attribute is set
        assert card.rows == [row] and card.display
        assert "grep pattern=tax" in str(card.render())
        app.rows = ()
        assert card.rows == [] and not card.display


def test_a_managed_agents_rate_limit_wait_shows_in_its_row_instead_of_its_progress() -> None:
    """The row reads the wait from the agents port (`LeadAgents.rate_limit_waits`), as docs/fleet.md says."""

    class WaitingAgents(FakeAgents):
        def rate_limit_waits(self, views: Any) -> dict[str, str]:
            return {"r-1": "waiting (rate limit, 7s)"}

    activity, _ = _model()
    agents = WaitingAgents(views_=[_view("scout", "r-1"), _view("other", "r-2")])
    activity.refresh(cast(Any, agents))
    rows = {row.label: row for row in _rows(activity, agents)}
    assert rows["scout"].progress == "waiting (rate limit, 7s)"
    assert rows["other"].progress != "waiting (rate limit, 7s)"
