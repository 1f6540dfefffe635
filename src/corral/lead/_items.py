"""Items: what reaches a lead, read back from the lead's own session.

Every delivery to a lead — a managed agent's result, a question, a teams
report, a completion group's index, a message to `team-lead` — is a custom
message entry in the lead's session, appended (and on disk) before the core
marks it delivered. The lead's session is therefore the one durable record
of what arrived: an item is such an entry, its `entry_id` is the cursor, and
replaying "every item after entry X" is a scan of the session.

`ItemLog` keeps that scan incremental: entries are only ever appended, so it
remembers how many it has looked at and indexes the items it found.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

from corral.session import CustomMessageEntry, SessionManager

__all__ = ["ITEM_TYPES", "ItemKind", "ItemLog", "LeadItem"]

ItemKind = Literal["result", "ask", "report", "group", "message"]
"""What an item is: an agent's `result`, an `ask` to answer, a teams `report`, a completion
`group` index, or a `message` to the lead."""

ITEM_TYPES: dict[str, ItemKind] = {
    "corral-agent-result": "result",
    "corral-agent-ask": "ask",
    "corral-team-report": "report",
    "corral-team-group": "group",
    "corral-team-message": "message",
}
"""The `customType` of each delivery the lead reads as an item (pinned against the core's constants by a test)."""


@dataclass(frozen=True)
class LeadItem:
    """One delivery to the lead, as persisted in its session."""

    kind: ItemKind
    """What arrived (see `ItemKind`)."""
    entry_id: str
    """The session entry holding it: the cursor for `Lead.items(after=...)` and MCP `wait`."""
    text: str
    """The text the lead (or its model) reads."""
    _: KW_ONLY
    details: dict[str, Any] = field(default_factory=dict)
    """The delivery's structured details (for a result: `agent`, `request_id`, `status`, …)."""
    custom_type: str = ""
    """The entry's `customType`, e.g. `corral-agent-result`."""
    timestamp: str = ""
    """When it was appended (ISO 8601)."""

    @property
    def agent(self) -> str | None:
        """The agent it came from (label or team name), when it names one."""
        for key in ("agent", "name", "sender", "from"):
            value = self.details.get(key)
            if isinstance(value, str):
                return value
        return None

    def to_json(self) -> dict[str, Any]:
        """The item as a JSON object (`kind`, `entry_id`, `text`, `details`, `custom_type`, `timestamp`)."""
        return {
            "kind": self.kind,
            "entry_id": self.entry_id,
            "text": self.text,
            "details": self.details,
            "custom_type": self.custom_type,
            "timestamp": self.timestamp,
        }


def _item(entry: object) -> LeadItem | None:
    if not isinstance(entry, CustomMessageEntry):
        return None
    kind = ITEM_TYPES.get(entry.custom_type)
    if kind is None:
        return None
    content = entry.content
    text = content if isinstance(content, str) else "".join(getattr(part, "text", "") for part in content)
    details = dict(entry.details) if isinstance(entry.details, dict) else {}
    return LeadItem(
        kind, entry.id, text, details=details, custom_type=entry.custom_type, timestamp=entry.timestamp
    )


class ItemLog:
    """The items of one session, in the order they were appended."""

    def __init__(self, session: SessionManager) -> None:
        self._session = session
        self._scanned = 0
        self._items: list[LeadItem] = []
        self._index: dict[str, int] = {}

    def refresh(self) -> list[LeadItem]:
        """Scan entries appended since the last call; returns every item so far."""
        entries = self._session.entries
        for entry in entries[self._scanned :]:
            item = _item(entry)
            if item is not None:
                self._index[item.entry_id] = len(self._items)
                self._items.append(item)
        self._scanned = len(entries)
        return self._items

    def __len__(self) -> int:
        return len(self.refresh())

    def position_after(self, entry_id: str | None) -> int | None:
        """The index of the first item after the item `entry_id` (`None`: the start).

        Returns `None` when no item of this session has that entry id.
        """
        self.refresh()
        if entry_id is None:
            return 0
        index = self._index.get(entry_id)
        return None if index is None else index + 1

    def at(self, index: int) -> LeadItem | None:
        """The item at `index`, or `None` when there is none (yet)."""
        items = self.refresh()
        return items[index] if index < len(items) else None
