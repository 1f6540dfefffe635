"""What the editor sees: a lead session's events and entries as ACP `session/update`s.

`UpdateMapper` turns the lead's live events (`agent_message_chunk`, `agent_thought_chunk`,
`tool_call`, `tool_call_update`) and its stored entries (for `session/load`'s replay) into the same
updates. A delegated agent (`agent` action `delegate` or `continue`) or a spawned teams agent is a
tool call of kind `think`: its tool result does not complete it; it stays `in_progress` while the
agent works (its progress lines stream into the call's content) and completes with the agent's
result when that item reaches the lead's session. An item nobody's tool call waits for (a result
recovered after a restart, a message to the lead) becomes a tool call of its own, already completed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from corral.lead import LeadItem
from corral.llm import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["Update", "UpdateMapper", "tool_kind"]

Update = dict[str, Any]
"""One `session/update`'s `update` member (`sessionUpdate` and its fields)."""

_KINDS = {
    "read": "read",
    "edit": "edit",
    "write": "edit",
    "bash": "execute",
    "grep": "search",
    "find": "search",
    "ls": "search",
}
_STARTS_AGENT = {("agent", "delegate"), ("agent", "continue"), ("agent_delegate", ""), ("agent_continue", "")}
_SPAWNS = {"spawn_agent"}
_PROGRESS_LINES = 12
"""How many of an agent's latest progress lines its tool call shows."""
_FAILED = frozenset({"failed", "error", "lost", "cancelled", "budget_exhausted", "interrupted", "blocked"})
"""A result's `status`, or a report's `effective_outcome`, that ends its agent's tool call `failed`."""


def _failed(item: LeadItem) -> bool:
    key = "effective_outcome" if item.kind == "report" else "status"
    return str(item.details.get(key, "")) in _FAILED


def tool_kind(tool_name: str, args: dict[str, Any]) -> str:
    """The ACP tool kind of one of the lead's tool calls."""
    if _starts_agent(tool_name, args) or tool_name in _SPAWNS:
        return "think"
    return _KINDS.get(tool_name, "other")


def _starts_agent(tool_name: str, args: dict[str, Any]) -> bool:
    action = args.get("action") if tool_name == "agent" else ""
    return (tool_name, action if isinstance(action, str) else "") in _STARTS_AGENT


def _title(tool_name: str, args: dict[str, Any]) -> str:
    if _starts_agent(tool_name, args):
        who = args.get("label") or args.get("agent") or args.get("definition") or "agent"
        verb = "continue" if "continue" in (tool_name, args.get("action")) else "delegate"
        definition = args.get("definition")
        suffix = f" ({definition})" if isinstance(definition, str) and definition != who else ""
        return f"{verb}: {who}{suffix}"
    if tool_name in _SPAWNS:
        return f"spawn: {args.get('name', 'agent')}"
    if tool_name == "agent" and isinstance(args.get("action"), str):
        target = args.get("agent")
        return f"agent {args['action']}" + (f": {target}" if isinstance(target, str) else "")
    for key in ("path", "pattern", "command"):
        value = args.get(key)
        if isinstance(value, str):
            return f"{tool_name}: {value[:120]}"
    return tool_name


def _text_content(text: str) -> list[dict[str, Any]]:
    return [{"type": "content", "content": {"type": "text", "text": text}}] if text else []


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.text for part in content if isinstance(part, TextContent))
    return ""


@dataclass
class _AgentCall:
    """A tool call that stands for an agent until its result arrives."""

    tool_call_id: str
    started: str
    """What the tool said when it started the agent."""
    progress: list[str] = field(default_factory=list)


