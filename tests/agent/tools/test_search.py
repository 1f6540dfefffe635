"""grep, find and ls over real directory trees (gitignore, hidden files, limits, ordering)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.agent import ToolError
from corral.agent.tools import FindTool, GrepTool, LsTool

from .conftest import details_of, text_of


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small repository with nested .gitignore files, hidden files and a .git directory."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("needle in git\n")
    (tmp_path / ".gitignore").write_text("*.log\nbuild/\n")
    (tmp_path / "app.log").write_text("needle in log\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.txt").write_text("needle in build\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("import os\nneedle = 1\nprint(needle)\n")
    (tmp_path / "src" / ".gitignore").write_text("generated.py\n!keep.log\n")
    (tmp_path / "src" / "generated.py").write_text("needle generated\n")
    (tmp_path / "src" / "keep.log").write_text("needle kept\n")
    (tmp_path / ".hidden.txt").write_text("needle hidden\n")
    (tmp_path / "blob.bin").write_bytes(b"needle\0binary")
    return tmp_path


async def test_grep_honours_nested_gitignore_and_skips_git_and_binary(tree: Path) -> None:
    result = await GrepTool(tree).execute("c", {"pattern": "needle"})
    assert text_of(result) == "\n".join(
        [
            ".hidden.txt:1: needle hidden",
            "src/keep.log:1: needle kept",
            "src/main.py:2: needle = 1",
            "src/main.py:3: print(needle)",
        ]
    )


async def test_grep_applies_parent_gitignore_when_searching_subdirectory(tree: Path) -> None:
    (tree / "src" / "debug.log").write_text("needle debug\n")
    text = text_of(await GrepTool(tree).execute("c", {"pattern": "needle", "path": "src"}))
    assert "debug.log" not in text and "keep.log:1: needle kept" in text


async def test_grep_context_lines(tree: Path) -> None:
    text = text_of(await GrepTool(tree).execute("c", {"pattern": "^needle", "path": "src", "context": 1}))
    assert (
        text
        == "keep.log:1: needle kept\nmain.py-1- import os\nmain.py:2: needle = 1\nmain.py-3- print(needle)"
    )


async def test_grep_literal_ignore_case_and_glob(tree: Path) -> None:
    (tree / "src" / "re.txt").write_text("A+B\na+b\n")
    literal = await GrepTool(tree).execute("c", {"pattern": "a+b", "literal": True, "ignoreCase": True})
    assert text_of(literal) == "src/re.txt:1: A+B\nsrc/re.txt:2: a+b"
    globbed = await GrepTool(tree).execute("c", {"pattern": "needle", "glob": "*.py"})
    assert text_of(globbed) == "src/main.py:2: needle = 1\nsrc/main.py:3: print(needle)"


async def test_grep_single_file_uses_its_name(tree: Path) -> None:
    text = text_of(await GrepTool(tree).execute("c", {"pattern": "print", "path": "src/main.py"}))
    assert text == "main.py:3: print(needle)"


async def test_grep_no_matches(tree: Path) -> None:
    assert text_of(await GrepTool(tree).execute("c", {"pattern": "absent-text"})) == "No matches found"


async def test_grep_match_limit_notice(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 150)
    result = await GrepTool(tmp_path).execute("c", {"pattern": "hit"})
    text = text_of(result)
    assert text.count("\n") == 99 + 2
    assert text.endswith(
        "many.txt:100: hit\n\n[100 matches limit reached. Use limit=200 for more, or refine pattern]"
    )
    assert details_of(result)["matchLimitReached"] == 100


async def test_grep_long_line_and_byte_limit_notices(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text(("k" * 600 + "\n") * 120)
    result = await GrepTool(tmp_path).execute("c", {"pattern": "k", "limit": 200})
    text = text_of(result)
    assert text.endswith(
        "\n\n[50.0KB limit reached. Some lines truncated to 500 chars. Use read tool to see full lines]"
    )
    assert "wide.txt:1: " + "k" * 500 + "... [truncated]" in text
    assert details_of(result)["linesTruncated"] is True


async def test_grep_bad_regex_is_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="Invalid regex"):
        await GrepTool(tmp_path).execute("c", {"pattern": "("})


async def test_find_honours_gitignore_and_lists_hidden(tree: Path) -> None:
    text = text_of(await FindTool(tree).execute("c", {"pattern": "*"}))
    assert text.split("\n") == [
        ".gitignore",
        ".hidden.txt",
        "blob.bin",
        "src/",
        "src/.gitignore",
        "src/keep.log",
        "src/main.py",
    ]


async def test_find_path_patterns(tree: Path) -> None:
    assert text_of(await FindTool(tree).execute("c", {"pattern": "**/*.py"})) == "src/main.py"
    assert text_of(await FindTool(tree).execute("c", {"pattern": "src/*.log"})) == "src/keep.log"
    assert text_of(await FindTool(tree).execute("c", {"pattern": "*.{py,bin}"})) == "blob.bin\nsrc/main.py"


async def test_find_nothing_and_limit(tmp_path: Path) -> None:
    for index in range(5):
        (tmp_path / f"f{index}.txt").write_text("")
    assert (
        text_of(await FindTool(tmp_path).execute("c", {"pattern": "*.md"}))
        == "No files found matching pattern"
    )
    result = await FindTool(tmp_path).execute("c", {"pattern": "*.txt", "limit": 3})
    assert (
        text_of(result)
        == "f0.txt\nf1.txt\nf2.txt\n\n[3 results limit reached. Use limit=6 for more, or refine pattern]"
    )


async def test_find_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="Path not found"):
        await FindTool(tmp_path).execute("c", {"pattern": "*", "path": "nope"})


async def test_ls_sorted_case_insensitively_with_dirs_and_dotfiles(tmp_path: Path) -> None:
    for name in ("beta", "Alpha", ".env", "gamma.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "Docs").mkdir()
    (tmp_path / "ignored.log").write_text("")
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "broken").symlink_to(tmp_path / "missing")
    text = text_of(await LsTool(tmp_path).execute("c", {}))
    assert text.split("\n") == [".env", ".gitignore", "Alpha", "beta", "Docs/", "gamma.txt", "ignored.log"]


async def test_ls_empty_limit_and_errors(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert text_of(await LsTool(tmp_path).execute("c", {"path": "empty"})) == "(empty directory)"
    for index in range(4):
        (tmp_path / f"n{index}").write_text("")
    result = await LsTool(tmp_path).execute("c", {"limit": 2})
    assert text_of(result) == "empty/\nn0\n\n[2 entries limit reached. Use limit=4 for more]"
    assert details_of(result) == {"entryLimitReached": 2}
    with pytest.raises(ToolError, match=f"^Path not found: {tmp_path}/nope$"):
        await LsTool(tmp_path).execute("c", {"path": "nope"})
    with pytest.raises(ToolError, match=f"^Not a directory: {tmp_path}/n0$"):
        await LsTool(tmp_path).execute("c", {"path": "n0"})
