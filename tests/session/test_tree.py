"""Tree operations: branch, reset_leaf, branch_with_summary, get_branch, get_tree, labels, names."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from corral.session import (
    BranchSummaryEntry,
    EntryNotFoundError,
    SessionManager,
)

from ._helpers import assistant, user

CopyFixture = Callable[[str], Path]


def test_branch_moves_leaf_and_next_append_is_its_child(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, persist=False)
    first = manager.append_message(user("a"))
    manager.append_message(user("b"))
    manager.branch(first.id)
    assert manager.leaf_id == first.id
    child = manager.append_message(user("c"))
    assert child.parent_id == first.id
    assert [e.id for e in manager.get_branch()] == [first.id, child.id]
    with pytest.raises(EntryNotFoundError, match="nope"):
        manager.branch("nope")


def test_branch_with_summary(tmp_path: Path, sessions_root: Path) -> None:
    with SessionManager.create(tmp_path, sessions_root=sessions_root) as manager:
        root = manager.append_message(user("a"))
        manager.append_message(assistant("b"))
        summary = manager.branch_with_summary(root.id, "we tried b", details={"x": 1})
        assert isinstance(summary, BranchSummaryEntry)
        assert summary.parent_id == root.id and summary.from_id == root.id
        assert [m.role for m in manager.build_context().messages] == ["user", "branchSummary"]
        from_root = manager.branch_with_summary(None, "start over")
        assert from_root.parent_id is None and from_root.from_id == "root"
        assert manager.path is not None
        last = json.loads(manager.path.read_text().splitlines()[-1])
        assert last == {
            "type": "branch_summary",
            "id": from_root.id,
            "parentId": None,
            "timestamp": from_root.timestamp,
            "fromId": "root",
            "summary": "start over",
        }


def test_get_tree_children_sorted_labels_and_orphans(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, persist=False)
    root = manager.append_message(user("root"))
    left = manager.append_message(user("left"))
    manager.branch(root.id)
    right = manager.append_message(user("right"))
    manager.append_label(left.id, "keep")
    manager.append_label(right.id, "temp")
    manager.append_label(right.id, None)  # clears
    # An entry whose parent is missing (e.g. from a damaged file) becomes a root.
    orphan = manager.append_message(user("orphan"))
    orphan.parent_id = "deadbeef"
    roots = manager.get_tree()
    assert [node.entry.id for node in roots] == [root.id, orphan.id]
    children = roots[0].children
    assert [node.entry.id for node in children] == [left.id, right.id]
    assert children[0].label == "keep" and children[1].label is None
    assert manager.labels() == {left.id: "keep"}


def test_get_tree_sorts_children_by_timestamp(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, persist=False)
    root = manager.append_message(user("root"))
    late = manager.append_message(user("late"))
    manager.branch(root.id)
    early = manager.append_message(user("early"))
    late.timestamp, early.timestamp = "2026-02-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"
    assert [n.entry.id for n in manager.get_tree()[0].children] == [early.id, late.id]


def test_label_needs_an_existing_target(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, persist=False)
    with pytest.raises(EntryNotFoundError):
        manager.append_label("00000000", "x")


def test_name_is_latest_session_info(fixture_copy: CopyFixture) -> None:
    with SessionManager.open(fixture_copy("pi_v3_full.jsonl")) as manager:
        assert manager.name == "Fix README typo"
        manager.append_session_info("Renamed")
        assert manager.name == "Renamed"
        # Labels, names and custom entries are children of the leaf, too.
        assert manager.get_branch()[-1].type == "session_info"


def test_get_branch_of_an_entry(fixture_copy: CopyFixture) -> None:
    manager = SessionManager.open(fixture_copy("pi_v3_full.jsonl"), read_only=True)
    assert [e.id for e in manager.get_branch("a1000004")] == ["a1000001", "a1000002", "a1000003", "a1000004"]
    assert manager.get_entry("a1000004") is manager.get_branch("a1000004")[-1]
    assert manager.get_entry("zzz") is None