@dataclass
class UpdateMapper:
    """The updates of one lead session, live or replayed (see the module docstring)."""

    _by_request: dict[str, _AgentCall] = field(default_factory=dict)
    _by_name: dict[str, _AgentCall] = field(default_factory=dict)
    _args: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)

    # --- text ---------------------------------------------------------------------------------------

    @staticmethod
    def message_chunk(text: str) -> Update:
        """A piece of the lead's answer."""
        return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}

    @staticmethod
    def thought_chunk(text: str) -> Update:
        """A piece of the lead's thinking."""
        return {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}}

    @staticmethod
    def user_chunk(text: str) -> Update:
        """A user's prompt (replayed)."""
        return {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}

    @staticmethod
    def commands_update() -> Update:
        """The slash commands the server answers itself."""
        return {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [
                {"name": "agents", "description": "List this lead's agents and their state (no model turn)"},
                {
                    "name": "merge",
                    "description": "Merge an isolated writer's branch into the working tree, or drop it "
                    "with --discard (like corral merge; no model turn)",
                    "input": {"hint": "<agent> [--discard]"},
                },
            ],
        }

    # --- the lead's tool calls ---------------------------------------------------------------------

    def tool_started(self, tool_call_id: str, tool_name: str, args: dict[str, Any]) -> Update:
        """A tool call of the lead began."""
        self._args[tool_call_id] = (tool_name, args)
        return {
            "sessionUpdate": "tool_call",
            "toolCallId": tool_call_id,
            "title": _title(tool_name, args),
            "kind": tool_kind(tool_name, args),
            "status": "in_progress",
            "rawInput": args,
        }

    @staticmethod
    def permission_call(tool_call_id: str, tool_name: str, args: dict[str, Any], asked: str) -> Update:
        """The `toolCall` of a `session/request_permission` for one of the lead's calls: the call the
        editor already shows (same id), with why it asks and the call's input."""
        shown = "\n".join(f"{key}: {value}" for key, value in args.items() if isinstance(value, str))
        return {
            "toolCallId": tool_call_id,
            "title": _title(tool_name, args),
            "kind": tool_kind(tool_name, args),
            "status": "pending",
            "rawInput": args,
            "content": _text_content(f"{asked}.\n\n{shown}".rstrip()),
        }

    def tool_ended(self, tool_call_id: str, text: str, details: object, *, is_error: bool) -> Update:
        """A tool call of the lead returned: done, unless it started an agent (then it waits for it)."""
        tool_name, args = self._args.pop(tool_call_id, ("", {}))
        found = details if isinstance(details, dict) else {}
        if not is_error and _starts_agent(tool_name, args) and isinstance(found.get("request_id"), str):
            call = _AgentCall(tool_call_id, text)
            self._by_request[found["request_id"]] = call
            if isinstance(found.get("agent"), str):
                self._by_name[found["agent"]] = call
            return self._progress_update(call, "in_progress")
        if not is_error and tool_name in _SPAWNS and isinstance(args.get("name"), str):
            call = _AgentCall(tool_call_id, text)
            self._by_name[args["name"]] = call
            return self._progress_update(call, "in_progress")
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": tool_call_id,
            "status": "failed" if is_error else "completed",
            "content": _text_content(text),
        }

    def agent_progress(self, agent: str, line: str) -> Update | None:
        """A line of progress of agent `agent` (label or team name), if a tool call stands for it."""
        call = self._by_name.get(agent)
        if call is None or not line.strip():
            return None
        call.progress.append(line.strip())
        del call.progress[:-_PROGRESS_LINES]
        return self._progress_update(call, "in_progress")

    def waiting_agents(self) -> list[str]:
        """The agents whose tool calls are still open."""
        return list(self._by_name)

    @staticmethod
    def _progress_update(call: _AgentCall, status: str) -> Update:
        text = "\n".join([call.started, *call.progress]).strip()
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call.tool_call_id,
            "status": status,
            "content": _text_content(text),
        }

    # --- items ----------------------------------------------------------------------------------------

    def item(self, item: LeadItem) -> Update | None:
        """What an item that reached the lead shows: its agent's tool call completes, or a call of its
        own (`None` for a question: it is asked through `session/request_permission`)."""
        if item.kind == "ask":
            return None
        request_id = item.details.get("request_id")
        call = self._by_request.pop(request_id, None) if isinstance(request_id, str) else None
        agent = item.agent
        if call is None and item.kind == "report" and agent is not None:
            call = self._by_name.get(agent)
        if call is not None:
            for name, other in list(self._by_name.items()):
                if other is call:
                    del self._by_name[name]
            return {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call.tool_call_id,
                "status": "failed" if _failed(item) else "completed",
                "content": _text_content(item.text),
                "rawOutput": {"kind": item.kind, "entry_id": item.entry_id, "details": item.details},
            }
        title = {"result": "result", "report": "report", "group": "group", "message": "message"}[item.kind]
        return {
            "sessionUpdate": "tool_call",
            "toolCallId": f"corral-item-{item.entry_id}",
            "title": f"{title} from {agent}" if agent else title,
            "kind": "other",
            "status": "completed",
            "content": _text_content(item.text),
            "rawOutput": {"kind": item.kind, "entry_id": item.entry_id, "details": item.details},
        }

    # --- replay ---------------------------------------------------------------------------------------

    def replay_message(self, message: object) -> list[Update]:
        """The updates a stored message replays as (items are replayed by `item`)."""
        if isinstance(message, UserMessage):
            text = _text_of(message.content)
            return [self.user_chunk(text)] if text else []
        if isinstance(message, AssistantMessage):
            updates: list[Update] = []
            for part in message.content:
                if isinstance(part, ThinkingContent) and part.thinking:
                    updates.append(self.thought_chunk(part.thinking))
                elif isinstance(part, TextContent) and part.text:
                    updates.append(self.message_chunk(part.text))
                elif isinstance(part, ToolCall):
                    updates.append(self.tool_started(part.id, part.name, dict(part.arguments)))
            if message.stop_reason == "error" and message.error_message:
                updates.append(self.message_chunk(f"\n[error: {message.error_message}]"))
            return updates
        if isinstance(message, ToolResultMessage):
            return [
                self.tool_ended(
                    message.tool_call_id,
                    _text_of(message.content),
                    message.details,
                    is_error=message.is_error,
                )
            ]
        return []
