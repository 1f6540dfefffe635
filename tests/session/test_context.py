"""Context building (`build_session_context`) and `convert_to_llm`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from corral.llm import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    UserMessage,
)
from corral.session import (
    CompactionEntry,
    ModelSelection,
    SessionManager,
    build_session_context,
    convert_to_llm,
    entry_to_message,
)

from ._helpers import assistant, tool_call, tool_result, user

CopyFixture = Callable[[str], Path]


def texts(messages: Sequence[object]) -> list[str]:
    out: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            content = message.content
            out.append(
                content if isinstance(content, str) else "".join(getattr(b, "text", "") for b in content)
            )
        elif isinstance(message, AssistantMessage):
            out.append(message.text)
        else:
            out.append(getattr(message, "role", "?"))
    return out


def test_context_of_pi_file_follows_branch_summary(fixture_copy: CopyFixture) -> None:
    manager = SessionManager.open(fixture_copy("pi_v3_full.jsonl"), read_only=True)
    context = manager.build_context()
    assert context.thinking_level == "medium"
    # The last assistant message on the path wins over the earlier model_change.
    assert context.model == ModelSelection("openai", "gpt-5")
    assert [m.role for m in context.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
        "branchSummary",
        "user",
        "assistant",
    ]
    summary = context.messages[6]
    assert isinstance(summary, BranchSummaryMessage)
    assert summary.from_id == "a1000008"


def test_context_with_compaction_keeps_entries_from_first_kept(fixture_copy: CopyFixture) -> None:
    manager = SessionManager.open(fixture_copy("pi_v3_full.jsonl"), read_only=True)
    manager.branch("a1000010")
    context = manager.build_context()
    assert [m.role for m in context.messages] == [
        "compactionSummary",
        "assistant",  # a1000008, the first kept entry
        "bashExecution",
        "custom",
        "user",
        "assistant",
    ]
    first = context.messages[0]
    assert isinstance(first, CompactionSummaryMessage)
    assert first.summary == "## Goal\nFix the README typo." and first.tokens_before == 1540
    custom = context.messages[3]
    assert isinstance(custom, CustomMessage) and custom.details == {"source": "ext"}
    assert context.model == ModelSelection("anthropic", "claude-sonnet-4-5")


def test_compaction_with_unknown_first_kept_keeps_nothing_before_it(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, persist=False)
    manager.append_message(user("old"))
    manager.append_message(assistant("old answer"))
    manager.append_compaction("summary", "ffffffff", 100)
    manager.append_message(user("new"))
    assert [m.role for m in manager.build_context().messages] == ["compactionSummary", "user"]


def test_last_compaction_on_path_wins(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, persist=False)
    manager.append_message(user("one"))
    second = manager.append_message(user("two"))
    manager.append_compaction("first summary", second.id, 10)
    third = manager.append_message(user("three"))
    manager.append_compaction("second summary", third.id, 20)
    manager.append_message(user("four"))
    messages = manager.build_context().messages
    assert isinstance(messages[0], CompactionSummaryMessage)
    assert messages[0].summary == "second summary"
    assert texts(messages[1:]) == ["three", "four"]


def test_retained_tail_replaces_first_kept_walk(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, persist=False)
    kept = manager.append_message(user("walk would keep this"))
    entry = manager.append_compaction("s", kept.id, 5)
    # A newer Pi stores the kept messages on the entry itself.
    entry.retained_tail = [user("tail message"), assistant("tail answer")]
    manager.append_message(user("after"))
    messages = manager.build_context().messages
    assert texts(messages) == ["compactionSummary", "tail message", "tail answer", "after"]


def test_retained_tail_loads_from_json() -> None:
    from corral.session import parse_entry

    entry = parse_entry(
        {
            "type": "compaction",
            "id": "c0000001",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "summary": "s",
            "firstKeptEntryId": "x",
            "tokensBefore": 1,
            "retainedTail": [{"role": "user", "content": "kept", "timestamp": 1}],
            "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3, "cost": {}},
        }
    )
    assert isinstance(entry, CompactionEntry)
    assert entry.retained_tail is not None and texts(list(entry.retained_tail)) == ["kept"]
    assert entry.usage is not None and entry.usage.total_tokens == 3


def test_empty_and_reset_leaf_give_empty_context(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, persist=False)
    empty = manager.build_context()
    assert empty.messages == [] and empty.thinking_level == "off" and empty.model is None
    manager.append_thinking_level_change("high")
    manager.append_message(user("x"))
    manager.reset_leaf()
    assert manager.build_context().messages == []
    manager.append_message(user("new root"))
    context = manager.build_context()
    assert texts(context.messages) == ["new root"] and context.thinking_level == "off"


def test_unknown_leaf_falls_back_to_last_entry(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, persist=False)
    manager.append_message(user("a"))
    manager.append_message(user("b"))
    context = build_session_context(manager.entries, "missing!")
    assert texts(context.messages) == ["a", "b"]


def test_convert_to_llm_exact_strings() -> None:
    bash = BashExecutionMessage(
        command="make", output="built", exit_code=2, truncated=True, full_output_path="/t/o"
    )
    cancelled = BashExecutionMessage(command="sleep 9", output="", cancelled=True)
    hidden = BashExecutionMessage(command="secret", output="x", exclude_from_context=True)
    custom = CustomMessage(custom_type="k", content="injected", details={"no": "send"})
    custom_blocks = CustomMessage(custom_type="k", content=[ImageContent(data="AA==", mime_type="image/png")])
    branch = BranchSummaryMessage(summary="went left", from_id="x")
    compaction = CompactionSummaryMessage(summary="earlier", tokens_before=9)
    passthrough = [user("u"), assistant("a"), tool_result("r")]
    out = convert_to_llm([bash, cancelled, hidden, custom, custom_blocks, branch, compaction, *passthrough])
    assert all(m.role in ("user", "assistant", "toolResult") for m in out)
    assert out[-3:] == passthrough
    assert texts(out[:6]) == [
        "Ran `make`\n```\nbuilt\n```\n\nCommand exited with code 2\n\n[Output truncated. Full output: /t/o]",
        "Ran `sleep 9`\n(no output)\n\n(command cancelled)",
        "injected",
        "",
        "The following is a summary of a branch that this conversation came back from:\n\n"
        "<summary>\nwent left</summary>",
        "The conversation history before this point was compacted into the following summary:\n\n"
        "<summary>\nearlier\n</summary>",
    ]
    image_message = out[3]
    assert isinstance(image_message, UserMessage) and isinstance(image_message.content, list)
    assert isinstance(image_message.content[0], ImageContent)


def test_entry_to_message_ignores_non_message_entries(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, persist=False)
    assert entry_to_message(manager.append_model_change("p", "m")) is None
    assert entry_to_message(manager.append_custom("state")) is None
    message = entry_to_message(manager.append_custom_message("kind", [TextContent(text="t")]))
    assert isinstance(message, CustomMessage) and message.timestamp > 0


def test_tool_results_stay_after_their_calls(tmp_path: Path) -> None:
    manager = SessionManager.create(tmp_path, persist=False)
    manager.append_message(user("go"))
    manager.append_message(assistant("", tool_calls=[tool_call("read", path="a")]))
    manager.append_message(tool_result("contents"))
    assert [m.role for m in manager.build_context().messages] == ["user", "assistant", "toolResult"]


# --- property: without compaction the context is the naive root→leaf path ------------------

_operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 10**6)),
        st.tuples(st.just("branch"), st.integers(0, 10**6)),
        st.tuples(st.just("reset"), st.just(0)),
        st.tuples(st.just("setting"), st.integers(0, 10**6)),
    ),
    max_size=40,
)


@settings(max_examples=80, deadline=None)
@given(_operations)
def test_context_equals_naive_path_without_compaction(operations: list[tuple[str, int]]) -> None:
    manager = SessionManager.create(Path("/tmp/prop"), persist=False)
    parents: dict[str, str | None] = {}
    payload: dict[str, str] = {}
    leaf: str | None = None
    for kind, number in operations:
        if kind == "append":
            entry = manager.append_message(user(f"m{number}"))
            parents[entry.id], payload[entry.id], leaf = leaf, f"m{number}", entry.id
        elif kind == "setting":
            entry = manager.append_thinking_level_change("low")
            parents[entry.id], leaf = leaf, entry.id
        elif kind == "branch" and parents:
            target = sorted(parents)[number % len(parents)]
            manager.branch(target)
            leaf = target
        elif kind == "reset":
            manager.reset_leaf()
            leaf = None
    naive: list[str] = []
    cursor = leaf
    while cursor is not None:
        if cursor in payload:
            naive.append(payload[cursor])
        cursor = parents[cursor]
    naive.reverse()
    assert texts(manager.build_context().messages) == naive
    assert [e.id for e in manager.get_branch()] == [e.id for e in manager.get_branch(leaf)] if leaf else True
