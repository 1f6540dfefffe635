"""The conversation a model sees, built from a session's entries (pure functions).

[`build_session_context`][corral.session.build_session_context] walks the
`parentId` links from a leaf to the root, and along that path picks up the
thinking level, the model and the last compaction; the messages are the
compaction summary, the kept entries and everything after the compaction.
[`convert_to_llm`][corral.session.convert_to_llm] then turns the messages only
corral knows (bash executions, custom messages, summaries) into user messages
just before a model request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field

from corral.llm import (
    AgentMessage,
    AgentMessageAdapter,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    TextContent,
    ThinkingLevel,
    ToolResultMessage,
    UserMessage,
)

from ._entries import (
    BranchSummaryEntry,
    CompactionEntry,
    ContextEditEntry,
    ContextEditReplacement,
    CustomMessageEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    ThinkingLevelChangeEntry,
    iso_to_ms,
)

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "ModelSelection",
    "SessionContext",
    "bash_execution_to_text",
    "build_session_context",
    "convert_to_llm",
    "entry_to_message",
    "path_to",
]

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"


@dataclass(frozen=True)
class ModelSelection:
    """The model a session was last using."""

    provider: str
    """Provider name."""
    model_id: str
    """Model id within the provider."""


@dataclass
class SessionContext:
    """What a session's current leaf amounts to for the next model request."""

    messages: list[AgentMessage] = field(default_factory=list)
    """The conversation, oldest first (before `convert_to_llm`)."""
    _: KW_ONLY
    thinking_level: ThinkingLevel = "off"
    """The last thinking level set on the path (`off` when none; Pi 1.x's `max` reads as `xhigh`)."""
    thinking_level_set: bool = False
    """Whether the path sets a thinking level at all (else a resumed session takes the default)."""
    model: ModelSelection | None = None
    """The last model on the path (from model changes and assistant messages)."""


def path_to(
    entries: Sequence[SessionEntry],
    leaf_id: str | None,
    *,
    by_id: Mapping[str, SessionEntry] | None = None,
) -> list[SessionEntry]:
    """The entries from the root to `leaf_id`, following `parentId` links.

    Args:
        entries: All entries of a session, in file order.
        leaf_id: The last entry of the path; `None` gives an empty path. An id
            that is not among `entries` falls back to the last entry.
        by_id: An index of `entries` by id, when the caller already has one.

    Returns:
        The path, root first. A parent id that is missing ends the walk (the
        entry becomes the root); a cycle is cut once every entry was visited.
    """
    if leaf_id is None or not entries:
        return []
    if by_id is None:
        return _walk_back(entries, leaf_id)
    current = by_id.get(leaf_id)
    if current is None:
        current = entries[-1]
    return _walk_index(current, by_id, [])


def _walk_index(
    current: SessionEntry | None, index: Mapping[str, SessionEntry], path: list[SessionEntry]
) -> list[SessionEntry]:
    """Continue a root-ward walk from `current` through an id index; returns the path root first."""
    append = path.append
    get = index.get
    limit = len(index) + len(path) + 1
    while current is not None:
        append(current)
        parent = current.parent_id
        if parent is None or len(path) > limit:
            break
        current = get(parent)
    path.reverse()
    return path


def _walk_back(entries: Sequence[SessionEntry], leaf_id: str) -> list[SessionEntry]:
    """Walk root-ward without an index, using file order: a parent precedes its children.

    Each step scans backwards from the current entry for its parent, so one
    pass over the file suffices (entries of abandoned branches are skipped
    over). Should a parent not precede its child, the walk falls back to an
    id index.
    """
    pos = len(entries) - 1
    while pos >= 0 and entries[pos].id != leaf_id:
        pos -= 1
    if pos < 0:
        pos = len(entries) - 1
    current = entries[pos]
    path: list[SessionEntry] = []
    append = path.append
    while True:
        append(current)
        parent = current.parent_id
        if parent is None:
            break
        j = pos - 1
        while j >= 0 and entries[j].id != parent:
            j -= 1
        if j < 0:
            index = {entry.id: entry for entry in entries}
            return _walk_index(index.get(parent), index, path)
        pos = j
        current = entries[j]
    path.reverse()
    return path


