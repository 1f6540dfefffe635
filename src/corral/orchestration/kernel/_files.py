"""Preparing `files` evidence for a task, steer, interrupt, reply or question.

`files` is the one explicit channel for handing evidence to an agent. It
carries evidence, never capabilities. Preparation happens in two steps:

1. `prepare_files` checks every entry and takes a snapshot, failing the whole
   operation on the first bad entry. A path is resolved against the caller's
   cwd (`~` expands), canonicalised with `realpath`, and must name a readable
   regular file: `stat` before and `fstat` after `open(O_RDONLY|O_NONBLOCK)`
   must agree on device and inode, so a path swapped under us is refused and
   a FIFO never blocks. `result:<request-id>` entries are result references,
   resolved through the caller's `resolve_result_ref` callback. Entries that
   name the same canonical file (or the same reference) collapse; the first
   wins. A file small enough to embed is read once, here; its text is the
   submission-time snapshot.
2. `PreparedFiles.render` builds the message: one block per file, a blank
   line, then `<Heading>:\\n<text>` (without files the text is sent
   verbatim). A file is embedded only if it is at most the inline limit,
   holds no NUL, decodes as strict UTF-8, did not change while read, and the
   whole message still fits the payload limit with it; otherwise it stays a
   reference block. Files are tried in order and either embedded whole or
   not at all. If even the all-references message is over the limit, the
   operation fails.

The `<file …>` framing follows Pi's `@file` form; it is not a security
boundary.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Literal

from corral._confined import read_at_most
from corral.orchestration.errors import InvalidRequestError

__all__ = [
    "DEFAULT_INLINE_ATTACHMENT_LIMIT_BYTES",
    "DEFAULT_PAYLOAD_LIMIT_BYTES",
    "FILES_GUIDANCE",
    "MAX_LIMIT_BYTES",
    "MIN_LIMIT_BYTES",
    "FileLimits",
    "MessageHeading",
    "PreparedFile",
    "PreparedFiles",
    "RenderedMessage",
    "ResultRefResolver",
    "prepare_files",
]

DEFAULT_INLINE_ATTACHMENT_LIMIT_BYTES = 131072
"""Default largest file embedded inline (128 KiB; `inlineAttachmentLimitBytes`)."""
DEFAULT_PAYLOAD_LIMIT_BYTES = 131072
"""Default largest message payload (128 KiB; `mailboxPayloadLimitBytes`)."""
MIN_LIMIT_BYTES = 1024
"""Smallest value either limit may be configured to."""
MAX_LIMIT_BYTES = 1048576
"""Largest value either limit may be configured to (the 1 MiB protocol ceiling)."""

RESULT_REF_PREFIX = "result:"

MessageHeading = Literal["Task", "Steer", "Interrupt", "Reply", "Question", "Message"]
"""The heading that introduces the text after file blocks."""

ResultRefResolver = Callable[[str], "Path | str | None"]
"""Resolves the request id of a `result:<request-id>` reference.

