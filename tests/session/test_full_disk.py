"""Session files on a full disk (a real, small tmpfs): a failed write records nothing and loses nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.llm import AssistantMessage, TextContent, UserMessage
from corral.session import SessionManager, SessionWriteError
from tests.tmpfs import fill, small_tmpfs


def _parse(path: Path) -> list[dict[str, object]]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.split(b"\n")[:-1]]


def _reply(text: str) -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text=text)], api="scripted", provider="scripted", model="m")


def test_append_on_a_full_disk_fails_cleanly_and_works_once_space_is_freed(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "fs", "1m") as fs:
        manager = SessionManager.create(tmp_path, sessions_root=fs / "sessions")
        manager.append_message(UserMessage(content=[TextContent(text="hi")]))
        manager.append_message(_reply("hello"))
        path = manager.path
        assert path is not None
        before = path.read_bytes()
        leaf = manager.leaf_id
        filler = fill(fs)
        big = "x" * 20_000  # more than any slack left in the file's last page
        with pytest.raises(SessionWriteError, match=r"No space left on device.*not recorded"):
            manager.append_message(UserMessage(content=[TextContent(text=big)]))
        # Nothing recorded: not in the file (cut back), not in memory.
        assert path.read_bytes() == before
        assert manager.leaf_id == leaf and len(manager.entries) == len(_parse(path)) - 1
        filler.unlink()
        entry = manager.append_message(UserMessage(content=[TextContent(text=big)]))
        assert entry.parent_id == leaf
        manager.close()
        lines = _parse(path)
        assert lines[-1]["id"] == entry.id
        reopened = SessionManager.open(path, read_only=True)
        assert [e.id for e in reopened.entries] == [line["id"] for line in lines[1:]]


def test_first_write_on_a_full_disk_leaves_no_file_and_retries(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "fs", "1m") as fs:
        manager = SessionManager.create(tmp_path, sessions_root=fs / "sessions")
        (fs / "sessions").mkdir()
        manager.append_message(UserMessage(content=[TextContent(text="y" * 20_000)]))
        filler = fill(fs)
        with pytest.raises(SessionWriteError):
            manager.append_message(_reply("hello"))
        assert manager.path is not None and not manager.path.exists()
        assert not manager.is_persisted and len(manager.entries) == 1
        filler.unlink()
        manager.append_message(_reply("hello"))
        manager.close()
        assert [line["type"] for line in _parse(manager.path)] == ["session", "message", "message"]
