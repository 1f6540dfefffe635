"""Session file entries (Pi's format v3), one tagged model per entry type.

A session file is JSONL: a `session` header line, then one entry per line.
Every entry has `type`, `id` (8 hex characters), `parentId` (the id of the
entry it follows, `null` for a root) and `timestamp` (an ISO string). Message
payloads inside entries carry their own `timestamp` in Unix milliseconds.

Entries of a type this module does not know, or of a known type whose fields
do not validate, load as [`UnknownEntry`][corral.session.UnknownEntry] and
are written back verbatim; fields this module does not know are kept on every
entry (`extra="allow"`), so files written by a newer Pi or corral round-trip.

A `message` entry holding a value this module does not know (a content block
of a newer kind, an unknown stop reason) is not dropped whole: it loads with
only the unknown part degraded (the block left out, the stop reason read as
`stop`), so the rest of the message stays in the model's context, and it is
written back exactly as it was read.
"""

from __future__ import annotations

import uuid
from collections.abc import Container, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import PrivateAttr, ValidationError

from corral.llm import AgentMessage, PiModel, ThinkingLevel, Usage, UserContent, to_json_dict

__all__ = [
    "BaseEntry",
    "BranchSummaryEntry",
    "CompactionEntry",
    "ContextEditEntry",
    "CustomEntry",
    "CustomMessageEntry",
    "LabelEntry",
    "MessageEntry",
    "ModelChangeEntry",
    "SessionEntry",
    "SessionHeader",
    "SessionInfoEntry",
    "ThinkingLevelChangeEntry",
    "UnknownEntry",
    "UsageEntry",
    "entry_class",
    "entry_to_json",
    "iso_now",
    "iso_to_ms",
    "new_entry_id",
    "parse_entry",
]

CURRENT_VERSION = 3
"""The session file format version this module writes."""


def iso_now() -> str:
    """The current UTC time as JavaScript's `toISOString()` writes it (`2026-01-02T03:04:05.678Z`)."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def iso_to_ms(timestamp: str) -> int:
    """Unix milliseconds of an ISO timestamp; 0 when it does not parse."""
    try:
        parsed = datetime.fromisoformat(timestamp)
    except ValueError:
        return 0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def new_entry_id(existing: Container[str]) -> str:
    """A fresh entry id: the first 8 hex characters of a random UUID, not in `existing`.

    Falls back to a whole UUID in the (practically impossible) case of 100
    collisions in a row, as Pi does.
    """
    for _ in range(100):
        candidate = uuid.uuid4().hex[:8]
        if candidate not in existing:
            return candidate
    return str(uuid.uuid4())


class SessionHeader(PiModel):
    """The first line of a session file; not part of the entry tree.

    Extra fields are kept: corral marks the sessions of managed agents with
    `"corral": {"managed": true, ...}`.
    """

    type: Literal["session"] = "session"
    version: int = CURRENT_VERSION
    """File format version (1 linear, 2 tree, 3 current)."""
    id: str
    """The session's UUID."""
    timestamp: str
    """When the session was created, ISO string."""
    cwd: str
    """The absolute working directory the session belongs to."""
    parent_session: str | None = None
    """Absolute path of the session file this one was forked or cloned from."""


class BaseEntry(PiModel):
    """Fields every entry has."""

    type: str
    """The entry kind (the tag of the union)."""
    id: str
    """8 hex characters, unique within the session."""
    parent_id: str | None = None
    """Id of the entry this one follows; `None` for a root. Always written."""
    timestamp: str = ""
    """When the entry was appended, ISO string."""
    _raw: dict[str, Any] | None = PrivateAttr(default=None)
    """The line as read, when loading had to degrade part of it (written back instead)."""


class MessageEntry(BaseEntry):
    """A conversation message (user, assistant, tool result, bash execution)."""

    type: Literal["message"] = "message"
    message: AgentMessage
    """The message; its own `timestamp` is Unix milliseconds."""


