"""The words of the user's policy that reach a model: the question an owner is asked when a child's
call needs approval, and what the child reads when it is not approved."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["APPROVALS", "approval_question", "is_approval", "not_approved", "unanswered"]

APPROVALS = frozenset({"yes", "y", "allow", "allowed", "approve", "approved", "ok", "okay"})
"""The answers that approve a call (compared lower-cased, without surrounding spaces and `.`/`!`);
any other answer denies it, with the answer as the reason."""

_SUMMARY_CHARS = 200


def _summary(arguments: Mapping[str, Any]) -> str:
    command = arguments.get("command")
    text = (
        command if isinstance(command, str) else json.dumps(dict(arguments), ensure_ascii=False, default=str)
    )
    text = " ".join(text.split())
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


def approval_question(agent: str, tool: str, arguments: Mapping[str, Any], reason: str) -> str:
    """The owner's question: `<agent> wants to run <tool> <input>: allow? (reason: <rule>)`, with how
    to answer."""
    return (
        f"{agent} wants to run {tool} {_summary(arguments)}: allow? (reason: {reason}). "
        "Reply `yes` to let this one call run; any other reply denies it and is passed to the agent as the reason."
    )


def is_approval(answer: str) -> bool:
    """Whether the owner's `answer` is a clear yes."""
    return answer.strip().rstrip(".!").strip().lower() in APPROVALS


def not_approved(answer: str) -> str:
    """Why the call did not run: the owner's words."""
    return f"the owner did not approve it: {' '.join(answer.split()) or '(an empty reply)'}"


def unanswered(reason: str, why: str) -> str:
    """Why the call did not run when the owner could not be asked or did not answer."""
    return f"{reason}, and {why}, so it was denied"