def entry_to_message(entry: SessionEntry) -> AgentMessage | None:
    """The message an entry contributes to the conversation, or `None`.

    `message` entries give their message, `custom_message` entries a
    `CustomMessage` and `branch_summary` entries a `BranchSummaryMessage`.
    """
    if isinstance(entry, MessageEntry):
        return entry.message
    if isinstance(entry, CustomMessageEntry):
        custom = CustomMessage(
            custom_type=entry.custom_type,
            content=entry.content,
            display=entry.display,
            timestamp=iso_to_ms(entry.timestamp),
        )
        if entry.details is not None:
            custom.details = entry.details
        return custom
    if isinstance(entry, BranchSummaryEntry) and entry.summary:
        return BranchSummaryMessage(
            summary=entry.summary, from_id=entry.from_id, timestamp=iso_to_ms(entry.timestamp)
        )
    return None


def _messages_of(entries: Sequence[SessionEntry], out: list[AgentMessage]) -> None:
    append = out.append
    for entry in entries:
        if type(entry) is MessageEntry:
            append(entry.message)
        elif type(entry) is CustomMessageEntry or type(entry) is BranchSummaryEntry:
            message = entry_to_message(entry)
            if message is not None:
                append(message)


def build_session_context(
    entries: Sequence[SessionEntry],
    leaf_id: str | None,
    *,
    by_id: Mapping[str, SessionEntry] | None = None,
) -> SessionContext:
    """The conversation, thinking level and model at `leaf_id`.

    Args:
        entries: All entries of a session, in file order.
        leaf_id: The current leaf; `None` gives an empty context (level `off`,
            no model). An unknown id falls back to the last entry.
        by_id: An index of `entries` by id, when the caller already has one.

    Returns:
        The context. With a compaction on the path (the last one wins), the
        messages are its summary, then the kept messages (its `retained_tail`
        when present, else the path entries from `first_kept_entry_id` up to
        the compaction; none when that id is not on the path), then the
        messages after the compaction.
    """
    path = path_to(entries, leaf_id, by_id=by_id)
    thinking_level: ThinkingLevel = "off"
    level_set = False
    model_source: ModelChangeEntry | AssistantMessage | None = None
    compaction_index = -1
    has_edits = False
    # One pass: settings, model and messages; messages restart after each compaction.
    messages: list[AgentMessage] = []
    append = messages.append
    for index, entry in enumerate(path):
        kind = type(entry)
        if kind is MessageEntry:
            message = entry.message  # type: ignore[union-attr]
            append(message)
            if type(message) is AssistantMessage:
                model_source = message
        elif kind is ThinkingLevelChangeEntry:
            level = entry.thinking_level  # type: ignore[union-attr]
            thinking_level = "xhigh" if level == "max" else level  # type: ignore[assignment]
            level_set = True
        elif kind is ContextEditEntry:
            has_edits = True
        elif kind is ModelChangeEntry:
            model_source = entry  # type: ignore[assignment]
        elif kind is CompactionEntry:
            compaction_index = index
            messages = []
            append = messages.append
        elif kind is CustomMessageEntry or kind is BranchSummaryEntry:
            converted = entry_to_message(entry)
            if converted is not None:
                append(converted)
    model: ModelSelection | None = None
    if isinstance(model_source, ModelChangeEntry):
        model = ModelSelection(model_source.provider, model_source.model_id)
    elif isinstance(model_source, AssistantMessage):
        model = ModelSelection(model_source.provider, model_source.model)
    if has_edits:
        # Messages are rebuilt from the path with the edits applied (rare: Pi 1.x files only).
        return _edited_context(path, compaction_index, thinking_level, level_set, model)
    if compaction_index < 0:
        return SessionContext(
            messages, thinking_level=thinking_level, thinking_level_set=level_set, model=model
        )

    compaction = path[compaction_index]
    assert isinstance(compaction, CompactionEntry)
    context: list[AgentMessage] = [
        CompactionSummaryMessage(
            summary=compaction.summary,
            tokens_before=compaction.tokens_before,
            timestamp=iso_to_ms(compaction.timestamp),
        )
    ]
    if compaction.retained_tail is not None:
        context.extend(compaction.retained_tail)
    else:
        first_kept = compaction.first_kept_entry_id
        for index in range(compaction_index - 1, -1, -1):
            if path[index].id == first_kept:
                _messages_of(path[index:compaction_index], context)
                break
    context.extend(messages)
    return SessionContext(context, thinking_level=thinking_level, thinking_level_set=level_set, model=model)


