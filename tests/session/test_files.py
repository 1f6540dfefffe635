"""Session files: layout, persistence rule, round trips, migration, malformed input, locks, tail reads."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from corral.llm import to_json_dict
from corral.session import (
    CustomMessageEntry,
    MessageEntry,
    SessionFileError,
    SessionLockedError,
    SessionManager,
    SessionNotFoundError,
    UnknownEntry,
    encode_cwd,
    entry_to_json,
    read_entries_since,
    read_tail_entries,
)

from ._helpers import FIXTURES, assistant, user

CopyFixture = Callable[[str], Path]


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_encode_cwd_matches_pi() -> None:
    assert encode_cwd("/src/proj") == "--src-proj--"
    assert encode_cwd("C:\\work\\proj") == "--C--work-proj--"
    assert encode_cwd("/a:b/c") == "--a-b-c--"


def test_create_uses_pi_layout_and_private_modes(tmp_path: Path, sessions_root: Path) -> None:
    cwd = tmp_path / "proj"
    with SessionManager.create(cwd, sessions_root=sessions_root) as manager:
        manager.append_message(user("hi"))
        manager.append_message(assistant("hello"))
        assert manager.path is not None
        assert manager.path.parent == sessions_root / encode_cwd(str(cwd))
        name = manager.path.name
        assert name.endswith(f"_{manager.session_id}.jsonl")
        stamp = name.split("_")[0]
        assert ":" not in stamp and "." not in stamp and stamp.endswith("Z")
        assert stat.S_IMODE(manager.path.stat().st_mode) == 0o600
        assert stat.S_IMODE(manager.path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(sessions_root.stat().st_mode) == 0o700


def test_nothing_written_before_first_assistant_then_every_append(
    tmp_path: Path, sessions_root: Path
) -> None:
    with SessionManager.create(tmp_path, sessions_root=sessions_root) as manager:
        assert manager.path is not None
        manager.append_model_change("scripted", "m1")
        manager.append_thinking_level_change("low")
        first = manager.append_message(user("question"))
        assert not manager.path.exists()
        reply = manager.append_message(assistant("answer"))
        written = lines_of(manager.path)
        assert [line["type"] for line in written] == [
            "session",
            "model_change",
            "thinking_level_change",
            "message",
            "message",
        ]
        assert written[0]["version"] == 3 and written[0]["cwd"] == str(tmp_path)
        assert written[1]["parentId"] is None
        assert written[4]["parentId"] == first.id and written[4]["id"] == reply.id
        label = manager.append_label(reply.id, "done")
        # Written at once, as one whole line.
        raw = manager.path.read_bytes()
        assert raw.endswith(b"\n")
        assert lines_of(manager.path)[-1] == entry_to_json(label)


def test_flush_writes_header_and_buffer_early(tmp_path: Path, sessions_root: Path) -> None:
    manager = SessionManager.create(
        tmp_path, sessions_root=sessions_root, header_extra={"corral": {"managed": True, "run": "r1"}}
    )
    try:
        manager.append_message(user("task"))
        manager.flush()
        assert manager.path is not None
        written = lines_of(manager.path)
        assert written[0]["corral"] == {"managed": True, "run": "r1"}
        assert [line["type"] for line in written] == ["session", "message"]
        assert manager.is_managed
        manager.append_custom("state", {"n": 1})
        assert len(lines_of(manager.path)) == 3
    finally:
        manager.close()


def test_persist_false_never_writes(tmp_path: Path, sessions_root: Path) -> None:
    manager = SessionManager.create(tmp_path, sessions_root=sessions_root, persist=False)
    manager.append_message(user("q"))
    manager.append_message(assistant("a"))
    manager.flush()
    assert manager.path is None
    assert not sessions_root.exists()
    assert [m.role for m in manager.build_context().messages] == ["user", "assistant"]


def test_pi_file_round_trips_json_objects(fixture_copy: CopyFixture) -> None:
    path = fixture_copy("pi_v3_full.jsonl")
    original = lines_of(path)
    with SessionManager.open(path) as manager:
        saved = [to_json_dict(manager.header), *(entry_to_json(e) for e in manager.entries)]
        assert isinstance(manager.entries[-1], UnknownEntry)
    assert saved == original
    # Nothing was rewritten on open.
    assert path.read_bytes() == (FIXTURES / "pi_v3_full.jsonl").read_bytes()


def test_unknown_fields_survive_an_append(fixture_copy: CopyFixture) -> None:
    path = fixture_copy("pi_v3_full.jsonl")
    with SessionManager.open(path) as manager:
        assert manager.leaf_id == "a1000014"
        entry = manager.append_message(user("continue"))
    written = lines_of(path)
    assert written[-1]["parentId"] == "a1000014"
    assert written[-1]["id"] == entry.id
    assert written[:-1] == lines_of(FIXTURES / "pi_v3_full.jsonl")
    reopened = SessionManager.open(path, read_only=True)
    assert reopened.leaf_id == entry.id
    assert reopened.entries[16].model_extra == {}
    assert to_json_dict(reopened.entries[15])["message"]["responseId"] == "msg_01XYZ"  # type: ignore[index]


def test_v2_file_is_migrated_in_place(fixture_copy: CopyFixture) -> None:
    path = fixture_copy("pi_v2.jsonl")
    with SessionManager.open(path) as manager:
        custom = manager.entries[1]
        assert isinstance(custom, MessageEntry) and custom.message.role == "custom"
        assert manager.header.version == 3
    written = lines_of(path)
    assert written[0]["version"] == 3
    assert written[2]["message"]["role"] == "custom"  # type: ignore[index]
    assert [line.get("id") for line in written[1:]] == ["b2000001", "b2000002", "b2000003"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_v1_file_gets_ids_chain_and_first_kept_id(fixture_copy: CopyFixture) -> None:
    path = fixture_copy("pi_v1.jsonl")
    with SessionManager.open(path) as manager:
        entries = manager.entries
    written = lines_of(path)
    assert written[0]["version"] == 3
    ids = [line["id"] for line in written[1:]]
    assert all(isinstance(i, str) and len(i) == 8 for i in ids) and len(set(ids)) == len(ids)
    assert [line["parentId"] for line in written[1:]] == [None, *ids[:-1]]
    compaction = written[5]
    assert "firstKeptEntryIndex" not in compaction
    # Index 3 of the file's lines (header included) is the "second question" message.
    assert compaction["firstKeptEntryId"] == ids[2]
    assert entries[2].id == ids[2]


def test_read_only_open_migrates_in_memory_only(fixture_copy: CopyFixture) -> None:
    path = fixture_copy("pi_v2.jsonl")
    before = path.read_bytes()
    manager = SessionManager.open(path, read_only=True)
    assert manager.header.version == 3
    assert path.read_bytes() == before
    with pytest.raises(Exception, match="read-only"):
        manager.append_message(user("x"))


def test_malformed_lines_are_skipped(tmp_path: Path) -> None:
    source = (FIXTURES / "pi_v3_full.jsonl").read_text().splitlines()
    broken = [source[0], source[1], "{not json", "[1,2]", '{"type":"message"}', *source[2:4], ""]
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(broken) + "\n")
    with SessionManager.open(path) as manager:
        assert [e.id for e in manager.entries] == ["a1000001", "a1000002", "a1000003"]
        assert manager.leaf_id == "a1000003"


@pytest.mark.parametrize(
    "content",
    ["", '{"type":"message","id":"x","parentId":null}\n', "garbage\n", '{"type":"session"}\n'],
)
def test_file_without_header_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(SessionFileError, match=r"bad\.jsonl"):
        SessionManager.open(path)


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFoundError, match="does not exist"):
        SessionManager.open(tmp_path / "nope.jsonl")


def test_second_writer_is_refused_and_close_releases(fixture_copy: CopyFixture) -> None:
    path = fixture_copy("pi_v3_full.jsonl")
    first = SessionManager.open(path)
    with pytest.raises(SessionLockedError, match="in use"):
        SessionManager.open(path)
    reader = SessionManager.open(path, read_only=True)
    assert reader.leaf_id == first.leaf_id
    first.close()
    with SessionManager.open(path) as second:
        second.append_message(user("after"))


def test_lock_is_held_against_another_process(fixture_copy: CopyFixture) -> None:
    path = fixture_copy("pi_v3_full.jsonl")
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from corral.session import SessionManager, SessionLockedError
        try:
            SessionManager.open(Path(sys.argv[1]))
        except SessionLockedError:
            print("locked")
        else:
            print("acquired")
        """
    )

    def other_process() -> str:
        result = subprocess.run(
            [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True, timeout=60
        )
        return result.stdout.strip()

    with SessionManager.open(path):
        assert other_process() == "locked"
    assert other_process() == "acquired"


def test_new_session_takes_lock_on_first_write(tmp_path: Path, sessions_root: Path) -> None:
    with SessionManager.create(tmp_path, sessions_root=sessions_root) as manager:
        manager.append_message(user("q"))
        manager.append_message(assistant("a"))
        assert manager.path is not None
        with pytest.raises(SessionLockedError):
            SessionManager.open(manager.path)


def test_custom_message_becomes_custom_message_entry(tmp_path: Path) -> None:
    from corral.llm import BranchSummaryMessage, CustomMessage

    manager = SessionManager.create(tmp_path, persist=False)
    entry = manager.append_message(
        CustomMessage(custom_type="corral-agent-result", content="done", display=False, details={"r": 1})
    )
    assert isinstance(entry, CustomMessageEntry)
    assert entry_to_json(entry)["details"] == {"r": 1} and entry.display is False
    with pytest.raises(ValueError, match="cannot be appended"):
        manager.append_message(BranchSummaryMessage(summary="s", from_id="x"))


def test_entry_ids_are_8_hex_and_unique(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, persist=False)
    ids = [manager.append_custom("t").id for _ in range(500)]
    assert len(set(ids)) == 500
    assert all(len(i) == 8 and int(i, 16) >= 0 for i in ids)


def _big_session(path: Path, count: int) -> None:
    header = {"type": "session", "version": 3, "id": "u", "timestamp": "t", "cwd": "/x"}
    lines = [json.dumps(header)]
    parent = None
    for i in range(count):
        entry_id = f"{i:08x}"
        lines.append(
            json.dumps(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": "2026-01-01T00:00:00.000Z",
                    "message": {"role": "user", "content": f"message {i}", "timestamp": i},
                }
            )
        )
        parent = entry_id
    path.write_text("\n".join(lines) + "\n")