class ThinkingLevelChangeEntry(BaseEntry):
    """The thinking level changed; not sent to the model."""

    type: Literal["thinking_level_change"] = "thinking_level_change"
    thinking_level: ThinkingLevel | Literal["max"]
    """The new level. `max` is Pi 1.x's top level; corral runs it as `xhigh`, clamped to the model."""


class ModelChangeEntry(BaseEntry):
    """The model changed; not sent to the model."""

    type: Literal["model_change"] = "model_change"
    provider: str
    """Provider name, the part of the model ref before `/`."""
    model_id: str
    """Model id within the provider."""


class CompactionEntry(BaseEntry):
    """Older history was replaced by a summary."""

    type: Literal["compaction"] = "compaction"
    summary: str
    """The summary the model sees instead of the compacted history."""
    first_kept_entry_id: str | None = None
    """Id of the first entry kept verbatim after the summary (an entry on the path before this one)."""
    tokens_before: int = 0
    """Estimated context tokens before compacting."""
    details: Any = None
    """Free-form data; corral and Pi store `{readFiles: [...], modifiedFiles: [...]}`."""
    from_hook: bool | None = None
    """True when an extension hook supplied the summary."""
    usage: Usage | None = None
    """Cost of the summarization call(s), when recorded."""
    retained_tail: list[AgentMessage] | None = None
    """Messages kept after the summary; when present it replaces the `first_kept_entry_id` walk."""


class BranchSummaryEntry(BaseEntry):
    """A summary of a branch the conversation came back from."""

    type: Literal["branch_summary"] = "branch_summary"
    from_id: str
    """Id of the entry the abandoned branch was left from, or `"root"`."""
    summary: str
    """The summary text the model sees."""
    details: Any = None
    """Free-form data (file operations of the abandoned branch)."""
    from_hook: bool | None = None
    """True when an extension hook supplied the summary."""
    usage: Usage | None = None
    """Cost of the summarization call, when recorded."""


class CustomEntry(BaseEntry):
    """Program state (extension or orchestration); never sent to the model."""

    type: Literal["custom"] = "custom"
    custom_type: str
    """Namespaced kind, such as `corral-delivery`."""
    data: Any = None
    """Free-form JSON data."""


class CustomMessageEntry(BaseEntry):
    """A message injected by a program; sent to the model as a user message."""

    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    """Namespaced kind, such as `corral-agent-result`."""
    content: str | list[UserContent]
    """Text, or text and image blocks."""
    display: bool = True
    """Whether front ends show it."""
    details: Any = None
    """Structured data for programs; never sent to the model."""


class LabelEntry(BaseEntry):
    """Sets (or, without `label`, clears) a bookmark label on another entry."""

    type: Literal["label"] = "label"
    target_id: str
    """Id of the labelled entry."""
    label: str | None = None
    """The label; absent to clear."""


class SessionInfoEntry(BaseEntry):
    """Session metadata; the latest `name` wins."""

    type: Literal["session_info"] = "session_info"
    name: str | None = None
    """The session's display name."""


class ContextEditReplacement(PiModel):
    """What a `context_edit` puts in place of its target's content."""

    content: str | list[Any]
    """The new content: text, or content blocks of the target's kind."""


class ContextEditEntry(BaseEntry):
    """Pi 1.x: replace (or, with `replacement` null, hide) an earlier message in the model's context.

    The target entry itself is never changed; the newest edit of a target on
    the current path wins. Not sent to the model itself.
    """

    type: Literal["context_edit"] = "context_edit"
    target_id: str
    """Id of the edited `message` or `custom_message` entry (on the same path)."""
    replacement: ContextEditReplacement | None = None
    """The new content; `None` leaves the target out of the context."""


class UsageEntry(BaseEntry):
    """Pi 1.x: spend of a model call outside the conversation (cache warming, ...); never sent to the model."""

    type: Literal["usage"] = "usage"
    kind: str = ""
    """What the call was for, such as `cache_warm`."""
    provider: str = ""
    model: str = ""
    usage: Usage | None = None
    note: str | None = None


class UnknownEntry(BaseEntry):
    """An entry of a type corral does not know (or that did not validate), kept verbatim."""