def _edited_message(entry: SessionEntry, replacement: ContextEditReplacement) -> AgentMessage | None:
    """The message of `entry` with its content replaced as a `context_edit` says (Pi 1.x)."""
    message = entry_to_message(entry)
    if message is None:
        return None
    content: object = replacement.content
    if isinstance(message, AssistantMessage | ToolResultMessage) and isinstance(content, str):
        content = [{"type": "text", "text": content}]
    data = message.model_dump(by_alias=True)
    data["content"] = content
    try:
        return AgentMessageAdapter.validate_python(data)
    except ValueError:
        # A replacement corral cannot read leaves the original in place.
        return message


def _edited_context(
    path: Sequence[SessionEntry],
    compaction_index: int,
    thinking_level: ThinkingLevel,
    level_set: bool,
    model: ModelSelection | None,
) -> SessionContext:
    """The context of `path` with Pi 1.x `context_edit`s applied (the newest edit per target wins).

    As in Pi, the entries are chosen first (the last compaction's summary, its kept
    range, the entries after it), then the `context_edit`s among them apply.
    """
    emitted: list[SessionEntry] = []
    context: list[AgentMessage] = []
    if compaction_index >= 0:
        compaction = path[compaction_index]
        assert isinstance(compaction, CompactionEntry)
        context.append(
            CompactionSummaryMessage(
                summary=compaction.summary,
                tokens_before=compaction.tokens_before,
                timestamp=iso_to_ms(compaction.timestamp),
            )
        )
        if compaction.retained_tail is not None:
            context.extend(compaction.retained_tail)
        else:
            for index in range(compaction_index - 1, -1, -1):
                if path[index].id == compaction.first_kept_entry_id:
                    emitted.extend(path[index:compaction_index])
                    break
    emitted.extend(path[compaction_index + 1 :])
    # Like Pi's projection, only edits among the entries the context is built from count.
    edits = {entry.target_id: entry.replacement for entry in emitted if isinstance(entry, ContextEditEntry)}
    for entry in emitted:
        if entry.id in edits:
            replacement = edits[entry.id]
            if replacement is None:
                continue
            message = _edited_message(entry, replacement)
        else:
            message = entry_to_message(entry)
        if message is not None:
            context.append(message)
    return SessionContext(context, thinking_level=thinking_level, thinking_level_set=level_set, model=model)


def bash_execution_to_text(message: BashExecutionMessage) -> str:
    """The user text a bash execution becomes for the model."""
    text = f"Ran `{message.command}`\n"
    text += f"```\n{message.output}\n```" if message.output else "(no output)"
    if message.cancelled:
        text += "\n\n(command cancelled)"
    elif message.exit_code is not None and message.exit_code != 0:
        text += f"\n\nCommand exited with code {message.exit_code}"
    if message.truncated and message.full_output_path:
        text += f"\n\n[Output truncated. Full output: {message.full_output_path}]"
    return text


def _user_text(text: str, timestamp: int) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=timestamp)


def convert_to_llm(messages: Sequence[AgentMessage]) -> list[AgentMessage]:
    """The messages as a model receives them: only user, assistant and tool results.

    Bash executions become user text (those with `exclude_from_context` are
    dropped), custom messages become user messages with their content, and
    branch and compaction summaries become user text wrapped in Pi's prefix
    and suffix. User, assistant and tool-result messages pass unchanged.
    """
    out: list[AgentMessage] = []
    for message in messages:
        if isinstance(message, UserMessage | AssistantMessage | ToolResultMessage):
            out.append(message)
        elif isinstance(message, BashExecutionMessage):
            if not message.exclude_from_context:
                out.append(_user_text(bash_execution_to_text(message), message.timestamp))
        elif isinstance(message, CustomMessage):
            content = (
                [TextContent(text=message.content)] if isinstance(message.content, str) else message.content
            )
            # customType and details ride along as extra fields: providers never send
            # them, but the scripted model's `{{ last_custom.<path> }}` templates read them.
            out.append(
                UserMessage(
                    content=content,
                    timestamp=message.timestamp,
                    customType=message.custom_type,
                    details=message.details,
                )
            )
        elif isinstance(message, BranchSummaryMessage):
            text = BRANCH_SUMMARY_PREFIX + message.summary + BRANCH_SUMMARY_SUFFIX
            out.append(_user_text(text, message.timestamp))
        elif isinstance(message, CompactionSummaryMessage):
            text = COMPACTION_SUMMARY_PREFIX + message.summary + COMPACTION_SUMMARY_SUFFIX
            out.append(_user_text(text, message.timestamp))
    return out
