"""The words `corral acp` sends to models: what an agent's question or the lead's own tool call
got from the editor's user."""

from __future__ import annotations

__all__ = [
    "ASK_REJECTED",
    "approval_cancelled",
    "approval_failed",
    "approval_rejected",
    "approval_unanswered",
]

ASK_REJECTED = (
    "No: the user rejected this through the editor (or did not answer in time); do not do it, "
    "and say so in your result."
)
"""An agent's `ask_owner` question, rejected (or unanswered) in the editor."""


def approval_rejected(asked: str) -> str:
    """The lead's tool call that `asked` for approval: the user rejected it in the editor."""
    return f"{asked}, and the user rejected it in the editor; do not retry it unless the user asks"


def approval_cancelled(asked: str) -> str:
    """The editor dismissed the permission request (the user cancelled the turn or closed the prompt)."""
    return f"{asked}, and the user dismissed the request in the editor, so it was denied"


def approval_unanswered(asked: str, seconds: float | None) -> str:
    """No answer from the editor in time."""
    within = f" within {seconds:g} s" if seconds is not None else ""
    return f"{asked}, and the user did not answer in the editor{within}, so it was denied"


def approval_failed(asked: str, problem: str) -> str:
    """The editor could not be asked (it does not support permission requests, or is gone)."""
    return f"{asked}, and the editor could not ask the user ({problem}), so it was denied"
