"""An ACP agent's file system requests (`fs/read_text_file`, `fs/write_text_file`), answered by corral.

Only within the agent's working directory: a path (absolute, as ACP requires) is resolved with every
link in it followed, and one that ends up outside the directory — through `..` or a symbolic link —
is refused; the file itself is opened without following a link (a link swapped in after the check
is refused too). A read-only agent's writes are refused. A read may give `line` (1-based) and
`limit` (lines); a write creates the file and its missing directories, or replaces its text.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._rpc import AcpError

__all__ = ["FileAccess"]

_INVALID_PARAMS = -32602
_NOT_FOUND = -32002
"""ACP's "resource not found"."""


class FileAccess:
    """The file requests of one agent.

    Args:
        root: The agent's working directory: every path must be inside it.
        writable: Whether the agent may write (`False`: `fs/write_text_file` is refused).
    """

    def __init__(self, root: Path, *, writable: bool) -> None:
        self.root = Path(os.path.realpath(root))
        self.writable = writable

    def _path(self, params: Mapping[str, Any]) -> Path:
        raw = params.get("path")
        if not isinstance(raw, str) or not raw:
            raise AcpError("path is missing: give the file's absolute path", code=_INVALID_PARAMS)
        if not os.path.isabs(raw):
            raise AcpError(f"path {raw!r} is not absolute: ACP file paths are absolute", code=_INVALID_PARAMS)
        real = Path(os.path.realpath(raw))
        if real != self.root and self.root not in real.parents:
            raise AcpError(
                f"{raw} is outside the agent's working directory {self.root} (links followed); "
                "corral answers file requests inside it only",
                code=_INVALID_PARAMS,
            )
        return real

    def read(self, params: Mapping[str, Any]) -> dict[str, str]:
        """`fs/read_text_file`: `{"content": …}`."""
        path = self._path(params)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise AcpError(f"Resource not found: {path}", code=_NOT_FOUND) from None
        except OSError as exc:
            raise AcpError(f"{path} cannot be read: {exc.strerror}", code=_INVALID_PARAMS) from None
        try:
            with os.fdopen(fd, encoding="utf-8", errors="replace") as opened:
                text = opened.read()
        except OSError as exc:  # a directory, a device that fails
            raise AcpError(f"{path} cannot be read: {exc.strerror}", code=_INVALID_PARAMS) from None
        line, limit = params.get("line"), params.get("limit")
        if isinstance(line, int) or isinstance(limit, int):
            lines = text.splitlines(keepends=True)
            start = max(0, line - 1) if isinstance(line, int) else 0
            end = start + max(0, limit) if isinstance(limit, int) else len(lines)
            text = "".join(lines[start:end])
        return {"content": text}

    def write(self, params: Mapping[str, Any]) -> None:
        """`fs/write_text_file`: create or replace the file's text."""
        if not self.writable:
            raise AcpError(
                "this agent is read-only: corral refuses its writes (its definition has no write, edit "
                "or bash tool)",
                code=_INVALID_PARAMS,
            )
        path = self._path(params)
        content = params.get("content")
        if not isinstance(content, str):
            raise AcpError("content is missing: give the file's new text", code=_INVALID_PARAMS)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
        except OSError as exc:
            raise AcpError(f"{path} cannot be written: {exc.strerror}", code=_INVALID_PARAMS) from None
        with os.fdopen(fd, "w", encoding="utf-8") as opened:
            opened.write(content)