def test_read_tail_entries_reads_only_the_end(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    _big_session(path, 2000)
    tail = read_tail_entries(path, max_bytes=2000)
    assert tail and tail[-1].id == f"{1999:08x}"
    ids = [int(e.id, 16) for e in tail]
    assert ids == list(range(ids[0], 2000))
    assert len(tail) < 30  # only what fits in 2000 bytes
    assert [e.id for e in read_tail_entries(path, max_entries=3)] == [f"{i:08x}" for i in (1997, 1998, 1999)]
    whole = read_tail_entries(path, max_bytes=10 << 20)
    assert len(whole) == 2000  # header skipped


def test_read_tail_entries_keeps_a_line_that_starts_the_window(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _big_session(path, 3)
    last_line = path.read_bytes().splitlines(keepends=True)[-1]
    tail = read_tail_entries(path, max_bytes=len(last_line))
    assert [e.id for e in tail] == [f"{2:08x}"]


def test_read_entries_since_is_a_cursor(fixture_copy: CopyFixture) -> None:
    path = fixture_copy("pi_v3_full.jsonl")
    everything, leaf = read_entries_since(path, None)
    assert len(everything) == 20 and leaf == "a1000014"
    newer, leaf = read_entries_since(path, "a1000012")
    assert [e.id for e in newer] == ["a1000013", "a1000014"]
    with SessionManager.open(path) as manager:
        added = manager.append_custom("x")
    newer, leaf2 = read_entries_since(path, leaf)
    assert [e.id for e in newer] == [added.id] and leaf2 == added.id


def test_create_records_the_given_cwd_as_absolute_path(tmp_path: Path) -> None:
    # A session created in one cwd records that cwd, not the process cwd.
    manager = SessionManager.create(tmp_path / "elsewhere", persist=False)
    assert manager.cwd == tmp_path / "elsewhere"
    assert os.path.isabs(manager.header.cwd)
