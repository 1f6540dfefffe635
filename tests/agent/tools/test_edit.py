"""The edit tool: exact and fuzzy matching, uniqueness, line endings, BOM, diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.agent import ToolError
from corral.agent.tools import EditTool, generate_diff

from .conftest import details_of, text_of


async def test_exact_replace_with_diff(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("a = 1\nb = 2\nc = 3\n")
    result = await EditTool(tmp_path).execute("c", {"path": "f.py", "oldText": "b = 2", "newText": "b = 20"})
    assert text_of(result) == "Successfully replaced text in f.py."
    assert (tmp_path / "f.py").read_text() == "a = 1\nb = 20\nc = 3\n"
    assert details_of(result) == {"diff": " 1 a = 1\n-2 b = 2\n+2 b = 20\n 3 c = 3", "firstChangedLine": 2}


async def test_not_found_error(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hello")
    with pytest.raises(ToolError) as info:
        await EditTool(tmp_path).execute("c", {"path": "f.txt", "oldText": "bye", "newText": "x"})
    assert str(info.value) == (
        "Could not find the exact text in f.txt. "
        "The old text must match exactly including all whitespace and newlines."
    )


async def test_duplicate_error(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x\nx\nx\n")
    with pytest.raises(ToolError) as info:
        await EditTool(tmp_path).execute("c", {"path": "f.txt", "oldText": "x", "newText": "y"})
    assert str(info.value) == (
        "Found 3 occurrences of the text in f.txt. The text must be unique. "
        "Please provide more context to make it unique."
    )
    assert (tmp_path / "f.txt").read_text() == "x\nx\nx\n"


async def test_no_change_error(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("same")
    with pytest.raises(
        ToolError, match=r"^No changes made to f.txt\. The replacement produced identical content"
    ):
        await EditTool(tmp_path).execute("c", {"path": "f.txt", "oldText": "same", "newText": "same"})


async def test_missing_file_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"^File not found: gone\.txt$"):
        await EditTool(tmp_path).execute("c", {"path": "gone.txt", "oldText": "a", "newText": "b"})


async def test_crlf_is_matched_with_lf_and_restored(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await EditTool(tmp_path).execute("c", {"path": "w.txt", "oldText": "one\ntwo", "newText": "1\n2"})
    assert (tmp_path / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_bom_is_kept(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_bytes("\ufeffhello world".encode())
    await EditTool(tmp_path).execute("c", {"path": "b.txt", "oldText": "hello", "newText": "bye"})
    assert (tmp_path / "b.txt").read_bytes() == "\ufeffbye world".encode()


async def test_fuzzy_match_smart_quotes_dashes_spaces_and_trailing_whitespace(tmp_path: Path) -> None:
    (tmp_path / "q.txt").write_text("say \u201chi\u201d \u2014 it\u2019s\u00a0fine   \nnext\n")
    await EditTool(tmp_path).execute(
        "c", {"path": "q.txt", "oldText": 'say "hi" - it\'s fine\nnext', "newText": "replaced"}
    )
    assert (tmp_path / "q.txt").read_text() == "replaced\n"


async def test_fuzzy_match_nfkc(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("value = \uff11\uff12\n")  # fullwidth digits
    await EditTool(tmp_path).execute("c", {"path": "n.txt", "oldText": "value = 12", "newText": "value = 3"})
    assert (tmp_path / "n.txt").read_text() == "value = 3\n"


async def test_fuzzy_duplicates_count_as_occurrences(tmp_path: Path) -> None:
    (tmp_path / "d.txt").write_text("it's\nit\u2019s\n")
    with pytest.raises(ToolError, match=r"^Found 2 occurrences"):
        await EditTool(tmp_path).execute("c", {"path": "d.txt", "oldText": "it's", "newText": "x"})


def test_diff_elides_distant_context() -> None:
    old = "\n".join(f"l{i}" for i in range(1, 21)) + "\n"
    new = old.replace("l10\n", "ten\n")
    diff, first = generate_diff(old, new)
    assert first == 10
    assert diff.splitlines() == [
        "    ...",
        "  6 l6",
        "  7 l7",
        "  8 l8",
        "  9 l9",
        "-10 l10",
        "+10 ten",
        " 11 l11",
        " 12 l12",
        " 13 l13",
        " 14 l14",
        "    ...",
    ]


# --- Pi's edits[] form ---------------------------------------------------------


async def test_edits_array_applies_every_replacement_against_the_original(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("a = 1\nb = 2\nc = 3\n")
    result = await EditTool(tmp_path).execute(
        "c",
        {
            "path": "f.py",
            "edits": [{"oldText": "c = 3", "newText": "c = 30"}, {"oldText": "a = 1", "newText": "a = 10"}],
        },
    )
    assert text_of(result) == "Successfully replaced 2 block(s) in f.py."
    assert (tmp_path / "f.py").read_text() == "a = 10\nb = 2\nc = 30\n"
    assert details_of(result)["firstChangedLine"] == 1


async def test_edits_as_json_string_single_object_and_legacy_pair(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("one two three")
    tool = EditTool(tmp_path)
    await tool.execute("c", {"path": "f.txt", "edits": '[{"oldText": "one", "newText": "1"}]'})
    await tool.execute("c", {"path": "f.txt", "edits": {"oldText": "two", "newText": "2"}})
    await tool.execute(
        "c",
        {"path": "f.txt", "edits": [{"oldText": "three", "newText": "3"}], "oldText": "1", "newText": "I"},
    )
    assert path.read_text() == "I 2 3"


async def test_a_failing_edit_leaves_the_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("alpha beta gamma")
    tool = EditTool(tmp_path)
    with pytest.raises(ToolError, match=r"^Could not find the text of edits\[1\] in f\.txt"):
        await tool.execute(
            "c",
            {
                "path": "f.txt",
                "edits": [{"oldText": "alpha", "newText": "A"}, {"oldText": "zeta", "newText": "Z"}],
            },
        )
    with pytest.raises(ToolError, match=r"^edits\[0\] and edits\[1\] overlap in f\.txt"):
        await tool.execute(
            "c",
            {
                "path": "f.txt",
                "edits": [
                    {"oldText": "alpha beta", "newText": "x"},
                    {"oldText": "beta gamma", "newText": "y"},
                ],
            },
        )
    with pytest.raises(ToolError, match=r"edits must contain at least one replacement"):
        await tool.execute("c", {"path": "f.txt", "edits": []})
    with pytest.raises(ToolError, match=r"^edits\[0\]\.oldText must not be empty in f\.txt"):
        await tool.execute("c", {"path": "f.txt", "edits": [{"oldText": "", "newText": "x"}]})
    assert path.read_text() == "alpha beta gamma"
