"""Truncation helpers: Pi's head/tail semantics, limits and size formatting."""

from __future__ import annotations

from corral.agent.tools import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    format_size,
    truncate_head,
    truncate_line,
    truncate_tail,
)


def test_defaults_are_pis_limits() -> None:
    assert (DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES) == (2000, 51200)


def test_head_untouched_when_within_limits() -> None:
    result = truncate_head("a\nb")
    assert (result.content, result.truncated, result.truncated_by) == ("a\nb", False, None)
    assert (result.total_lines, result.output_lines, result.total_bytes) == (2, 2, 3)


def test_head_cuts_by_lines() -> None:
    text = "\n".join(str(i) for i in range(1, 2501))
    result = truncate_head(text)
    assert result.truncated and result.truncated_by == "lines"
    assert result.output_lines == 2000 and result.content.endswith("\n2000")
    assert result.total_lines == 2500


def test_head_cuts_by_bytes_without_partial_lines() -> None:
    text = "\n".join("x" * 99 for _ in range(1000))  # 100 bytes per line incl. newline
    result = truncate_head(text)
    assert result.truncated_by == "bytes"
    assert result.output_lines == 512  # 99 + 511 * 100 = 51199 <= 51200
    assert all(len(line) == 99 for line in result.content.split("\n"))
    assert result.output_bytes <= DEFAULT_MAX_BYTES


def test_head_first_line_over_limit_gives_nothing() -> None:
    result = truncate_head("y" * (DEFAULT_MAX_BYTES + 1) + "\nshort")
    assert result.first_line_exceeds_limit and result.content == "" and result.output_lines == 0


def test_head_counts_utf8_bytes() -> None:
    result = truncate_head("é" * 10, max_bytes=10)
    assert result.total_bytes == 20 and result.first_line_exceeds_limit


def test_tail_keeps_the_end() -> None:
    text = "\n".join(str(i) for i in range(1, 3001))
    result = truncate_tail(text)
    assert result.truncated_by == "lines" and result.content.startswith("1001\n")
    assert result.content.endswith("\n3000") and result.output_lines == 2000


def test_tail_partial_last_line_on_character_boundary() -> None:
    result = truncate_tail("start\n" + "é" * 30000)  # 60000 bytes on one line
    assert result.last_line_partial and result.truncated_by == "bytes"
    assert result.output_lines == 1 and set(result.content) == {"é"}
    assert result.output_bytes <= DEFAULT_MAX_BYTES


def test_details_use_pi_field_names() -> None:
    data = truncate_tail("a\n" * 3000).to_dict()
    assert data["truncatedBy"] == "lines" and data["maxLines"] == 2000
    assert set(data) >= {"totalLines", "outputBytes", "lastLinePartial", "firstLineExceedsLimit"}


def test_format_size_matches_javascript() -> None:
    assert format_size(512) == "512B"
    assert format_size(DEFAULT_MAX_BYTES) == "50.0KB"
    assert format_size(1280) == "1.3KB"  # 1.25 rounds half up, as toFixed does
    assert format_size(3 * 1024 * 1024 // 2) == "1.5MB"


def test_truncate_line_marks_the_cut() -> None:
    assert truncate_line("a" * 500) == ("a" * 500, False)
    assert truncate_line("a" * 501) == ("a" * 500 + "... [truncated]", True)
