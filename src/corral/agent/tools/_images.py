"""Image detection for the `read` tool, from file content (magic numbers).

corral has no image library, so images are never resized: `read` returns an
image as it is when it is at most `MAX_IMAGE_BYTES` and no side is over
`MAX_IMAGE_SIDE` pixels (what providers accept), and otherwise only a note.
Dimensions are read from the file header where the format allows it cheaply.
"""

from __future__ import annotations

import struct

__all__ = ["MAX_IMAGE_BYTES", "MAX_IMAGE_SIDE", "detect_image_mime", "image_size"]

MAX_IMAGE_BYTES = 4_718_592
"""Largest image (4.5 MB) returned inline; larger ones get only a note."""
MAX_IMAGE_SIDE = 8000
"""Largest width or height returned inline; providers reject larger images."""


def detect_image_mime(head: bytes) -> str | None:
    """The MIME type of a supported image (png, jpeg, gif, webp) from its first bytes, else `None`."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_size(data: bytes, mime: str) -> tuple[int, int] | None:
    """Width and height from the image header, or `None` when they cannot be read."""
    try:
        if mime == "image/png" and len(data) >= 24:
            width, height = struct.unpack(">II", data[16:24])
            return width, height
        if mime == "image/gif" and len(data) >= 10:
            width, height = struct.unpack("<HH", data[6:10])
            return width, height
        if mime == "image/webp":
            return _webp_size(data)
        if mime == "image/jpeg":
            return _jpeg_size(data)
    except (struct.error, IndexError):
        return None
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None


_SOF_MARKERS = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    index = 2
    while index + 9 < len(data):
        if data[index] != 0xFF:
            index += 1
            continue
        marker = data[index + 1]
        if marker == 0xFF:
            index += 1
            continue
        if marker in _SOF_MARKERS:
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return width, height
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            index += 2
            continue
        (length,) = struct.unpack(">H", data[index + 2 : index + 4])
        index += 2 + length
    return None
