"""What a hook's run says, read as Claude Code reads it.

* Exit code 2 blocks: stderr is the reason (for PreToolUse the call is denied with it; for
  PostToolUse, whose tool already ran, the model is told). Any JSON on stdout is ignored.
* Exit code 0: stdout that is a JSON object is the hook's answer —
  `hookSpecificOutput.permissionDecision` (`allow` / `deny` / `ask`) with `permissionDecisionReason`,
  `hookSpecificOutput.additionalContext`, the older top-level `decision` (`approve` / `block`) with
  `reason`, and `continue: false` with `stopReason` (corral denies the call with it; the agent goes on).
  Other stdout (plain text) is ignored.
* Anything else is a failure (`HookRun.failure`), as is stdout that starts like JSON but is not a
  JSON object, or an answer whose known fields have the wrong type or value (`malformed`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from ._run import HookRun

__all__ = ["HookAnswer", "read_answer"]

HookDecision = Literal["allow", "deny", "ask"]


@dataclass(frozen=True, slots=True)
class HookAnswer:
    """One hook's answer to one event."""

    decision: HookDecision | None = None
    """PreToolUse: what the hook decided; `None` when it did not say (the call goes on)."""
    reason: str = ""
    """Why (the text the model reads for a denial)."""
    context: str = ""
    """`additionalContext` (or a PostToolUse block's reason): text for the model."""
    failure: str | None = None
    """Why the hook failed (timed out, crashed, malformed output); the caller applies `fail`."""


_DECISIONS: dict[str, HookDecision] = {"allow": "allow", "deny": "deny", "ask": "ask"}
_LEGACY: dict[str, HookDecision] = {"approve": "allow", "block": "deny"}


def _malformed(why: str) -> HookAnswer:
    return HookAnswer(failure=f"printed malformed JSON ({why})")


def _string(data: dict[str, Any], key: str) -> str | None:
    """`data[key]` when it is text (absent: `""`); `None` when it is there with another type."""
    value = data.get(key, "")
    if value is None:
        return ""
    return value if isinstance(value, str) else None


def read_answer(run: HookRun, event: str) -> HookAnswer:
    """What `run` of a hook for `event` (`PreToolUse`, `PostToolUse`) answered."""
    if run.failure is not None:
        return HookAnswer(failure=run.failure)
    if run.exit_code == 2:
        said = run.stderr.strip()
        if event == "PreToolUse":
            return HookAnswer("deny", said or "a PreToolUse hook blocked it (exit code 2)")
        return HookAnswer(context=said)
    text = run.stdout.strip()
    if not text.startswith(("{", "[")):
        return HookAnswer()
    try:
        data = json.loads(text)
    except ValueError as exc:
        return _malformed(str(exc))
    if not isinstance(data, dict):
        return _malformed("not a JSON object")
    return _read_object(data, event)


def _read_object(data: dict[str, Any], event: str) -> HookAnswer:
    specific = data.get("hookSpecificOutput", {})
    if specific is None:
        specific = {}
    if not isinstance(specific, dict):
        return _malformed("hookSpecificOutput is not an object")
    context = _string(specific, "additionalContext")
    reason = _string(data, "reason")
    stop_reason = _string(data, "stopReason")
    if context is None or reason is None or stop_reason is None:
        return _malformed("additionalContext, reason and stopReason must be text")
    go_on = data.get("continue", True)
    if not isinstance(go_on, bool):
        return _malformed("continue must be true or false")
    legacy = data.get("decision")
    if legacy is not None and legacy not in _LEGACY:
        return _malformed(f"decision {legacy!r} is not approve or block")
    if event == "PostToolUse":
        said = [reason if legacy == "block" else "", context]
        if not go_on:
            said.append(stop_reason)
        return HookAnswer(context="\n\n".join(part for part in said if part))
    decision: HookDecision | None = None
    why = reason
    if legacy is not None:
        decision = _LEGACY[legacy]
    permission = specific.get("permissionDecision")
    if permission is not None:
        if permission not in _DECISIONS:
            return _malformed(f"permissionDecision {permission!r} is not allow, deny or ask")
        decision = _DECISIONS[permission]
        given = _string(specific, "permissionDecisionReason")
        if given is None:
            return _malformed("permissionDecisionReason must be text")
        why = given or why
    if not go_on:
        decision, why = "deny", stop_reason or why or "a PreToolUse hook stopped it (continue: false)"
    if decision == "deny" and not why:
        why = "a PreToolUse hook denied it"
    return HookAnswer(decision, why, context)
