"""An ACP agent's permission requests (`session/request_permission`) as questions to its owner.

The agent offers options (`allow_once`, `reject_always`, …), each with an id and a name. corral asks
the owner a question listing them by name; a reply naming one option, by name or id (case and
surrounding space ignored), selects it; any other reply is refused with the options listed, and the
question stays open. With nobody to ask, the request is rejected (a `reject_*` option, else
`cancelled`), never left waiting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "FILE_OPTIONS",
    "PermissionAsker",
    "PermissionOption",
    "PermissionRequest",
    "choose_option",
    "file_request",
    "permission_question",
    "refusal",
]


@dataclass(frozen=True, slots=True)
class PermissionOption:
    """One option of a permission request."""

    option_id: str
    """The agent's id for it (`optionId`)."""
    name: str
    """What it is called (`name`)."""
    kind: str
    """`allow_once`, `allow_always`, `reject_once` or `reject_always` (ACP's `PermissionOptionKind`)."""


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """A permission request of the agent, as corral asks it."""

    title: str
    """What the agent wants to do (the tool call's title, else its id)."""
    tool_call_id: str
    """The tool call it is about."""
    options: tuple[PermissionOption, ...]
    """The options the agent offered, in its order."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> PermissionRequest:
        """Read the params of `session/request_permission` (unreadable options are left out)."""
        call = params.get("toolCall")
        call = call if isinstance(call, dict) else {}
        call_id = str(call.get("toolCallId") or "")
        title = str(call.get("title") or call.get("kind") or call_id or "a tool call")
        raw = params.get("options")
        options = tuple(
            PermissionOption(
                str(item["optionId"]), str(item.get("name") or item["optionId"]), str(item.get("kind") or "")
            )
            for item in (raw if isinstance(raw, list) else [])
            if isinstance(item, dict) and item.get("optionId")
        )
        return cls(title=title, tool_call_id=call_id, options=options)

    def allow_once(self) -> PermissionOption | None:
        """The option that allows once, or `None` (an agent that offers only `allow_always` would
        stop asking for such calls, so corral's policy never picks that one for the owner)."""
        return next((option for option in self.options if option.kind == "allow_once"), None)

    def rejection(self) -> PermissionOption | None:
        """The option that rejects once (else always), or `None` when the agent offered none."""
        for kind in ("reject_once", "reject_always"):
            for option in self.options:
                if option.kind == kind:
                    return option
        return None


FILE_OPTIONS = (
    PermissionOption("allow", "Allow", "allow_once"),
    PermissionOption("reject", "Reject", "reject_once"),
)
"""The options of a question about a file request of the agent (ACP offers none for those)."""


def file_request(title: str) -> PermissionRequest:
    """A question about one of the agent's file requests, asked like a permission request."""
    return PermissionRequest(title=title, tool_call_id="", options=FILE_OPTIONS)


class PermissionAsker(Protocol):
    """Who answers an agent's permission requests (the managed child asks its owner)."""

    async def ask(self, request: PermissionRequest) -> PermissionOption | None:
        """The owner's choice, or `None` to reject (nobody can answer)."""
        ...


def choose_option(options: Sequence[PermissionOption], reply: str) -> PermissionOption | None:
    """The option `reply` names (its name or id, case-insensitive, surrounding space ignored), or `None`."""
    wanted = reply.strip().casefold()
    for option in options:
        if wanted in (option.name.strip().casefold(), option.option_id.strip().casefold()):
            return option
    return None


def _listing(options: Sequence[PermissionOption]) -> str:
    return "; ".join(
        option.name if option.name == option.option_id else f"{option.name} (id {option.option_id})"
        for option in options
    )


def permission_question(agent: str, request: PermissionRequest) -> str:
    """The question the owner gets."""
    return (
        f"Agent {agent} asks permission: {request.title}\n"
        f"Options: {_listing(request.options)}\n"
        "Reply with one option's name or id."
    )


def refusal(reply: str, options: Sequence[PermissionOption]) -> str:
    """Why a reply selected nothing (the question stays open)."""
    return f"The reply {reply.strip()[:80]!r} names no option; reply with one of: {_listing(options)}."
