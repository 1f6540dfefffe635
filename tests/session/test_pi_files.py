"""Session files as Pi 0.73 and 1.x write them: torn tails, newer versions, 1.x entries, unknown values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from corral.llm import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from corral.session import (
    ContextEditEntry,
    MessageEntry,
    SessionError,
    SessionFileError,
    SessionManager,
    UsageEntry,
    convert_to_llm,
)
from corral.session._file import dumps_line

GOLDEN = Path(__file__).parent / "golden"


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copy(GOLDEN / name, target)
    return target


def _lines(path: Path) -> list[dict[str, object]]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.split(b"\n")[:-1]]


# --- torn last lines -----------------------------------------------------------


def test_torn_last_line_is_moved_to_a_sidecar_and_the_next_entry_follows_the_last_valid_one(
    tmp_path: Path,
) -> None:
    path = _copy("torn_last_line.jsonl", tmp_path)
    original = path.read_bytes()
    fragment = original[original.rfind(b"\n") + 1 :]
    assert fragment and not fragment.endswith(b"\n")

    manager = SessionManager.open(path)
    assert manager.torn_fragment == path.with_name(path.name + ".torn-1")
    assert manager.torn_fragment.read_bytes() == fragment
    assert manager.torn_fragment.stat().st_mode & 0o777 == 0o600
    entry = manager.append_message(UserMessage(content=[TextContent(text="third")]))
    manager.close()

    assert entry.parent_id == "b0000004"
    lines = _lines(path)
    assert [line.get("id") for line in lines[1:]] == [
        "b0000001",
        "b0000002",
        "b0000003",
        "b0000004",
        entry.id,
    ]
    reopened = SessionManager.open(path, read_only=True)
    texts = [getattr(m, "text", None) or m.content[0].text for m in reopened.build_context().messages]  # type: ignore[union-attr]
    assert texts == ["first", "first answer", "second", "second answer", "third"]
    # Nothing is lost: the file plus the sidecar hold every byte that was there.
    assert original == path.read_bytes()[: len(original) - len(fragment)] + fragment


def test_a_second_torn_line_gets_its_own_sidecar(tmp_path: Path) -> None:
    path = _copy("torn_last_line.jsonl", tmp_path)
    SessionManager.open(path).close()
    with path.open("ab") as handle:
        handle.write(b'{"type":"message","id":"zz')
    manager = SessionManager.open(path)
    assert manager.torn_fragment == path.with_name(path.name + ".torn-2")
    assert manager.torn_fragment.read_bytes() == b'{"type":"message","id":"zz'
    manager.close()


def test_complete_last_line_without_newline_is_kept_and_terminated(tmp_path: Path) -> None:
    path = _copy("pi073_no_final_newline.jsonl", tmp_path)
    before = path.read_bytes()
    assert not before.endswith(b"\n")
    manager = SessionManager.open(path)
    assert manager.torn_fragment is None
    assert manager.leaf_id == "c0000002"
    entry = manager.append_message(UserMessage(content=[TextContent(text="again")]))
    manager.close()
    assert path.read_bytes().startswith(before + b"\n")
    assert entry.parent_id == "c0000002"
    assert [line.get("id") for line in _lines(path)[1:]] == ["c0000001", "c0000002", entry.id]
    assert not list(tmp_path.glob("*.torn-*"))


def test_read_only_open_never_repairs(tmp_path: Path) -> None:
    path = _copy("torn_last_line.jsonl", tmp_path)
    before = path.read_bytes()
    manager = SessionManager.open(path, read_only=True)
    assert manager.leaf_id == "b0000004"
    assert path.read_bytes() == before
    assert not list(tmp_path.glob("*.torn-*"))


# --- headers --------------------------------------------------------------------


def _header_file(tmp_path: Path, header: dict[str, object]) -> Path:
    path = tmp_path / "s.jsonl"
    entry = {
        "type": "message",
        "id": "aaaa0001",
        "parentId": None,
        "timestamp": "2026-05-01T10:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1},
    }
    path.write_bytes(dumps_line(header) + dumps_line(entry))
    return path


def test_newer_version_is_refused_read_write_but_opens_read_only(tmp_path: Path) -> None:
    header = {"type": "session", "version": 4, "id": "x", "timestamp": "t", "cwd": "/src"}
    path = _header_file(tmp_path, header)
    before = path.read_bytes()
    with pytest.raises(SessionFileError, match=r"version 4 session file.*upgrade corral to continue it"):
        SessionManager.open(path)
    assert path.read_bytes() == before
    viewer = SessionManager.open(path, read_only=True)
    assert [entry.id for entry in viewer.entries] == ["aaaa0001"]
    with pytest.raises(SessionError):
        viewer.append_message(UserMessage(content="no"))


def test_header_without_cwd_is_a_clear_error(tmp_path: Path) -> None:
    path = _header_file(tmp_path, {"type": "session", "version": 3, "id": "x", "timestamp": "t"})
    for read_only in (False, True):
        with pytest.raises(SessionFileError, match="without a 'cwd'"):
            SessionManager.open(path, read_only=read_only)


# --- Pi 1.x entries and unknown values ----------------------------------------------


def test_pi16_entries_load_typed_and_apply(tmp_path: Path) -> None:
    manager = SessionManager.open(_copy("pi16_context_edit.jsonl", tmp_path))
    kinds = {type(entry) for entry in manager.entries}
    assert ContextEditEntry in kinds and UsageEntry in kinds
    context = manager.build_context()
    # `max` runs as the highest level (clamped to the model later); it was set explicitly.
    assert context.thinking_level == "xhigh" and context.thinking_level_set
    # The latest session_info has an empty name: the name is cleared.
    assert manager.name is None
    llm = convert_to_llm(context.messages)
    assert [type(m).__name__ for m in llm] == ["UserMessage", "AssistantMessage", "UserMessage"]
    assert llm[0].content == "write a short essay"  # type: ignore[union-attr]
    assert isinstance(llm[1], AssistantMessage) and llm[1].text == "A short essay (edited)."


def test_session_without_thinking_level_is_marked_unset(tmp_path: Path) -> None:
    manager = SessionManager.open(_copy("torn_last_line.jsonl", tmp_path), read_only=True)
    context = manager.build_context()
    assert context.thinking_level == "off" and not context.thinking_level_set


def test_unknown_block_degrades_only_that_block_and_round_trips_verbatim(tmp_path: Path) -> None:
    path = _copy("unknown_values.jsonl", tmp_path)
    manager = SessionManager.open(path)
    by_id = {entry.id: entry for entry in manager.entries}
    call_entry = by_id["e0000002"]
    assert isinstance(call_entry, MessageEntry)
    message = call_entry.message
    assert isinstance(message, AssistantMessage)
    assert [type(block) for block in message.content] == [TextContent, ToolCall]
    assert message.stop_reason == "deferred"
    odd = by_id["e0000005"]
    assert isinstance(odd, MessageEntry) and isinstance(odd.message, AssistantMessage)
    assert odd.message.stop_reason == "stop"
    # The tool result keeps its call: no orphan `tool` message.
    llm = convert_to_llm(manager.build_context().messages)
    calls = [m for m in llm if isinstance(m, AssistantMessage) and m.tool_calls]
    results = [m for m in llm if isinstance(m, ToolResultMessage)]
    assert [c.tool_calls[0].id for c in calls] == [r.tool_call_id for r in results] == ["call_5"]
    manager.close()
    # Written back (a fork copies every entry) exactly as read, unknown parts included.
    from corral.session import fork_from

    copy = fork_from(path, tmp_path, sessions_root=tmp_path / "sessions")
    copied = {line.get("id"): line for line in _lines(copy.path)}  # type: ignore[arg-type]
    original = {line.get("id"): line for line in _lines(path)}
    assert copied["e0000002"] == original["e0000002"]
    assert copied["e0000005"] == original["e0000005"]
    copy.close()


def test_session_info_name_is_trimmed_and_empty_clears(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, sessions_root=tmp_path / "s")
    manager.append_session_info("  my\nsession ")
    assert manager.name == "my session"
    manager.append_session_info("")
    assert manager.name is None


def test_lone_surrogates_are_written_as_escapes(tmp_path: Path) -> None:
    line = dumps_line({"text": "a\ud800b"})
    assert line == b'{"text":"a\\ud800b"}\n'
    assert json.loads(line) == {"text": "a\ud800b"}


def test_session_stats_count_pi16_usage_entries(tmp_path: Path) -> None:
    from corral.agent._stats import compute_session_stats

    manager = SessionManager.open(_copy("pi16_context_edit.jsonl", tmp_path), read_only=True)
    stats = compute_session_stats(manager.entries, session_file=None, session_id="x", context_usage=None)
    # Two replies and one `usage` entry (cache warming), 10 in / 5 out each; hidden messages still count.
    assert (stats.tokens.input, stats.tokens.output, stats.tokens.total) == (30, 15, 45)
    assert (stats.user_messages, stats.assistant_messages, stats.total_messages) == (2, 2, 4)


def test_migrating_a_v1_file_keeps_every_number_as_spelt(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    usage = (
        '{"input":3,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":4,'
        '"cost":{"input":1e-7,"output":0.00001,"cacheRead":1.50,"cacheWrite":2.0,"total":1E+2}}'
    )
    path.write_text(
        '{"type":"session","id":"v1-session","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/src"}\n'
        '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"q","timestamp":1}}\n'
        '{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],'
        f'"api":"a","provider":"p","model":"m","usage":{usage},"stopReason":"stop","timestamp":2.50}}}}\n'
    )
    SessionManager.open(path).close()
    text = path.read_text()
    assert '"version":3' in text and '"parentId"' in text
    assert usage in text
    assert '"timestamp":2.50}' in text


def test_context_edits_apply_among_the_entries_the_context_is_built_from() -> None:
    from corral.session import CompactionEntry, build_session_context
    from corral.session._entries import ContextEditReplacement

    def msg(entry_id: str, parent: str | None, text: str) -> MessageEntry:
        return MessageEntry(
            id=entry_id, parent_id=parent, message=UserMessage(content=[TextContent(text=text)])
        )

    def edit(entry_id: str, parent: str, target: str, text: str) -> ContextEditEntry:
        return ContextEditEntry(
            id=entry_id, parent_id=parent, target_id=target, replacement=ContextEditReplacement(content=text)
        )

    entries = [
        msg("m1", None, "summarised"),
        msg("m2", "m1", "kept"),
        CompactionEntry(id="c1", parent_id="m2", summary="S", first_kept_entry_id="m2", tokens_before=1),
        edit("e1", "c1", "m1", "no effect: m1 was summarised away"),
        edit("e2", "e1", "m2", "kept, edited"),
        msg("m3", "e2", "after"),
    ]

    def text(message: object) -> str:
        if not isinstance(message, UserMessage):
            return type(message).__name__
        content = message.content
        return content if isinstance(content, str) else content[0].text  # type: ignore[union-attr]

    assert [text(m) for m in build_session_context(entries, "m3").messages] == [
        "CompactionSummaryMessage",
        "kept, edited",
        "after",
    ]


def test_an_entry_fused_onto_a_torn_line_is_still_read(tmp_path: Path) -> None:
    path = _copy("torn_last_line.jsonl", tmp_path)
    fused = (
        b'{"type":"message","id":"b0000006","parentId":"b0000004","timestamp":"t",'
        b'"message":{"role":"user","content":[{"type":"text","text":"fused"}],"timestamp":1}}\n'
    )
    with path.open("ab") as handle:  # what a writer without repair did: the next entry right after
        handle.write(fused)
    for read_only in (True, False):
        manager = SessionManager.open(path, read_only=read_only)
        assert [entry.id for entry in manager.entries][-2:] == ["b0000004", "b0000006"]
        texts = [m.content[0].text for m in manager.build_context().messages]  # type: ignore[union-attr]
        assert texts == ["first", "first answer", "second", "second answer", "fused"]
        manager.close()
