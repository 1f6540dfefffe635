"""The read and write tools against real files."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

import pytest

from corral.agent import ToolError
from corral.agent.tools import ReadTool, WriteTool
from corral.llm import ImageContent

from .conftest import details_of, text_of


def _lines(count: int) -> str:
    return "\n".join(f"line {i}" for i in range(1, count + 1))


async def test_read_small_file_verbatim(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    result = await ReadTool(tmp_path).execute("c", {"path": "a.txt"})
    assert text_of(result) == "one\ntwo\n" and result.details is None


async def test_read_resolves_at_prefix_and_tilde(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "h.txt").write_text("home")
    tool = ReadTool(tmp_path / "elsewhere")
    assert text_of(await tool.execute("c", {"path": "~/h.txt"})) == "home"
    assert text_of(await ReadTool(tmp_path).execute("c", {"path": "@h.txt"})) == "home"


async def test_read_line_limit_notice(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text(_lines(2500))
    result = await ReadTool(tmp_path).execute("c", {"path": "big.txt"})
    text = text_of(result)
    assert text.endswith("line 2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]")
    assert details_of(result)["truncation"]["truncatedBy"] == "lines"


async def test_read_continues_from_offset(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text(_lines(2500))
    text = text_of(await ReadTool(tmp_path).execute("c", {"path": "big.txt", "offset": 2001}))
    assert text.startswith("line 2001\n") and text.endswith("line 2500")


async def test_read_byte_limit_notice(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text("\n".join("x" * 199 for _ in range(1000)))
    text = text_of(await ReadTool(tmp_path).execute("c", {"path": "wide.txt", "offset": 3}))
    assert text.endswith("\n\n[Showing lines 3-258 of 1000 (50.0KB limit). Use offset=259 to continue.]")


async def test_read_user_limit_notice(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(_lines(10))
    result = await ReadTool(tmp_path).execute("c", {"path": "f.txt", "offset": 2, "limit": 3})
    assert text_of(result) == "line 2\nline 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"


async def test_read_long_single_line_gives_sed_hint(tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("short\n" + "z" * 60000 + "\n")
    text = text_of(await ReadTool(tmp_path).execute("c", {"path": "min.js", "offset": 2}))
    assert text == "[Line 2 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '2p' min.js | head -c 51200]"


async def test_read_offset_beyond_end_is_error(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\nb")
    with pytest.raises(ToolError, match=r"^Offset 5 is beyond end of file \(2 lines total\)$"):
        await ReadTool(tmp_path).execute("c", {"path": "f.txt", "offset": 5})


async def test_read_missing_file_is_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"File not found: nope\.txt"):
        await ReadTool(tmp_path).execute("c", {"path": "nope.txt"})


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\0" + b"\xff\0\0" * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    )


async def test_read_image_detected_by_content(tmp_path: Path) -> None:
    data = _png(3, 2)
    (tmp_path / "picture.dat").write_bytes(data)
    result = await ReadTool(tmp_path).execute("c", {"path": "picture.dat"})
    assert text_of(result) == "Read image file [image/png]"
    image = result.content[1]
    assert isinstance(image, ImageContent)
    assert image.mime_type == "image/png" and base64.b64decode(image.data) == data


async def test_read_oversized_image_gives_note_only(tmp_path: Path) -> None:
    (tmp_path / "huge.png").write_bytes(_png(9000, 1))
    result = await ReadTool(tmp_path).execute("c", {"path": "huge.png"})
    assert len(result.content) == 1 and "Image omitted: it is 9000x1" in text_of(result)


async def test_write_creates_parents_and_reports_js_length(tmp_path: Path) -> None:
    result = await WriteTool(tmp_path).execute("c", {"path": "deep/er/f.txt", "content": "hé😀"})
    assert text_of(result) == "Successfully wrote 4 bytes to deep/er/f.txt"  # UTF-16 units, as Pi
    assert (tmp_path / "deep/er/f.txt").read_text(encoding="utf-8") == "hé😀"


async def test_write_overwrites(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("old content that is longer")
    await WriteTool(tmp_path).execute("c", {"path": "f.txt", "content": "new"})
    assert (tmp_path / "f.txt").read_text() == "new"