Returns the result artifact's path, the result text itself, or `None` when the
caller knows no such result. It may raise an orchestration error of its own
(for example `TargetAmbiguousError`).
"""

FILES_GUIDANCE = (
    "Use `files` to hand over evidence the agent needs: source, documentation, configuration, logs, "
    "earlier results. Files give no extra permissions. Do not attach AGENTS.md, CLAUDE.md, GEMINI.md "
    "or similar instruction files just because they exist; the agent finds project instructions on its "
    "own. Attach one only when the task is about that file, the user asked for it, or its instructions "
    "would not reach the agent otherwise. Attach a SKILL.md only when the task needs that skill and the "
    "chosen definition does not already provide it."
)
"""Policy text for prompts that offer a `files` parameter."""

_ATTACH_HINT = "attach only existing, readable regular files (paths are relative to the working directory)"


@dataclass(frozen=True)
class FileLimits:
    """Size limits for `files` and the message they travel in.

    Raises:
        InvalidRequestError: a limit is not an integer from 1024 through 1048576.
    """

    _: KW_ONLY
    inline_attachment_limit_bytes: int = DEFAULT_INLINE_ATTACHMENT_LIMIT_BYTES
    """Largest file (in bytes) that may be embedded; larger files stay references."""
    payload_limit_bytes: int = DEFAULT_PAYLOAD_LIMIT_BYTES
    """Largest whole message (in UTF-8 bytes, plus the caller's overhead) that may be sent."""

    def __post_init__(self) -> None:
        for key, value in (
            ("inlineAttachmentLimitBytes", self.inline_attachment_limit_bytes),
            ("mailboxPayloadLimitBytes", self.payload_limit_bytes),
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not MIN_LIMIT_BYTES <= value <= MAX_LIMIT_BYTES
            ):
                raise InvalidRequestError(
                    f"{key} is {value!r}; set it to an integer from {MIN_LIMIT_BYTES} through {MAX_LIMIT_BYTES}"
                )


@dataclass(frozen=True)
class PreparedFile:
    """One checked `files` entry."""

    name: str
    """What the block's `name` says: the canonical path, or the exact `result:<id>` ref."""
    size: int
    """Size in bytes when checked (of the snapshot when one was taken)."""
    _: KW_ONLY
    path: Path | None = None
    """The canonical physical file; `None` only for a result given as text."""
    is_result_ref: bool = False
    """Whether the entry was a `result:` reference."""
    snapshot: str | None = None
    """The text to embed, when the file qualifies (size, no NUL, strict UTF-8, unchanged)."""
    not_embeddable_reason: str | None = None
    """Why there is no snapshot (`too large`, `contains NUL bytes`, `not UTF-8`, `changed while read`)."""

    def reference_block(self) -> str:
        """The reference-only block: `<file name="…" bytes="n" />` (plus `path` for a result ref)."""
        attrs = f'name="{_escape_attr(self.name)}" bytes="{self.size}"'
        if self.is_result_ref and self.path is not None:
            attrs += f' path="{_escape_attr(str(self.path))}"'
        return f"<file {attrs} />"

    def embedded_block(self) -> str | None:
        """The embedded block, or `None` when the file has no snapshot."""
        if self.snapshot is None:
            return None
        return f'<file name="{_escape_attr(self.name)}" bytes="{self.size}">\n{self.snapshot}\n</file>'


@dataclass(frozen=True)
class RenderedMessage:
    """A message with its file blocks, ready to send."""

    text: str
    """The full message text."""
    payload_bytes: int
    """Its size as counted against the payload limit (UTF-8 bytes plus overhead)."""
    embedded: tuple[str, ...]
    """Names of the files embedded inline."""
    referenced: tuple[str, ...]
    """Names of the files sent as references only."""


@dataclass(frozen=True)
class PreparedFiles:
    """The checked, de-duplicated `files` of one operation."""

    files: tuple[PreparedFile, ...]
    """Entries in the order given, duplicates removed."""
    limits: FileLimits
    """The limits the message is rendered against."""

    @property
    def canonical(self) -> tuple[str, ...]:
        """The canonical list: each entry's `name`."""
        return tuple(item.name for item in self.files)

    def render(self, heading: MessageHeading, text: str, *, overhead_bytes: int = 0) -> RenderedMessage:
        """Build the message text with as many files embedded as fit.

        Args:
            heading: The message's kind, which is also the heading its text goes under (`Task:`, ...).
            text: The caller's text; sent verbatim when there are no files.
            overhead_bytes: Bytes the surrounding record adds, counted against the payload limit.

        Raises:
            InvalidRequestError: even with every file as a reference the message is over
                the payload limit.
        """
        limit = self.limits.payload_limit_bytes
        if not self.files:
            size = _utf8_len(text) + overhead_bytes
            if size > limit:
                raise InvalidRequestError(_payload_message(size, limit))
            return RenderedMessage(text=text, payload_bytes=size, embedded=(), referenced=())
        tail = f"{heading}:\n{text}"
        blocks = [item.reference_block() for item in self.files]
        separators = 2 * len(blocks)
        size = sum(_utf8_len(block) for block in blocks) + separators + _utf8_len(tail) + overhead_bytes
        if size > limit:
            raise InvalidRequestError(_payload_message(size, limit))
        embedded: list[str] = []
        referenced: list[str] = []
        for index, item in enumerate(self.files):
            block = item.embedded_block()
            if block is not None:
                grown = size - _utf8_len(blocks[index]) + _utf8_len(block)
                if grown <= limit:
                    blocks[index] = block
                    size = grown
                    embedded.append(item.name)
                    continue
            referenced.append(item.name)
        return RenderedMessage(
            text="\n\n".join([*blocks, tail]),
            payload_bytes=size,
            embedded=tuple(embedded),
            referenced=tuple(referenced),
        )


def prepare_files(
    files: object,
    *,
    cwd: Path,
    limits: FileLimits | None = None,
    resolve_result_ref: ResultRefResolver | None = None,
) -> PreparedFiles:
    """Check and snapshot the `files` of one operation.

    Args:
        files: The raw `files` value: `None` or a list of non-blank strings.
        cwd: The caller's working directory; relative paths resolve against it.
        limits: Size limits; defaults to `FileLimits()`.
        resolve_result_ref: Resolves `result:<request-id>` references; without it every
            reference is unknown.

    Returns:
        The prepared files; call `render` to build the message.

    Raises:
        InvalidRequestError: `files` is not a list of strings, an entry is blank, a path is
            missing, unreadable or not a regular file, or a result reference is unknown.
    """
    limits = limits or FileLimits()
    if files is None:
        return PreparedFiles(files=(), limits=limits)
    if not isinstance(files, list | tuple):
        raise InvalidRequestError(
            f"files must be a list of file paths, got {type(files).__name__}; pass e.g. ['src/app.py']"
        )
    prepared: list[PreparedFile] = []
    seen: set[str] = set()
    for index, entry in enumerate(files):
        if not isinstance(entry, str):
            raise InvalidRequestError(
                f"files[{index}] is {type(entry).__name__}, not a string; list file paths as strings"
            )
        if not entry.strip():
            raise InvalidRequestError(f"files[{index}] is blank; remove it or give a file path")
        if entry.startswith(RESULT_REF_PREFIX):
            if entry in seen:
                continue
            item = _prepare_result_ref(entry, limits, resolve_result_ref)
            seen.add(entry)
        else:
            item = _prepare_path(entry, cwd, limits)
            if item.name in seen:
                continue
            seen.add(item.name)
        prepared.append(item)
    return PreparedFiles(files=tuple(prepared), limits=limits)


def _prepare_path(entry: str, cwd: Path, limits: FileLimits) -> PreparedFile:
    expanded = os.path.expanduser(entry) if entry == "~" or entry.startswith("~/") else entry
    try:
        canonical = Path(os.path.realpath(Path(cwd) / expanded, strict=True))
    except (OSError, ValueError) as exc:
        raise InvalidRequestError(f"Cannot read file {entry!r}: {_reason(exc)}; {_ATTACH_HINT}") from None
    return _snapshot(entry, canonical, str(canonical), limits, is_result_ref=False)


def _prepare_result_ref(
    entry: str, limits: FileLimits, resolve_result_ref: ResultRefResolver | None
) -> PreparedFile:
    request_id = entry[len(RESULT_REF_PREFIX) :]
    resolved = resolve_result_ref(request_id) if request_id and resolve_result_ref is not None else None
    if resolved is None:
        raise InvalidRequestError(
            f"Unknown result reference {entry!r}. Canonical result references are opaque; "
            "use only exact references already supplied as file evidence"
        )
    if isinstance(resolved, str):
        data = resolved.encode("utf-8")
        if len(data) > limits.inline_attachment_limit_bytes:
            raise InvalidRequestError(
                f"Result {entry!r} is {len(data)} bytes, over the inline limit of "
                f"{limits.inline_attachment_limit_bytes} bytes, and has no file to reference; "
                "pass the relevant excerpt in the text instead"
            )
        if "\x00" in resolved:
            raise InvalidRequestError(
                f"Result {entry!r} contains NUL characters and has no file to reference; "
                "pass the relevant excerpt in the text instead"
            )
        return PreparedFile(entry, len(data), is_result_ref=True, snapshot=resolved)
    try:
        canonical = Path(os.path.realpath(resolved, strict=True))
    except (OSError, ValueError) as exc:
        raise InvalidRequestError(
            f"Cannot read file {entry!r}: the result artifact {str(resolved)!r} is unavailable ({_reason(exc)})"
        ) from None
    return _snapshot(entry, canonical, entry, limits, is_result_ref=True)


def _snapshot(
    entry: str, canonical: Path, name: str, limits: FileLimits, *, is_result_ref: bool
) -> PreparedFile:
    def fail(reason: str) -> InvalidRequestError:
        shown = entry if str(canonical) == entry else f"{entry} (resolved to {canonical})"
        return InvalidRequestError(f"Cannot read file {shown!r}: {reason}; {_ATTACH_HINT}")

    try:
        before = os.stat(canonical)
    except OSError as exc:
        raise fail(_reason(exc)) from None
    if not stat.S_ISREG(before.st_mode):
        raise fail(f"not a regular file ({_kind(before.st_mode)})")
    try:
        fd = os.open(canonical, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise fail(_reason(exc)) from None
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (before.st_dev, before.st_ino) or not stat.S_ISREG(
            opened.st_mode
        ):
            raise fail("the file was replaced while it was being opened")
        size = opened.st_size
        if size > limits.inline_attachment_limit_bytes:
            return PreparedFile(
                name, size, path=canonical, is_result_ref=is_result_ref, not_embeddable_reason="too large"
            )
        try:
            data = read_at_most(fd, limits.inline_attachment_limit_bytes + 1)
            after = os.fstat(fd)
        except OSError as exc:
            raise fail(_reason(exc)) from None
    finally:
        os.close(fd)
    reason: str | None = None
    text: str | None = None
    if len(data) != size or (after.st_size, after.st_mtime_ns) != (opened.st_size, opened.st_mtime_ns):
        reason = "changed while read"
    elif b"\x00" in data:
        reason = "contains NUL bytes"
    else:
        try:
            text = data.decode("utf-8", errors="strict")
        except UnicodeDecodeError:
            reason = "not UTF-8"
    return PreparedFile(
        name,
        len(data) if reason is None else size,
        path=canonical,
        is_result_ref=is_result_ref,
        snapshot=text,
        not_embeddable_reason=reason,
    )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, NotADirectoryError):
        return "a parent of the path is not a directory"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def _payload_message(size: int, limit: int) -> str:
    return (
        f"Mailbox payload is {size} bytes; configured limit is {limit} bytes. "
        "Attach fewer or smaller files, or shorten the text"
    )


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _escape_attr(value: str) -> str:
    out: list[str] = []
    for char in value:
        code = ord(char)
        if char == "&":
            out.append("&amp;")
        elif char == '"':
            out.append("&quot;")
        elif char == "<":
            out.append("&lt;")
        elif char == ">":
            out.append("&gt;")
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"&#x{code:X};")
        else:
            out.append(char)
    return "".join(out)
