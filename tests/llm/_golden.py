"""What the golden wire tests share: the pinned headers, the file check and an event's record.

A golden file holds, per wire API, the exact request bodies and pinned headers corral sends for
a set of contexts and the events it makes of a set of replies, recorded from the pydantic-ai
path that API went through before corral had its own client. `CORRAL_UPDATE_GOLDEN=1` rewrites
the files from what the code does now (review the diff: a change there is a change on the wire).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from corral.llm import AssistantMessageEvent
from corral.llm._messages import to_json_dict

UPDATE = os.environ.get("CORRAL_UPDATE_GOLDEN") == "1"

HEADERS = ("authorization", "content-type", "accept", "x-team", "x-trace")
"""The request headers pinned (the SDK's own `x-stainless-*` and user agent are not)."""


def check_golden(path: Path, section: str, name: str, got: Any) -> None:
    """Assert `got` is what `path` holds under `section`/`name` (or write it there when updating)."""
    data = json.loads(path.read_text()) if path.exists() else {"requests": {}, "replies": {}}
    if UPDATE:
        data[section][name] = got
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        return
    assert name in data[section], f"no golden {section}/{name}: record with CORRAL_UPDATE_GOLDEN=1"
    assert got == data[section][name]


def event_record(event: AssistantMessageEvent) -> dict[str, Any]:
    """An event as the golden files keep it (the message without its timestamp)."""
    data: dict[str, Any] = {"type": event.type}
    for name in ("content_index", "delta", "content", "reason"):
        value = getattr(event, name, None)
        if value is not None:
            data[name] = value
    tool_call = getattr(event, "tool_call", None)
    if tool_call is not None:
        data["tool_call"] = to_json_dict(tool_call)
    message = getattr(event, "message", None) or getattr(event, "error", None)
    if message is not None:
        data["message"] = {k: v for k, v in to_json_dict(message).items() if k != "timestamp"}
    return data
