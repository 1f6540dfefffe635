"""What an MCP client's model reads: the MCP wording of corral's tool and item texts.

The lead's own texts speak of the multiplexed `agent` tool ("action reply", "refresh with
`list`") and of results that wake the lead. An MCP client has the per-operation tools
(`agent_reply`, `agent_list`, …) and is never woken: it calls `wait`. The functions here give the
texts in MCP's words; each tool also carries its annotations (read-only, destructive) and an
`outputSchema` that its `structuredContent` matches.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from corral.lead import LeadItem

__all__ = [
    "TOOL_DESCRIPTIONS",
    "item_body",
    "item_json",
    "item_text",
    "mcp_words",
    "output_schema",
    "result_text",
    "tool_hints",
    "transcript_text",
]

TOOL_DESCRIPTIONS: dict[str, str] = {
    "agent_list": "List your agents (state, available actions, session) and the agent definitions.",
    "agent_delegate": (
        "Start a managed agent on one self-contained task. Its result, or a question it asks, comes back "
        "from `wait`: call `wait` instead of polling agent_list."
    ),
    "agent_continue": (
        "Start a new task on a saved agent session you own (the same conversation continues); its result "
        "comes back from `wait`."
    ),
    "agent_steer": "Adjust an agent's current task without cancelling its current operation.",
    "agent_interrupt": "Cancel an agent's current operation; it continues the same task with your message.",
    "agent_reply": "Answer a question an agent asked (an item of kind ask from `wait`); then call `wait` again.",
    "agent_close": "Stop and remove an agent (and the agents it started); its pending task is abandoned.",
    "agent_inspect": "Live evidence of a working agent: recent activity and running commands. Do not poll.",
    "agent_transcript": "An agent's saved conversation (bounded, compaction-aware), also after it finished.",
}
"""The agent tools' descriptions as an MCP client reads them (the lead's own name the `agent` tool)."""

READ_ONLY = frozenset(
    {
        "agent_list",
        "agent_inspect",
        "agent_transcript",
        "wait",
        "get_agent_status",
        "check_teammate",
        "read_inbox",
        "list_file_claims",
    }
)
DESTRUCTIVE = frozenset({"agent_close", "merge", "stop_teammate"})


def tool_hints(name: str) -> dict[str, bool]:
    """The tool's hints: read-only tools change nothing; destructive ones end work or rewrite files.

    Every tool states both hints, so a client never falls back to MCP's default (destructive).
    """
    read_only = name in READ_ONLY
    return {"readOnlyHint": read_only, "destructiveHint": not read_only and name in DESTRUCTIVE}


_STR: dict[str, Any] = {"type": "string"}
_BOOL: dict[str, Any] = {"type": "boolean"}


def _agent_result(**properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"ok": _BOOL, "action": _STR, "agent": _STR, **properties},
        "required": ["ok", "action"],
    }


OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "agent_list": _agent_result(
        agents={"type": "array", "items": {"type": "object"}},
        agent_definitions={"type": "array", "items": {"type": "object"}},
    ),
    "agent_delegate": _agent_result(
        definition=_STR, session_id=_STR, session_path=_STR, request_id=_STR, owner_session_id=_STR
    ),
    "agent_continue": _agent_result(session_id=_STR, request_id=_STR),
    "agent_steer": _agent_result(request_id=_STR, session_id=_STR),
    "agent_interrupt": _agent_result(request_id=_STR, session_id=_STR),
    "agent_reply": _agent_result(request_id=_STR, session_id=_STR),
    "agent_close": _agent_result(),
    "agent_inspect": _agent_result(
        recent_output=_STR, recent_output_truncated=_BOOL, process={"type": "array"}
    ),
    "agent_transcript": _agent_result(transcript=_STR, transcript_truncated=_BOOL, session_id=_STR),
    "merge": {
        "type": "object",
        "properties": {
            "ok": _BOOL,
            "branch": {"type": ["string", "null"]},
            "outcome": _STR,
            "message": _STR,
            "paths": {"type": "array", "items": _STR},
            "commit": {"type": ["string", "null"]},
            "kind": {"type": ["string", "null"]},
        },
        "required": ["ok", "outcome", "message", "paths"],
    },
    "wait": {
        "type": "object",
        "properties": {
            "ok": _BOOL,
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": _STR,
                        "entry_id": _STR,
                        "text": _STR,
                        "details": {"type": "object"},
                        "custom_type": _STR,
                        "timestamp": _STR,
                    },
                    "required": ["kind", "entry_id", "text", "details"],
                },
            },
            "cursor": {"type": ["string", "null"]},
            "timedOut": _BOOL,
        },
        "required": ["ok", "items", "cursor", "timedOut"],
    },
}


def output_schema(name: str) -> dict[str, Any]:
    """The JSON Schema the tool's `structuredContent` matches (a teams tool's: an object)."""
    return OUTPUT_SCHEMAS.get(name, {"type": "object", "properties": {"ok": _BOOL}})


_WORDS = (
    (
        re.compile(r"^agent (list|delegate|continue|steer|interrupt|reply|close|inspect|transcript) failed"),
        r"agent_\1 failed",
    ),
    (re.compile(r"refresh with `list`"), "call `agent_list`"),
    (re.compile(r"\bCall list\b"), "Call agent_list"),
    (re.compile(r"\bcall list\b"), "call agent_list"),
    (re.compile(r"the agent tool: action (\w+), agent=([^\s.]+)"), r"agent_\1 {agent: \2}"),
    (re.compile(r"\bwith list\b"), "with agent_list"),
)


def mcp_words(text: str) -> str:
    """`text` with the lead's names for the agent tool's actions replaced by the MCP tools' names."""
    for pattern, words in _WORDS:
        text = pattern.sub(words, text)
    return text


def result_text(name: str, text: str, details: dict[str, Any] | None, *, ok: bool) -> str:
    """A tool result's text in MCP's words (a started agent's result comes from `wait`)."""
    if ok and name in ("agent_delegate", "agent_continue") and details is not None:
        first = text.split("\n", 1)[0]
        return f"{first}\nThe task was accepted. Call `wait` to receive its result or its questions; do not poll."
    return mcp_words(text)


def transcript_text(details: dict[str, Any]) -> str:
    """A finished agent's transcript (`details` with `finished`), as the agent surface words one."""
    from corral.orchestration.surfaces.agent._render import render_transcript  # the lead opened it

    return render_transcript(details)


def item_body(item: LeadItem) -> str:
    """A `wait` item's text in MCP's words.

    A question is worded here from its details (answer with `agent_reply`); every other item (a
    result, a report, a group index, a message) is the core's text as it is: those words name no
    tool of the lead's (`kernel/texts.py`, `teams/texts.py`), and the agent's own text inside them is
    passed through, never rewritten.
    """
    if item.kind == "ask" and item.agent is not None and isinstance(item.details.get("question"), str):
        return (
            f"Agent {item.agent} needs your input:\n\n{item.details['question']}\n\n"
            f"Answer with agent_reply {{agent: {item.agent}, message: …}}, then call `wait` again."
        )
    return item.text


def item_text(item: LeadItem) -> str:
    """A `wait` item as the client's model reads it: kind, entry_id, then its text."""
    return f"[{item.kind} · entry_id {item.entry_id}]\n{item_body(item)}"


def item_json(item: LeadItem) -> dict[str, Any]:
    """A `wait` item in `structuredContent`: `LeadItem.to_json` with the text in MCP's words."""
    return {**item.to_json(), "text": item_body(item)}
