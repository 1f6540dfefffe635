"""`corral sessions`: the saved sessions of this directory (or of every directory), newest first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from corral.session import SessionInfo, list_sessions

__all__ = ["sessions_list"]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024 or unit == "MB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"  # pragma: no cover - the loop returns


def _corral_header(info: SessionInfo) -> dict[str, object]:
    """The header's `corral` object (`{}` when it has none or cannot be read)."""
    try:
        with info.path.open(encoding="utf-8") as handle:
            header = json.loads(handle.readline())
    except (OSError, ValueError):
        return {}
    meta = header.get("corral") if isinstance(header, dict) else None
    return meta if isinstance(meta, dict) else {}


def _agent_label(info: SessionInfo, meta: dict[str, object]) -> str | None:
    """`agent <label> (<definition>)` for a managed agent's session."""
    if not info.is_managed:
        return None
    if not meta:
        return "agent"
    return f"agent {meta.get('label') or '?'} ({meta.get('definition') or '?'})"


_LEADS = {"api": "Python API lead", "mcp": "MCP lead"}
"""What a program lead's session is called when it has no name and no prompt (its header's `corral.lead`)."""


def _lead_kind(meta: dict[str, object]) -> str | None:
    kind = meta.get("lead")
    return kind if isinstance(kind, str) and kind in _LEADS else None


def _title(info: SessionInfo, meta: dict[str, object]) -> str:
    """The session's name, else what it is (a managed agent, a program lead), else its first prompt,
    on one line."""
    agent = _agent_label(info, meta)
    lead = _lead_kind(meta)
    if info.name:
        text = info.name if agent is None else f"{agent}: {info.name}"
    elif agent is not None:
        text = agent
    elif info.first_message:
        first = " ".join(info.first_message.split())
        text = json.dumps(first[:60] + ("…" if len(first) > 60 else ""), ensure_ascii=False)
    elif lead is not None:
        text = _LEADS[lead]
    else:
        text = "(empty)"
    return text


def sessions_list(*, cwd: Path, all_dirs: bool, as_json: bool, out: TextIO, agents: bool = False) -> int:
    """Print one line per lead session (`agents`: managed agents' sessions too): id, last activity
    (local time), size, title; `--all` adds the directory."""
    infos = list_sessions(None if all_dirs else cwd.resolve(), include_managed=agents)
    metas = [_corral_header(info) for info in infos]
    if as_json:
        rows = [
            {
                "id": info.id,
                "name": info.name,
                "agent": _agent_label(info, meta),
                "lead": _lead_kind(meta),
                "cwd": info.cwd,
                "path": str(info.path),
                "created": info.created.isoformat(),
                "modified": info.modified.isoformat(),
                "size": _size(info.path),
                "messages": info.message_count,
                "firstMessage": info.first_message,
            }
            for info, meta in zip(infos, metas, strict=True)
        ]
        out.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return 0
    if not infos:
        where = "anywhere" if all_dirs else f"for {cwd.resolve()}"
        hint = "" if all_dirs else " (`corral sessions --all` lists every directory's)"
        out.write(f"No sessions {where}{hint}.\n")
        return 0
    for info, meta in zip(infos, metas, strict=True):
        when = info.modified.astimezone().strftime("%Y-%m-%d %H:%M")
        line = f"{info.id}  {when}  {_human(_size(info.path)):>8}  {_title(info, meta)}"
        if all_dirs:
            line += f"  [{info.cwd}]"
        out.write(line + "\n")
    return 0