SessionEntry = (
    MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
    | ContextEditEntry
    | UsageEntry
    | UnknownEntry
)
"""Any entry of a session file (the header excluded)."""

_ENTRY_TYPES: dict[str, type[BaseEntry]] = {
    "message": MessageEntry,
    "thinking_level_change": ThinkingLevelChangeEntry,
    "model_change": ModelChangeEntry,
    "compaction": CompactionEntry,
    "branch_summary": BranchSummaryEntry,
    "custom": CustomEntry,
    "custom_message": CustomMessageEntry,
    "label": LabelEntry,
    "session_info": SessionInfoEntry,
    "context_edit": ContextEditEntry,
    "usage": UsageEntry,
}


def entry_class(kind: str) -> type[BaseEntry] | None:
    """The entry model of a known `type`, else `None`."""
    return _ENTRY_TYPES.get(kind)


def parse_entry(obj: Mapping[str, Any]) -> SessionEntry:
    """Validate one entry from its JSON form.

    Args:
        obj: One parsed JSON line (not the header).

    Returns:
        The typed entry; an `UnknownEntry` for an unknown `type` or a known
        type whose fields do not validate.

    Raises:
        ValueError: `obj` is not an entry at all (no string `type` or `id`).
    """
    kind = obj.get("type")
    entry_id = obj.get("id")
    if not isinstance(kind, str) or not isinstance(entry_id, str):
        raise ValueError("not a session entry: needs a string 'type' and 'id'")
    cls = _ENTRY_TYPES.get(kind)
    if cls is not None:
        try:
            return cls.model_validate(obj)  # type: ignore[return-value]
        except ValidationError:
            pass
        degraded = _degraded_message(obj) if kind == "message" else None
        if degraded is not None:
            try:
                entry = MessageEntry.model_validate(degraded)
            except ValidationError:
                pass
            else:
                entry._raw = dict(obj)
                return entry
    try:
        return UnknownEntry.model_validate(obj)
    except ValidationError as exc:
        raise ValueError(f"not a session entry: {exc.error_count()} invalid field(s)") from exc


_KNOWN_BLOCKS: dict[str, frozenset[str]] = {
    "user": frozenset({"text", "image"}),
    "assistant": frozenset({"text", "thinking", "toolCall"}),
    "toolResult": frozenset({"text", "image"}),
    "custom": frozenset({"text", "image"}),
}
_KNOWN_STOP_REASONS = frozenset({"stop", "length", "toolUse", "error", "aborted", "pending", "deferred"})


def _degraded_message(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """A copy of a `message` entry with the values corral does not know left out, or `None`.

    Content blocks of an unknown kind are dropped, an unknown stop reason reads
    as `stop`; `None` when there is nothing to degrade (the message is broken
    in some other way).
    """
    message = obj.get("message")
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    changed = dict(message)
    known = _KNOWN_BLOCKS.get(role) if isinstance(role, str) else None
    content = message.get("content")
    if known is not None and isinstance(content, list):
        kept = [block for block in content if isinstance(block, dict) and block.get("type") in known]
        if len(kept) != len(content):
            changed["content"] = kept
    if role == "assistant" and message.get("stopReason") not in _KNOWN_STOP_REASONS:
        changed["stopReason"] = "stop"
    if changed == message:
        return None
    out = dict(obj)
    out["message"] = changed
    return out


def entry_to_json(entry: SessionEntry | BaseEntry) -> dict[str, Any]:
    """The JSON form of an entry, with `type`, `id`, `parentId`, `timestamp` first.

    `parentId` is always written, `null` for a root. An entry that loading had
    to degrade is written as it was read (with its current `id` and `parentId`).
    """
    raw = entry._raw
    if raw is not None:
        kept = dict(raw)
        kept["id"] = entry.id
        kept["parentId"] = entry.parent_id
        return kept
    data = to_json_dict(entry)
    out: dict[str, Any] = {
        "type": entry.type,
        "id": entry.id,
        "parentId": entry.parent_id,
        "timestamp": entry.timestamp,
    }
    out.update(data)
    return out
