"""fork, clone, fork_from and cost totals de-duplicated along the parentSession chain."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from corral.session import (
    InvalidEntryError,
    LabelEntry,
    SessionManager,
    clone,
    fork,
    fork_from,
    session_usage_totals,
)

from ._helpers import assistant, user

CopyFixture = Callable[[str], Path]


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_fork_rewinds_to_before_a_user_message(fixture_copy: CopyFixture, sessions_root: Path) -> None:
    source = fixture_copy("pi_v3_full.jsonl")
    new, text = fork(source, "a100000f", sessions_root=sessions_root)
    with new:
        assert text == "Now add a changelog."
        assert new.path is not None and new.path.exists()
        assert new.header.parent_session == str(source)
        assert new.session_id != "0b6f6a52-7c1e-4f43-9b0e-2a4f3c5d6e7f"
        ids = [e.id for e in new.entries]
        # Path to the parent (the compaction), ids kept, the label entry re-created at the end.
        assert ids[:-1] == [
            "a1000001",
            "a1000002",
            "a1000003",
            "a1000004",
            "a1000005",
            "a1000006",
            "a1000007",
            "a1000008",
            "a100000a",
            "a100000b",
            "a100000c",
            "a100000d",
            "a100000e",
        ]
        label = new.entries[-1]
        assert isinstance(label, LabelEntry) and label.target_id == "a1000008" and label.label == "typo-fixed"
        assert label.parent_id == "a100000e"
        # The entry after the dropped label entry is re-linked to the entry before it.
        info = new.get_entry("a100000a")
        assert info is not None and info.parent_id == "a1000008"
        assert new.build_context().messages[0].role == "compactionSummary"
        on_disk = lines_of(new.path)
        assert on_disk[0]["parentSession"] == str(source)
        assert len(on_disk) == len(new.entries) + 1
        assert stat.S_IMODE(new.path.stat().st_mode) == 0o600
        new.append_message(user("instead, do this"))
        assert lines_of(new.path)[-1]["parentId"] == label.id


def test_fork_of_root_message_gives_empty_session(tmp_path: Path, sessions_root: Path) -> None:
    with SessionManager.create(tmp_path, sessions_root=sessions_root) as source:
        first = source.append_message(user("very first"))
        source.append_message(assistant("reply"))
        new, text = fork(source, first.id)
    assert text == "very first"
    assert new.entries == [] and new.header.parent_session == str(source.path)
    assert new.path is not None and not new.path.exists()
    new.close()


def test_fork_needs_a_user_message(fixture_copy: CopyFixture, sessions_root: Path) -> None:
    with pytest.raises(InvalidEntryError, match="not a user message"):
        fork(fixture_copy("pi_v3_full.jsonl"), "a1000004", sessions_root=sessions_root)


def test_clone_copies_active_path_up_to_entry(fixture_copy: CopyFixture, sessions_root: Path) -> None:
    source = fixture_copy("pi_v3_full.jsonl")
    with SessionManager.open(source) as manager:
        cloned = clone(manager, sessions_root=sessions_root)
        partial = clone(manager, "a1000005", sessions_root=sessions_root)
    with cloned, partial:
        assert [e.id for e in cloned.entries] == [
            e.id for e in SessionManager.open(source, read_only=True).get_branch() if e.type != "label"
        ] + [cloned.entries[-1].id]
        assert cloned.leaf_id == cloned.entries[-1].id
        assert cloned.header.parent_session == str(source)
        assert [e.id for e in partial.entries] == ["a1000001", "a1000002", "a1000003", "a1000004", "a1000005"]
        assert partial.path is not None and len(lines_of(partial.path)) == 6


def test_fork_from_copies_everything_into_another_cwd(
    fixture_copy: CopyFixture, tmp_path: Path, sessions_root: Path
) -> None:
    source = fixture_copy("pi_v3_full.jsonl")
    target = tmp_path / "other-project"
    with fork_from(source, target, sessions_root=sessions_root) as new:
        assert (
            new.path is not None
            and new.path.parent.name == "--" + str(target).strip("/").replace("/", "-") + "--"
        )
        original = lines_of(source)
        copied = lines_of(new.path)
        assert copied[1:] == original[1:]
        assert copied[0]["cwd"] == str(target) and copied[0]["parentSession"] == str(source)
        assert copied[0]["id"] != original[0]["id"]
        assert new.leaf_id == "a1000014"


def test_usage_totals_count_the_whole_file(fixture_copy: CopyFixture) -> None:
    totals = session_usage_totals(fixture_copy("pi_v3_full.jsonl"))
    # Five assistant messages: 0.0048 + 3 x 0.00186 + 0.03, including the abandoned branch.
    assert totals.cost == pytest.approx(0.0048 + 3 * 0.00186 + 0.03)
    assert totals.counted_entries == 5
    assert set(totals.by_model) == {"anthropic/claude-sonnet-4-5", "openai/gpt-5"}
    assert totals.by_model["openai/gpt-5"].total_tokens == 15


def test_usage_totals_deduplicate_forked_entries(tmp_path: Path, sessions_root: Path) -> None:
    from corral.llm import Cost, Usage

    with SessionManager.create(tmp_path, sessions_root=sessions_root) as source:
        source.append_message(user("one"))
        source.append_message(assistant("a1", cost=1.0))
        second = source.append_message(user("two"))
        source.append_message(assistant("a2", cost=2.0))
        source.append_compaction("sum", second.id, 10, usage=Usage(cost=Cost(total=0.5)))
    assert source.path is not None
    assert session_usage_totals(source.path).cost == pytest.approx(3.5)

    with clone(source.path, sessions_root=sessions_root) as copy:
        copy.append_message(user("three"))
        copy.append_message(assistant("a3", cost=4.0))
        tool = copy.append_message(user("four"))
        assert copy.path is not None
    # The tool-result usage a delegating tool reports is counted too.
    from corral.llm import TextContent, ToolResultMessage

    with SessionManager.open(copy.path) as reopened:
        result = ToolResultMessage(tool_call_id="c", tool_name="agent", content=[TextContent(text="x")])
        result.usage = Usage(cost=Cost(total=0.25))  # type: ignore[attr-defined]
        reopened.append_message(result)
    assert tool.id
    assert session_usage_totals(copy.path).cost == pytest.approx(4.25)
    assert session_usage_totals(copy.path, include_inherited=True).cost == pytest.approx(7.75)

    with fork_from(copy.path, tmp_path / "elsewhere", sessions_root=sessions_root) as grandchild:
        assert grandchild.path is not None
        grandchild.append_message(assistant("a4", cost=8.0))
        # Entries of both ancestors are skipped.
        assert session_usage_totals(grandchild.path).cost == pytest.approx(8.0)
