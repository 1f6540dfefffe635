"""Modal screens: the `/agents` status tables and a generic picker (models, thinking levels, sessions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, OptionList
from textual.widgets.option_list import Option

from corral.orchestration.teams.results import (
    AgentSnapshot,
    FailedSnapshot,
    MemberSnapshot,
    QueuedSnapshot,
)
from corral.tui._format import format_tokens

__all__ = ["AgentsScreen", "PickerScreen", "team_status_row"]

AGENT_COLUMNS = ("agent", "definition", "state", "tokens", "actions", "last activity")


TEAM_COLUMNS = ("agent", "tier", "phase", "outcome", "verification", "acceptance", "summary / detail")


def team_status_row(snapshot: AgentSnapshot) -> tuple[str, ...]:
    """One `/agents` teams row from a `get_agent_status` snapshot (live, queued or a recent completion)."""
    outcome = verification = acceptance = "-"
    report = None if isinstance(snapshot, (QueuedSnapshot, FailedSnapshot)) else snapshot.report
    if report is not None:
        outcome = report.outcome or "unspecified"
        effective = report.effective_outcome
        if effective and effective != report.outcome:
            outcome += f" (effective {effective})"
        verification = report.verification_state
        acceptance = report.acceptance
    if isinstance(snapshot, QueuedSnapshot):
        detail = "" if not snapshot.queue_position else f"queued at position {snapshot.queue_position}"
    elif isinstance(snapshot, MemberSnapshot) and snapshot.in_pane and snapshot.pane_id:
        ray = snapshot.pane_id.startswith("ray:")
        detail = f"on Ray worker {snapshot.pane_id[4:]}" if ray else f"in tmux pane {snapshot.pane_id}"
    else:
        member = snapshot if isinstance(snapshot, MemberSnapshot) else None
        error = snapshot.error if isinstance(snapshot, (MemberSnapshot, FailedSnapshot)) else None
        waiting = (
            "interrupted; waiting for a message" if member is not None and member.awaiting_message else None
        )
        tool = f"using {member.active_tool}" if member is not None and member.active_tool else ""
        detail = (None if report is None else report.summary) or error or waiting or tool
    tier = snapshot.role if isinstance(snapshot, FailedSnapshot) else snapshot.model_slot or snapshot.role
    return (snapshot.name, tier, snapshot.phase, outcome, verification, acceptance, detail)


class AgentsScreen(ModalScreen[None]):
    """`/agents`: the managed agents (the controller's `list` records), then the teams agents
    (`get_agent_status` snapshots: live, queued, and recent completions with their outcome), then
    any definition file that could not be loaded, with its path and the problem."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("q", "dismiss", "Close"),
    ]

    def __init__(
        self,
        records: Sequence[Mapping[str, Any]],
        teams: Sequence[AgentSnapshot] = (),
        invalid: Sequence[Mapping[str, str]] = (),
    ) -> None:
        super().__init__()
        self.records = list(records)
        self.teams = list(teams)
        self.invalid = list(invalid)

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal"):
            count = len(self.records) + len(self.teams)
            yield Label(f"Agents ({count})  ·  Escape closes", classes="modal-title")
            table: DataTable[str] = DataTable(id="agents-table", cursor_type="row", zebra_stripes=True)
            table.add_columns(*AGENT_COLUMNS)
            for record in self.records:
                state = str(record.get("state", "unknown"))
                if record.get("stale"):
                    state += " ⚠"
                table.add_row(
                    str(record.get("agent", "?")),
                    str(record.get("agent_definition", "?")),
                    state,
                    format_tokens(record.get("tokens")),
                    ", ".join(record.get("available_actions", [])),
                    "-" if record.get("last_activity_at") is None else "recent",
                )
            if not self.records and not self.teams:
                yield Label("No agents in this session.", id="agents-empty")
            if self.records or not self.teams:
                yield table
            if self.teams:
                yield Label("teams agents", classes="modal-subtitle")
                teams: DataTable[str] = DataTable(id="teams-table", cursor_type="row", zebra_stripes=True)
                teams.add_columns(*TEAM_COLUMNS)
                for snapshot in self.teams:
                    teams.add_row(*team_status_row(snapshot))
                yield teams
            if self.invalid:
                yield Label(
                    f"invalid definition files ({len(self.invalid)}, not loaded)", classes="modal-subtitle"
                )
                for item in self.invalid:
                    yield Label(
                        f"INVALID {item.get('path')}: {item.get('problem')}", classes="invalid-definition"
                    )

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


class PickerScreen(ModalScreen[str | None]):
    """Pick one of `choices`; dismisses with the chosen value, or `None` on Escape."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: Sequence[tuple[str, str]], *, current: str | None = None) -> None:
        """Args:
        title: The heading.
        choices: `(value, label)` pairs, in order.
        current: The value to highlight first.
        """
        super().__init__()
        self.title_text = title
        self.choices = list(choices)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal"):
            yield Label(self.title_text, classes="modal-title")
            options = OptionList(*(Option(label, id=value) for value, label in self.choices), id="picker")
            yield options

    def on_mount(self) -> None:
        picker = self.query_one("#picker", OptionList)
        picker.focus()
        values = [value for value, _ in self.choices]
        if self.current in values:
            picker.highlighted = values.index(self.current)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
