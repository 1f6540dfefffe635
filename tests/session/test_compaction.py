"""Compaction, pure parts: estimates, triggers, cut points, preparation, summary text, overflow."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral.llm import (
    AssistantMessage,
    BashExecutionMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from corral.session import (
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
    CompactionSettings,
    MessageEntry,
    SessionManager,
    build_summarization_request,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens,
    find_cut_point,
    format_file_operations,
    is_context_overflow,
    merge_split_turn_summary,
    prepare_compaction,
    serialize_conversation,
    should_compact,
)

from ._helpers import assistant, tool_call, tool_result, user


def new_session() -> SessionManager:
    return SessionManager.create(Path("/tmp/compaction"), persist=False)


def test_estimate_tokens_per_role() -> None:
    assert estimate_tokens(user("a" * 9)) == 3
    thinking_and_call = AssistantMessage(
        content=[
            TextContent(text="t" * 4),
            ThinkingContent(thinking="h" * 4),
            tool_call("read", path="x"),
        ]
    )
    # 4 + 4 + len("read") + len('{"path":"x"}') = 24 chars
    assert estimate_tokens(thinking_and_call) == 6
    image_result = ToolResultMessage(
        tool_call_id="c",
        tool_name="read",
        content=[TextContent(text="abcd"), ImageContent(data="AA", mime_type="image/png")],
    )
    assert estimate_tokens(image_result) == (4 + 4800) // 4
    assert estimate_tokens(CustomMessage(custom_type="k", content="12345678")) == 2
    assert estimate_tokens(BashExecutionMessage(command="ls", output="ab")) == 1
    assert estimate_tokens(CompactionSummaryMessage(summary="x" * 40, tokens_before=0)) == 10


def test_calculate_context_tokens_falls_back_to_parts() -> None:
    assert calculate_context_tokens(Usage(total_tokens=500, input=1)) == 500
    assert calculate_context_tokens(Usage(input=10, output=5, cache_read=3, cache_write=2)) == 20


def test_estimate_context_tokens_uses_last_valid_usage() -> None:
    messages = [
        user("q"),
        assistant("a", total_tokens=1000),
        user("x" * 40),
        assistant("broken", total_tokens=99999, stop_reason="error"),
        user("y" * 8),
    ]
    estimate = estimate_context_tokens(messages)
    trailing = estimate_tokens(messages[2]) + estimate_tokens(messages[3]) + estimate_tokens(messages[4])
    assert estimate.last_usage_index == 1
    assert estimate.usage_tokens == 1000
    assert estimate.trailing_tokens == trailing
    assert estimate.tokens == 1000 + trailing
    no_usage = estimate_context_tokens([user("abcd"), user("abcdefgh")])
    assert no_usage.last_usage_index is None and no_usage.tokens == 3 and no_usage.usage_tokens == 0


def test_should_compact_threshold() -> None:
    defaults = CompactionSettings()
    assert not should_compact(183_616, 200_000, defaults)
    assert should_compact(183_617, 200_000, defaults)
    assert not should_compact(10**9, 200_000, CompactionSettings(enabled=False))


def _turn_with_big_tool_result(manager: SessionManager) -> dict[str, str]:
    ids: dict[str, str] = {}
    ids["u1"] = manager.append_message(user("u" * 400)).id
    ids["a1"] = manager.append_message(assistant("", tool_calls=[tool_call("read", path="src/a.py")])).id
    ids["tr1"] = manager.append_message(tool_result("r" * 4000)).id
    ids["a2"] = manager.append_message(
        assistant("", tool_calls=[tool_call("write", "call_2", path="out.txt", content="x")])
    ).id
    ids["tr2"] = manager.append_message(tool_result("ok", "call_2", "write")).id
    ids["a3"] = manager.append_message(assistant("done")).id
    return ids


def test_cut_never_lands_on_a_tool_result_and_splits_the_turn() -> None:
    manager = new_session()
    ids = _turn_with_big_tool_result(manager)
    branch = manager.get_branch()
    cut = find_cut_point(branch, 0, len(branch), 1000)
    # The budget is reached at tr1; the next valid cut point is a2.
    assert branch[cut.first_kept_entry_index].id == ids["a2"]
    assert cut.is_split_turn and branch[cut.turn_start_index].id == ids["u1"]

    preparation = prepare_compaction(branch, CompactionSettings(keep_recent_tokens=1000))
    assert preparation is not None
    assert preparation.first_kept_entry_id == ids["a2"]
    assert preparation.is_split_turn
    assert preparation.messages_to_summarize == []
    assert [m.role for m in preparation.turn_prefix_messages] == ["user", "assistant", "toolResult"]
    assert preparation.file_ops.read == {"src/a.py"}
    assert preparation.file_ops.modified == set()  # the write is in the kept part


def test_settings_entries_before_the_cut_are_kept_and_no_split() -> None:
    manager = new_session()
    manager.append_message(user("old " * 200))
    manager.append_message(assistant("old answer " * 100))
    change = manager.append_model_change("scripted", "m2")
    manager.append_thinking_level_change("high")
    manager.append_message(user("n" * 4000))
    manager.append_message(assistant("fine"))
    branch = manager.get_branch()
    preparation = prepare_compaction(branch, CompactionSettings(keep_recent_tokens=1000))
    assert preparation is not None
    assert preparation.first_kept_entry_id == change.id
    assert not preparation.is_split_turn
    assert [m.role for m in preparation.messages_to_summarize] == ["user", "assistant"]


def test_not_enough_history_keeps_from_first_cut_point() -> None:
    manager = new_session()
    first = manager.append_message(user("short"))
    manager.append_message(assistant("short"))
    preparation = prepare_compaction(manager.get_branch(), CompactionSettings())
    assert preparation is not None
    assert preparation.first_kept_entry_id == first.id
    assert preparation.messages_to_summarize == [] and not preparation.is_split_turn


def test_prepare_returns_none_right_after_a_compaction() -> None:
    manager = new_session()
    kept = manager.append_message(user("x"))
    manager.append_compaction("s", kept.id, 1)
    assert prepare_compaction(manager.get_branch(), CompactionSettings()) is None
    assert prepare_compaction([], CompactionSettings()) is None


def test_second_compaction_uses_previous_summary_and_file_details() -> None:
    manager = new_session()
    manager.append_message(user("a" * 400))
    kept = manager.append_message(user("b"))
    manager.append_compaction(
        "previous summary",
        kept.id,
        100,
        details={"readFiles": ["old_read.py"], "modifiedFiles": ["old_mod.py"]},
    )
    manager.append_message(user("c" * 4000))
    manager.append_message(assistant("", tool_calls=[tool_call("edit", path="old_read.py")]))
    manager.append_message(tool_result("edited", name="edit"))
    last = manager.append_message(user("d" * 4000))
    manager.append_message(assistant("end", total_tokens=5000))
    preparation = prepare_compaction(manager.get_branch(), CompactionSettings(keep_recent_tokens=1000))
    assert preparation is not None
    assert preparation.previous_summary == "previous summary"
    assert preparation.first_kept_entry_id == last.id
    # Only entries after the previous compaction are summarised.
    assert [m.role for m in preparation.messages_to_summarize] == ["user", "assistant", "toolResult"]
    read_files, modified_files = preparation.file_ops.file_lists()
    assert read_files == []  # old_read.py was edited since: it counts as modified
    assert modified_files == ["old_mod.py", "old_read.py"]
    assert preparation.file_ops.details() == {"readFiles": [], "modifiedFiles": ["old_mod.py", "old_read.py"]}
    assert preparation.tokens_before == 5000


def test_hook_compaction_details_are_not_file_operations() -> None:
    manager = new_session()
    kept = manager.append_message(user("b"))
    manager.append_compaction("s", kept.id, 1, details={"readFiles": ["hook.py"]}, from_hook=True)
    manager.append_message(user("later"))
    preparation = prepare_compaction(manager.get_branch(), CompactionSettings())
    assert preparation is not None and preparation.file_ops.read == set()


_message_kinds = st.lists(
    st.tuples(
        st.sampled_from(["user", "assistant_tool", "assistant", "bash", "custom"]), st.integers(0, 3000)
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=100, deadline=None)
@given(_message_kinds, st.integers(1, 5000))
def test_cut_point_is_never_a_tool_result(kinds: list[tuple[str, int]], keep: int) -> None:
    manager = new_session()
    for kind, size in kinds:
        if kind == "user":
            manager.append_message(user("u" * size))
        elif kind == "assistant":
            manager.append_message(assistant("a" * size))
        elif kind == "bash":
            manager.append_message(BashExecutionMessage(command="ls", output="o" * size))
        elif kind == "custom":
            manager.append_custom_message("k", "c" * size)
        else:
            manager.append_message(assistant("", tool_calls=[tool_call("read", path="p")]))
            manager.append_message(tool_result("r" * size))
    branch = manager.get_branch()
    cut = find_cut_point(branch, 0, len(branch), keep)
    entry = branch[cut.first_kept_entry_index]
    assert not (isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage))
    if cut.is_split_turn:
        assert 0 <= cut.turn_start_index < cut.first_kept_entry_index


def test_serialize_conversation_format_and_truncation() -> None:
    text = serialize_conversation(
        [
            UserMessage(content=[TextContent(text="hello "), TextContent(text="there")]),
            AssistantMessage(
                content=[
                    ThinkingContent(thinking="hmm"),
                    TextContent(text="looking"),
                    tool_call("read", path="a.py", offset=3),
                    tool_call("ls", "c2"),
                ]
            ),
            tool_result("x" * 2500),
        ]
    )
    assert text == (
        "[User]: hello there\n\n"
        "[Assistant thinking]: hmm\n\n"
        "[Assistant]: looking\n\n"
        '[Assistant tool calls]: read(path="a.py", offset=3); ls()\n\n'
        "[Tool result]: " + "x" * 2000 + "\n\n[... 500 more characters truncated]"
    )


def test_summarization_request_and_prompts() -> None:
    first = build_summarization_request([user("q")], custom_instructions="focus on tests")
    assert first.startswith("<conversation>\n[User]: q\n</conversation>\n\n")
    assert SUMMARIZATION_PROMPT in first and first.endswith("Additional focus: focus on tests")
    update = build_summarization_request([user("q")], previous_summary="old")
    assert "<previous-summary>\nold\n</previous-summary>" in update
    assert update.endswith(UPDATE_SUMMARIZATION_PROMPT)
    for prompt in (SUMMARIZATION_PROMPT, UPDATE_SUMMARIZATION_PROMPT):
        for heading in (
            "## Goal",
            "## Constraints & Preferences",
            "## Progress",
            "### Done",
            "- [x]",
            "### In Progress",
            "- [ ]",
            "### Blocked",
            "## Key Decisions",
            "## Next Steps",
            "## Critical Context",
        ):
            assert heading in prompt
    for heading in ("## Original Request", "## Early Progress", "## Context for Suffix"):
        assert heading in TURN_PREFIX_SUMMARIZATION_PROMPT
    assert "not continue the conversation" in SUMMARIZATION_SYSTEM_PROMPT.lower()
    assert merge_split_turn_summary("H", "P") == "H\n\n---\n\n**Turn Context (split turn):**\n\nP"


def test_format_file_operations() -> None:
    assert format_file_operations([], []) == ""
    assert format_file_operations(["b.py", "a.py", "m.py"], ["z.py", "m.py"]) == (
        "\n\n<read-files>\na.py\nb.py\n</read-files>\n\n<modified-files>\nm.py\nz.py\n</modified-files>"
    )
    assert format_file_operations([], ["x"]) == "\n\n<modified-files>\nx\n</modified-files>"


@pytest.mark.parametrize(
    "error",
    [
        "prompt is too long: 213462 tokens > 200000 maximum",
        "Your input exceeds the context window of this model",
        "This model's maximum context length is 128000 tokens. However, you requested 130000",
        "context_length_exceeded",
        "Context length exceeded",
        "413 (no body)",
        "400 status code (no body)",
        "request_too_large",
        "Please reduce the length of the messages or completion.",
        "input token count (1200000) exceeds the maximum number of tokens allowed",
    ],
)
def test_overflow_error_patterns(error: str) -> None:
    message = AssistantMessage(stop_reason="error", error_message=error)
    assert is_context_overflow(message, 200_000)


@pytest.mark.parametrize("error", ["rate limit exceeded", "500 internal server error", "overloaded_error"])
def test_other_errors_are_not_overflow(error: str) -> None:
    assert not is_context_overflow(AssistantMessage(stop_reason="error", error_message=error), 200_000)


def test_silent_overflow() -> None:
    silent = AssistantMessage(stop_reason="stop", usage=Usage(input=150_000, cache_read=60_000))
    assert is_context_overflow(silent, 200_000)
    assert not is_context_overflow(silent, 300_000)
    assert not is_context_overflow(silent, None)
    aborted = AssistantMessage(stop_reason="aborted", usage=Usage(input=10**6))
    assert not is_context_overflow(aborted, 200_000)
